------------------------------ MODULE RemoraJobs ------------------------------
\* Jobs that finish: completion, retries and dead claims, added to
\* RemoraClaimLeaseLoss without changing it (or the modules below it).
\*
\* The modules below end a claim in two ways: Reaped (its reservation lapsed
\* before it was activated) or Executing for good (its lease lapsed or was
\* lost, and nobody is told). This module adds:
\*
\*   - Complete(c, w, o): the executing attempt's worker, holding the lease
\*     in force, says how the attempt ended, o \in {"Succeeded", "Failed"}.
\*     The lease is released (and so an acceptance is withdrawn, as
\*     ExpireLease does). The claim stays Executing in the durable store's
\*     terms (its activation took effect); outcome[c] records the end.
\*   - ReapExecuting(c): the reaper reaps an executing attempt that has not
\*     completed and whose lease is neither in force nor restorable: it
\*     lapsed, or the store lost it past restoring, or the commit went
\*     ahead without it (CommitActivationWithLostLease). A completed
\*     attempt is never reaped.
\*   - CompleteWithLostLease(c, w, o): the completion read the lease in
\*     force, and the store lost the record before the commit. The commit
\*     checks the deadline the completion read (as the activation's commit
\*     does, CommitActivationWithLostLease), so it goes ahead while that
\*     deadline has not passed: the lost lease is still restorable
\*     (leaseLost[c]). The completed claim holds no lease, lost or not.
\*   - CompensateEndedAttempt(c): an activation of an attempt that
\*     committed and has ended since (reaped, or completed) compensates and
\*     finishes. A second activation of the same attempt whose lease create
\*     was refused (the first one's lease stood) awaits recovery; once the
\*     attempt is reaped or dead it removes the attempt's lease record, if
\*     any, and is rejected. The modules below compensate only before a
\*     commit (their executing claims never end).
\*   - AuthorizeRetry(c, f, w): after a failed or reaped attempt, a new
\*     attempt with a fence no earlier attempt of the claim had (the
\*     implementation's "higher fence") and any worker, while fewer than
\*     MaxAttempts attempts have been authorized. The new attempt starts as
\*     a fresh claim does (Authorized, reserved for w, no activation yet,
\*     no outcome). usedFences[c] are the fences of the claim's attempts,
\*     so there have been Cardinality(usedFences[c]) attempts.
\*
\* A claim is Dead once its last allowed attempt failed or was reaped; no
\* attempt is authorized beyond that (the implementation answers
\* claim_dead). The activation of the new attempt is the modules' below,
\* unchanged. An activation of the old attempt may still be in flight when
\* the retry is authorized (the durable store cannot see an activation that
\* validated and has not locked): it leaves this module's view, its stage
\* starting again at Idle, because the durable store refuses its lock and
\* its commit (it is not the current attempt), so all it can still do is
\* compensate, removing a lease of a fence that is no longer the claim's.
\*
\* Restated: the base module counts one activation effect per claim and
\* says it never goes back (ActivationAppliesAtMostOnce); a retry starts a
\* new attempt with no effect yet, so here it is per attempt: the count
\* goes back to 0 only when the fence changes
\* (ActivationAppliesAtMostOncePerAttempt), and never exceeds 1
\* (AtMostOneActivationEffectPerAttempt). ReapedClaimHasNoActivationEffect
\* holds only for claims reaped before their activation: an executing
\* attempt can now be reaped, so it is not checked here.
\*
\* That an executing claim without a live or restorable lease is reaped in
\* time is a liveness property, under the reaper's fairness:
\* RemoraJobsLiveness.tla.

EXTENDS RemoraClaimLeaseLoss, FiniteSets

CONSTANT MaxAttempts

ASSUME MaxAttempts \in Nat /\ MaxAttempts >= 1

Pending == "Pending"
Succeeded == "Succeeded"
Failed == "Failed"
Outcomes == {Pending, Succeeded, Failed}

VARIABLES outcome, usedFences

jobVars == <<lossVars, outcome, usedFences>>

Attempts(c) == Cardinality(usedFences[c])

\* The attempt that ended the claim's last chance.
Dead(c) ==
    /\ Attempts(c) >= MaxAttempts
    /\ \/ outcome[c] = Failed
       \/ durableState[c] = Reaped

JobsInit ==
    /\ LossInit
    /\ outcome = [c \in Claims |-> Pending]
    /\ usedFences = [c \in Claims |-> {attemptFence[c]}]

\* Releases c's lease and withdraws the acceptances that stood on it.
WithdrawAcceptances(c) ==
    [op \in Operations |->
        IF operationResponse[op] = Accepted
           /\ operationRequest[op][1] = c
        THEN NoResponse ELSE operationResponse[op]]

Complete(c, w, o) ==
    /\ durableState[c] = Executing
    /\ outcome[c] = Pending
    /\ w = attemptWorker[c]
    /\ lease[c] = w
    /\ outcome' = [outcome EXCEPT ![c] = o]
    /\ lease' = [lease EXCEPT ![c] = NoWorker]
    /\ operationResponse' = WithdrawAcceptances(c)
    /\ UNCHANGED <<durableState, attemptFence, attemptWorker, reservation,
                   activationStage, durableLock, operationRequest,
                   conflictRequest, activationEffectCount, leaseLost,
                   usedFences>>

CompleteWithLostLease(c, w, o) ==
    /\ durableState[c] = Executing
    /\ outcome[c] = Pending
    /\ w = attemptWorker[c]
    /\ lease[c] = NoWorker
    /\ leaseLost[c]
    /\ outcome' = [outcome EXCEPT ![c] = o]
    /\ leaseLost' = [leaseLost EXCEPT ![c] = FALSE]
    /\ UNCHANGED <<durableState, attemptFence, attemptWorker, reservation,
                   lease, activationStage, durableLock, operationRequest,
                   operationResponse, conflictRequest, activationEffectCount,
                   usedFences>>

ReapExecuting(c) ==
    /\ durableState[c] = Executing
    /\ outcome[c] = Pending
    /\ lease[c] = NoWorker
    /\ ~leaseLost[c]
    /\ durableState' = [durableState EXCEPT ![c] = Reaped]
    /\ UNCHANGED <<attemptFence, attemptWorker, reservation, lease,
                   activationStage, durableLock, operationRequest,
                   operationResponse, conflictRequest,
                   activationEffectCount, leaseLost, outcome, usedFences>>

CompensateEndedAttempt(c) ==
    /\ \/ durableState[c] = Reaped
       \/ outcome[c] # Pending
    /\ activationStage[c] = Committed
    /\ lease[c] = NoWorker
    /\ activationStage' = [activationStage EXCEPT ![c] = Finished]
    /\ UNCHANGED <<durableState, attemptFence, attemptWorker, reservation,
                   lease, durableLock, operationRequest, operationResponse,
                   conflictRequest, activationEffectCount, leaseLost, outcome,
                   usedFences>>

AuthorizeRetry(c, f, w) ==
    /\ \/ outcome[c] = Failed
       \/ durableState[c] = Reaped
    /\ Attempts(c) < MaxAttempts
    /\ f \notin usedFences[c]
    /\ lease[c] = NoWorker
    /\ durableLock[c] = NoOwner
    /\ durableState' = [durableState EXCEPT ![c] = Authorized]
    /\ attemptFence' = [attemptFence EXCEPT ![c] = f]
    /\ attemptWorker' = [attemptWorker EXCEPT ![c] = w]
    /\ reservation' = [reservation EXCEPT ![c] = w]
    /\ activationStage' = [activationStage EXCEPT ![c] = Idle]
    /\ activationEffectCount' = [activationEffectCount EXCEPT ![c] = 0]
    /\ outcome' = [outcome EXCEPT ![c] = Pending]
    /\ usedFences' = [usedFences EXCEPT ![c] = @ \cup {f}]
    /\ UNCHANGED <<lease, durableLock, operationRequest, operationResponse,
                   conflictRequest, leaseLost>>

JobsNext ==
    \/ LossNext /\ UNCHANGED <<outcome, usedFences>>
    \/ \E c \in Claims, w \in Workers, o \in {Succeeded, Failed} :
           Complete(c, w, o)
    \/ \E c \in Claims, w \in Workers, o \in {Succeeded, Failed} :
           CompleteWithLostLease(c, w, o)
    \/ \E c \in Claims : ReapExecuting(c)
    \/ \E c \in Claims : CompensateEndedAttempt(c)
    \/ \E c \in Claims, f \in Fences, w \in Workers : AuthorizeRetry(c, f, w)

JobsSpec == JobsInit /\ [][JobsNext]_jobVars

TypeOKJobs ==
    /\ outcome \in [Claims -> Outcomes]
    /\ usedFences \in [Claims -> SUBSET Fences]

\* At most one activation effect per attempt: the count is the current
\* attempt's (a retry starts it at 0) ...
AtMostOneActivationEffectPerAttempt ==
    \A c \in Claims : activationEffectCount[c] <= 1

\* ... and it goes back only with a new attempt.
ActivationAppliesAtMostOncePerAttemptAction ==
    \A c \in Claims :
        (activationEffectCount[c] = 1 /\ attemptFence'[c] = attemptFence[c])
            => activationEffectCount'[c] = 1

ActivationAppliesAtMostOncePerAttempt ==
    [][ActivationAppliesAtMostOncePerAttemptAction]_jobVars

\* A completed attempt is never reaped.
CompletedClaimIsNeverReaped ==
    \A c \in Claims :
        outcome[c] # Pending => durableState[c] = Executing

\* Only an executing attempt completes, and its lease is released.
CompletedClaimHoldsNoLease ==
    \A c \in Claims :
        outcome[c] # Pending => /\ lease[c] = NoWorker
                                /\ ~leaseLost[c]
                                /\ activationEffectCount[c] = 1

\* At most MaxAttempts attempts, each with its own fence.
AtMostMaxAttempts ==
    \A c \in Claims :
        /\ Attempts(c) <= MaxAttempts
        /\ attemptFence[c] \in usedFences[c]

\* Dead is final: no step authorizes another attempt of a dead claim.
DeadClaimStaysDeadAction ==
    \A c \in Claims : Dead(c) => Dead(c)'

DeadClaimStaysDead == [][DeadClaimStaysDeadAction]_jobVars

=============================================================================
