------------------------ MODULE HandoffReadsLiveness ------------------------
(***************************************************************************)
(* HandoffReadsLiveness = HandoffReads + the fairness the implementation   *)
(* provides + three liveness promises of the protocol as it runs now       *)
(* (chunked snapshots, the collect fence):                                 *)
(*                                                                         *)
(*  - PeersRecover: a recovering peer becomes ready;                       *)
(*  - CoordinatorServesAgain: a recovering coordinator serves again;       *)
(*  - FencesLift: a fenced peer is unfenced again, so it takes pushes and  *)
(*    confirms reads again.                                                *)
(*                                                                         *)
(* HandoffLiveness checks these (and the convergence of gossip) on         *)
(* HandoffAcks, which has no chunks and no fence.  Here gossip is off      *)
(* (MaxGossip = 0): none of the three needs it.  Evictions stop because    *)
(* there are at most MaxEvicts of them, and the Evict guard keeps some     *)
(* replica ready.                                                          *)
(*                                                                         *)
(* Fairness, as in HandoffLiveness: weak fairness only on what a timer of  *)
(* the implementation keeps trying (its Retry timer, every 250 ms) and on  *)
(* the steps a replica takes on a message it received; links are           *)
(* fair-lossy.  None on what is sent once (a committed write's pushes,     *)
(* ghosts of dead instances, zombies), on clients or on the platform.      *)
(***************************************************************************)
EXTENDS HandoffReads

\* a is the announce of the coordinator's current instance and round.
CurrentAnnounce(a) ==
    /\ status[Coordinator] = "announce"
    /\ a.ep = epoch
    /\ a.round = annRound
    /\ a.cinc = inc[Coordinator]

\* m is a push of a write the coordinator still has pending.
PendingPush(m) ==
    \E pw \in pending : pw.key = m.key /\ pw.ep = m.ep /\ pw.ver = m.ver /\ pw.wid = m.wid

\* Writes.  The Retry timer resends the push of every pending write to both
\* peers until it commits; the ack rides back in the push's response.
FairWrites ==
    /\ \A p \in Peers : WF_allVarsR(\E m \in net : m.dst = p /\ PendingPush(m) /\ DeliverPushR(m))
    /\ WF_allVarsR(\E pw \in pending : CommitWriteR(pw))

\* Collect.  The Retry timer asks every peer not yet collected for its next
\* chunk; the chunk rides back in the response.  Choosing the epoch is an
\* internal step on the last chunk.
FairCollect ==
    /\ \A p \in Peers : WF_allVarsR(\E S \in SUBSET Keys : ChunkCR(p, S))
    /\ WF_allVarsR(\E c \in chunks : ReseedChunkCR(c))
    /\ WF_allVarsR(ChooseEpochR)

\* Announce.  The Retry timer resends the current round's announce to every
\* peer that has not acked it; starting the next round and finishing are
\* internal steps on the last ack.
FairAnnounce ==
    /\ \A p \in Peers : WF_allVarsR(\E a \in anns : CurrentAnnounce(a) /\ AnnounceToR(p, a))
    /\ WF_allVarsR(\E ack \in annAcks : AnnounceAckedR(ack))
    /\ WF_allVarsR(AnnounceRoundR)
    /\ WF_allVarsR(FinishRecoveryCR)

\* Peer recovery.  A recovering peer's Retry timer asks every replica that
\* has not seeded it for its next chunk; each answers with a chunk or a
\* decline, which rides back in the response and reaches the peer.
\* Finishing is an internal step.
FairReseed ==
    /\ \A p \in Peers, q \in Replicas :
           WF_allVarsR((\E S \in SUBSET Keys : ChunkPeerR(q, p, S)) \/ DeclinePeerR(q, p))
    /\ WF_allVarsR(\E c \in chunks : ReseedChunkPeerR(c))
    /\ \A p \in Peers : WF_allVarsR(\E d \in dsent : d.dst = p /\ DeclineArrivesR(d))
    /\ \A p \in Peers : WF_allVarsR(FinishRecoveryPeerR(p))

Fairness == FairWrites /\ FairCollect /\ FairAnnounce /\ FairReseed

LiveSpecR == InitR /\ [][NextR]_allVarsR /\ Fairness

-----------------------------------------------------------------------------
(* Liveness properties *)

\* A recovering peer becomes ready.
PeersRecover == \A p \in Peers : status[p] = "recovering" ~> status[p] = "ready"

\* A coordinator that collects or announces serves again.
CoordinatorServesAgain == status[Coordinator] # "ready" ~> status[Coordinator] = "ready"

\* A fenced peer is unfenced again.
FencesLift == \A p \in Peers : fenced[p] # 0 ~> fenced[p] = 0

=============================================================================
