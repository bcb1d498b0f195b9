---------------------------- MODULE HandoffScale ----------------------------
(***************************************************************************)
(* HandoffScale = HandoffZombie + what a namespace holding real data       *)
(* needs (crates/protocol/src/handoff, docs/handoff.md section 5.16):      *)
(*                                                                         *)
(*  - Deletes.  A write whose id is in the constant Deletes is a delete:   *)
(*    its record is a tombstone.  Records keep Handoff's type [ep, ver,    *)
(*    wid], so every Handoff invariant is checked verbatim.                *)
(*                                                                         *)
(*  - Chunked snapshots.  A collect or reseed snapshot is a sequence of    *)
(*    chunks, each covering some keys the requester has not got yet from  *)
(*    that source (got[r][q]); each chunk is cut from the source's memory  *)
(*    when it is sent, by a source that CanSeed then, and carries its     *)
(*    epoch knowledge and floor.  A lost chunk is asked for again from the *)
(*    same point (the requester's got is the cursor), so a snapshot       *)
(*    resumes instead of restarting.  A source counts as seeded (HandoffV2 *)
(*    seeded) only once its chunks covered every key: finishing recovery  *)
(*    on a partial snapshot is not a step of this spec.  The code pages   *)
(*    in key order (one prefix of the rest after another); any split is   *)
(*    allowed here.                                                        *)
(*                                                                         *)
(*  - Digest anti-entropy.  Instead of whole memories, ready replicas      *)
(*    exchange digests (the code: hashes over key buckets; here the       *)
(*    memory the digest summarises, in digs) -- the coordinator to both   *)
(*    peers, each peer to the coordinator -- and the receiver answers     *)
(*    with its records where they differ (gsp: any part of its memory).   *)
(*    An idle namespace exchanges digests only.                            *)
(*                                                                         *)
(*  - The tombstone floor.  floor[r] is a stamp: a tombstone at or below  *)
(*    it is collected -- the replica no longer stores it (Concrete), and   *)
(*    mem keeps it here only as what the replica's floor stands for -- and *)
(*    a record at or below the floor for a key the replica does not store  *)
(*    (never had, or collected) is refused, whether it comes as a push or  *)
(*    as gossip.  So a ghost push older than a collected tombstone cannot  *)
(*    resurrect the key.  The coordinator raises the floor to its          *)
(*    (epoch, verCtr) only with nothing pending and after both peers sent  *)
(*    it digests equal to its own memory while knowing its epoch: every    *)
(*    record at or below the new floor is then the same everywhere         *)
(*    (FloorCovers).  Floors travel with digests and chunks.  Collected *)
(*    state is taken only by ready replicas: a recovering one stores and  *)
(*    merges everything, and it takes no pushes (a fresh instance knows no *)
(*    floor and would take any ghost).                                     *)
(*                                                                         *)
(*  - The memory budget, where it changes behaviour: the coordinator       *)
(*    admits a write only if the keys it stores plus those pending stay    *)
(*    within Budget (the code: bytes; every record counts one here).       *)
(*                                                                         *)
(* Checked against every invariant and property of Handoff/HandoffV2 and   *)
(* the extensions' type invariants, plus TypeOKScale and NoResurrection.   *)
(***************************************************************************)
EXTENDS HandoffZombie

CONSTANTS
    Deletes,  \* write ids that are deletes (their records are tombstones)
    Budget    \* records the coordinator stores or has pending, at most

ASSUME Deletes \subseteq 1..MaxWrites
ASSUME Budget \in Nat

VARIABLES
    floor,   \* floor[r]: the tombstone floor, a stamp [ep, ver]
    got,     \* got[r][q]: keys covered so far by q's chunks (the cursor)
    chunks,  \* snapshot chunks [src, dst, keys, mem, know, floor, inc] to
             \* dst's current incarnation and phase (inc: the source's)
    digs,    \* digests [src, dst, mem, floor, know, inc] ever sent
    gsp,     \* gossiped records [src, dst, mem, floor] ever sent
    reg      \* reg[p]: the newest incarnation of peer p the coordinator's
             \* current incarnation has heard from (0: none)

sVars == <<floor, got, chunks, digs, gsp, reg>>
allVarsS == <<allVarsZ, sVars>>

Stamp == [ep: 0..MaxEpoch, ver: 0..MaxWrites]
NoFloor == [ep |-> 0, ver |-> 0]
MaxF(a, b) == IF Wins(b, a) THEN b ELSE a

NoneGot == [q \in Replicas |-> {}]

IsTomb(v) == v # NoVal /\ v.wid \in Deletes

\* A tombstone at or below floor fl is collected.
DeadAt(v, fl) == IsTomb(v) /\ ~Wins(v, fl)

\* What replica r stores with floor fl: a ready replica has collected its
\* tombstones at or below its floor; a recovering one has not (yet).
ConcreteAt(r, fl) == [k \in Keys |-> IF IsReady(r) /\ DeadAt(mem[r][k], fl)
                                     THEN NoVal ELSE mem[r][k]]
Concrete(r) == ConcreteAt(r, floor[r])

\* Record v for key k at a replica holding cur with floor fl: refused when
\* it is at or below the floor and the replica stores nothing for k.
RefusedAt(cur, fl, v) == (cur = NoVal \/ DeadAt(cur, fl)) /\ ~Wins(v, fl)
MergeValAt(cur, fl, v) == IF v = NoVal \/ RefusedAt(cur, fl, v) THEN cur
                          ELSE MergeVal(cur, v)

Restrict(m, S) == [k \in Keys |-> IF k \in S THEN m[k] ELSE NoVal]

\* The budget: keys the coordinator stores or has a pending write for.
Counted == {k \in Keys : Concrete(Coordinator)[k] # NoVal} \cup {pw.key : pw \in pending}
BudgetAdmits(k) == k \in Counted \/ Cardinality(Counted) < Budget

\* Digests go from the coordinator to both peers and from a peer to the
\* coordinator.
DigestTo(a) == IF a = Coordinator THEN Peers ELSE {Coordinator}

GossipRoom == Cardinality(digs) + Cardinality(gsp) < MaxGossip

TypeOKScale ==
    /\ floor \in [Replicas -> Stamp]
    /\ got \in [Replicas -> [Replicas -> SUBSET Keys]]
    /\ chunks \subseteq [src: Replicas, dst: Replicas, keys: SUBSET Keys, mem: Mem,
                         know: 0..MaxEpoch, floor: Stamp, inc: 1..MaxEvicts + 1]
    /\ digs \subseteq [src: Replicas, dst: Replicas, mem: Mem, floor: Stamp,
                       know: 0..MaxEpoch, inc: 1..MaxEvicts + 1]
    /\ gsp \subseteq [src: Replicas, dst: Replicas, mem: Mem, floor: Stamp]
    /\ reg \in [Peers -> 0..MaxEvicts + 1]

\* The hazard tombstone collection must rule out: no replica holds a live
\* record older than a tombstone that a ready replica has collected (a
\* ghost of the deleted key, which gossip or a collect would spread).
NoResurrection ==
    \A r, q \in Replicas, k \in Keys :
        (IsReady(r) /\ DeadAt(mem[r][k], floor[r])) =>
            ~(mem[q][k] # NoVal /\ ~IsTomb(mem[q][k]) /\ Wins(mem[r][k], mem[q][k]))

\* The coordinator's own writes are above its floor.
PendingAboveFloor == \A pw \in pending : Wins(pw, floor[Coordinator])

-----------------------------------------------------------------------------

InitS ==
    /\ InitZ
    /\ floor = [r \in Replicas |-> NoFloor]
    /\ got = [r \in Replicas |-> NoneGot]
    /\ chunks = {}
    /\ digs = {}
    /\ gsp = {}
    /\ reg = [p \in Peers |-> 1]

\* Chunks addressed to r, or from q to r, dropped.
DropChunksFor(r) == {c \in chunks : c.dst # r}
DropChunksFrom(q, r) == {c \in chunks : ~(c.src = q /\ c.dst = r)}

ClientWriteS(k) ==
    /\ BudgetAdmits(k)
    /\ ClientWriteA(k)
    /\ UNCHANGED <<zVars, sVars>>

CommitWriteS(pw) == CommitWriteA(pw) /\ UNCHANGED <<zVars, sVars>>

\* An evicted replica forgets its floor and its snapshot progress; chunks to
\* its dead incarnation are dropped.  A new coordinator incarnation has
\* heard from nobody.
Forget(r) ==
    /\ floor' = [floor EXCEPT ![r] = NoFloor]
    /\ got' = [got EXCEPT ![r] = NoneGot]
    /\ chunks' = DropChunksFor(r)
    /\ reg' = IF r = Coordinator THEN [p \in Peers |-> 0] ELSE reg
    /\ UNCHANGED <<digs, gsp>>

\* The coordinator hears from incarnation i of peer p.
Heard(p, i) == reg' = [reg EXCEPT ![p] = Max(@, i)]

EvictS(r) == EvictA(r) /\ UNCHANGED zVars /\ Forget(r)

SupersedeS == Supersede /\ Forget(Coordinator)

\* A ready peer takes a push unless its floor refuses it.  A recovering one
\* takes none.
DeliverPushS(m) ==
    /\ IsReady(m.dst)
    /\ ~RefusedAt(mem[m.dst][m.key], floor[m.dst], [ep |-> m.ep, ver |-> m.ver, wid |-> m.wid])
    /\ DeliverPushZ(m)
    /\ UNCHANGED <<zVars, sVars>>

AnnounceToS(p, a) == AnnounceToZ(p, a) /\ UNCHANGED <<zVars, sVars>>

\* A chunk of S, cut from q's memory now, for requester r.
Chunk(q, r, S, know) ==
    [src |-> q, dst |-> r, keys |-> S, mem |-> Restrict(Concrete(q), S),
     know |-> know, floor |-> floor[q], inc |-> inc[q]]

\* A recovering peer asks the coordinator first, and the other peer only
\* once the coordinator answered this incarnation (a chunk or a decline):
\* so the coordinator knows every peer incarnation that may hold chunks.
HeardFromC(p) ==
    \/ Coordinator \in seeded[p]
    \/ got[p][Coordinator] # {}
    \/ [src |-> Coordinator, dst |-> p] \in declines
    \/ \E c \in chunks : c.src = Coordinator /\ c.dst = p

\* A ready peer answers the collect with its next chunk.
ChunkC(p, S) ==
    /\ status[Coordinator] = "collect"
    /\ p \notin seeded[Coordinator]
    /\ CanSeed(p)
    /\ S # {}
    /\ S \subseteq Keys \ got[Coordinator][p]
    /\ chunks' = chunks \cup {Chunk(p, Coordinator, S, known[p])}
    /\ UNCHANGED <<vars, msgVars, zVars, floor, got, digs, gsp, reg>>

\* A replica that CanSeed answers a recovering peer with its next chunk.
ChunkPeer(q, p, S) ==
    /\ p \in Peers
    /\ q # p
    /\ status[p] = "recovering"
    /\ q \notin seeded[p]
    /\ CanSeed(q)
    /\ S # {}
    /\ S \subseteq Keys \ got[p][q]
    /\ IF q = Coordinator THEN Heard(p, inc[p])
       ELSE HeardFromC(p) /\ UNCHANGED reg
    /\ chunks' = chunks \cup {Chunk(q, p, S, SrcKnow(q))}
    /\ UNCHANGED <<vars, msgVars, zVars, floor, got, digs, gsp>>

\* Progress after chunk c: the source is seeded once every key is covered.
Complete(c) == got[c.dst][c.src] \cup c.keys = Keys
Advance(c) ==
    /\ got' = [got EXCEPT ![c.dst][c.src] = IF Complete(c) THEN {} ELSE @ \cup c.keys]
    /\ seeded' = IF Complete(c) THEN [seeded EXCEPT ![c.dst] = @ \cup {c.src}]
                 ELSE seeded
    /\ chunks' = DropChunksFrom(c.src, c.dst)
    /\ floor' = [floor EXCEPT ![c.dst] = MaxF(@, c.floor)]

\* ReseedC, one chunk at a time: merge it and the epochs it witnesses.
ReseedChunkC(c) ==
    /\ c \in chunks
    /\ c.dst = Coordinator
    /\ status[Coordinator] = "collect"
    /\ c.src \notin seeded[Coordinator]
    /\ mem' = [mem EXCEPT ![Coordinator] = MergeMem(@, c.mem)]
    /\ collectMax' = Max(collectMax, Max(c.know, MemEpMax(c.mem)))
    /\ Advance(c)
    /\ Heard(c.src, c.inc)
    /\ UNCHANGED <<status, known, epoch, verCtr, widCtr, pending, net, acked,
                   evictCount>>
    /\ UNCHANGED <<msgVars, zVars, digs, gsp>>

\* ReseedPeer, one chunk at a time.
ReseedChunkPeer(c) ==
    /\ c \in chunks
    /\ c.dst \in Peers
    /\ status[c.dst] = "recovering"
    /\ c.src \notin seeded[c.dst]
    /\ mem' = [mem EXCEPT ![c.dst] = MergeMem(@, c.mem)]
    /\ known' = [known EXCEPT ![c.dst] = Max(@, Max(c.know, MemEpMax(c.mem)))]
    /\ Advance(c)
    /\ declines' = IF Complete(c) THEN DropFrom(declines, c.src, c.dst) ELSE declines
    /\ UNCHANGED <<status, epoch, collectMax, verCtr, widCtr, pending, net,
                   acked, evictCount>>
    /\ UNCHANGED <<acks, snaps, anns, annAcks, gossip, inc, annRound, curAck,
                   prevAck, zVars, digs, gsp, reg>>

ChooseEpochS ==
    /\ ChooseEpochA
    /\ chunks' = DropChunksFor(Coordinator)
    /\ UNCHANGED <<zVars, floor, got, digs, gsp, reg>>

AnnounceAckedS(ack) == AnnounceAcked(ack) /\ UNCHANGED <<zVars, sVars>>
AnnounceRoundS == AnnounceRound /\ UNCHANGED <<zVars, sVars>>
FinishRecoveryCS == FinishRecoveryCA /\ UNCHANGED <<zVars, sVars>>
DeclinePeerS(q, p) ==
    /\ DeclinePeer(q, p)
    /\ IF q = Coordinator THEN Heard(p, inc[p]) ELSE UNCHANGED reg
    /\ UNCHANGED <<zVars, floor, got, chunks, digs, gsp>>

FinishRecoveryPeerS(p) ==
    /\ FinishRecoveryPeerA(p)
    /\ chunks' = DropChunksFor(p)
    /\ got' = [got EXCEPT ![p] = NoneGot]
    /\ UNCHANGED <<zVars, floor, digs, gsp, reg>>

\* A ready replica sends its digest.
DigestSend(a) ==
    /\ IsReady(a)
    /\ GossipRoom
    /\ digs' = digs \cup {[src |-> a, dst |-> b, mem |-> Concrete(a), floor |-> floor[a],
                           know |-> SrcKnow(a), inc |-> inc[a]] : b \in DigestTo(a)}
    /\ UNCHANGED <<vars, msgVars, zVars, floor, got, chunks, gsp, reg>>

\* A ready replica takes a digest's floor (collecting what falls below it)
\* and answers with its records where they differ: any part S of its
\* memory, or nothing.  The coordinator hears from the digest's sender.
DigestRecv(d, S) ==
    /\ d \in digs
    /\ IsReady(d.dst)
    /\ LET fl == MaxF(floor[d.dst], d.floor)
       IN  /\ floor' = [floor EXCEPT ![d.dst] = fl]
           /\ IF S = {} THEN UNCHANGED gsp
              ELSE /\ GossipRoom
                   /\ gsp' = gsp \cup {[src |-> d.dst, dst |-> d.src,
                                        mem |-> Restrict(ConcreteAt(d.dst, fl), S), floor |-> fl]}
    /\ IF d.dst = Coordinator THEN Heard(d.src, d.inc) ELSE UNCHANGED reg
    /\ UNCHANGED <<vars, msgVars, zVars, got, chunks, digs>>

\* A ready replica takes gossiped records: the floor first, then each record
\* the floor does not refuse, max-merged.
GossipRecvS(g) ==
    /\ g \in gsp
    /\ IsReady(g.dst)
    /\ LET fl == MaxF(floor[g.dst], g.floor)
       IN  /\ floor' = [floor EXCEPT ![g.dst] = fl]
           /\ mem' = [mem EXCEPT ![g.dst] = [k \in Keys |-> MergeValAt(mem[g.dst][k], fl, g.mem[k])]]
    /\ UNCHANGED <<status, seeded, known, epoch, collectMax, verCtr, widCtr,
                   pending, net, acked, evictCount>>
    /\ UNCHANGED <<msgVars, zVars, got, chunks, digs, gsp, reg>>

\* The coordinator raises its floor to (epoch, verCtr): nothing pending, and
\* the newest incarnation it heard from of each peer sent it a digest equal
\* to its own memory while knowing its epoch.
RaiseFloor ==
    /\ IsReady(Coordinator)
    /\ pending = {}
    /\ LET fl == [ep |-> epoch, ver |-> verCtr]
       IN  /\ Wins(fl, floor[Coordinator])
           /\ \A p \in Peers : \E d \in digs :
                  /\ d.src = p /\ d.dst = Coordinator /\ d.inc = reg[p]
                  /\ d.know = epoch /\ d.mem = Concrete(Coordinator)
           /\ floor' = [floor EXCEPT ![Coordinator] = fl]
    /\ UNCHANGED <<vars, msgVars, zVars, got, chunks, digs, gsp, reg>>

ZombieWriteS(z, k) == ZombieWrite(z, k) /\ UNCHANGED sVars
ZombieCommitS(z, pw) == ZombieCommit(z, pw) /\ UNCHANGED sVars
ZombieFencedS(z) == ZombieFenced(z) /\ UNCHANGED sVars

NextS ==
    \/ \E k \in Keys : ClientWriteS(k)
    \/ \E pw \in pending : CommitWriteS(pw)
    \/ \E r \in Replicas : EvictS(r)
    \/ \E p \in Peers, S \in SUBSET Keys : ChunkC(p, S)
    \/ \E p \in Peers : FinishRecoveryPeerS(p)
    \/ \E c \in chunks : ReseedChunkC(c) \/ ReseedChunkPeer(c)
    \/ ChooseEpochS
    \/ \E ack \in annAcks : AnnounceAckedS(ack)
    \/ AnnounceRoundS
    \/ FinishRecoveryCS
    \/ \E p \in Peers, q \in Replicas, S \in SUBSET Keys : ChunkPeer(q, p, S)
    \/ \E p \in Peers, q \in Replicas : DeclinePeerS(q, p)
    \/ \E a \in Replicas : DigestSend(a)
    \/ \E d \in digs, S \in SUBSET Keys : DigestRecv(d, S)
    \/ \E g \in gsp : GossipRecvS(g)
    \/ RaiseFloor
    \/ \E m \in net : DeliverPushS(m)
    \/ \E p \in Peers, a \in anns : AnnounceToS(p, a)
    \/ SupersedeS
    \/ \E z \in zombies, k \in Keys : ZombieWriteS(z, k)
    \/ \E z \in zombies : \E pw \in z.pending : ZombieCommitS(z, pw)
    \/ \E z \in zombies : ZombieFencedS(z)

SpecS == InitS /\ [][NextS]_allVarsS

=============================================================================
