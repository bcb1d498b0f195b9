---------------------------- MODULE HandoffReads ----------------------------
(***************************************************************************)
(* HandoffReads = HandoffScale + client reads, served linearizably.        *)
(*                                                                         *)
(* A read goes to the coordinator.  On Durable Objects a superseded        *)
(* instance (a zombie, HandoffZombie) can still be answering the requests  *)
(* it had in flight, from its own memory, while a newer instance commits   *)
(* writes it never sees: answered at once, such a read can miss a write    *)
(* that completed before it began.  So an instance answers a read only     *)
(* after a ready peer confirmed, after the read arrived, that the          *)
(* instance's epoch is still the newest it knows (ReadConfirm; one         *)
(* confirmation serves every read waiting at that instance).               *)
(*                                                                         *)
(* A confirmation alone is not enough, and the model checker shows why     *)
(* (the mutation no-collect-fence): a zombie's write pushed before it was  *)
(* superseded can reach a peer after that peer sent its memory to the new  *)
(* instance's collect; the zombie commits it on that peer's ack, and the   *)
(* new instance, confirmed, answers a read without it.  Hence the fence: a *)
(* peer that answers a collecting coordinator (ChunkCR), or gets a decline *)
(* from one while recovering (DeclineArrivesR), takes no push and confirms *)
(* no read until that coordinator incarnation, or a newer one, announces   *)
(* its epoch to it (AnnounceToR) or reseeds it (ReseedChunkPeerR); a       *)
(* rebooted peer starts unfenced and takes no push while recovering.  Then *)
(* every write an older instance commits was held by a peer before that    *)
(* peer's collect, so the new instance's memory holds it.  fenced[p] is    *)
(* the incarnation that fenced p (0: none), because that is all a peer can *)
(* compare: it cannot know which incarnation is current, so an announce    *)
(* from the fencing incarnation lifts the fence even when that incarnation *)
(* has died since (the implementation's rule, docs/handoff.md 5.17).       *)
(*                                                                         *)
(* Why a confirmed read is then fresh: a newer instance commits nothing    *)
(* before it is ready, and it is ready only once every peer knows its      *)
(* higher epoch (HandoffV2's FinishRecoveryC).  A peer that still knows    *)
(* epoch e, unfenced, at the confirmation shows that no newer instance had *)
(* committed anything by then; the memory of the instance at e holds every *)
(* write committed before (collect, the fence, its own commits).           *)
(*                                                                         *)
(* The instance at epoch e is the current coordinator when it serves at e, *)
(* else the zombie superseded at e; zmem keeps the memory a zombie serves  *)
(* from (its memory when superseded, plus its own commits).  An instance   *)
(* that ends (evicted, or fenced) drops its reads: their clients get no    *)
(* answer, which is not a completed read.                                  *)
(*                                                                         *)
(* ReadsLinearizable: a completed read returned the newest write completed *)
(* before it began (acknowledged and not doomed, so still held somewhere), *)
(* or a newer one; a tombstone or no record reads as "absent", which a     *)
(* delete completed before the read, or nothing at all, allows.  badRead   *)
(* is a history variable: it turns TRUE on a read that breaks this.        *)
(*                                                                         *)
(* Late requests.  HandoffScale answers a reseed request and a collect    *)
(* atomically (ChunkPeer, DeclinePeer, ChunkCR), so a request counts only  *)
(* while its sender waits.  On the platform a request outlives that: it    *)
(* arrives after its sender was evicted or superseded, or was answered, or *)
(* again.  A late reseed request makes the coordinator hear from its       *)
(* sender's incarnation (LateReseedR), a late collect fences a ready peer  *)
(* that knows no incarnation as new as its sender (LateCollectR); their    *)
(* answers change nothing.  Found by the implementation model run without  *)
(* its reductions (docs/verification.md 1.8), which had dropped these     *)
(* requests as useless.                                                    *)
(*                                                                         *)
(* Checked against every invariant and property of HandoffScale, plus      *)
(* TypeOKReads and ReadsLinearizable.                                      *)
(***************************************************************************)
EXTENDS HandoffScale

CONSTANT MaxReads  \* bound on the client reads started

VARIABLES
    zmem,     \* the zombies' memories [epoch, mem]
    reads,    \* reads in progress [key, ep, seen, conf]: at the instance
              \* serving epoch ep; seen: the ids of the writes of key
              \* acknowledged before the read began; conf: confirmed
    readCtr,  \* reads started so far
    badRead,  \* history: a read returned a value older than it must
    fenced,   \* fenced[p]: the coordinator incarnation p answered a collect of
              \* (or got a decline from) that has not announced its epoch to
              \* it yet, 0 if none; a fenced peer takes no pushes
    newest,   \* newest[p]: the newest coordinator incarnation that fenced p or
              \* announced to it or reseeded it (0: none since p booted); a
              \* decline from it or an older one fences nothing
    dsent,    \* the coordinator's declines to recovering peers [dst, inc]:
              \* sent by incarnation inc, not yet taken by a finished recovery
    declRecv  \* declRecv[p]: a decline of the coordinator reached p while it
              \* recovers: the code fences a peer when the decline arrives,
              \* and a peer that finishes on the coordinator's decline got it

(* Why fence on arrival, not when the coordinator declines: the peer cannot  *)
(* act on a decline it never got.  It needs none in one case only: it was    *)
(* seeded by an older coordinator incarnation, so it booted before the       *)
(* declining one existed, which then has collected nothing from an older     *)
(* instance of it.  A peer seeded by no coordinator finishes only on a       *)
(* decline it got, and is fenced from then on.                               *)

rVars == <<zmem, reads, readCtr, badRead, fenced, newest, dsent, declRecv>>
allVarsR == <<allVarsS, rVars>>

TypeOKReads ==
    /\ zmem \subseteq [epoch: 1..MaxEpoch, mem: Mem]
    /\ reads \subseteq [key: Keys, ep: 1..MaxEpoch, seen: SUBSET (1..MaxWrites),
                        conf: BOOLEAN]
    /\ readCtr \in 0..MaxReads
    /\ badRead \in BOOLEAN
    /\ fenced \in [Peers -> 0..MaxEvicts + 1]
    /\ newest \in [Peers -> 0..MaxEvicts + 1]
    /\ dsent \subseteq [dst: Peers, inc: 1..MaxEvicts + 1]
    /\ declRecv \in [Peers -> BOOLEAN]

ReadsLinearizable == ~badRead

\* The instance serving epoch e: the current coordinator, or a zombie.
Serves(e) == IsReady(Coordinator) /\ epoch = e
Alive(e) == Serves(e) \/ \E z \in zmem : z.epoch = e
InstMem(e) == IF Serves(e) THEN mem[Coordinator]
              ELSE (CHOOSE z \in zmem : z.epoch = e).mem

\* The writes read r must see: acknowledged before it began, not doomed.
MustSee(r) == {w \in acked : w.key = r.key /\ w.wid \in r.seen /\ ~w.doomed}

\* Value v is older than read r may return.
Stale(r, v) ==
    \E w \in MustSee(r) :
        IF v = NoVal
        THEN /\ w.wid \notin Deletes
             /\ ~\E t \in acked : t.key = r.key /\ t.wid \in r.seen
                                  /\ t.wid \in Deletes /\ Wins(t, w)
        ELSE Wins(w, v)

-----------------------------------------------------------------------------

InitR ==
    /\ InitS
    /\ zmem = {}
    /\ reads = {}
    /\ readCtr = 0
    /\ badRead = FALSE
    /\ fenced = [p \in Peers |-> 0]
    /\ newest = [p \in Peers |-> inc[Coordinator]]
    /\ dsent = {}
    /\ declRecv = [p \in Peers |-> FALSE]

\* A client read of k reaches the instance serving epoch e: the current
\* coordinator when ready, or a zombie (a read in flight to it).
ReadStart(k, e) ==
    /\ readCtr < MaxReads
    /\ Alive(e)
    /\ reads' = reads \cup {[key |-> k, ep |-> e,
                             seen |-> {w.wid : w \in {x \in acked : x.key = k}},
                             conf |-> FALSE]}
    /\ readCtr' = readCtr + 1
    /\ UNCHANGED <<allVarsS, zmem, badRead, fenced, newest, dsent, declRecv>>

\* A ready peer that knows epoch e confirms it to the instance at e: every
\* read waiting there now is confirmed.
ReadConfirm(p, e) ==
    /\ IsReady(p)
    /\ fenced[p] = 0
    /\ known[p] = e
    /\ \E r \in reads : r.ep = e /\ ~r.conf
    /\ reads' = {IF r.ep = e THEN [r EXCEPT !.conf = TRUE] ELSE r : r \in reads}
    /\ UNCHANGED <<allVarsS, zmem, readCtr, badRead, fenced, newest, dsent, declRecv>>

\* A confirmed read is answered from its instance's memory.
ReadFinish(r) ==
    /\ r \in reads
    /\ r.conf
    /\ Alive(r.ep)
    /\ reads' = reads \ {r}
    /\ badRead' = (badRead \/ Stale(r, InstMem(r.ep)[r.key]))
    /\ UNCHANGED <<allVarsS, zmem, readCtr, fenced, newest, dsent, declRecv>>

\* HandoffScale's actions.  Where an instance ends, its reads go; a zombie
\* keeps the memory it had and applies its own commits.
ClientWriteR(k) == ClientWriteS(k) /\ UNCHANGED rVars
CommitWriteR(pw) == CommitWriteS(pw) /\ UNCHANGED rVars
EvictR(r) ==
    /\ EvictS(r)
    /\ reads' = IF r = Coordinator THEN {x \in reads : x.ep # epoch} ELSE reads
    /\ fenced' = IF r \in Peers THEN [fenced EXCEPT ![r] = 0] ELSE fenced
    /\ newest' = IF r \in Peers THEN [newest EXCEPT ![r] = 0] ELSE newest
    /\ dsent' = {d \in dsent : d.dst # r}
    /\ declRecv' = IF r \in Peers THEN [declRecv EXCEPT ![r] = FALSE] ELSE declRecv
    /\ UNCHANGED <<zmem, readCtr, badRead>>
ChunkCR(p, S) ==
    /\ ChunkC(p, S)
    /\ fenced' = [fenced EXCEPT ![p] = inc[Coordinator]]
    /\ newest' = [newest EXCEPT ![p] = inc[Coordinator]]
    /\ UNCHANGED <<zmem, reads, readCtr, badRead, dsent, declRecv>>
\* A peer that finishes on the coordinator's decline got that decline.
FinishRecoveryPeerR(p) ==
    /\ Coordinator \in seeded[p] \/ declRecv[p]
    /\ FinishRecoveryPeerS(p)
    /\ dsent' = {d \in dsent : d.dst # p}
    /\ declRecv' = [declRecv EXCEPT ![p] = FALSE]
    /\ UNCHANGED <<zmem, reads, readCtr, badRead, fenced, newest>>
ReseedChunkCR(c) == ReseedChunkC(c) /\ UNCHANGED rVars
ReseedChunkPeerR(c) ==
    /\ ReseedChunkPeer(c)
    /\ fenced' = IF c.src = Coordinator /\ c.inc >= fenced[c.dst]
                 THEN [fenced EXCEPT ![c.dst] = 0] ELSE fenced
    /\ newest' = IF c.src = Coordinator
                 THEN [newest EXCEPT ![c.dst] = Max(@, c.inc)] ELSE newest
    \* seeded by the coordinator, the peer no longer counts its decline
    /\ declRecv' = IF c.src = Coordinator /\ Complete(c)
                   THEN [declRecv EXCEPT ![c.dst] = FALSE] ELSE declRecv
    /\ UNCHANGED <<zmem, reads, readCtr, badRead, dsent>>
ChooseEpochR == ChooseEpochS /\ UNCHANGED rVars
AnnounceAckedR(ack) == AnnounceAckedS(ack) /\ UNCHANGED rVars
AnnounceRoundR == AnnounceRoundS /\ UNCHANGED rVars
FinishRecoveryCR == FinishRecoveryCS /\ UNCHANGED rVars
ChunkPeerR(q, p, S) == ChunkPeer(q, p, S) /\ UNCHANGED rVars
DeclinePeerR(q, p) ==
    /\ DeclinePeerS(q, p)
    /\ dsent' = IF q = Coordinator THEN dsent \cup {[dst |-> p, inc |-> inc[Coordinator]]}
                ELSE dsent
    /\ UNCHANGED <<zmem, reads, readCtr, badRead, fenced, newest, declRecv>>
\* The coordinator's decline d reaches its recovering peer: it fences the
\* peer unless the decliner or a newer incarnation fenced, announced to or
\* reseeded the peer already (a late decline of an incarnation that has
\* announced to the peer would fence it for good: that incarnation never
\* announces again).
DeclineArrivesR(d) ==
    /\ d \in dsent
    /\ status[d.dst] = "recovering"
    /\ declRecv' = IF Coordinator \in seeded[d.dst] THEN declRecv
                   ELSE [declRecv EXCEPT ![d.dst] = TRUE]
    /\ IF d.inc > newest[d.dst]
       THEN /\ fenced' = [fenced EXCEPT ![d.dst] = d.inc]
            /\ newest' = [newest EXCEPT ![d.dst] = d.inc]
       ELSE UNCHANGED <<fenced, newest>>
    /\ UNCHANGED <<allVarsS, zmem, reads, readCtr, badRead, dsent>>
\* A reseed request of peer p's incarnation i reaches the coordinator late:
\* i has been evicted since, or no longer waits for the coordinator (it
\* was answered, or it is ready).  The coordinator hears from i and answers
\* as it answers every request; of its answers only a decline to p's
\* current, recovering incarnation is taken (it fences p on arrival).
\* (Incarnation 1 never sent one.)
LateReseedR(p, i) ==
    /\ p \in Peers
    /\ i \in 2..inc[p]
    /\ i < inc[p] \/ status[p] # "recovering" \/ Coordinator \in seeded[p]
    /\ Heard(p, i)
    /\ dsent' = IF i = inc[p] /\ status[p] = "recovering" /\ ~CanSeed(Coordinator)
                THEN dsent \cup {[dst |-> p, inc |-> inc[Coordinator]]}
                ELSE dsent
    /\ UNCHANGED <<vars, msgVars, zVars, floor, got, chunks, digs, gsp>>
    /\ UNCHANGED <<zmem, reads, readCtr, badRead, fenced, newest, declRecv>>
\* A collect of coordinator incarnation c reaches ready peer p late: c is
\* gone or superseded since, or no longer collects.  p fences itself for c
\* unless c or a newer incarnation fenced, announced to or reseeded it
\* (the fence's rule); the answer goes where nothing takes it.
LateCollectR(p, c) ==
    /\ p \in Peers
    /\ IsReady(p)
    /\ c \in 2..inc[Coordinator]
    /\ c < inc[Coordinator] \/ status[Coordinator] # "collect"
    /\ c > newest[p]
    /\ fenced' = [fenced EXCEPT ![p] = c]
    /\ newest' = [newest EXCEPT ![p] = c]
    /\ UNCHANGED <<allVarsS, zmem, reads, readCtr, badRead, dsent, declRecv>>
DigestSendR(a) == DigestSend(a) /\ UNCHANGED rVars
DigestRecvR(d, S) == DigestRecv(d, S) /\ UNCHANGED rVars
GossipRecvR(g) == GossipRecvS(g) /\ UNCHANGED rVars
RaiseFloorR == RaiseFloor /\ UNCHANGED rVars
DeliverPushR(m) == fenced[m.dst] = 0 /\ DeliverPushS(m) /\ UNCHANGED rVars
AnnounceToR(p, a) ==
    /\ AnnounceToS(p, a)
    /\ fenced' = IF a.cinc >= fenced[p] THEN [fenced EXCEPT ![p] = 0] ELSE fenced
    /\ newest' = [newest EXCEPT ![p] = Max(@, a.cinc)]
    /\ UNCHANGED <<zmem, reads, readCtr, badRead, dsent, declRecv>>
SupersedeR ==
    /\ SupersedeS
    /\ zmem' = zmem \cup {[epoch |-> epoch, mem |-> mem[Coordinator]]}
    /\ UNCHANGED <<reads, readCtr, badRead, fenced, newest, dsent, declRecv>>
ZombieWriteR(z, k) == ZombieWriteS(z, k) /\ UNCHANGED rVars
ZombieCommitR(z, pw) ==
    /\ ZombieCommitS(z, pw)
    /\ zmem' = {IF y.epoch = z.epoch
                THEN [y EXCEPT !.mem[pw.key] =
                          MergeVal(@, [ep |-> pw.ep, ver |-> pw.ver, wid |-> pw.wid])]
                ELSE y : y \in zmem}
    /\ UNCHANGED <<reads, readCtr, badRead, fenced, newest, dsent, declRecv>>
ZombieFencedR(z) ==
    /\ ZombieFencedS(z)
    /\ zmem' = {y \in zmem : y.epoch # z.epoch}
    /\ reads' = {x \in reads : x.ep # z.epoch}
    /\ UNCHANGED <<readCtr, badRead, fenced, newest, dsent, declRecv>>

NextR ==
    \/ \E k \in Keys : ClientWriteR(k)
    \/ \E pw \in pending : CommitWriteR(pw)
    \/ \E r \in Replicas : EvictR(r)
    \/ \E p \in Peers, S \in SUBSET Keys : ChunkCR(p, S)
    \/ \E p \in Peers : FinishRecoveryPeerR(p)
    \/ \E c \in chunks : ReseedChunkCR(c) \/ ReseedChunkPeerR(c)
    \/ ChooseEpochR
    \/ \E ack \in annAcks : AnnounceAckedR(ack)
    \/ AnnounceRoundR
    \/ FinishRecoveryCR
    \/ \E p \in Peers, q \in Replicas, S \in SUBSET Keys : ChunkPeerR(q, p, S)
    \/ \E p \in Peers, q \in Replicas : DeclinePeerR(q, p)
    \/ \E a \in Replicas : DigestSendR(a)
    \/ \E d \in digs, S \in SUBSET Keys : DigestRecvR(d, S)
    \/ \E g \in gsp : GossipRecvR(g)
    \/ RaiseFloorR
    \/ \E m \in net : DeliverPushR(m)
    \/ \E p \in Peers, a \in anns : AnnounceToR(p, a)
    \/ SupersedeR
    \/ \E z \in zombies, k \in Keys : ZombieWriteR(z, k)
    \/ \E z \in zombies : \E pw \in z.pending : ZombieCommitR(z, pw)
    \/ \E z \in zombies : ZombieFencedR(z)
    \/ \E k \in Keys, e \in 1..MaxEpoch : ReadStart(k, e)
    \/ \E p \in Peers, e \in 1..MaxEpoch : ReadConfirm(p, e)
    \/ \E r \in reads : ReadFinish(r)
    \/ \E d \in dsent : DeclineArrivesR(d)
    \/ \E p \in Peers, i \in 2..MaxEvicts + 1 : LateReseedR(p, i)
    \/ \E p \in Peers, c \in 2..MaxEvicts + 1 : LateCollectR(p, c)

SpecR == InitR /\ [][NextR]_allVarsR

=============================================================================
