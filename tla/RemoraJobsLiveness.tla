-------------------------- MODULE RemoraJobsLiveness --------------------------
\* RemoraJobs + the fairness the implementation provides + the promise of
\* issue 32 item 5: no claim is left executing without a live or
\* restorable lease. A lease the store lost is restored by its holder's
\* heartbeat (RestoreLease) or its deadline passes (ExpireLostLease); an
\* executing attempt that has not completed and has neither a lease in
\* force nor a restorable one is reaped (ReapExecuting).
\*
\* Fairness: weak fairness on the reaper (the object's alarm runs a pass
\* while an executing claim's deadline has passed) and on a lost lease's
\* deadline passing (time passes). None on workers: a worker may crash at
\* any moment, so neither completion nor a heartbeat is promised.
\*
\* The property is temporal, so this module has no Rust mirror; RemoraJobs'
\* mirror checks every safety property of the same steps.

EXTENDS RemoraJobs

\* The claim executes (its attempt took effect and has not completed) and
\* has no lease in force.
ExecutingWithoutLease(c) ==
    /\ durableState[c] = Executing
    /\ outcome[c] = Pending
    /\ lease[c] = NoWorker

LiveSpec ==
    /\ JobsSpec
    /\ \A c \in Claims : WF_jobVars(ReapExecuting(c))
    /\ \A c \in Claims : WF_jobVars(ExpireLostLease(c) /\ UNCHANGED <<outcome, usedFences>>)

\* The same without the reaper's fairness: a counterexample
\* (counterexamples/RemoraJobsLivenessNoReaper.cfg).
LiveSpecNoReaper ==
    /\ JobsSpec
    /\ \A c \in Claims : WF_jobVars(ExpireLostLease(c) /\ UNCHANGED <<outcome, usedFences>>)

\* The same without fairness on a lost lease's deadline: a restorable lease
\* that nobody restores keeps the claim executing for good
\* (counterexamples/RemoraJobsLivenessNoLostLeaseExpiry.cfg).
LiveSpecNoLostLeaseExpiry ==
    /\ JobsSpec
    /\ \A c \in Claims : WF_jobVars(ReapExecuting(c))

\* No claim executing without a live or restorable lease: once it has
\* neither, it is reaped; while its lease is restorable, the heartbeat
\* restores it, the worker completes on it (CompleteWithLostLease), or the
\* claim is reaped.
NoClaimExecutingWithoutLease ==
    \A c \in Claims :
        ExecutingWithoutLease(c)
            ~> \/ lease[c] # NoWorker
               \/ durableState[c] = Reaped
               \/ outcome[c] # Pending

=============================================================================
