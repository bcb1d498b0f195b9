//! The durable store: the authority on a claim.
//!
//! Each transition is a pure function from the rows it reads to the rows it
//! writes; [`apply`] serves one [`DurableRequest`] by loading those rows
//! through [`DurableRows`], applying the transition and storing the result.
//! A host runs each `apply` as one transaction (the Durable Object: one
//! SQLite transaction), so every transition is atomic. The commit of an
//! activation is the one transition that makes a claim execute, and it is
//! where the activation takes effect (see `docs/remora.md section 3`).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::error::{
    AuthorizeRefused, CommitRefused, CompletionRefused, DurableError, HeartbeatRefused, LeaseRefused, LockRefused,
    RecoveryRefused,
};
use super::types::{
    ClaimId, ClaimState, Fence, Lease, Millis, OperationId, Outcome, Rejection, RequestBody, RequestKey, WorkerId,
    is_live,
};

/// How many attempts a claim allows when its create does not say.
pub const DEFAULT_MAX_ATTEMPTS: u32 = 3;

fn default_max_attempts() -> u32 {
    DEFAULT_MAX_ATTEMPTS
}

fn first_attempt() -> u32 {
    1
}

/// The attempt's hold on its claim until `expires_at`: while it is live the
/// attempt may still be activated, and recovery may not touch the claim.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Reservation {
    pub worker: WorkerId,
    pub expires_at: Millis,
}

/// The durable lock, which serializes the activator's commit with recovery.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "owner", rename_all = "snake_case")]
pub enum DurableLock {
    /// Held by the activation of `operation` until `expires_at`; after that
    /// it is lost and anyone may take the lock.
    Activator { operation: OperationId, expires_at: Millis },
    /// Held by recovery until it reaps the claim. It has no expiry: only a
    /// claim whose reservation expired is recovery-locked, no activation can
    /// commit such a claim, and any later run of the reaper finishes it.
    Recovery,
}

/// One claim and its current attempt.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ClaimRow {
    pub claim: ClaimId,
    /// The attempt's fence and worker: fixed when the attempt is authorized.
    pub fence: Fence,
    pub worker: WorkerId,
    pub state: ClaimState,
    pub reservation: Option<Reservation>,
    pub lock: Option<DurableLock>,
    /// How many times the activation's effect has been applied: the commit
    /// is the only writer, and it can run once.
    pub activations: u32,
    /// The latest deadline of the executing attempt's lease that the
    /// coordination store granted and this store recorded (before the
    /// acceptance or renewal it stands for was answered). If the
    /// coordination store loses the lease record, the attempt's worker may
    /// restore it until then (`tla/RemoraClaimLeaseLoss.tla`). It never
    /// exceeds the lease record's own deadline: a lease's deadline only
    /// grows, and this is a copy of it, taken after it was granted.
    #[serde(default)]
    pub lease_until: Option<Millis>,
    /// Which attempt this is, from 1 (rows from before attempts were
    /// counted: 1).
    #[serde(default = "first_attempt")]
    pub attempt: u32,
    /// How many attempts the claim allows: once the last one fails or is
    /// reaped, the claim is [`ClaimState::Dead`].
    #[serde(default = "default_max_attempts")]
    pub max_attempts: u32,
    /// How the attempt completed, as its worker reported it (set with the
    /// state Succeeded, Failed, or Dead after a failure).
    #[serde(default)]
    pub outcome: Option<Outcome>,
    /// The result the worker reported with it (JSON text), if any.
    #[serde(default)]
    pub result: Option<String>,
}

/// What validating an activate request found.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum Validation {
    /// The claim awaits this attempt and its reservation holds until
    /// `reservation_expires_at`: activate it.
    Start { reservation_expires_at: Millis },
    /// The claim already executes for this attempt: answer from the lease.
    Replay,
    /// The reservation expired but the claim is not reaped yet: nothing can
    /// be decided until recovery reaps it.
    Wait,
}

impl ClaimRow {
    /// Authorizes attempt `fence` of `claim` for `worker`, reserved until
    /// `reservation_expires_at`.
    pub fn authorize(claim: ClaimId, fence: Fence, worker: WorkerId, reservation_expires_at: Millis) -> ClaimRow {
        ClaimRow {
            claim,
            fence,
            reservation: Some(Reservation { worker: worker.clone(), expires_at: reservation_expires_at }),
            worker,
            state: ClaimState::Authorized,
            lock: None,
            activations: 0,
            lease_until: None,
            attempt: 1,
            max_attempts: DEFAULT_MAX_ATTEMPTS,
            outcome: None,
            result: None,
        }
    }

    /// Whether this attempt is the last the claim allows.
    pub fn last_attempt(&self) -> bool {
        self.attempt >= self.max_attempts
    }

    /// The state an attempt that ended without success leaves: dead after
    /// the last allowed attempt, else `otherwise` (a new attempt may follow).
    fn ended(&self, otherwise: ClaimState) -> ClaimState {
        if self.last_attempt() { ClaimState::Dead } else { otherwise }
    }

    /// Authorizes attempt `fence` of `claim` for `worker`, reserved until
    /// `reservation_expires_at`, over the claim's row (`existing`): a new
    /// claim allowing `max_attempts` attempts, or the next attempt on a
    /// reaped or failed one, with a higher fence (the claim keeps its
    /// `max_attempts`). Anything else is refused: while an attempt is
    /// authorized or executing, another would take authority from it; a
    /// succeeded claim is done; a dead one has used all its attempts.
    pub fn authorize_attempt(
        existing: Option<&ClaimRow>,
        claim: &ClaimId,
        fence: Fence,
        worker: &WorkerId,
        reservation_expires_at: Millis,
        max_attempts: u32,
    ) -> Result<ClaimRow, AuthorizeRefused> {
        let fresh = ClaimRow::authorize(claim.clone(), fence, worker.clone(), reservation_expires_at);
        match existing {
            None => Ok(ClaimRow { max_attempts: max_attempts.max(1), ..fresh }),
            Some(row) if row.state == ClaimState::Dead => {
                Err(AuthorizeRefused::Dead { claim: row.claim.clone(), attempts: row.attempt })
            }
            Some(row) if !matches!(row.state, ClaimState::Reaped | ClaimState::Failed) => {
                Err(AuthorizeRefused::Live { claim: row.claim.clone(), fence: row.fence, state: row.state })
            }
            Some(row) if fence <= row.fence => {
                Err(AuthorizeRefused::StaleFence { claim: row.claim.clone(), fence: row.fence })
            }
            Some(row) => {
                Ok(ClaimRow { attempt: row.attempt.saturating_add(1), max_attempts: row.max_attempts, ..fresh })
            }
        }
    }

    /// Whether the coordination store may create a lease for attempt
    /// `fence`: only while that attempt awaits activation (see `lease`).
    pub fn admits_lease(&self, fence: Fence) -> Result<(), LeaseRefused> {
        if self.state == ClaimState::Authorized && self.fence == fence {
            Ok(())
        } else {
            Err(LeaseRefused::NotAwaitingActivation)
        }
    }

    /// The recorded lease deadline from which the coordination store may
    /// restore the lease of attempt `(fence, worker)` after losing it: only
    /// for the attempt that executes the claim, and only while that deadline
    /// is ahead (`Lease::restore` compares it with `now`).
    pub fn admits_restore(&self, fence: Fence, worker: &WorkerId) -> Result<Millis, LeaseRefused> {
        if self.state != ClaimState::Executing || self.fence != fence || self.worker != *worker {
            return Err(LeaseRefused::NotHeld);
        }
        self.lease_until.ok_or(LeaseRefused::Lapsed)
    }

    /// The worker the claim is reserved for at `now`, if the reservation is live.
    pub fn reserved_for(&self, now: Millis) -> Option<&WorkerId> {
        self.reservation.as_ref().filter(|r| is_live(r.expires_at, now)).map(|r| &r.worker)
    }

    /// The lock at `now`: an activator's lock past its expiry is no lock.
    pub fn live_lock(&self, now: Millis) -> Option<&DurableLock> {
        self.lock.as_ref().filter(|lock| match lock {
            DurableLock::Activator { expires_at, .. } => is_live(*expires_at, now),
            DurableLock::Recovery => true,
        })
    }

    /// Whether `request` names this claim's current attempt (`ExactRequest`).
    pub fn check_attempt(&self, request: &RequestKey) -> Result<(), Rejection> {
        if request.fence != self.fence {
            Err(Rejection::StaleFence)
        } else if request.worker != self.worker {
            Err(Rejection::WrongWorker)
        } else {
            Ok(())
        }
    }

    /// Validates an activate request (read only).
    pub fn validate(&self, request: &RequestKey, now: Millis) -> Result<Validation, Rejection> {
        self.check_attempt(request)?;
        match self.state {
            ClaimState::Reaped => Err(Rejection::Reaped),
            ClaimState::Dead if self.outcome.is_none() => Err(Rejection::Reaped),
            // The attempt executed and completed: its lease was released.
            ClaimState::Succeeded | ClaimState::Failed | ClaimState::Dead => Err(Rejection::LeaseLost),
            ClaimState::Executing => Ok(Validation::Replay),
            ClaimState::Authorized => Ok(match &self.reservation {
                Some(r) if is_live(r.expires_at, now) && r.worker == request.worker => {
                    Validation::Start { reservation_expires_at: r.expires_at }
                }
                _ => Validation::Wait,
            }),
        }
    }

    /// The activation of `operation` takes the durable lock until `expires_at`.
    pub fn acquire_activation_lock(
        &self,
        operation: &OperationId,
        expires_at: Millis,
        now: Millis,
    ) -> Result<ClaimRow, LockRefused> {
        match self.state {
            ClaimState::Executing | ClaimState::Succeeded | ClaimState::Failed => return Err(LockRefused::Executing),
            ClaimState::Dead if self.outcome.is_some() => return Err(LockRefused::Executing),
            ClaimState::Reaped | ClaimState::Dead => return Err(LockRefused::Reaped),
            ClaimState::Authorized => {}
        }
        // Not needed for safety (the commit checks the reservation again),
        // but a lock taken now could only block recovery.
        if self.reserved_for(now).is_none() {
            return Err(LockRefused::ReservationExpired);
        }
        if self.live_lock(now).is_some() {
            return Err(LockRefused::Held);
        }
        Ok(ClaimRow { lock: Some(DurableLock::Activator { operation: operation.clone(), expires_at }), ..self.clone() })
    }

    /// Commits the activation of `operation`: in one transaction the claim
    /// goes from Authorized to Executing, the reservation is cleared, the
    /// effect is applied and the lock released. It requires the lock held by
    /// this activation, the attempt's reservation and the activation's lease
    /// (`lease_expires_at`, as the coordination store granted it) all live.
    pub fn commit_activation(
        &self,
        operation: &OperationId,
        lease_expires_at: Millis,
        now: Millis,
    ) -> Result<ClaimRow, CommitRefused> {
        match self.state {
            ClaimState::Executing | ClaimState::Succeeded | ClaimState::Failed => {
                return Err(CommitRefused::Executing);
            }
            ClaimState::Dead if self.outcome.is_some() => return Err(CommitRefused::Executing),
            ClaimState::Reaped | ClaimState::Dead => return Err(CommitRefused::Reaped),
            ClaimState::Authorized => {}
        }
        match self.live_lock(now) {
            Some(DurableLock::Activator { operation: holder, .. }) if holder == operation => {}
            _ => return Err(CommitRefused::LockNotHeld),
        }
        if self.reserved_for(now) != Some(&self.worker) {
            return Err(CommitRefused::ReservationExpired);
        }
        if !is_live(lease_expires_at, now) {
            return Err(CommitRefused::LeaseExpired);
        }
        Ok(ClaimRow {
            state: ClaimState::Executing,
            reservation: None,
            lock: None,
            activations: self.activations.saturating_add(1),
            ..self.clone()
        })
    }

    /// Whether recovery should reap this claim: it awaits activation and its
    /// reservation has expired.
    pub fn awaits_recovery(&self, now: Millis) -> bool {
        self.state == ClaimState::Authorized && self.reserved_for(now).is_none()
    }

    /// Recovery takes the durable lock of a claim whose reservation expired.
    /// The lock belongs to recovery, not to one reaper run: a run that finds
    /// it already taken (by a run that stopped half-way) carries on.
    pub fn acquire_recovery_lock(&self, now: Millis) -> Result<ClaimRow, RecoveryRefused> {
        if self.state != ClaimState::Authorized {
            return Err(RecoveryRefused::NotAuthorized);
        }
        if self.reserved_for(now).is_some() {
            return Err(RecoveryRefused::ReservationLive);
        }
        match self.live_lock(now) {
            None | Some(DurableLock::Recovery) => Ok(ClaimRow { lock: Some(DurableLock::Recovery), ..self.clone() }),
            Some(DurableLock::Activator { .. }) => Err(RecoveryRefused::LockHeld),
        }
    }

    /// Recovery reaps the claim it has locked: the attempt is given up, its
    /// reservation cleared and the lock released.
    pub fn finish_recovery(&self) -> Result<ClaimRow, RecoveryRefused> {
        if self.lock != Some(DurableLock::Recovery) {
            return Err(RecoveryRefused::NotRecoveryLocked);
        }
        if self.state != ClaimState::Authorized {
            return Err(RecoveryRefused::NotAuthorized);
        }
        Ok(ClaimRow { state: self.ended(ClaimState::Reaped), reservation: None, lock: None, ..self.clone() })
    }

    /// Whether recovery should look at this executing claim at `now`: the
    /// deadline of its lease that this store recorded has passed, or none is
    /// recorded yet (the activation's acceptance records it right after the
    /// commit). Its lease may still be live in the coordination store (a
    /// renewal granted and not recorded yet): [`ClaimRow::reap_executing`]
    /// decides, with the lease record read.
    pub fn awaits_lease_check(&self, now: Millis) -> bool {
        self.state == ClaimState::Executing && self.lease_until.is_none_or(|t| !is_live(t, now))
    }

    /// `ReapExecuting(c)` (`tla/RemoraJobs.tla`): recovery reaps the
    /// executing attempt whose lease is neither live nor restorable. `lease`
    /// is the coordination store's record as a host read it (holding the
    /// claim's lease lock until this transition, so nothing renewed or
    /// restored it in between). Refused for a claim that is not executing
    /// (a completed attempt is never reaped), whose recorded lease deadline
    /// is still ahead (its worker may restore it), or whose attempt's lease
    /// is live: then the live deadline is what this store records
    /// ([`ClaimRow::catch_up_lease`]). The reaped attempt counts as a
    /// failed one: the claim is dead after the last allowed attempt.
    pub fn reap_executing(&self, lease: Option<&Lease>, now: Millis) -> Result<ClaimRow, RecoveryRefused> {
        if self.state != ClaimState::Executing {
            return Err(RecoveryRefused::NotExecuting);
        }
        if !self.awaits_lease_check(now) || self.live_lease(lease, now).is_some() {
            return Err(RecoveryRefused::LeaseLive);
        }
        Ok(ClaimRow { state: self.ended(ClaimState::Reaped), lease_until: None, lock: None, ..self.clone() })
    }

    /// The attempt's own lease in `lease` if it is live at `now`.
    fn live_lease<'a>(&self, lease: Option<&'a Lease>, now: Millis) -> Option<&'a Lease> {
        lease.filter(|l| is_live(l.expires_at, now) && l.fence == self.fence && l.worker == self.worker)
    }

    /// After a refused `ReapExecuting`: the executing attempt's live lease
    /// deadline in `lease`, recorded (the record only grows), so that
    /// recovery looks again when that deadline passes. `None` if there is
    /// nothing to record.
    pub fn catch_up_lease(&self, lease: Option<&Lease>, now: Millis) -> Option<ClaimRow> {
        if self.state != ClaimState::Executing {
            return None;
        }
        let live = self.live_lease(lease, now)?;
        let lease_until = self.lease_until.map_or(live.expires_at, |t| t.max(live.expires_at));
        (Some(lease_until) != self.lease_until).then(|| ClaimRow { lease_until: Some(lease_until), ..self.clone() })
    }

    /// Whether `request` comes from the worker that executes the claim (the
    /// durable half of a heartbeat).
    pub fn check_executing(&self, request: &RequestKey) -> Result<(), HeartbeatRefused> {
        self.check_attempt(request).map_err(|r| match r {
            Rejection::WrongWorker => HeartbeatRefused::WrongWorker,
            _ => HeartbeatRefused::StaleFence,
        })?;
        match self.state {
            ClaimState::Executing => Ok(()),
            ClaimState::Authorized | ClaimState::Succeeded | ClaimState::Failed => Err(HeartbeatRefused::NotExecuting),
            ClaimState::Dead if self.outcome.is_some() => Err(HeartbeatRefused::NotExecuting),
            ClaimState::Reaped | ClaimState::Dead => Err(HeartbeatRefused::Reaped),
        }
    }

    /// The executing attempt `request` completes with `outcome` and
    /// `result`, proving its lease live until `lease_expires_at`: succeeded,
    /// or failed (dead if it was the last allowed attempt). The deadline
    /// recorded here must be ahead too: if the coordination store lost the
    /// lease after the completion read it, the commit goes ahead only while
    /// the lease is restorable (RemoraJobs' CompleteWithLostLease), never on
    /// a deadline the durable store has not seen (before the activation
    /// recorded it, the worker was not told it executes). The recorded
    /// lease deadline goes: a completed attempt holds no lease. A completed
    /// claim is never reaped (the reaper takes only authorized claims).
    pub fn complete(
        &self,
        request: &RequestKey,
        outcome: Outcome,
        result: Option<String>,
        lease_expires_at: Millis,
        now: Millis,
    ) -> Result<ClaimRow, CompletionRefused> {
        self.check_executing(request)?;
        if !is_live(lease_expires_at, now) || !self.lease_until.is_some_and(|t| is_live(t, now)) {
            return Err(CompletionRefused::LeaseLost);
        }
        let state = match outcome {
            Outcome::Succeeded => ClaimState::Succeeded,
            Outcome::Failed => self.ended(ClaimState::Failed),
        };
        Ok(ClaimRow { state, outcome: Some(outcome), result, lease_until: None, ..self.clone() })
    }

    /// Records `expires_at`, a deadline the coordination store granted to
    /// the lease of `request`, the attempt that executes the claim. The
    /// record only grows: a recording that arrives after a later one
    /// changes nothing.
    pub fn record_lease(&self, request: &RequestKey, expires_at: Millis) -> Result<ClaimRow, HeartbeatRefused> {
        self.check_executing(request)?;
        let lease_until = self.lease_until.map_or(expires_at, |t| t.max(expires_at));
        Ok(ClaimRow { lease_until: Some(lease_until), ..self.clone() })
    }
}

/// An operation id, the request it is bound to, and its stored answers.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct OperationRow {
    pub operation: OperationId,
    /// Bound once, never changed.
    pub request: RequestKey,
    /// A rejection is final, so it is stored and answered again as is. An
    /// acceptance is not stored: it stands only while the lease holds, so a
    /// replay asks the lease again.
    pub rejection: Option<Rejection>,
    /// The last other request sent under this id, kept for the 409's body.
    pub conflict: Option<RequestKey>,
    /// The rest of the bound request (rows bound by an older version:
    /// [`RequestBody::Attempt`]).
    #[serde(default)]
    pub body: RequestBody,
    /// A completion's stored answer: final, like a rejection.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completion: Option<CompletionAnswer>,
}

/// What a completion was answered, stored with its operation.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum CompletionAnswer {
    Completed { outcome: Outcome },
    Refused { reason: CompletionRefused },
}

/// The outcome of binding an operation id.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum Binding {
    /// The id is now (or already was) bound to the request.
    Bound,
    /// The id is bound to `bound` (with `body`), another request.
    Conflict { bound: RequestKey, body: RequestBody },
}

impl OperationRow {
    /// Binds `operation` to `request` with `body` (the whole request)
    /// unless `existing` binds it to another request, in which case the
    /// reuse is recorded. Returns the row to store.
    pub fn bind(
        existing: Option<&OperationRow>,
        operation: &OperationId,
        request: &RequestKey,
        body: &RequestBody,
    ) -> (OperationRow, Binding) {
        match existing {
            None => (
                OperationRow {
                    operation: operation.clone(),
                    request: request.clone(),
                    rejection: None,
                    conflict: None,
                    body: body.clone(),
                    completion: None,
                },
                Binding::Bound,
            ),
            Some(row) if row.request == *request && row.body.admits(body) => (row.clone(), Binding::Bound),
            Some(row) => (
                OperationRow { conflict: Some(request.clone()), ..row.clone() },
                Binding::Conflict { bound: row.request.clone(), body: row.body.clone() },
            ),
        }
    }

    /// Stores a completion's answer; one already stored stands.
    pub fn answer_completion(&self, answer: CompletionAnswer) -> OperationRow {
        OperationRow { completion: Some(self.completion.clone().unwrap_or(answer)), ..self.clone() }
    }

    /// Stores `reason` as the operation's answer; a rejection already stored
    /// stands (the same operation gets the same answer).
    pub fn reject(&self, reason: Rejection) -> OperationRow {
        OperationRow { rejection: Some(self.rejection.unwrap_or(reason)), ..self.clone() }
    }
}

/// A request to the durable store.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum DurableRequest {
    /// A new attempt (the create request).
    Authorize {
        claim: ClaimId,
        fence: Fence,
        worker: WorkerId,
        reservation_expires_at: Millis,
        /// For a new claim: how many attempts it allows.
        #[serde(default = "default_max_attempts")]
        max_attempts: u32,
    },
    /// Binds the id to the request (its attempt and `body`, the rest of
    /// it), once the request's claim is known to exist (an id is never
    /// bound for a claim that does not exist).
    Bind {
        operation: OperationId,
        request: RequestKey,
        #[serde(default)]
        body: RequestBody,
    },
    /// Validates a completion bound to `operation`: its stored answer, or
    /// the claim's executing attempt is the request's (a refusal is stored
    /// in the same transaction).
    ValidateCompletion {
        claim: ClaimId,
        operation: OperationId,
    },
    /// Completes the claim with the bound completion's outcome and result,
    /// the attempt's lease proved live until `lease_expires_at`; the answer
    /// is stored with the operation in the same transaction.
    CommitCompletion {
        claim: ClaimId,
        operation: OperationId,
        lease_expires_at: Millis,
    },
    /// Stores a completion's refusal (a refusal already stored stands).
    RecordCompletionRefusal {
        claim: ClaimId,
        operation: OperationId,
        reason: CompletionRefused,
    },
    /// Validates the operation's bound request; a rejection is stored in the
    /// same transaction.
    Validate {
        claim: ClaimId,
        operation: OperationId,
    },
    AcquireActivationLock {
        claim: ClaimId,
        operation: OperationId,
        expires_at: Millis,
    },
    CommitActivation {
        claim: ClaimId,
        operation: OperationId,
        lease_expires_at: Millis,
    },
    /// Reads the claim's state.
    Inspect {
        claim: ClaimId,
    },
    RecordRejection {
        claim: ClaimId,
        operation: OperationId,
        reason: Rejection,
    },
    /// Lists (at most `limit` of) the claims whose reservation expired
    /// unreaped, in the order of their deadlines.
    ListAwaitingRecovery {
        limit: usize,
    },
    AcquireRecoveryLock {
        claim: ClaimId,
    },
    FinishRecovery {
        claim: ClaimId,
    },
    /// Lists (at most `limit` of) the executing claims whose recorded lease
    /// deadline has passed, or that have none recorded
    /// ([`ClaimRow::awaits_lease_check`]), earliest first.
    ListExecutingUnleased {
        limit: usize,
    },
    /// `ReapExecuting(c)`: reaps the executing claim unless `lease` (the
    /// coordination store's record, read under the claim's lease lock,
    /// which the host holds until this request) is the attempt's and live,
    /// or its recorded deadline is ahead ([`ClaimRow::reap_executing`]);
    /// a live deadline it does not have yet is recorded instead.
    ReapExecuting {
        claim: ClaimId,
        lease: Option<Lease>,
    },
    CheckExecuting {
        request: RequestKey,
    },
    /// Records a deadline the coordination store granted to the executing
    /// attempt's lease ([`ClaimRow::record_lease`]). A procedure sends it
    /// right after the lease request that granted (or read) the deadline,
    /// and a host holds the claim's lease lock from that request to this
    /// one: no other lease request of the claim runs in between, so the
    /// recorded deadline is never ahead of the lease record's own.
    RecordLease {
        request: RequestKey,
        expires_at: Millis,
    },
}

/// The durable store's reply to a [`DurableRequest`].
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum DurableReply {
    /// The attempt is authorized: the claim's new row.
    Authorized {
        row: ClaimRow,
    },
    AuthorizeRefused {
        refused: AuthorizeRefused,
    },
    Bound,
    Conflict {
        bound: RequestKey,
        #[serde(default)]
        body: RequestBody,
    },
    /// A completion's answer (stored), or `None` from `ValidateCompletion`:
    /// the request is the executing attempt's, go on.
    Completion {
        answer: Option<CompletionAnswer>,
    },
    Validated {
        validation: Validation,
    },
    /// The operation's stored rejection (from `Validate` or `RecordRejection`).
    Rejected {
        reason: Rejection,
    },
    LockAcquired,
    LockRefused {
        refused: LockRefused,
    },
    Committed,
    CommitRefused {
        refused: CommitRefused,
    },
    Status {
        state: ClaimState,
    },
    AwaitingRecovery {
        claims: Vec<ClaimId>,
    },
    RecoveryLocked,
    Reaped,
    RecoveryRefused {
        refused: RecoveryRefused,
    },
    /// The request is the attempt that executes the claim.
    Executing,
    NotExecuting {
        refused: HeartbeatRefused,
    },
    LeaseRecorded,
    Failed {
        error: DurableError,
    },
}

/// The rows of the durable store, as a host keeps them. `apply` reads and
/// writes only through this, inside the host's transaction.
pub trait DurableRows {
    fn claim(&self, claim: &ClaimId) -> Option<ClaimRow>;
    fn put_claim(&mut self, row: ClaimRow);
    /// At most `limit` claims that are Authorized with a reservation that
    /// has expired at `now` (a host answers from an index on the deadline,
    /// so the work is proportional to what it returns), earliest first.
    fn awaiting_recovery(&self, now: Millis, limit: usize) -> Vec<ClaimRow>;
    /// At most `limit` executing claims whose recorded lease deadline has
    /// passed at `now`, or that have none (from an index, as
    /// `awaiting_recovery`), earliest first.
    fn executing_unleased(&self, now: Millis, limit: usize) -> Vec<ClaimRow>;
    /// An operation id is scoped to its claim: the same id on another claim
    /// is another operation.
    fn operation(&self, claim: &ClaimId, operation: &OperationId) -> Option<OperationRow>;
    /// Stores `row` under its claim (`row.request.claim`) and id.
    fn put_operation(&mut self, row: OperationRow);
}

/// Serves one request: loads the rows, applies the transition at `now`,
/// stores what it wrote.
pub fn apply(rows: &mut impl DurableRows, request: &DurableRequest, now: Millis) -> DurableReply {
    serve(rows, request, now).unwrap_or_else(|error| DurableReply::Failed { error })
}

fn serve(rows: &mut impl DurableRows, request: &DurableRequest, now: Millis) -> Result<DurableReply, DurableError> {
    Ok(match request {
        DurableRequest::Authorize { claim, fence, worker, reservation_expires_at, max_attempts } => {
            let existing = rows.claim(claim);
            let authorized = ClaimRow::authorize_attempt(
                existing.as_ref(),
                claim,
                *fence,
                worker,
                *reservation_expires_at,
                *max_attempts,
            );
            match authorized {
                Ok(row) => {
                    rows.put_claim(row.clone());
                    DurableReply::Authorized { row }
                }
                Err(refused) => DurableReply::AuthorizeRefused { refused },
            }
        }
        DurableRequest::Bind { operation, request, body } => {
            claim_row(rows, &request.claim)?;
            let existing = rows.operation(&request.claim, operation);
            let (row, binding) = OperationRow::bind(existing.as_ref(), operation, request, body);
            rows.put_operation(row);
            match binding {
                Binding::Bound => DurableReply::Bound,
                Binding::Conflict { bound, body } => DurableReply::Conflict { bound, body },
            }
        }
        DurableRequest::ValidateCompletion { claim, operation } => {
            let op = bound_operation(rows, claim, operation)?;
            if op.completion.is_some() {
                return Ok(DurableReply::Completion { answer: op.completion });
            }
            match claim_row(rows, &op.request.claim)?.check_executing(&op.request) {
                Ok(()) => DurableReply::Completion { answer: None },
                Err(reason) => {
                    let row = op.answer_completion(CompletionAnswer::Refused { reason });
                    let answer = row.completion.clone();
                    rows.put_operation(row);
                    DurableReply::Completion { answer }
                }
            }
        }
        DurableRequest::CommitCompletion { claim, operation, lease_expires_at } => {
            let op = bound_operation(rows, claim, operation)?;
            if op.completion.is_some() {
                return Ok(DurableReply::Completion { answer: op.completion });
            }
            let RequestBody::Complete { outcome, result } = &op.body else {
                return Err(DurableError::NotACompletion(operation.clone()));
            };
            let row = claim_row(rows, &op.request.claim)?;
            let answer = match row.complete(&op.request, *outcome, result.clone(), *lease_expires_at, now) {
                Ok(completed) => {
                    rows.put_claim(completed);
                    CompletionAnswer::Completed { outcome: *outcome }
                }
                Err(reason) => CompletionAnswer::Refused { reason },
            };
            let op = op.answer_completion(answer);
            let answer = op.completion.clone();
            rows.put_operation(op);
            DurableReply::Completion { answer }
        }
        DurableRequest::RecordCompletionRefusal { claim, operation, reason } => {
            let op = bound_operation(rows, claim, operation)?;
            // An attempt that stopped executing since the validation (another
            // completion committed, or the reaper took it, and its lease went
            // with it) is refused for that, not for the lease it no longer has.
            let ended = claim_row(rows, &op.request.claim).ok().and_then(|row| row.check_executing(&op.request).err());
            let op = op.answer_completion(CompletionAnswer::Refused { reason: ended.unwrap_or(*reason) });
            let answer = op.completion.clone();
            rows.put_operation(op);
            DurableReply::Completion { answer }
        }
        DurableRequest::Validate { claim, operation } => {
            let op = bound_operation(rows, claim, operation)?;
            if let Some(reason) = op.rejection {
                return Ok(DurableReply::Rejected { reason });
            }
            match claim_row(rows, &op.request.claim)?.validate(&op.request, now) {
                Ok(validation) => DurableReply::Validated { validation },
                Err(reason) => {
                    rows.put_operation(op.reject(reason));
                    DurableReply::Rejected { reason }
                }
            }
        }
        DurableRequest::AcquireActivationLock { claim, operation, expires_at } => {
            let row = claim_row(rows, claim)?;
            if !of_current_attempt(rows, &row, operation)? {
                return Ok(DurableReply::LockRefused { refused: LockRefused::Reaped });
            }
            match row.acquire_activation_lock(operation, *expires_at, now) {
                Ok(row) => {
                    rows.put_claim(row);
                    DurableReply::LockAcquired
                }
                Err(refused) => DurableReply::LockRefused { refused },
            }
        }
        DurableRequest::CommitActivation { claim, operation, lease_expires_at } => {
            let row = claim_row(rows, claim)?;
            if !of_current_attempt(rows, &row, operation)? {
                return Ok(DurableReply::CommitRefused { refused: CommitRefused::Reaped });
            }
            match row.commit_activation(operation, *lease_expires_at, now) {
                Ok(row) => {
                    rows.put_claim(row);
                    DurableReply::Committed
                }
                Err(refused) => DurableReply::CommitRefused { refused },
            }
        }
        DurableRequest::Inspect { claim } => DurableReply::Status { state: claim_row(rows, claim)?.state },
        DurableRequest::RecordRejection { claim, operation, reason } => {
            let row = bound_operation(rows, claim, operation)?.reject(*reason);
            let reason = row.rejection.unwrap_or(*reason);
            rows.put_operation(row);
            DurableReply::Rejected { reason }
        }
        DurableRequest::ListAwaitingRecovery { limit } => DurableReply::AwaitingRecovery {
            claims: rows
                .awaiting_recovery(now, *limit)
                .into_iter()
                .filter(|row| row.awaits_recovery(now))
                .take(*limit)
                .map(|row| row.claim)
                .collect(),
        },
        DurableRequest::AcquireRecoveryLock { claim } => match claim_row(rows, claim)?.acquire_recovery_lock(now) {
            Ok(row) => {
                rows.put_claim(row);
                DurableReply::RecoveryLocked
            }
            Err(refused) => DurableReply::RecoveryRefused { refused },
        },
        DurableRequest::FinishRecovery { claim } => match claim_row(rows, claim)?.finish_recovery() {
            Ok(row) => {
                rows.put_claim(row);
                DurableReply::Reaped
            }
            Err(refused) => DurableReply::RecoveryRefused { refused },
        },
        DurableRequest::ListExecutingUnleased { limit } => DurableReply::AwaitingRecovery {
            claims: rows
                .executing_unleased(now, *limit)
                .into_iter()
                .filter(|row| row.awaits_lease_check(now))
                .take(*limit)
                .map(|row| row.claim)
                .collect(),
        },
        DurableRequest::ReapExecuting { claim, lease } => {
            let row = claim_row(rows, claim)?;
            match row.reap_executing(lease.as_ref(), now) {
                Ok(reaped) => {
                    rows.put_claim(reaped);
                    DurableReply::Reaped
                }
                Err(refused) => {
                    if let Some(caught_up) = row.catch_up_lease(lease.as_ref(), now) {
                        rows.put_claim(caught_up);
                    }
                    DurableReply::RecoveryRefused { refused }
                }
            }
        }
        DurableRequest::CheckExecuting { request } => match claim_row(rows, &request.claim)?.check_executing(request) {
            Ok(()) => DurableReply::Executing,
            Err(refused) => DurableReply::NotExecuting { refused },
        },
        DurableRequest::RecordLease { request, expires_at } => {
            match claim_row(rows, &request.claim)?.record_lease(request, *expires_at) {
                Ok(row) => {
                    rows.put_claim(row);
                    DurableReply::LeaseRecorded
                }
                Err(refused) => DurableReply::NotExecuting { refused },
            }
        }
    })
}

fn claim_row(rows: &impl DurableRows, claim: &ClaimId) -> Result<ClaimRow, DurableError> {
    rows.claim(claim).ok_or_else(|| DurableError::UnknownClaim(claim.clone()))
}

/// Whether `operation` is an activation of `row`'s current attempt. One of
/// an earlier attempt (reaped or failed, and a new attempt authorized while
/// it was still on its way) may neither take the lock nor commit: it would
/// make the new attempt execute on the old attempt's lease, and answer its
/// own client Accepted (`AuthorizeRetry` in `tla/RemoraJobs.tla` starts the
/// new attempt with no activation). It is refused as for a reaped claim:
/// its activation compensates and is rejected.
fn of_current_attempt(rows: &impl DurableRows, row: &ClaimRow, operation: &OperationId) -> Result<bool, DurableError> {
    let bound = bound_operation(rows, &row.claim, operation)?;
    Ok(row.check_attempt(&bound.request).is_ok())
}

fn bound_operation(
    rows: &impl DurableRows,
    claim: &ClaimId,
    operation: &OperationId,
) -> Result<OperationRow, DurableError> {
    rows.operation(claim, operation).ok_or_else(|| DurableError::UnknownOperation(operation.clone()))
}

/// The durable store in memory, for tests and the model checker.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct MemoryDurable {
    pub claims: BTreeMap<ClaimId, ClaimRow>,
    /// By claim, then id.
    pub operations: BTreeMap<(ClaimId, OperationId), OperationRow>,
}

impl DurableRows for MemoryDurable {
    fn claim(&self, claim: &ClaimId) -> Option<ClaimRow> {
        self.claims.get(claim).cloned()
    }

    fn put_claim(&mut self, row: ClaimRow) {
        self.claims.insert(row.claim.clone(), row);
    }

    fn awaiting_recovery(&self, now: Millis, limit: usize) -> Vec<ClaimRow> {
        let mut due: Vec<&ClaimRow> = self.claims.values().filter(|row| row.awaits_recovery(now)).collect();
        due.sort_by_key(|row| row.reservation.as_ref().map(|r| r.expires_at));
        due.into_iter().take(limit).cloned().collect()
    }

    fn executing_unleased(&self, now: Millis, limit: usize) -> Vec<ClaimRow> {
        let mut due: Vec<&ClaimRow> = self.claims.values().filter(|row| row.awaits_lease_check(now)).collect();
        due.sort_by_key(|row| row.lease_until);
        due.into_iter().take(limit).cloned().collect()
    }

    fn operation(&self, claim: &ClaimId, operation: &OperationId) -> Option<OperationRow> {
        self.operations.get(&(claim.clone(), operation.clone())).cloned()
    }

    fn put_operation(&mut self, row: OperationRow) {
        self.operations.insert((row.request.claim.clone(), row.operation.clone()), row);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::claim::testing::{R, claim_row, key, op};

    const NOW: Millis = 100;

    #[test]
    fn authorize_reserves_the_claim_for_the_attempt_worker() {
        let row = claim_row();
        assert_eq!(row.state, ClaimState::Authorized);
        assert_eq!(row.reserved_for(NOW), Some(&WorkerId::from("w1")));
        assert_eq!(row.reserved_for(R), None, "the reservation expires at its deadline");
        assert_eq!(row.activations, 0);
    }

    #[test]
    fn only_a_reaped_claim_takes_a_new_attempt_with_a_higher_fence() {
        let (c1, w1) = (ClaimId::from("c1"), WorkerId::from("w1"));
        let new = ClaimRow::authorize_attempt(None, &c1, Fence(1), &w1, R, 3).unwrap();
        assert_eq!(new, claim_row());
        let live = ClaimRow::authorize_attempt(Some(&new), &c1, Fence(2), &w1, R, 3);
        assert_eq!(live.map_err(|e| e.code()), Err("claim_exists"));
        let executing = committed(&new);
        let live = ClaimRow::authorize_attempt(Some(&executing), &c1, Fence(2), &w1, R, 3);
        assert_eq!(live.map_err(|e| e.code()), Err("claim_exists"));
        let reaped = new.acquire_recovery_lock(R).unwrap().finish_recovery().unwrap();
        let stale = ClaimRow::authorize_attempt(Some(&reaped), &c1, Fence(1), &w1, R + 50, 3);
        assert_eq!(stale, Err(AuthorizeRefused::StaleFence { claim: c1.clone(), fence: Fence(1) }));
        let again =
            ClaimRow::authorize_attempt(Some(&reaped), &c1, Fence(2), &WorkerId::from("w2"), R + 50, 3).unwrap();
        assert_eq!(again, ClaimRow { attempt: 2, ..ClaimRow::authorize(c1, Fence(2), WorkerId::from("w2"), R + 50) });
    }

    #[test]
    fn a_refused_attempt_names_the_live_one() {
        let refused =
            AuthorizeRefused::Live { claim: ClaimId::from("c"), fence: Fence(3), state: ClaimState::Executing };
        assert_eq!(
            refused.to_string(),
            "claim c already has attempt 3 (executing); only a reaped or failed claim takes a new attempt"
        );
    }

    #[test]
    fn apply_authorizes_in_one_transaction_and_writes_nothing_when_refused() {
        let mut rows = MemoryDurable::default();
        let authorize = |fence| DurableRequest::Authorize {
            claim: ClaimId::from("c1"),
            fence: Fence(fence),
            worker: WorkerId::from("w1"),
            reservation_expires_at: R,
            max_attempts: 3,
        };
        assert_eq!(apply(&mut rows, &authorize(1), NOW), DurableReply::Authorized { row: claim_row() });
        assert_eq!(rows.claims[&ClaimId::from("c1")], claim_row());
        let before = rows.clone();
        assert!(matches!(apply(&mut rows, &authorize(2), NOW), DurableReply::AuthorizeRefused { .. }));
        assert_eq!(rows, before);
    }

    #[test]
    fn validate_starts_an_exact_request_with_a_live_reservation() {
        let row = claim_row();
        assert_eq!(row.validate(&key(1, "w1"), NOW), Ok(Validation::Start { reservation_expires_at: R }));
        assert_eq!(row.validate(&key(1, "w1"), R), Ok(Validation::Wait));
    }

    #[test]
    fn validate_rejects_another_attempt() {
        let row = claim_row();
        assert_eq!(row.validate(&key(2, "w1"), NOW), Err(Rejection::StaleFence));
        assert_eq!(row.validate(&key(1, "w2"), NOW), Err(Rejection::WrongWorker));
        assert_eq!(row.validate(&key(2, "w2"), NOW), Err(Rejection::StaleFence));
    }

    #[test]
    fn validate_rejects_a_reaped_claim_and_replays_an_executing_one() {
        let reaped = ClaimRow { state: ClaimState::Reaped, reservation: None, ..claim_row() };
        assert_eq!(reaped.validate(&key(1, "w1"), NOW), Err(Rejection::Reaped));
        let executing = ClaimRow { state: ClaimState::Executing, reservation: None, ..claim_row() };
        assert_eq!(executing.validate(&key(1, "w1"), NOW), Ok(Validation::Replay));
    }

    #[test]
    fn the_activation_lock_is_exclusive_until_it_expires() {
        let row = claim_row();
        let locked = row.acquire_activation_lock(&op("o1"), 150, NOW).unwrap();
        assert_eq!(locked.acquire_activation_lock(&op("o2"), 160, NOW), Err(LockRefused::Held));
        let taken_over = locked.acquire_activation_lock(&op("o2"), 160, 150).unwrap();
        assert_eq!(taken_over.lock, Some(DurableLock::Activator { operation: op("o2"), expires_at: 160 }));
    }

    #[test]
    fn the_activation_lock_is_refused_when_it_cannot_lead_to_a_commit() {
        let row = claim_row();
        assert_eq!(row.acquire_activation_lock(&op("o1"), 150, R), Err(LockRefused::ReservationExpired));
        let executing = committed(&row);
        assert_eq!(executing.acquire_activation_lock(&op("o2"), 150, NOW), Err(LockRefused::Executing));
        let recovering = row.acquire_recovery_lock(R).unwrap();
        assert_eq!(recovering.acquire_activation_lock(&op("o1"), 150, NOW), Err(LockRefused::Held));
        let reaped = recovering.finish_recovery().unwrap();
        assert_eq!(reaped.acquire_activation_lock(&op("o1"), 150, NOW), Err(LockRefused::Reaped));
    }

    #[test]
    fn commit_executes_clears_applies_once_and_releases_in_one_transition() {
        let locked = claim_row().acquire_activation_lock(&op("o1"), 150, NOW).unwrap();
        let committed = locked.commit_activation(&op("o1"), 180, NOW).unwrap();
        assert_eq!(committed.state, ClaimState::Executing);
        assert_eq!(committed.reservation, None);
        assert_eq!(committed.lock, None);
        assert_eq!(committed.activations, 1);
        assert_eq!(committed.commit_activation(&op("o1"), 180, NOW), Err(CommitRefused::Executing));
    }

    #[test]
    fn commit_requires_the_lock_the_reservation_and_the_lease() {
        let row = claim_row();
        assert_eq!(row.commit_activation(&op("o1"), 180, NOW), Err(CommitRefused::LockNotHeld));
        let locked = row.acquire_activation_lock(&op("o1"), 150, NOW).unwrap();
        assert_eq!(locked.commit_activation(&op("o2"), 180, NOW), Err(CommitRefused::LockNotHeld));
        assert_eq!(locked.commit_activation(&op("o1"), 180, 150), Err(CommitRefused::LockNotHeld), "the lock expired");
        assert_eq!(locked.commit_activation(&op("o1"), NOW, NOW), Err(CommitRefused::LeaseExpired));
        let late = claim_row().acquire_activation_lock(&op("o1"), R + 50, NOW).unwrap();
        assert_eq!(late.commit_activation(&op("o1"), R + 80, R), Err(CommitRefused::ReservationExpired));
        let reaped = ClaimRow { state: ClaimState::Reaped, ..late };
        assert_eq!(reaped.commit_activation(&op("o1"), R + 80, NOW), Err(CommitRefused::Reaped));
    }

    #[test]
    fn recovery_locks_and_reaps_only_an_expired_reservation() {
        let row = claim_row();
        assert!(!row.awaits_recovery(NOW));
        assert_eq!(row.acquire_recovery_lock(NOW), Err(RecoveryRefused::ReservationLive));
        assert!(row.awaits_recovery(R));
        assert_eq!(row.finish_recovery(), Err(RecoveryRefused::NotRecoveryLocked));
        let locked = row.acquire_recovery_lock(R).unwrap();
        assert_eq!(locked.lock, Some(DurableLock::Recovery));
        assert_eq!(locked.acquire_recovery_lock(R).as_ref(), Ok(&locked), "recovery already holds it");
        let reaped = locked.finish_recovery().unwrap();
        assert_eq!(reaped.state, ClaimState::Reaped);
        assert_eq!((reaped.reservation.clone(), reaped.lock.clone()), (None, None));
        assert_eq!(reaped.acquire_recovery_lock(R), Err(RecoveryRefused::NotAuthorized));
        assert!(!reaped.awaits_recovery(R));
    }

    #[test]
    fn recovery_waits_for_an_activator_lock_and_ignores_an_executing_claim() {
        let locked = claim_row().acquire_activation_lock(&op("o1"), R + 10, NOW).unwrap();
        assert_eq!(locked.acquire_recovery_lock(R), Err(RecoveryRefused::LockHeld));
        assert!(locked.acquire_recovery_lock(R + 10).is_ok(), "the activator's lock expired");
        let executing = committed(&claim_row());
        assert_eq!(executing.acquire_recovery_lock(R), Err(RecoveryRefused::NotAuthorized));
        let stale = ClaimRow { lock: Some(DurableLock::Recovery), ..executing };
        assert_eq!(stale.finish_recovery(), Err(RecoveryRefused::NotAuthorized));
    }

    #[test]
    fn check_executing_admits_only_the_executing_attempt() {
        let row = claim_row();
        assert_eq!(row.check_executing(&key(1, "w1")), Err(HeartbeatRefused::NotExecuting));
        let executing = committed(&row);
        assert_eq!(executing.check_executing(&key(1, "w1")), Ok(()));
        assert_eq!(executing.check_executing(&key(2, "w1")), Err(HeartbeatRefused::StaleFence));
        assert_eq!(executing.check_executing(&key(1, "w2")), Err(HeartbeatRefused::WrongWorker));
        let reaped = row.acquire_recovery_lock(R).unwrap().finish_recovery().unwrap();
        assert_eq!(reaped.check_executing(&key(1, "w1")), Err(HeartbeatRefused::Reaped));
    }

    #[test]
    fn an_operation_id_binds_once_and_records_reuse() {
        let (row, binding) = OperationRow::bind(None, &op("o1"), &key(1, "w1"), &RequestBody::Attempt);
        assert_eq!(binding, Binding::Bound);
        let (same, binding) = OperationRow::bind(Some(&row), &op("o1"), &key(1, "w1"), &RequestBody::Attempt);
        assert_eq!((same.clone(), binding), (row.clone(), Binding::Bound));
        let (reused, binding) = OperationRow::bind(Some(&row), &op("o1"), &key(2, "w1"), &RequestBody::Attempt);
        assert_eq!(binding, Binding::Conflict { bound: key(1, "w1"), body: RequestBody::Attempt });
        assert_eq!(reused.request, key(1, "w1"), "the binding is immutable");
        assert_eq!(reused.conflict, Some(key(2, "w1")));
    }

    #[test]
    fn an_id_is_bound_only_for_an_existing_claim_and_only_on_that_claim() {
        let mut rows = MemoryDurable::default();
        let missing = RequestKey { claim: ClaimId::from("c9"), fence: Fence(1), worker: WorkerId::from("w1") };
        let bind = |request: &RequestKey| DurableRequest::Bind {
            operation: op("k"),
            request: request.clone(),
            body: RequestBody::Attempt,
        };
        assert_eq!(
            apply(&mut rows, &bind(&missing), NOW),
            DurableReply::Failed { error: DurableError::UnknownClaim(ClaimId::from("c9")) }
        );
        assert!(rows.operations.is_empty(), "nothing is bound for a claim that does not exist");
        rows.put_claim(claim_row());
        rows.put_claim(ClaimRow::authorize(ClaimId::from("c9"), Fence(1), WorkerId::from("w1"), R));
        assert_eq!(apply(&mut rows, &bind(&key(1, "w1")), NOW), DurableReply::Bound);
        assert_eq!(apply(&mut rows, &bind(&missing), NOW), DurableReply::Bound, "the same id on another claim");
        assert_eq!(rows.operations.len(), 2);
    }

    #[test]
    fn a_lease_deadline_is_recorded_for_the_executing_attempt_and_only_grows() {
        let row = claim_row();
        assert_eq!(row.record_lease(&key(1, "w1"), 500), Err(HeartbeatRefused::NotExecuting));
        let executing = committed(&row);
        assert_eq!(executing.lease_until, None, "the commit records nothing: the acceptance does");
        let recorded = executing.record_lease(&key(1, "w1"), 500).unwrap();
        assert_eq!(recorded.lease_until, Some(500));
        assert_eq!(recorded.record_lease(&key(1, "w1"), 400).unwrap().lease_until, Some(500));
        assert_eq!(recorded.record_lease(&key(1, "w2"), 900), Err(HeartbeatRefused::WrongWorker));
    }

    #[test]
    fn the_first_stored_rejection_stands() {
        let (row, _) = OperationRow::bind(None, &op("o1"), &key(1, "w1"), &RequestBody::Attempt);
        let rejected = row.reject(Rejection::LeaseLost).reject(Rejection::Reaped);
        assert_eq!(rejected.rejection, Some(Rejection::LeaseLost));
    }

    #[test]
    fn apply_stores_a_validation_rejection_in_the_same_transaction() {
        let mut rows = MemoryDurable::default();
        rows.put_claim(claim_row());
        let bind = DurableRequest::Bind { operation: op("o1"), request: key(2, "w1"), body: RequestBody::Attempt };
        assert_eq!(apply(&mut rows, &bind, NOW), DurableReply::Bound);
        let validate = DurableRequest::Validate { claim: ClaimId::from("c1"), operation: op("o1") };
        let stale = DurableReply::Rejected { reason: Rejection::StaleFence };
        assert_eq!(apply(&mut rows, &validate, NOW), stale);
        assert_eq!(rows.operations[&(ClaimId::from("c1"), op("o1"))].rejection, Some(Rejection::StaleFence));
        assert_eq!(apply(&mut rows, &validate, NOW), stale, "answered again from the stored row");
    }

    #[test]
    fn apply_refuses_unknown_rows_without_writing() {
        let mut rows = MemoryDurable::default();
        let unknown_claim = DurableRequest::Inspect { claim: ClaimId::from("c9") };
        assert_eq!(
            apply(&mut rows, &unknown_claim, NOW),
            DurableReply::Failed { error: DurableError::UnknownClaim(ClaimId::from("c9")) }
        );
        let unbound = DurableRequest::Validate { claim: ClaimId::from("c1"), operation: op("o9") };
        assert_eq!(
            apply(&mut rows, &unbound, NOW),
            DurableReply::Failed { error: DurableError::UnknownOperation(op("o9")) }
        );
        assert_eq!(rows, MemoryDurable::default());
    }

    #[test]
    fn apply_lists_the_claims_awaiting_recovery() {
        let mut rows = MemoryDurable::default();
        rows.put_claim(claim_row());
        rows.put_claim(ClaimRow::authorize(ClaimId::from("c2"), Fence(1), WorkerId::from("w1"), R + 100));
        let list = DurableRequest::ListAwaitingRecovery { limit: 10 };
        assert_eq!(apply(&mut rows, &list, NOW), DurableReply::AwaitingRecovery { claims: vec![] });
        assert_eq!(apply(&mut rows, &list, R), DurableReply::AwaitingRecovery { claims: vec![ClaimId::from("c1")] });
    }

    /// `row` after a lock and commit at `NOW`.
    fn committed(row: &ClaimRow) -> ClaimRow {
        let locked = row.acquire_activation_lock(&op("o1"), 150, NOW).unwrap();
        locked.commit_activation(&op("o1"), 180, NOW).unwrap()
    }
}
