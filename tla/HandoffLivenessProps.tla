------------------------- MODULE HandoffLivenessProps -------------------------
(***************************************************************************)
(* The liveness promises of the store and the two predicates their         *)
(* fairness conditions share, stated once on HandoffAcks' variables for    *)
(* both liveness modules: HandoffLiveness (on HandoffAcks) and             *)
(* HandoffReadsLiveness (on HandoffReads, which extends HandoffAcks).      *)
(***************************************************************************)
EXTENDS HandoffAcks

\* m is a push of a write the coordinator still has pending.
PendingPush(m) ==
    \E pw \in pending : pw.key = m.key /\ pw.ep = m.ep /\ pw.ver = m.ver /\ pw.wid = m.wid

\* a is the announce of the coordinator's current instance and round.
CurrentAnnounce(a) ==
    /\ status[Coordinator] = "announce"
    /\ a.ep = epoch
    /\ a.round = annRound
    /\ a.cinc = inc[Coordinator]

\* Every write identity the bounds allow, without the doomed flag.
WriteIds == [key: Keys, ep: 1..MaxEpoch, ver: 1..MaxWrites, wid: 1..MaxWrites]

AckedAs(w, d) ==
    [key |-> w.key, ep |-> w.ep, ver |-> w.ver, wid |-> w.wid, doomed |-> d] \in acked

\* All replicas ready, each holding w (or a newer record of its key).
HeldEverywhere(w) == \A r \in Replicas : IsReady(r) /\ Holds(r, w)

\* An acknowledged write is eventually, and from then on, held by every
\* replica, all of them ready -- unless an eviction destroyed its last copy
\* (doomed, the store's stated loss model).
AckedWritesReachEveryReplica ==
    \A w \in WriteIds : [](AckedAs(w, FALSE) => <>[](AckedAs(w, TRUE) \/ HeldEverywhere(w)))

\* A recovering peer becomes ready.
PeersRecover == \A p \in Peers : status[p] = "recovering" ~> status[p] = "ready"

\* A coordinator that collects or announces serves again.
CoordinatorServesAgain == status[Coordinator] # "ready" ~> status[Coordinator] = "ready"

=============================================================================
