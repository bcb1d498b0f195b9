------------------------ MODULE HandoffReadsLiveness ------------------------
(***************************************************************************)
(* HandoffReadsLiveness = HandoffReads + the fairness the implementation   *)
(* provides + the liveness promises of the protocol as it runs now         *)
(* (chunked snapshots, the collect fence, digest anti-entropy):            *)
(*                                                                         *)
(*  - AckedWritesReachEveryReplica: once evictions stop, every             *)
(*    acknowledged write that was not doomed is held by every replica,     *)
(*    and all of them are ready;                                           *)
(*  - PeersRecover: a recovering peer becomes ready;                       *)
(*  - CoordinatorServesAgain: a recovering coordinator serves again;       *)
(*  - FencesLift: a fenced peer is unfenced again, so it takes pushes and  *)
(*    confirms reads again.                                                *)
(*                                                                         *)
(* HandoffLiveness checks the first three on HandoffAcks, which has no     *)
(* chunks, no fence and whole-memory gossip.  Evictions stop because there *)
(* are at most MaxEvicts of them, and the Evict guard keeps some replica   *)
(* ready.                                                                  *)
(*                                                                         *)
(* Gossip.  HandoffScale bounds gossip by MaxGossip messages in all, which *)
(* is fine for safety but makes convergence false: the bound can be spent  *)
(* before an eviction, and afterwards nothing repairs a replica that       *)
(* missed a write.  The implementation gossips every 5 s forever.  Here    *)
(* MaxGossip = 0 switches the message gossip off and DigestRoundL(a, b)    *)
(* stands for one digest round that gets through: a's DigestSend to b, b's *)
(* DigestRecv answering with its records (all of them: those equal to a's  *)
(* change nothing in a max-merge, so this is the answer of the records     *)
(* that differ), and a's GossipRecvS of that answer, one step.  Its        *)
(* messages are not kept: a later delivery of them would take an older    *)
(* floor or merge an older memory, which changes nothing or is a           *)
(* DigestRoundL of that older state.  No digest is kept, so the            *)
(* coordinator never raises its floor here (RaiseFloorR needs digests):    *)
(* tombstone collection is HandoffScale's safety business, and a floor     *)
(* only ever refuses records older than ones every replica holds.          *)
(*                                                                         *)
(* Fairness, as in HandoffLiveness: weak fairness only on what a timer of  *)
(* the implementation keeps trying (its Retry timer, every 250 ms; its     *)
(* Gossip timer, every 5 s) and on the steps a replica takes on a message  *)
(* it received; links are fair-lossy.  None on what is sent once (a        *)
(* committed write's pushes, ghosts of dead instances, zombies), on        *)
(* clients or on the platform.                                             *)
(***************************************************************************)
EXTENDS HandoffReads, HandoffLivenessProps

\* One digest round from a to b that gets through: a sends b its digest, b
\* takes its floor and answers with its records, a takes the answer's
\* floor and merges the records its floor does not refuse.  The
\* coordinator hears from a peer whose digest it answers.
DigestRoundL(a, b) ==
    /\ b \in DigestTo(a)
    /\ IsReady(a)
    /\ IsReady(b)
    /\ LET flb == MaxF(floor[b], floor[a])
           fla == MaxF(floor[a], flb)
           answer == ConcreteAt(b, flb)
       IN  /\ floor' = [floor EXCEPT ![b] = flb, ![a] = fla]
           /\ mem' = [mem EXCEPT ![a] = [k \in Keys |-> MergeValAt(mem[a][k], fla, answer[k])]]
    /\ IF b = Coordinator THEN Heard(a, inc[a]) ELSE UNCHANGED reg
    /\ UNCHANGED <<status, seeded, known, epoch, collectMax, verCtr, widCtr,
                   pending, net, acked, evictCount>>
    /\ UNCHANGED <<msgVars, zVars, got, chunks, digs, gsp, rVars>>

NextRL ==
    \/ NextR
    \/ \E a, b \in Replicas : DigestRoundL(a, b)

-----------------------------------------------------------------------------
(* Fairness *)

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

\* Gossip.  Every ready replica's Gossip timer sends its digest to those
\* of DigestTo every 5 s, forever, and the receiver answers it.
FairGossip == \A a, b \in Replicas : WF_allVarsR(DigestRoundL(a, b))

Fairness == FairWrites /\ FairCollect /\ FairAnnounce /\ FairReseed /\ FairGossip

LiveSpecR == InitR /\ [][NextRL]_allVarsR /\ Fairness

\* A counterexample (tla/counterexamples/): without gossip a write committed
\* on one peer's ack never reaches the other peer unless it reseeds.
LiveSpecRNoGossip == InitR /\ [][NextRL]_allVarsR /\ FairWrites /\ FairCollect /\ FairAnnounce /\ FairReseed

-----------------------------------------------------------------------------
(* Liveness properties: HandoffLivenessProps' three, and *)

\* A fenced peer is unfenced again.
FencesLift == \A p \in Peers : fenced[p] # 0 ~> fenced[p] = 0

=============================================================================
