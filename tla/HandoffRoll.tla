----------------------------- MODULE HandoffRoll -----------------------------
(***************************************************************************)
(* HandoffRoll = HandoffCond + push acks that name the acking incarnation, *)
(* and rolling restarts (issue 29; docs/handoff.md 5.21).                  *)
(*                                                                         *)
(* The hole.  In HandoffAcks an ack is [src, key, ep, ver, wid]: it says   *)
(* that peer src held the write, not which incarnation of src did.  A      *)
(* coordinator that counts an ack of a dead incarnation commits a write    *)
(* held by nobody but itself when the acking peer has been replaced and    *)
(* its new incarnation reseeded from the coordinator before the commit    *)
(* (so the reseed carried the write as pending, i.e. not at all).  The     *)
(* specs allow that: the coordinator's next eviction makes the write       *)
(* doomed.  It happens in a rolling restart that waits for every replica   *)
(* to be ready before the next eviction (the implementation model found it *)
(* in 17 states; crates/checker/models/HandoffImplRolling.cfg now passes), *)
(* so "one failure at a time" lost an acknowledged write.                  *)
(*                                                                         *)
(* The rule.  An ack names its incarnation (acksBy); the coordinator       *)
(* commits on an ack only when no newer incarnation of its sender has      *)
(* been heard (HandoffScale's reg, which a recovering peer's reseed        *)
(* request, its decline and its digests raise).  A newer incarnation heard *)
(* means the acking one is gone, and whatever it held with it.  If the     *)
(* ack arrives first, the commit happens first, and the new incarnation's *)
(* reseed from the coordinator carries the write.                          *)
(*                                                                         *)
(* Rolling restarts.  With Rolling = TRUE every eviction (a supersession   *)
(* too) waits until every replica is ready: failures one at a time, each   *)
(* recovered from before the next, which is what `cargo xtask deploy` and *)
(* `cargo xtask dev roll` do.  RollLosesNothing: then no acknowledged      *)
(* write is ever doomed.  With Rolling = FALSE the module is HandoffCond   *)
(* with the stricter commit, and its invariants are HandoffCond's.         *)
(***************************************************************************)
EXTENDS HandoffCond

CONSTANT Rolling  \* every eviction waits until every replica is ready

ASSUME Rolling \in BOOLEAN

VARIABLES
    acksBy,  \* push acks [src, key, ep, ver, wid, pinc] ever sent: acks,
             \* with the acking incarnation pinc
    zreg     \* [epoch, reg]: each zombie's reg (by its epoch), as it was
             \* when it was superseded (a zombie hears nothing new)

roVars == <<acksBy, zreg>>
allVarsRo == <<allVarsC, roVars>>

TypeOKRoll ==
    /\ acksBy \subseteq [src: Peers, key: Keys, ep: 1..MaxEpoch, ver: 1..MaxWrites,
                      wid: 1..MaxWrites, pinc: 1..MaxEvicts + 1]
    /\ zreg \subseteq [epoch: 1..MaxEpoch, reg: [Peers -> 0..MaxEvicts + 1]]

\* An ack for pending write pw from an incarnation of its sender that an
\* instance whose newest incarnations heard are rg has not seen replaced.
AckedByLive(pw, rg) ==
    \E a \in acksBy : /\ a.key = pw.key /\ a.ep = pw.ep /\ a.ver = pw.ver
                      /\ a.wid = pw.wid
                      /\ a.pinc >= rg[a.src]

\* An eviction of a rolling restart waits for every replica.
RollWaits == Rolling => \A r \in Replicas : IsReady(r)

\* Under a rolling restart no acknowledged write is lost.
RollLosesNothing == Rolling => \A w \in acked : ~w.doomed

-----------------------------------------------------------------------------

InitRo == InitC /\ acksBy = {} /\ zreg = {}

DeliverPushRo(m) ==
    /\ DeliverPushC(m)
    /\ acksBy' = acksBy \cup {[src |-> m.dst, key |-> m.key, ep |-> m.ep,
                               ver |-> m.ver, wid |-> m.wid, pinc |-> inc[m.dst]]}
    /\ UNCHANGED zreg
CommitWriteRo(pw) == AckedByLive(pw, reg) /\ CommitWriteC(pw) /\ UNCHANGED roVars
EvictRo(r) == RollWaits /\ EvictC(r) /\ UNCHANGED roVars
SupersedeRo ==
    /\ RollWaits
    /\ SupersedeC
    /\ zreg' = zreg \cup {[epoch |-> epoch, reg |-> reg]}
    /\ UNCHANGED acksBy
\* A zombie commits on an ack only as its instance would: by its own reg.
ZombieCommitRo(z, pw) ==
    /\ \E zr \in zreg : zr.epoch = z.epoch /\ AckedByLive(pw, zr.reg)
    /\ ZombieCommitC(z, pw)
    /\ UNCHANGED roVars

\* A zombie that ends takes its reg with it.
ZombieFencedRo(z) ==
    /\ ZombieFencedC(z)
    /\ zreg' = {zr \in zreg : zr.epoch # z.epoch}
    /\ UNCHANGED acksBy

\* HandoffCond's other actions, each leaving acksBy and zreg as they are.
ClientWriteRo(k, t) == ClientWriteC(k, t) /\ UNCHANGED roVars
ChunkCRo(p, S) == ChunkCC(p, S) /\ UNCHANGED roVars
FinishRecoveryPeerRo(p) == FinishRecoveryPeerC(p) /\ UNCHANGED roVars
ReseedChunkCRo(c) == ReseedChunkCC(c) /\ UNCHANGED roVars
ReseedChunkPeerRo(c) == ReseedChunkPeerC(c) /\ UNCHANGED roVars
ChooseEpochRo == ChooseEpochC /\ UNCHANGED roVars
AnnounceAckedRo(ack) == AnnounceAckedC(ack) /\ UNCHANGED roVars
AnnounceRoundRo == AnnounceRoundC /\ UNCHANGED roVars
FinishRecoveryCRo == FinishRecoveryCC /\ UNCHANGED roVars
ChunkPeerRo(q, p, S) == ChunkPeerC(q, p, S) /\ UNCHANGED roVars
DeclinePeerRo(q, p) == DeclinePeerC(q, p) /\ UNCHANGED roVars
DigestSendRo(a) == DigestSendC(a) /\ UNCHANGED roVars
DigestRecvRo(d, S) == DigestRecvC(d, S) /\ UNCHANGED roVars
GossipRecvRo(g) == GossipRecvC(g) /\ UNCHANGED roVars
RaiseFloorRo == RaiseFloorC /\ UNCHANGED roVars
AnnounceToRo(p, a) == AnnounceToC(p, a) /\ UNCHANGED roVars
ZombieWriteRo(z, k, t) == ZombieWriteC(z, k, t) /\ UNCHANGED roVars
ReadStartRo(k, e) == ReadStartC(k, e) /\ UNCHANGED roVars
ConfirmRo(p, e) == ConfirmC(p, e) /\ UNCHANGED roVars
ReadFinishRo(r) == ReadFinishC(r) /\ UNCHANGED roVars
DeclineArrivesRo(d) == DeclineArrivesC(d) /\ UNCHANGED roVars
LateReseedRo(p, i) == LateReseedC(p, i) /\ UNCHANGED roVars
LateCollectRo(p, c) == LateCollectC(p, c) /\ UNCHANGED roVars
CondStartRo(k, e, c, t) == CondStart(k, e, c, t) /\ UNCHANGED roVars
CondIssueRo(x) == CondIssue(x) /\ UNCHANGED roVars
CondFailRo(x) == CondFail(x) /\ UNCHANGED roVars
ExpireRo(k) == Expire(k) /\ UNCHANGED roVars
TickRo == Tick /\ UNCHANGED roVars

NextRo ==
    \/ \E k \in Keys, t \in {0} \cup TTLs : ClientWriteRo(k, t)
    \/ \E pw \in pending : CommitWriteRo(pw)
    \/ \E r \in Replicas : EvictRo(r)
    \/ \E p \in Peers, S \in SUBSET Keys : ChunkCRo(p, S)
    \/ \E p \in Peers : FinishRecoveryPeerRo(p)
    \/ \E c \in chunks : ReseedChunkCRo(c) \/ ReseedChunkPeerRo(c)
    \/ ChooseEpochRo
    \/ \E ack \in annAcks : AnnounceAckedRo(ack)
    \/ AnnounceRoundRo
    \/ FinishRecoveryCRo
    \/ \E p \in Peers, q \in Replicas, S \in SUBSET Keys : ChunkPeerRo(q, p, S)
    \/ \E p \in Peers, q \in Replicas : DeclinePeerRo(q, p)
    \/ \E a \in Replicas : DigestSendRo(a)
    \/ \E d \in digs, S \in SUBSET Keys : DigestRecvRo(d, S)
    \/ \E g \in gsp : GossipRecvRo(g)
    \/ RaiseFloorRo
    \/ \E m \in net : DeliverPushRo(m)
    \/ \E p \in Peers, a \in anns : AnnounceToRo(p, a)
    \/ SupersedeRo
    \/ \E z \in zombies, k \in Keys, t \in {0} \cup TTLs : ZombieWriteRo(z, k, t)
    \/ \E z \in zombies : \E pw \in z.pending : ZombieCommitRo(z, pw)
    \/ \E z \in zombies : ZombieFencedRo(z)
    \/ \E k \in Keys, e \in 1..MaxEpoch : ReadStartRo(k, e)
    \/ \E p \in Peers, e \in 1..MaxEpoch : ConfirmRo(p, e)
    \/ \E r \in reads : ReadFinishRo(r)
    \/ \E d \in dsent : DeclineArrivesRo(d)
    \/ \E p \in Peers, i \in 2..MaxEvicts + 1 : LateReseedRo(p, i)
    \/ \E p \in Peers, c \in 2..MaxEvicts + 1 : LateCollectRo(p, c)
    \/ \E k \in Keys, e \in 1..MaxEpoch, c \in {Absent} \cup Wids, t \in {0} \cup TTLs :
           CondStartRo(k, e, c, t)
    \/ \E x \in conds : CondIssueRo(x)
    \/ \E x \in conds : CondFailRo(x)
    \/ \E k \in Keys : ExpireRo(k)
    \/ TickRo

SpecRo == InitRo /\ [][NextRo]_allVarsRo

=============================================================================
