--------------------------- MODULE HandoffZombie ---------------------------
(***************************************************************************)
(* HandoffZombie = HandoffAcks + zombie coordinators + epoch fencing.      *)
(*                                                                         *)
(* On Durable Objects a superseded instance can still finish requests it   *)
(* was serving: the platform starts a new coordinator instance (which      *)
(* recovers: collect, choose, announce) while the old one -- a zombie --   *)
(* keeps its memory, epoch, version counter and pending writes, and may    *)
(* still take the client writes it had in flight, push them, and commit    *)
(* on acks.  It receives no new events: no timers, no requests from        *)
(* peers, only the replies to its own pushes.                              *)
(*                                                                         *)
(* Supersede is Evict(Coordinator) of a ready coordinator that leaves its  *)
(* old incarnation behind as a zombie (at most MaxZombies times).  The     *)
(* zombie is no replica: its memory holds nothing for the invariants, so   *)
(* a write it acks is backed only by the replicas that hold it.  If none   *)
(* does when the ack lands -- the acking peer was evicted meanwhile -- the *)
(* write is recorded doomed at once: an eviction destroyed its last copy,  *)
(* which is exactly what doomed means.                                     *)
(*                                                                         *)
(* Fencing: a peer refuses a push or an announce from an epoch older than  *)
(* the one it knows (the refusal is a message; the zombie that receives   *)
(* it stops -- ZombieFenced, which is also the zombie simply ending).      *)
(* A refused push is never acked, so it never commits.                     *)
(*                                                                         *)
(* Checked against every invariant and property of Handoff/HandoffV2.      *)
(***************************************************************************)
EXTENDS HandoffAcks

CONSTANT MaxZombies  \* bound on supersessions

VARIABLES
    zombies,     \* superseded coordinator instances [epoch, verCtr, pending]
    supersedes   \* supersessions so far

zVars == <<zombies, supersedes>>
allVarsZ == <<allVars, zVars>>

TypeOKZombie ==
    /\ supersedes \in 0..MaxZombies
    /\ \A z \in zombies :
          /\ z.epoch \in 1..MaxEpoch
          /\ z.verCtr \in 0..MaxWrites
          /\ \A w \in z.pending : w.ep = z.epoch /\ w.ver \in 1..MaxWrites

InitZ == InitA /\ zombies = {} /\ supersedes = 0

\* Fencing: refuse what comes from an epoch older than the peer knows.
DeliverPushZ(m) == m.ep >= known[m.dst] /\ DeliverPushA(m)
AnnounceToZ(p, a) == a.ep >= known[p] /\ AnnounceToA(p, a)

Supersede ==
    /\ IsReady(Coordinator)
    /\ supersedes < MaxZombies
    /\ EvictA(Coordinator)
    /\ zombies' = zombies \cup {[epoch |-> epoch, verCtr |-> verCtr,
                                 pending |-> pending]}
    /\ supersedes' = supersedes + 1

\* An in-flight client write reaches zombie z: pushed at z's epoch.
ZombieWrite(z, k) ==
    /\ z \in zombies
    /\ widCtr <= MaxWrites
    /\ LET w == [key |-> k, ep |-> z.epoch, ver |-> z.verCtr + 1, wid |-> widCtr]
       IN  /\ zombies' = (zombies \ {z}) \cup
                         {[z EXCEPT !.verCtr = @ + 1, !.pending = @ \cup {w}]}
           /\ net' = net \cup {[dst |-> p, key |-> k, ep |-> w.ep, ver |-> w.ver,
                                wid |-> w.wid] : p \in Peers}
    /\ widCtr' = widCtr + 1
    /\ UNCHANGED <<mem, status, seeded, known, epoch, collectMax, verCtr,
                   pending, acked, evictCount>>
    /\ UNCHANGED msgVars
    /\ UNCHANGED supersedes

\* Zombie z receives an ack: it acks its client.
ZombieCommit(z, pw) ==
    /\ z \in zombies
    /\ pw \in z.pending
    /\ AckedBy(pw)
    /\ zombies' = (zombies \ {z}) \cup {[z EXCEPT !.pending = @ \ {pw}]}
    /\ acked' = acked \cup
                {[key |-> pw.key, ep |-> pw.ep, ver |-> pw.ver, wid |-> pw.wid,
                  doomed |-> ~\E r \in Replicas : Holds(r, pw)]}
    /\ UNCHANGED <<mem, status, seeded, known, epoch, collectMax, verCtr,
                   widCtr, pending, net, evictCount>>
    /\ UNCHANGED msgVars
    /\ UNCHANGED supersedes

\* Zombie z learns it is superseded (a refusal), or simply ends.
ZombieFenced(z) ==
    /\ z \in zombies
    /\ zombies' = zombies \ {z}
    /\ UNCHANGED allVars
    /\ UNCHANGED supersedes

NextZ ==
    \/ /\ \/ UnfencedA
          \/ \E m \in net : DeliverPushZ(m)
          \/ \E p \in Peers, a \in anns : AnnounceToZ(p, a)
       /\ UNCHANGED zVars
    \/ Supersede
    \/ \E z \in zombies, k \in Keys : ZombieWrite(z, k)
    \/ \E z \in zombies : \E pw \in z.pending : ZombieCommit(z, pw)
    \/ \E z \in zombies : ZombieFenced(z)

SpecZ == InitZ /\ [][NextZ]_allVarsZ

=============================================================================
