----------------------------- MODULE HandoffCond -----------------------------
(***************************************************************************)
(* HandoffCond = HandoffReads + conditional writes and expiring keys       *)
(* (issue 31; docs/handoff.md 5.18).                                       *)
(*                                                                         *)
(* Conditional writes.  A write may carry a condition on its key's current *)
(* record: IfMatch(w) (the record is write w's, and not absent) or         *)
(* IfAbsent (no record, a tombstone, or an expired record).  The instance  *)
(* that serves it evaluates it against its memory of committed records,    *)
(* and only when it has no write to that key pending (CondIssue,           *)
(* CondFail); evaluating and issuing are one step.                         *)
(*                                                                         *)
(*  - The condition holds: the write is issued at once, exactly like a     *)
(*    plain write (pending, pushed, committed on a peer's ack).  No         *)
(*    confirmation is needed: the write commits only on the ack of an      *)
(*    unfenced peer that knows the instance's epoch, which shows that no   *)
(*    newer instance has committed anything; and the instance's memory     *)
(*    holds every write committed before by it and by older instances     *)
(*    (the collect and its fence, HandoffReads).  A zombie's write whose   *)
(*    condition held on a stale memory therefore never commits.            *)
(*  - The condition fails: a failure must not be answered from a zombie's  *)
(*    stale memory, so it waits for a confirmation of the instance's epoch *)
(*    after it arrived (ConfirmC, HandoffReads' ReadConfirm that also      *)
(*    confirms conditions), and is evaluated again then.  An answered      *)
(*    failure is final: nothing is ever issued for it.                     *)
(*                                                                         *)
(* The client's write id is taken when the request arrives (CondStart):    *)
(* it decides, through HandoffScale's constant Deletes, whether it is a    *)
(* conditional delete, which takes IfMatch only.                           *)
(*                                                                         *)
(* Expiring keys.  A PUT may carry a time to live; the instance that       *)
(* issues it stamps the expiry now + ttl (expAt, per write id, a function  *)
(* of the write like its value, so it survives evictions and recovery as  *)
(* the record does).  Reads and conditions see a record whose expiry has  *)
(* passed as absent.  The ready coordinator deletes such a record with a   *)
(* committed tombstone (Expire), issued like a client delete, only while   *)
(* that record is still its current one and nothing is pending on the     *)
(* key.  Like client deletes, expiry deletes take the write ids in         *)
(* Deletes, which keeps every HandoffScale definition (IsTomb, the floor,  *)
(* NoResurrection) and HandoffReads' Stale verbatim.  now is the clock,   *)
(* advanced by Tick up to MaxTime.                                         *)
(*                                                                         *)
(* What is checked, besides every invariant of HandoffReads:               *)
(*  - CondLinearizable: a conditional write that committed was evaluated   *)
(*    against the record it replaces: no acknowledged, not doomed write of *)
(*    its key lies between that record and it in (ep, ver) order, and none *)
(*    acknowledged before it began is newer than it; and a failure was    *)
(*    answered against a value no older than the newest write completed    *)
(*    before the request began (HandoffReads' Stale, as for reads).        *)
(*  - ExpiryDeletesOnlyExpired: an expiry delete was issued for a record   *)
(*    whose expiry had passed, and, once committed, replaced exactly it.   *)
(*  - ExpiredNeverServed: no read and no condition saw a record whose      *)
(*    expiry had passed as present.                                        *)
(***************************************************************************)
EXTENDS HandoffReads

CONSTANTS
    MaxConds,  \* bound on the conditional writes started
    MaxTime,   \* bound on the clock
    TTLs       \* the times to live a PUT may carry, besides none

ASSUME TTLs \subseteq Nat \ {0}

\* The condition IfAbsent; IfMatch(w) is the write id w itself.
Absent == 0

VARIABLES
    now,           \* the clock
    expAt,         \* expAt[w]: when write w's record expires, 0: never
    conds,         \* conditional writes waiting [key, ep, wid, cond, ttl,
                   \* seen, conf]: at the instance serving epoch ep; seen and
                   \* conf as a read's
    condCtr,       \* conditional writes started so far
    condIssued,    \* history: the conditional writes issued [wid, val, seen]:
                   \* val the record their condition was evaluated against
    expIssued,     \* history: the expiry deletes issued [wid, val, at]: val
                   \* the record deleted, at the time they were issued
    badCond,       \* history: a failure was answered against a stale value
    servedExpired  \* history: a record whose expiry had passed was seen

cVars == <<now, expAt, conds, condCtr, condIssued, expIssued, badCond,
           servedExpired>>
allVarsC == <<allVarsR, cVars>>

Wids == 1..MaxWrites

TypeOKCond ==
    /\ now \in 0..MaxTime
    /\ expAt \in [Wids -> 0..MaxTime + SetMax(TTLs)]
    /\ conds \subseteq [key: Keys, ep: 1..MaxEpoch, wid: Wids, cond: {Absent} \cup Wids,
                        ttl: {0} \cup TTLs, seen: SUBSET Wids, conf: BOOLEAN]
    /\ condCtr \in 0..MaxConds
    /\ condIssued \subseteq [wid: Wids, val: Rec \cup {NoVal}, seen: SUBSET Wids]
    /\ expIssued \subseteq [wid: Wids, val: Rec, at: 0..MaxTime]
    /\ badCond \in BOOLEAN
    /\ servedExpired \in BOOLEAN

\* Record v has expired.
Expired(v) == v # NoVal /\ expAt[v.wid] # 0 /\ expAt[v.wid] <= now

\* What a read or a condition sees of record v: nothing once it expired.
Visible(v) == IF Expired(v) THEN NoVal ELSE v

\* Whether condition c holds on record v.
Matches(c, v) ==
    LET u == Visible(v)
    IN  IF c = Absent THEN u = NoVal \/ IsTomb(u)
        ELSE u # NoVal /\ ~IsTomb(u) /\ u.wid = c

\* The conditions and times to live write id w may carry: a delete takes
\* IfMatch and no time to live.
CondsFor(w) == IF w \in Deletes THEN 1..(w - 1) ELSE {Absent} \cup 1..(w - 1)
TTLsFor(w) == IF w \in Deletes THEN {0} ELSE {0} \cup TTLs
ExpiryOf(t) == IF t = 0 THEN 0 ELSE now + t

\* The pending writes of the instance serving epoch e.
InstPending(e) == IF Serves(e) THEN pending
                  ELSE (CHOOSE z \in zombies : z.epoch = e).pending

\* Acknowledged write w is newer than record v (or v is no record).
Newer(w, v) == v = NoVal \/ Wins(w, v)

\* No acknowledged, not doomed write of a's key but a itself is newer than
\* v and older than a, or (when a was issued by a request that began after
\* the writes seen completed) newer than a: a replaced v.
Replaced(a, v, seen) ==
    \A w \in acked :
        (w.key = a.key /\ w.wid # a.wid /\ ~w.doomed /\ Newer(w, v)) =>
            ~(Wins(a, w) \/ w.wid \in seen)

CondLinearizable ==
    /\ ~badCond
    /\ \A e \in condIssued, a \in acked : a.wid = e.wid => Replaced(a, e.val, e.seen)

ExpiryDeletesOnlyExpired ==
    \A e \in expIssued :
        /\ expAt[e.val.wid] # 0 /\ expAt[e.val.wid] <= e.at
        /\ \A a \in acked : a.wid = e.wid => Replaced(a, e.val, {})

ExpiredNeverServed == ~servedExpired

-----------------------------------------------------------------------------

InitC ==
    /\ InitR
    /\ now = 0
    /\ expAt = [w \in Wids |-> 0]
    /\ conds = {}
    /\ condCtr = 0
    /\ condIssued = {}
    /\ expIssued = {}
    /\ badCond = FALSE
    /\ servedExpired = FALSE

\* HandoffReads' actions.  A PUT carries a time to live; where an instance
\* ends, its conditional writes go (their clients get no answer).
ClientWriteC(k, t) ==
    /\ t \in TTLsFor(widCtr)
    /\ ClientWriteR(k)
    /\ expAt' = [expAt EXCEPT ![widCtr] = ExpiryOf(t)]
    /\ UNCHANGED <<now, conds, condCtr, condIssued, expIssued, badCond, servedExpired>>
CommitWriteC(pw) == CommitWriteR(pw) /\ UNCHANGED cVars
EvictC(r) ==
    /\ EvictR(r)
    /\ conds' = IF r = Coordinator THEN {x \in conds : x.ep # epoch} ELSE conds
    /\ UNCHANGED <<now, expAt, condCtr, condIssued, expIssued, badCond, servedExpired>>
ChunkCC(p, S) == ChunkCR(p, S) /\ UNCHANGED cVars
FinishRecoveryPeerC(p) == FinishRecoveryPeerR(p) /\ UNCHANGED cVars
ReseedChunkCC(c) == ReseedChunkCR(c) /\ UNCHANGED cVars
ReseedChunkPeerC(c) == ReseedChunkPeerR(c) /\ UNCHANGED cVars
ChooseEpochC == ChooseEpochR /\ UNCHANGED cVars
AnnounceAckedC(ack) == AnnounceAckedR(ack) /\ UNCHANGED cVars
AnnounceRoundC == AnnounceRoundR /\ UNCHANGED cVars
FinishRecoveryCC == FinishRecoveryCR /\ UNCHANGED cVars
ChunkPeerC(q, p, S) == ChunkPeerR(q, p, S) /\ UNCHANGED cVars
DeclinePeerC(q, p) == DeclinePeerR(q, p) /\ UNCHANGED cVars
DigestSendC(a) == DigestSendR(a) /\ UNCHANGED cVars
DigestRecvC(d, S) == DigestRecvR(d, S) /\ UNCHANGED cVars
GossipRecvC(g) == GossipRecvR(g) /\ UNCHANGED cVars
RaiseFloorC == RaiseFloorR /\ UNCHANGED cVars
DeliverPushC(m) == DeliverPushR(m) /\ UNCHANGED cVars
AnnounceToC(p, a) == AnnounceToR(p, a) /\ UNCHANGED cVars
SupersedeC == SupersedeR /\ UNCHANGED cVars
ZombieWriteC(z, k, t) ==
    /\ t \in TTLsFor(widCtr)
    /\ ZombieWriteR(z, k)
    /\ expAt' = [expAt EXCEPT ![widCtr] = ExpiryOf(t)]
    /\ UNCHANGED <<now, conds, condCtr, condIssued, expIssued, badCond, servedExpired>>
ZombieCommitC(z, pw) == ZombieCommitR(z, pw) /\ UNCHANGED cVars
ZombieFencedC(z) ==
    /\ ZombieFencedR(z)
    /\ conds' = {x \in conds : x.ep # z.epoch}
    /\ UNCHANGED <<now, expAt, condCtr, condIssued, expIssued, badCond, servedExpired>>
ReadStartC(k, e) == ReadStart(k, e) /\ UNCHANGED cVars
LateReseedC(p, i) == LateReseedR(p, i) /\ UNCHANGED cVars
LateCollectC(p, c) == LateCollectR(p, c) /\ UNCHANGED cVars

\* HandoffReads' ReadConfirm, for conditional writes too: a ready, unfenced
\* peer that knows epoch e confirms it; every read and conditional write
\* waiting at the instance at e now is confirmed.
ConfirmC(p, e) ==
    /\ IsReady(p)
    /\ fenced[p] = 0
    /\ known[p] = e
    /\ \/ \E r \in reads : r.ep = e /\ ~r.conf
       \/ \E x \in conds : x.ep = e /\ ~x.conf
    /\ reads' = {IF r.ep = e THEN [r EXCEPT !.conf = TRUE] ELSE r : r \in reads}
    /\ conds' = {IF x.ep = e THEN [x EXCEPT !.conf = TRUE] ELSE x : x \in conds}
    /\ UNCHANGED <<allVarsS, zmem, readCtr, badRead, fenced, newest, dsent, declRecv>>
    /\ UNCHANGED <<now, expAt, condCtr, condIssued, expIssued, badCond, servedExpired>>

\* A confirmed read is answered; an expired record reads as absent.
ReadFinishC(r) ==
    /\ ReadFinish(r)
    /\ servedExpired' = (servedExpired \/ Expired(Visible(InstMem(r.ep)[r.key])))
    /\ UNCHANGED <<now, expAt, conds, condCtr, condIssued, expIssued, badCond>>

DeclineArrivesC(d) == DeclineArrivesR(d) /\ UNCHANGED cVars

\* A conditional write of k with condition c and time to live t reaches the
\* instance serving epoch e, with the client's write id.
CondStart(k, e, c, t) ==
    /\ condCtr < MaxConds
    /\ Alive(e)
    /\ widCtr <= MaxWrites
    /\ c \in CondsFor(widCtr)
    /\ t \in TTLsFor(widCtr)
    /\ conds' = conds \cup {[key |-> k, ep |-> e, wid |-> widCtr, cond |-> c, ttl |-> t,
                             seen |-> {w.wid : w \in {x \in acked : x.key = k}},
                             conf |-> FALSE]}
    /\ condCtr' = condCtr + 1
    /\ widCtr' = widCtr + 1
    /\ UNCHANGED <<mem, status, seeded, known, epoch, collectMax, verCtr, pending, net,
                   acked, evictCount>>
    /\ UNCHANGED <<msgVars, zVars, sVars, rVars>>
    /\ UNCHANGED <<now, expAt, condIssued, expIssued, badCond, servedExpired>>

\* The condition of x holds on its instance's memory, with nothing pending on
\* its key there: the write is issued as the instance issues any write (the
\* coordinator within its budget), at the instance's epoch and next version.
CondIssue(x) ==
    /\ x \in conds
    /\ Alive(x.ep)
    /\ ~\E pw \in InstPending(x.ep) : pw.key = x.key
    /\ LET v == InstMem(x.ep)[x.key]
       IN  /\ Matches(x.cond, v)
           /\ condIssued' = condIssued \cup {[wid |-> x.wid, val |-> v, seen |-> x.seen]}
           /\ servedExpired' = (servedExpired \/ Expired(Visible(v)))
    /\ IF Serves(x.ep)
       THEN LET w == [key |-> x.key, ep |-> epoch, ver |-> verCtr + 1, wid |-> x.wid]
            IN  /\ BudgetAdmits(x.key)
                /\ pending' = pending \cup {w}
                /\ net' = net \cup {[dst |-> p, key |-> w.key, ep |-> w.ep, ver |-> w.ver,
                                     wid |-> w.wid] : p \in Peers}
                /\ verCtr' = verCtr + 1
                /\ UNCHANGED zombies
       ELSE LET z == CHOOSE y \in zombies : y.epoch = x.ep
                w == [key |-> x.key, ep |-> z.epoch, ver |-> z.verCtr + 1, wid |-> x.wid]
            IN  /\ zombies' = (zombies \ {z}) \cup
                              {[z EXCEPT !.verCtr = @ + 1, !.pending = @ \cup {w}]}
                /\ net' = net \cup {[dst |-> p, key |-> w.key, ep |-> w.ep, ver |-> w.ver,
                                     wid |-> w.wid] : p \in Peers}
                /\ UNCHANGED <<pending, verCtr>>
    /\ expAt' = [expAt EXCEPT ![x.wid] = ExpiryOf(x.ttl)]
    /\ conds' = conds \ {x}
    /\ UNCHANGED <<mem, status, seeded, known, epoch, collectMax, widCtr, acked, evictCount>>
    /\ UNCHANGED <<msgVars, supersedes, sVars, rVars>>
    /\ UNCHANGED <<now, condCtr, expIssued, badCond>>

\* The condition of x fails on its instance's memory, with nothing pending
\* on its key there, after a confirmation: the failure is answered.
CondFail(x) ==
    /\ x \in conds
    /\ x.conf
    /\ Alive(x.ep)
    /\ ~\E pw \in InstPending(x.ep) : pw.key = x.key
    /\ LET v == InstMem(x.ep)[x.key]
       IN  /\ ~Matches(x.cond, v)
           /\ badCond' = (badCond \/ Stale(x, v))
           /\ servedExpired' = (servedExpired \/ Expired(Visible(v)))
    /\ conds' = conds \ {x}
    /\ UNCHANGED allVarsR
    /\ UNCHANGED <<now, expAt, condCtr, condIssued, expIssued>>

\* The ready coordinator deletes k's record, whose expiry has passed, with
\* nothing pending on k: a delete issued as a client's is.
Expire(k) ==
    LET v == mem[Coordinator][k]
    IN  /\ IsReady(Coordinator)
        /\ widCtr \in Deletes
        /\ v # NoVal /\ ~IsTomb(v) /\ Expired(v)
        /\ ~\E pw \in pending : pw.key = k
        /\ ClientWriteR(k)
        /\ expIssued' = expIssued \cup {[wid |-> widCtr, val |-> v, at |-> now]}
        /\ UNCHANGED <<now, expAt, conds, condCtr, condIssued, badCond, servedExpired>>

\* Time passes.
Tick ==
    /\ now < MaxTime
    /\ now' = now + 1
    /\ UNCHANGED allVarsR
    /\ UNCHANGED <<expAt, conds, condCtr, condIssued, expIssued, badCond, servedExpired>>

NextC ==
    \/ \E k \in Keys, t \in {0} \cup TTLs : ClientWriteC(k, t)
    \/ \E pw \in pending : CommitWriteC(pw)
    \/ \E r \in Replicas : EvictC(r)
    \/ \E p \in Peers, S \in SUBSET Keys : ChunkCC(p, S)
    \/ \E p \in Peers : FinishRecoveryPeerC(p)
    \/ \E c \in chunks : ReseedChunkCC(c) \/ ReseedChunkPeerC(c)
    \/ ChooseEpochC
    \/ \E ack \in annAcks : AnnounceAckedC(ack)
    \/ AnnounceRoundC
    \/ FinishRecoveryCC
    \/ \E p \in Peers, q \in Replicas, S \in SUBSET Keys : ChunkPeerC(q, p, S)
    \/ \E p \in Peers, q \in Replicas : DeclinePeerC(q, p)
    \/ \E a \in Replicas : DigestSendC(a)
    \/ \E d \in digs, S \in SUBSET Keys : DigestRecvC(d, S)
    \/ \E g \in gsp : GossipRecvC(g)
    \/ RaiseFloorC
    \/ \E m \in net : DeliverPushC(m)
    \/ \E p \in Peers, a \in anns : AnnounceToC(p, a)
    \/ SupersedeC
    \/ \E z \in zombies, k \in Keys, t \in {0} \cup TTLs : ZombieWriteC(z, k, t)
    \/ \E z \in zombies : \E pw \in z.pending : ZombieCommitC(z, pw)
    \/ \E z \in zombies : ZombieFencedC(z)
    \/ \E k \in Keys, e \in 1..MaxEpoch : ReadStartC(k, e)
    \/ \E p \in Peers, e \in 1..MaxEpoch : ConfirmC(p, e)
    \/ \E r \in reads : ReadFinishC(r)
    \/ \E d \in dsent : DeclineArrivesC(d)
    \/ \E p \in Peers, i \in 2..MaxEvicts + 1 : LateReseedC(p, i)
    \/ \E p \in Peers, c \in 2..MaxEvicts + 1 : LateCollectC(p, c)
    \/ \E k \in Keys, e \in 1..MaxEpoch, c \in {Absent} \cup Wids, t \in {0} \cup TTLs :
           CondStart(k, e, c, t)
    \/ \E x \in conds : CondIssue(x)
    \/ \E x \in conds : CondFail(x)
    \/ \E k \in Keys : Expire(k)
    \/ Tick

SpecC == InitC /\ [][NextC]_allVarsC

=============================================================================
