----------------------- MODULE RemoraClaimLeaseLoss -----------------------
\* The loss of the coordination store, added to RemoraClaimHeartbeat without
\* changing it (or RemoraClaimActivation below it).
\*
\* Leases live in a memory-only store (Handoff). A deploy restarts every
\* object, the loss of all replicas empties it, and a recovering coordinator
\* may miss a record: the store can lose any lease record at any moment.
\* The durable store cannot lose anything. What this module adds:
\*
\*   - LoseLease(c): the store loses c's record. An acceptance stands only
\*     while the lease holds, so it is withdrawn (as ExpireLease does).
\*     Whether the lost lease can be restored is the durable store's to say:
\*     only a lease in force of an executing claim, and only if the durable
\*     store recorded its deadline (the implementation records it before a
\*     renewal or an acceptance is answered); leaseLost[c] says it can.
\*   - RestoreLease(c, w): the executing worker's heartbeat, with the exact
\*     attempt, re-establishes a lost lease from the durable authority.
\*     Nobody else's: w must be the attempt's worker.
\*   - ExpireLostLease(c): the lost lease's deadline passes; it can no
\*     longer be restored (untimed, like ExpireLease).
\*   - RecreateLease(c): before the commit, another activation of the same
\*     attempt creates the lease again that the store lost.
\*   - CommitActivationWithLostLease(c): the commit checks the deadline the
\*     activation itself holds, not the store's record, so it goes ahead
\*     while the store has lost the record; the claim then executes without
\*     a lease (not restorable: its deadline was never recorded durably).
\*
\* One action of the modules below is restated: a replay answers an operation
\* only while it is not rejected (ReplayOfUnrejected). There, a rejected
\* operation could never be replayed, because the lease it was rejected for
\* never came back; with RestoreLease it can, and the implementation answers
\* a stored rejection before it looks at anything else (RejectionIsFinal
\* would fail otherwise: TLC finds it after 10 states).
\*
\* LeaseIsNeverRevived (RemoraClaimHeartbeat) does not hold across a loss:
\* RestoreLease makes a lease for an executing claim. It is restated as
\* ExpiredLeaseIsNeverRevived: outside activation a step makes a lease only
\* by restoring, to the attempt's worker, a lease the store lost while it
\* was in force; a lease that expired stays expired. LeaseIsLostOnlyInForce
\* says that only a loss marks a lease restorable, and only a lease in force.

EXTENDS RemoraClaimHeartbeat

VARIABLE leaseLost

lossVars == <<vars, leaseLost>>

LossInit ==
    /\ Init
    /\ leaseLost = [c \in Claims |-> FALSE]

LoseLease(c) ==
    /\ lease[c] # NoWorker
    /\ lease' = [lease EXCEPT ![c] = NoWorker]
    /\ \E restorable \in BOOLEAN :
           leaseLost' =
               [leaseLost EXCEPT ![c] = restorable /\ durableState[c] = Executing]
    /\ operationResponse' =
           [op \in Operations |->
               IF operationResponse[op] = Accepted
                  /\ operationRequest[op][1] = c
               THEN NoResponse ELSE operationResponse[op]]
    /\ UNCHANGED <<durableState, attemptFence, attemptWorker, reservation,
                   activationStage, durableLock, operationRequest,
                   conflictRequest, activationEffectCount>>

RestoreLease(c, w) ==
    /\ durableState[c] = Executing
    /\ w = attemptWorker[c]
    /\ leaseLost[c]
    /\ lease' = [lease EXCEPT ![c] = w]
    /\ leaseLost' = [leaseLost EXCEPT ![c] = FALSE]
    /\ UNCHANGED <<durableState, attemptFence, attemptWorker, reservation,
                   activationStage, durableLock, operationRequest,
                   operationResponse, conflictRequest, activationEffectCount>>

ExpireLostLease(c) ==
    /\ leaseLost[c]
    /\ leaseLost' = [leaseLost EXCEPT ![c] = FALSE]
    /\ UNCHANGED vars

RecreateLease(c) ==
    LET w == attemptWorker[c]
    IN  /\ activationStage[c] = LeaseCreated
        /\ durableState[c] = Authorized
        /\ reservation[c] = w
        /\ lease[c] = NoWorker
        /\ lease' = [lease EXCEPT ![c] = w]
        /\ UNCHANGED <<durableState, attemptFence, attemptWorker, reservation,
                       activationStage, durableLock, operationRequest,
                       operationResponse, conflictRequest,
                       activationEffectCount, leaseLost>>

CommitActivationWithLostLease(c) ==
    LET w == attemptWorker[c]
    IN  /\ activationStage[c] = LeaseCreated
        /\ durableLock[c] = Activator
        /\ durableState[c] = Authorized
        /\ reservation[c] = w
        /\ lease[c] = NoWorker
        /\ durableState' = [durableState EXCEPT ![c] = Executing]
        /\ reservation' = [reservation EXCEPT ![c] = NoWorker]
        /\ activationStage' = [activationStage EXCEPT ![c] = Committed]
        /\ durableLock' = [durableLock EXCEPT ![c] = NoOwner]
        /\ activationEffectCount' =
               [activationEffectCount EXCEPT ![c] = @ + 1]
        /\ UNCHANGED <<attemptFence, attemptWorker, lease, operationRequest,
                       operationResponse, conflictRequest, leaseLost>>

ReplayOfUnrejected(op, c, f, w) ==
    /\ operationResponse[op] # Rejected
    /\ ReplayActivation(op, c, f, w)

\* HeartbeatNext with ReplayActivation restated; leaseLost unchanged.
BaseNext ==
    \/ \E op \in Operations, c \in Claims, f \in Fences, w \in Workers :
           BindOperation(op, c, f, w)
    \/ \E op \in Operations, c \in Claims, f \in Fences, w \in Workers :
           RejectOperationReuse(op, c, f, w)
    \/ \E op \in Operations, c \in Claims, f \in Fences, w \in Workers :
           StartActivation(op, c, f, w)
    \/ \E c \in Claims : CreateLease(c)
    \/ \E c \in Claims : AcquireActivationLock(c)
    \/ \E c \in Claims : LoseActivatorLock(c)
    \/ \E c \in Claims : CommitActivation(c)
    \/ \E op \in Operations, c \in Claims, f \in Fences, w \in Workers :
           ReplayOfUnrejected(op, c, f, w)
    \/ \E op \in Operations, c \in Claims, f \in Fences, w \in Workers :
           RejectPrecondition(op, c, f, w)
    \/ \E c \in Claims : ExpireReservation(c)
    \/ \E c \in Claims : ExpireLease(c)
    \/ \E c \in Claims : AcquireRecoveryLock(c)
    \/ \E c \in Claims : FinishRecovery(c)
    \/ \E c \in Claims : CompensateRejectedActivation(c)
    \/ Done
    \/ \E c \in Claims, w \in Workers : RenewLease(c, w)

LossNext ==
    \/ BaseNext /\ UNCHANGED leaseLost
    \/ \E c \in Claims : LoseLease(c)
    \/ \E c \in Claims, w \in Workers : RestoreLease(c, w)
    \/ \E c \in Claims : ExpireLostLease(c)
    \/ \E c \in Claims : RecreateLease(c)
    \/ \E c \in Claims : CommitActivationWithLostLease(c)

LossSpec == LossInit /\ [][LossNext]_lossVars

TypeOKLoss == leaseLost \in [Claims -> BOOLEAN]

\* A restorable lease is one the store has lost, of a claim that executes.
LostLeaseIsAbsent ==
    \A c \in Claims :
        leaseLost[c] => /\ durableState[c] = Executing
                        /\ lease[c] = NoWorker

\* LeaseIsNeverRevived, restated for a store that can lose records.
ExpiredLeaseIsNeverRevivedAction ==
    \A c \in Claims :
        (durableState[c] # Authorized /\ lease[c] = NoWorker)
            => \/ lease'[c] = NoWorker
               \/ /\ leaseLost[c]
                  /\ lease'[c] = attemptWorker[c]

ExpiredLeaseIsNeverRevived == [][ExpiredLeaseIsNeverRevivedAction]_lossVars

LeaseIsLostOnlyInForceAction ==
    \A c \in Claims :
        (~leaseLost[c] /\ leaseLost'[c]) => lease[c] # NoWorker

LeaseIsLostOnlyInForce == [][LeaseIsLostOnlyInForceAction]_lossVars

=============================================================================
