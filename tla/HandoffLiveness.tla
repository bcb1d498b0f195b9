-------------------------- MODULE HandoffLiveness --------------------------
(***************************************************************************)
(* HandoffLiveness = HandoffAcks + the fairness the implementation        *)
(* provides + the three liveness promises of the store:                    *)
(*                                                                         *)
(*  - AckedWritesReachEveryReplica: once evictions stop, every             *)
(*    acknowledged write that was not doomed is held by every replica,     *)
(*    and all of them are ready;                                           *)
(*  - PeersRecover: a recovering peer becomes ready;                       *)
(*  - CoordinatorServesAgain: a recovering coordinator serves again.       *)
(*                                                                         *)
(* Evictions stop because there are at most MaxEvicts of them, and the     *)
(* Evict guard of HandoffV2 keeps some replica ready, so a replica that    *)
(* recovers has at most one other replica down.  Nothing here weakens a    *)
(* safety property: the cfg checks every invariant of HandoffAcks too.     *)
(*                                                                         *)
(* Gossip.  HandoffAcks bounds gossip (MaxGossip messages in all), which   *)
(* is fine for safety but makes convergence false: the bound can be spent  *)
(* before a write exists.  The implementation gossips every 5 s forever.   *)
(* Here MaxGossip = 0 switches the message gossip off and GossipL stands   *)
(* for one gossip round that gets through: GossipSend(a) immediately       *)
(* followed by the GossipRecv of its message at b.  Its message is not     *)
(* kept: a later delivery of it would be a max-merge of an older memory,   *)
(* which changes nothing or is a GossipL of that older memory.             *)
(*                                                                         *)
(* Fairness: weak fairness only on what a timer of the implementation      *)
(* keeps trying (protocol::handoff::Config: retry every 250 ms, gossip     *)
(* every 5 s), and on the steps a replica takes on a message it received.  *)
(* Links are fair-lossy: a message sent infinitely often is delivered      *)
(* infinitely often.  No fairness on what is sent only once: the pushes of *)
(* a write after it committed (the coordinator stops resending then), the *)
(* messages of dead instances (ghosts), and the environment: clients       *)
(* (ClientWriteA) and the platform (EvictA).  Each conjunct of Fairness    *)
(* names the timer or the reply that justifies it.                         *)
(***************************************************************************)
EXTENDS HandoffLivenessProps

\* One gossip round from a to b that gets through: GossipSend(a) followed
\* by the GossipRecv of its message at b.
GossipL(a, b) ==
    /\ a # b
    /\ IsReady(a)
    /\ IsReady(b)
    /\ mem' = [mem EXCEPT ![b] = MergeMem(@, mem[a])]
    /\ UNCHANGED <<status, seeded, known, epoch, collectMax, verCtr, widCtr,
                   pending, net, acked, evictCount>>
    /\ UNCHANGED msgVars

NextL ==
    \/ NextA
    \/ \E a, b \in Replicas : GossipL(a, b)

-----------------------------------------------------------------------------
(* Fairness *)

\* Writes.  The Retry timer resends the push of every pending write to both
\* peers until the write commits, and a peer answers every push it merges
\* with an ack, which rides back in the push's HTTP response; the
\* coordinator commits on the first ack of a pending write.
FairWrites ==
    /\ \A p \in Peers : WF_allVars(\E m \in net : m.dst = p /\ PendingPush(m) /\ DeliverPushA(m))
    /\ WF_allVars(\E pw \in pending : CommitWriteA(pw))

\* Collect.  The Retry timer resends the collect to every peer not yet
\* collected; a ready peer answers with a snapshot, which the coordinator
\* merges.  Choosing the epoch is an internal step the coordinator takes in
\* the same handler as the last merge.
FairCollect ==
    /\ \A p \in Peers : WF_allVars(SnapC(p))
    /\ WF_allVars(\E s \in snaps : ReseedCA(s))
    /\ WF_allVars(ChooseEpochA)

\* Announce.  The Retry timer resends the current round's announce to every
\* peer that has not acked it; the ack rides back in the response.  Starting
\* the next round and finishing are internal steps on the last ack.
FairAnnounceRetry ==
    \A p \in Peers : WF_allVars(\E a \in anns : CurrentAnnounce(a) /\ AnnounceToA(p, a))

FairAnnounce ==
    /\ FairAnnounceRetry
    /\ WF_allVars(\E ack \in annAcks : AnnounceAcked(ack))
    /\ WF_allVars(AnnounceRound)
    /\ WF_allVars(FinishRecoveryCA)

\* Peer recovery.  A recovering peer's Retry timer resends its reseed
\* request to every replica that has not answered; each answers with a
\* snapshot or a decline (which one depends on its phase at the time, hence
\* one fairness condition for both).  Finishing is an internal step.
FairReseedRetry == \A p \in Peers, q \in Replicas : WF_allVars(SnapPeer(q, p) \/ DeclinePeer(q, p))

FairReseed ==
    /\ FairReseedRetry
    /\ WF_allVars(\E s \in snaps : ReseedPeerA(s))
    /\ \A p \in Peers : WF_allVars(FinishRecoveryPeerA(p))

\* Gossip.  Every ready replica's Gossip timer sends its memory to both
\* others every 5 s, forever.
FairGossip == \A a, b \in Replicas : WF_allVars(GossipL(a, b))

Fairness == FairWrites /\ FairCollect /\ FairAnnounce /\ FairReseed /\ FairGossip

LiveSpec == InitA /\ [][NextL]_allVars /\ Fairness

\* Counterexamples (tla/counterexamples/): one assumption removed each.
\* Without gossip a write committed on one peer's ack never reaches the
\* other peer unless it is evicted and reseeds.
LiveSpecNoGossip == InitA /\ [][NextL]_allVars /\ FairWrites /\ FairCollect /\ FairAnnounce /\ FairReseed
\* Without the retried announce a lost announce stalls the coordinator.
LiveSpecNoAnnounceRetry ==
    /\ InitA /\ [][NextL]_allVars /\ FairWrites /\ FairCollect /\ FairReseed /\ FairGossip
    /\ WF_allVars(\E ack \in annAcks : AnnounceAcked(ack))
    /\ WF_allVars(AnnounceRound)
    /\ WF_allVars(FinishRecoveryCA)

\* Without the retried reseed request an evicted peer may never hear from
\* the others and stays recovering.
LiveSpecNoReseedRetry ==
    /\ InitA /\ [][NextL]_allVars /\ FairWrites /\ FairCollect /\ FairAnnounce /\ FairGossip
    /\ WF_allVars(\E s \in snaps : ReseedPeerA(s))
    /\ \A p \in Peers : WF_allVars(FinishRecoveryPeerA(p))

\* The liveness properties are HandoffLivenessProps'.

=============================================================================
