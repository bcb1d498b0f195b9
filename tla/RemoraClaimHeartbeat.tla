----------------------- MODULE RemoraClaimHeartbeat -----------------------
\* Lease renewal (heartbeat) by the executing worker, added to
\* RemoraClaimActivation without changing that module.
\*
\* RemoraClaimActivation gives a lease no deadline: ExpireLease may fire at
\* any moment while the claim executes. A renewal moves a deadline, which
\* that spec does not have, so on its variables a renewal changes nothing:
\* RenewLease below is a step that leaves every variable as it was. It adds
\* no variable and no reachable state (the count is the base module's), so
\* the base module's 1:1 mirror is this module's mirror too.
\*
\* What the module does state is
\*   - when a renewal may happen: RenewLease's guard (the claim executes, the
\*     renewing worker is the attempt's, and its lease is in force). The
\*     implementation's heartbeat steps are checked against it;
\*   - what no step, renewal included, may do to a lease, written as action
\*     properties: an expired lease never comes back, a lease never changes
\*     hands, and so a rejected operation stays rejected. A heartbeat that
\*     re-created a lapsed lease would break all three: an operation
\*     rejected with lease_lost could then be accepted by a replay.
\* RemoraClaimActivation already satisfies them; checking them here, on
\* the spec with renewals, is what makes renewal safe to add.
\*
\* That a worker which keeps renewing keeps its lease is a timing (liveness)
\* property; it needs a clock this untimed module does not have.

EXTENDS RemoraClaimActivation

RenewLease(c, w) ==
    /\ durableState[c] = Executing
    /\ w = attemptWorker[c]
    /\ lease[c] = w
    /\ UNCHANGED vars

HeartbeatNext ==
    \/ Next
    \/ \E c \in Claims, w \in Workers : RenewLease(c, w)

HeartbeatSpec == Init /\ [][HeartbeatNext]_vars

\* Outside activation (Authorized), CreateLease is the only step that makes a
\* lease; after the commit or the reaping no step may.
LeaseIsNeverRevivedAction ==
    \A c \in Claims :
        (durableState[c] # Authorized /\ lease[c] = NoWorker)
            => lease'[c] = NoWorker

LeaseIsNeverRevived == [][LeaseIsNeverRevivedAction]_vars

LeaseHolderIsStableAction ==
    \A c \in Claims :
        lease[c] # NoWorker => lease'[c] \in {lease[c], NoWorker}

LeaseHolderIsStable == [][LeaseHolderIsStableAction]_vars

\* Same operation, same answer: once rejected, an operation is answered
\* Rejected for good.
RejectionIsFinalAction ==
    \A op \in Operations :
        operationResponse[op] = Rejected => operationResponse'[op] = Rejected

RejectionIsFinal == [][RejectionIsFinalAction]_vars

=============================================================================
