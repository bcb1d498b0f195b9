---------------------------- MODULE HandoffAcks ----------------------------
(***************************************************************************)
(* HandoffAcks = HandoffV2 with every replica-to-replica exchange made a   *)
(* message, as the implementation (crates/protocol/src/handoff) performs  *)
(* it.  HandoffV2 abstracts each exchange into one atomic step that reads  *)
(* another replica's state; a real replica only ever sees a message, and   *)
(* a message describes its sender as it was when it was sent.  Nothing of  *)
(* HandoffV2 is changed but what that forces:                             *)
(*                                                                         *)
(*  - The network duplicates: a message once sent may be delivered any    *)
(*    number of times, so net (and every channel below) only grows; loss  *)
(*    is a message never delivered.  DeliverPush keeps m in net.          *)
(*  - The ack channel: a delivered push sends an ack; CommitWrite is       *)
(*    enabled by an ack message, not by the abstract Holds.  The acking    *)
(*    peer may be evicted before the ack lands (commit then applies        *)
(*    locally, so the write is still held by the coordinator).             *)
(*  - Snapshots: ReseedC / ReseedPeer merge a snapshot message taken when  *)
(*    its source CanSeed, possibly long before.  Replies are addressed to  *)
(*    one incarnation and phase of the requester: they are dropped when    *)
(*    it is evicted or leaves that phase (request ids in the code), and a  *)
(*    requester ignores further replies from a source it has merged, so   *)
(*    those are dropped too (and not sent).                               *)
(*  - HandoffV2's "CanSeed(q) => q \in seeded[p]" reads q's state now; a   *)
(*    peer instead finishes when every other replica either seeded it or   *)
(*    declined (answered that it cannot seed): declines may be stale.      *)
(*  - Announce is a message (ghost announces of dead incarnations are      *)
(*    delivered too) answered by an ack.  HandoffV2's FinishRecoveryC      *)
(*    reads "every peer knows the epoch now"; no message can tell that (a *)
(*    peer may reboot right after acking).  Instead the coordinator        *)
(*    announces in rounds, each ack names the acking peer's incarnation,   *)
(*    and it serves after two consecutive complete rounds acked by the     *)
(*    same incarnations: an incarnation that acked twice lived in between, *)
(*    so at the moment the first round completed every peer knew the      *)
(*    epoch.  Counting acks of one round only is unsound at MaxEvicts 3:   *)
(*    a peer acks, reboots, relearns an older epoch from the other peer,   *)
(*    and the epoch is chosen again later (EpochAgreement fails).          *)
(*    Incarnations (inc) are ghost counters here; the code uses random     *)
(*    instance ids.  Acks answer one coordinator incarnation: an announce  *)
(*    of a dead one is still installed but its ack is dropped.            *)
(*  - Gossip is one-way: a ready replica sends its memory, a ready         *)
(*    receiver max-merges it.  Every send is a new snapshot in a set that  *)
(*    only grows, which multiplies the state space (millions of states at  *)
(*    two writes); MaxGossip bounds it: a replica sends gossip only while  *)
(*    fewer than MaxGossip gossip messages exist.                          *)
(*                                                                         *)
(* Checked against every invariant and property of Handoff/HandoffV2.      *)
(***************************************************************************)
EXTENDS HandoffV2

CONSTANT MaxGossip  \* bound: gossip is sent while fewer messages exist

VARIABLES
    acks,      \* push acks [src, key, ep, ver, wid] ever sent
    snaps,     \* snapshot replies [src, dst, mem, know] to dst's current
               \* incarnation and recovery phase
    declines,  \* "cannot seed you" replies [src, dst] likewise
    anns,      \* announces [ep, round, cinc] ever sent (they survive their
               \* sender; cinc = the sender's incarnation)
    annAcks,   \* announce acks [src, ep, round, pinc] to the coordinator's
               \* current incarnation (pinc = the acking peer's incarnation)
    gossip,    \* gossip messages [src, dst, mem] ever sent
    inc,       \* inc[r]: incarnation of replica r (evictions of r, plus 1)
    annRound,  \* the coordinator's announce round (0: not announcing)
    curAck,    \* curAck[p]: incarnation that acked this round (0: none)
    prevAck    \* prevAck[p]: incarnation that acked the last complete round

msgVars == <<acks, snaps, declines, anns, annAcks, gossip, inc, annRound, curAck, prevAck>>
allVars == <<vars, msgVars>>

Mem == [Keys -> Rec \cup {NoVal}]
AckMsg == [src: Peers, key: Keys, ep: 1..MaxEpoch, ver: 1..MaxWrites, wid: 1..MaxWrites]

TypeOKAcks ==
    /\ acks \subseteq AckMsg
    /\ snaps \subseteq [src: Replicas, dst: Replicas, mem: Mem, know: 0..MaxEpoch]
    /\ declines \subseteq [src: Replicas, dst: Peers]
    /\ anns \subseteq [ep: 1..MaxEpoch, round: 1..MaxEvicts + 2, cinc: 1..MaxEvicts + 1]
    /\ annAcks \subseteq [src: Peers, ep: 1..MaxEpoch, round: 1..MaxEvicts + 2,
                          pinc: 1..MaxEvicts + 1]
    /\ gossip \subseteq [src: Replicas, dst: Replicas, mem: Mem]
    /\ inc \in [Replicas -> 1..MaxEvicts + 1]
    /\ annRound \in 0..MaxEvicts + 2
    /\ curAck \in [Peers -> 0..MaxEvicts + 1]
    /\ prevAck \in [Peers -> 0..MaxEvicts + 1]

\* An ack for pending write pw has been sent by some peer.
AckedBy(pw) == \E a \in acks : a.key = pw.key /\ a.ep = pw.ep /\ a.ver = pw.ver
                                /\ a.wid = pw.wid

\* Replies addressed to r's current incarnation and phase, without them.
DropFor(S, r) == {x \in S : x.dst # r}
\* ... and without those from q, which r has merged.
DropFrom(S, q, r) == {x \in S : ~(x.src = q /\ x.dst = r)}

-----------------------------------------------------------------------------

InitA ==
    /\ Init
    /\ acks = {}
    /\ snaps = {}
    /\ declines = {}
    /\ anns = {}
    /\ annAcks = {}
    /\ gossip = {}
    /\ inc = [r \in Replicas |-> 1]
    /\ annRound = 0
    /\ curAck = [p \in Peers |-> 0]
    /\ prevAck = [p \in Peers |-> 0]

ClientWriteA(k) == ClientWrite(k) /\ UNCHANGED msgVars

\* A peer takes a push (again, possibly: m stays in net) and acks it.
DeliverPushA(m) ==
    /\ m \in net
    /\ LET rec == [ep |-> m.ep, ver |-> m.ver, wid |-> m.wid]
       IN  mem' = [mem EXCEPT ![m.dst][m.key] = MergeVal(@, rec)]
    /\ known' = [known EXCEPT ![m.dst] = Max(@, m.ep)]
    /\ acks' = acks \cup {[src |-> m.dst, key |-> m.key, ep |-> m.ep,
                           ver |-> m.ver, wid |-> m.wid]}
    /\ UNCHANGED <<status, seeded, epoch, collectMax, verCtr, widCtr,
                   pending, net, acked, evictCount>>
    /\ UNCHANGED <<snaps, declines, anns, annAcks, gossip, inc, annRound, curAck,
                   prevAck>>

\* The coordinator receives an ack for a pending write: commit.
CommitWriteA(pw) ==
    /\ pw \in pending
    /\ AckedBy(pw)
    /\ LET rec == [ep |-> pw.ep, ver |-> pw.ver, wid |-> pw.wid]
       IN  mem' = [mem EXCEPT ![Coordinator][pw.key] = MergeVal(@, rec)]
    /\ pending' = pending \ {pw}
    /\ acked' = acked \cup
                {[key |-> pw.key, ep |-> pw.ep, ver |-> pw.ver,
                  wid |-> pw.wid, doomed |-> FALSE]}
    /\ UNCHANGED <<status, seeded, known, epoch, collectMax, verCtr, widCtr,
                   net, evictCount>>
    /\ UNCHANGED msgVars

\* Replies to the evicted incarnation are dropped (they name its id); a
\* new coordinator incarnation starts without announce state.
EvictA(r) ==
    /\ Evict(r)
    /\ snaps' = DropFor(snaps, r)
    /\ declines' = DropFor(declines, r)
    /\ inc' = [inc EXCEPT ![r] = @ + 1]
    /\ IF r = Coordinator
       THEN /\ annAcks' = {}
            /\ annRound' = 0
            /\ curAck' = [p \in Peers |-> 0]
            /\ prevAck' = [p \in Peers |-> 0]
       ELSE UNCHANGED <<annAcks, annRound, curAck, prevAck>>
    /\ UNCHANGED <<acks, anns, gossip>>

\* A peer that CanSeed (is ready) answers the collect with a snapshot.
SnapC(p) ==
    /\ status[Coordinator] = "collect"
    /\ p \notin seeded[Coordinator]
    /\ CanSeed(p)
    /\ snaps' = snaps \cup {[src |-> p, dst |-> Coordinator, mem |-> mem[p],
                             know |-> known[p]]}
    /\ UNCHANGED vars
    /\ UNCHANGED <<acks, declines, anns, annAcks, gossip, inc, annRound, curAck,
                   prevAck>>

\* ReseedC, from the snapshot message s.
ReseedCA(s) ==
    /\ s \in snaps
    /\ s.dst = Coordinator
    /\ status[Coordinator] = "collect"
    /\ s.src \notin seeded[Coordinator]
    /\ mem' = [mem EXCEPT ![Coordinator] = MergeMem(@, s.mem)]
    /\ collectMax' = Max(collectMax, Max(s.know, MemEpMax(s.mem)))
    /\ seeded' = [seeded EXCEPT ![Coordinator] = @ \cup {s.src}]
    /\ snaps' = DropFrom(snaps, s.src, Coordinator)
    /\ UNCHANGED <<status, known, epoch, verCtr, widCtr, pending, net, acked,
                   evictCount>>
    /\ UNCHANGED <<acks, declines, anns, annAcks, gossip, inc, annRound, curAck,
                   prevAck>>

\* ChooseEpoch sends round 1 of the announce; the collect replies are done
\* with.
ChooseEpochA ==
    /\ ChooseEpoch
    /\ anns' = anns \cup {[ep |-> collectMax + 1, round |-> 1, cinc |-> inc[Coordinator]]}
    /\ snaps' = DropFor(snaps, Coordinator)
    /\ annRound' = 1
    /\ UNCHANGED <<acks, declines, annAcks, gossip, inc, curAck, prevAck>>

\* A peer installs an announced epoch (of this incarnation or a ghost's)
\* and acks it, naming its own incarnation.
AnnounceToA(p, a) ==
    /\ a \in anns
    /\ known' = [known EXCEPT ![p] = Max(@, a.ep)]
    /\ annAcks' = IF a.cinc = inc[Coordinator]
                  THEN annAcks \cup {[src |-> p, ep |-> a.ep, round |-> a.round,
                                      pinc |-> inc[p]]}
                  ELSE annAcks
    /\ UNCHANGED <<mem, status, seeded, epoch, collectMax, verCtr, widCtr,
                   pending, net, acked, evictCount>>
    /\ UNCHANGED <<acks, snaps, declines, anns, gossip, inc, annRound, curAck,
                   prevAck>>

\* The announcing coordinator counts an ack of its epoch and round.
AnnounceAcked(ack) ==
    /\ status[Coordinator] = "announce"
    /\ ack \in annAcks
    /\ ack.ep = epoch
    /\ ack.round = annRound
    /\ ack.src \notin seeded[Coordinator]
    /\ seeded' = [seeded EXCEPT ![Coordinator] = @ \cup {ack.src}]
    /\ curAck' = [curAck EXCEPT ![ack.src] = ack.pinc]
    /\ UNCHANGED <<mem, status, known, epoch, collectMax, verCtr, widCtr,
                   pending, net, acked, evictCount>>
    /\ UNCHANGED <<acks, snaps, declines, anns, annAcks, gossip, inc, annRound,
                   prevAck>>

\* A complete round acked by other incarnations than the last one: again.
AnnounceRound ==
    /\ status[Coordinator] = "announce"
    /\ seeded[Coordinator] = Peers
    /\ curAck # prevAck
    /\ anns' = anns \cup {[ep |-> epoch, round |-> annRound + 1, cinc |-> inc[Coordinator]]}
    /\ annRound' = annRound + 1
    /\ seeded' = [seeded EXCEPT ![Coordinator] = {}]
    /\ prevAck' = curAck
    /\ curAck' = [p \in Peers |-> 0]
    /\ UNCHANGED <<mem, status, known, epoch, collectMax, verCtr, widCtr,
                   pending, net, acked, evictCount>>
    /\ UNCHANGED <<acks, snaps, declines, annAcks, gossip, inc>>

\* Two consecutive complete rounds acked by the same incarnations.
FinishRecoveryCA ==
    /\ status[Coordinator] = "announce"
    /\ seeded[Coordinator] = Peers
    /\ curAck = prevAck
    /\ status' = [status EXCEPT ![Coordinator] = "ready"]
    /\ annRound' = 0
    /\ curAck' = [p \in Peers |-> 0]
    /\ prevAck' = [p \in Peers |-> 0]
    /\ UNCHANGED <<mem, seeded, known, epoch, collectMax, verCtr, widCtr,
                   pending, net, acked, evictCount>>
    /\ UNCHANGED <<acks, snaps, declines, anns, annAcks, gossip, inc>>

\* A replica that CanSeed answers a recovering peer with a snapshot.
SnapPeer(q, p) ==
    /\ p \in Peers
    /\ q # p
    /\ status[p] = "recovering"
    /\ q \notin seeded[p]
    /\ CanSeed(q)
    /\ snaps' = snaps \cup {[src |-> q, dst |-> p, mem |-> mem[q],
                             know |-> SrcKnow(q)]}
    /\ UNCHANGED vars
    /\ UNCHANGED <<acks, declines, anns, annAcks, gossip, inc, annRound, curAck,
                   prevAck>>

\* A replica that cannot seed says so.
DeclinePeer(q, p) ==
    /\ p \in Peers
    /\ q # p
    /\ status[p] = "recovering"
    /\ q \notin seeded[p]
    /\ ~CanSeed(q)
    /\ declines' = declines \cup {[src |-> q, dst |-> p]}
    /\ UNCHANGED vars
    /\ UNCHANGED <<acks, snaps, anns, annAcks, gossip, inc, annRound, curAck,
                   prevAck>>

\* ReseedPeer, from the snapshot message s.
ReseedPeerA(s) ==
    /\ s \in snaps
    /\ s.dst \in Peers
    /\ status[s.dst] = "recovering"
    /\ s.src \notin seeded[s.dst]
    /\ mem' = [mem EXCEPT ![s.dst] = MergeMem(@, s.mem)]
    /\ known' = [known EXCEPT ![s.dst] = Max(@, Max(s.know, MemEpMax(s.mem)))]
    /\ seeded' = [seeded EXCEPT ![s.dst] = @ \cup {s.src}]
    /\ snaps' = DropFrom(snaps, s.src, s.dst)
    /\ declines' = DropFrom(declines, s.src, s.dst)
    /\ UNCHANGED <<status, epoch, collectMax, verCtr, widCtr, pending, net,
                   acked, evictCount>>
    /\ UNCHANGED <<acks, anns, annAcks, gossip, inc, annRound, curAck, prevAck>>

\* Seeded by someone, and answered (seeded or declined) by every other.
FinishRecoveryPeerA(p) ==
    /\ p \in Peers
    /\ status[p] = "recovering"
    /\ seeded[p] # {}
    /\ \A q \in Replicas \ {p} : q \in seeded[p] \/ [src |-> q, dst |-> p] \in declines
    /\ status' = [status EXCEPT ![p] = "ready"]
    /\ snaps' = DropFor(snaps, p)
    /\ declines' = DropFor(declines, p)
    /\ UNCHANGED <<mem, seeded, known, epoch, collectMax, verCtr, widCtr,
                   pending, net, acked, evictCount>>
    /\ UNCHANGED <<acks, anns, annAcks, gossip, inc, annRound, curAck, prevAck>>

\* A ready replica sends its memory to both others.
GossipSend(a) ==
    /\ IsReady(a)
    /\ Cardinality(gossip) < MaxGossip
    /\ gossip' = gossip \cup {[src |-> a, dst |-> b, mem |-> mem[a]] :
                                b \in Replicas \ {a}}
    /\ UNCHANGED vars
    /\ UNCHANGED <<acks, snaps, declines, anns, annAcks, inc, annRound, curAck,
                   prevAck>>

\* A ready replica max-merges a gossip message.
GossipRecv(g) ==
    /\ g \in gossip
    /\ IsReady(g.dst)
    /\ mem' = [mem EXCEPT ![g.dst] = MergeMem(@, g.mem)]
    /\ UNCHANGED <<status, seeded, known, epoch, collectMax, verCtr, widCtr,
                   pending, net, acked, evictCount>>
    /\ UNCHANGED msgVars

\* Every action but push delivery and announce delivery, which the zombie
\* extension guards with epoch fencing.
UnfencedA ==
    \/ \E k \in Keys : ClientWriteA(k)
    \/ \E pw \in pending : CommitWriteA(pw)
    \/ \E r \in Replicas : EvictA(r)
    \/ \E p \in Peers : SnapC(p) \/ FinishRecoveryPeerA(p)
    \/ \E s \in snaps : ReseedCA(s) \/ ReseedPeerA(s)
    \/ ChooseEpochA
    \/ \E ack \in annAcks : AnnounceAcked(ack)
    \/ AnnounceRound
    \/ FinishRecoveryCA
    \/ \E p \in Peers, q \in Replicas : SnapPeer(q, p) \/ DeclinePeer(q, p)
    \/ \E a \in Replicas : GossipSend(a)
    \/ \E g \in gossip : GossipRecv(g)

NextA ==
    \/ UnfencedA
    \/ \E m \in net : DeliverPushA(m)
    \/ \E p \in Peers, a \in anns : AnnounceToA(p, a)

\* HandoffV2's NoServedRegression ([][...]_vars) applies unchanged: a step
\* that moves only messages leaves vars unchanged.
SpecA == InitA /\ [][NextA]_allVars

=============================================================================
