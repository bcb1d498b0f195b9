//! The one shape of the three procedures, and the one driver that runs them.
//!
//! A [`Procedure`] (the activator, the heartbeat, the reaper) never touches a
//! store: [`Procedure::poll_request`] says what to ask next (deadlines
//! computed from `now`), the host serves it (`durable::apply` or
//! `lease::apply`) and hands the reply to [`Procedure::handle_reply`], until
//! [`Procedure::outcome`] is set.
//!
//! The driver ([`step`], [`run`]) is the loop every host runs, written once:
//! the Durable Object (whose lease store is reached over awaited calls), the
//! model checker (one request per model step) and the tests. A [`Host`]
//! serves requests and pauses while a procedure waits; its calls are
//! futures, so one driver serves both an awaiting host and a synchronous
//! one, which runs it with [`ready`].

use std::future::Future;
use std::pin::pin;
use std::task::{Context, Poll, Waker};

use super::error::ProcedureError;
use super::message::{Reply, Request};
use super::types::Millis;

/// What handling a reply did.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[must_use]
pub enum Progress {
    /// The procedure moved on (to its next request, or to its outcome).
    Advanced,
    /// The procedure waits for another party (an activation holding the
    /// durable lock, recovery that has not reaped the claim yet): it will
    /// ask the same thing again, and the host should pause first.
    Waits,
}

/// A claim procedure, sans-IO.
pub trait Procedure {
    /// What the procedure ends with.
    type Outcome: Clone;
    /// The procedure's name, for errors.
    const NAME: &'static str;

    /// The request to send next, with deadlines computed from `now`; `None`
    /// once there is an outcome.
    #[must_use]
    fn poll_request(&self, now: Millis) -> Option<Request>;

    /// Takes the reply to the last polled request. A reply that does not
    /// answer it is an error and changes nothing.
    fn handle_reply(&mut self, reply: Reply) -> Result<Progress, ProcedureError>;

    /// The outcome, once there is one.
    fn outcome(&self) -> Option<&Self::Outcome>;
}

/// Where a driver's requests go.
pub trait Host {
    /// Why the host could not serve or wait; a procedure's error is one.
    type Error: From<ProcedureError>;

    /// The host's clock, from which a polled request's deadlines are computed.
    fn now(&self) -> Millis;

    /// Serves one request: the durable store's as one transaction, the
    /// coordination store's as one atomic update.
    fn serve(&mut self, request: Request) -> impl Future<Output = Result<Reply, Self::Error>>;

    /// The procedure waits ([`Progress::Waits`]): pause before it asks
    /// again, or give up with an error.
    fn pause(&mut self) -> impl Future<Output = Result<(), Self::Error>>;

    /// The procedure advanced: a wait that follows is a new one.
    fn advanced(&mut self) {}
}

/// What one [`step`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Step {
    /// The procedure already had its outcome: nothing was asked.
    Done,
    /// One request was served and its reply handled.
    Served(Progress),
}

/// One step of `procedure`: unless it has its outcome, its next request is
/// served by `host` and the reply handed back. A procedure with neither an
/// outcome nor a request is stalled (a protocol bug, an error).
pub async fn step<P: Procedure, H: Host>(procedure: &mut P, host: &mut H) -> Result<Step, H::Error> {
    if procedure.outcome().is_some() {
        return Ok(Step::Done);
    }
    let request = procedure.poll_request(host.now()).ok_or(ProcedureError::Stalled { procedure: P::NAME })?;
    let reply = host.serve(request).await?;
    Ok(Step::Served(procedure.handle_reply(reply)?))
}

/// Steps `procedure` to its outcome, pausing (by `host`) whenever it waits.
/// Bounded by the host: its pauses give up, and each procedure ends after a
/// bounded number of steps that do not wait.
pub async fn run<P: Procedure, H: Host>(procedure: &mut P, host: &mut H) -> Result<P::Outcome, H::Error> {
    loop {
        match step(procedure, host).await? {
            Step::Done => break,
            Step::Served(Progress::Advanced) => host.advanced(),
            Step::Served(Progress::Waits) => host.pause().await?,
        }
    }
    procedure.outcome().cloned().ok_or_else(|| ProcedureError::Stalled { procedure: P::NAME }.into())
}

/// The output of `future` if it completes without waiting, `None` if it
/// would wait. A host whose calls never wait (the model checker, the
/// tests, a pass of the reaper over the durable store alone) runs the
/// driver with this: one poll, no executor, and a host that did wait would
/// be caught rather than spun on.
pub fn ready<F: Future>(future: F) -> Option<F::Output> {
    match pin!(future).poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(output) => Some(output),
        Poll::Pending => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::claim::durable::{DurableReply, DurableRequest};
    use crate::claim::types::ClaimId;

    /// Asks `Inspect` until told `Reaped`, waiting while the claim is
    /// authorized; a procedure of the smallest shape.
    struct Watch {
        seen: Option<bool>,
    }

    impl Procedure for Watch {
        type Outcome = bool;
        const NAME: &'static str = "watch";

        fn poll_request(&self, _now: Millis) -> Option<Request> {
            self.seen.is_none().then(|| Request::Durable(DurableRequest::Inspect { claim: ClaimId::from("c1") }))
        }

        fn handle_reply(&mut self, reply: Reply) -> Result<Progress, ProcedureError> {
            use crate::claim::types::ClaimState;
            match reply {
                Reply::Durable(DurableReply::Status { state: ClaimState::Authorized }) => Ok(Progress::Waits),
                Reply::Durable(DurableReply::Status { state }) => {
                    self.seen = Some(state == ClaimState::Reaped);
                    Ok(Progress::Advanced)
                }
                reply => Err(ProcedureError::unexpected(Self::NAME, "inspect", &reply)),
            }
        }

        fn outcome(&self) -> Option<&bool> {
            self.seen.as_ref()
        }
    }

    /// Answers from a script; counts pauses and advances.
    struct Scripted {
        replies: Vec<Reply>,
        pauses: usize,
        advances: usize,
        max_pauses: usize,
    }

    #[derive(Debug, PartialEq)]
    enum ScriptError {
        Procedure(ProcedureError),
        GaveUp,
    }

    impl From<ProcedureError> for ScriptError {
        fn from(e: ProcedureError) -> Self {
            ScriptError::Procedure(e)
        }
    }

    impl Host for Scripted {
        type Error = ScriptError;

        fn now(&self) -> Millis {
            0
        }

        async fn serve(&mut self, _request: Request) -> Result<Reply, ScriptError> {
            Ok(self.replies.remove(0))
        }

        async fn pause(&mut self) -> Result<(), ScriptError> {
            self.pauses += 1;
            if self.pauses > self.max_pauses { Err(ScriptError::GaveUp) } else { Ok(()) }
        }

        fn advanced(&mut self) {
            self.advances += 1;
        }
    }

    fn status(state: crate::claim::types::ClaimState) -> Reply {
        Reply::Durable(DurableReply::Status { state })
    }

    fn host(replies: Vec<Reply>, max_pauses: usize) -> Scripted {
        Scripted { replies, pauses: 0, advances: 0, max_pauses }
    }

    #[test]
    fn run_pauses_while_the_procedure_waits_and_returns_its_outcome() {
        use crate::claim::types::ClaimState::{Authorized, Reaped};
        let mut host = host(vec![status(Authorized), status(Authorized), status(Reaped)], 5);
        let mut watch = Watch { seen: None };
        assert_eq!(ready(run(&mut watch, &mut host)), Some(Ok(true)));
        assert_eq!((host.pauses, host.advances), (2, 1));
        assert_eq!(ready(step(&mut watch, &mut host)), Some(Ok(Step::Done)), "nothing is asked once done");
    }

    #[test]
    fn the_host_bounds_the_waiting() {
        use crate::claim::types::ClaimState::Authorized;
        let mut host = host(vec![status(Authorized), status(Authorized)], 1);
        let mut watch = Watch { seen: None };
        assert_eq!(ready(run(&mut watch, &mut host)), Some(Err(ScriptError::GaveUp)));
    }

    #[test]
    fn a_reply_the_procedure_cannot_take_stops_the_run() {
        let mut host = host(vec![Reply::Durable(DurableReply::Reaped)], 0);
        let mut watch = Watch { seen: None };
        let result = ready(run(&mut watch, &mut host));
        assert!(matches!(result, Some(Err(ScriptError::Procedure(ProcedureError::UnexpectedReply { .. })))));
    }

    #[test]
    fn a_procedure_with_no_request_and_no_outcome_is_stalled() {
        struct Stuck;
        impl Procedure for Stuck {
            type Outcome = ();
            const NAME: &'static str = "stuck";
            fn poll_request(&self, _now: Millis) -> Option<Request> {
                None
            }
            fn handle_reply(&mut self, _reply: Reply) -> Result<Progress, ProcedureError> {
                Ok(Progress::Advanced)
            }
            fn outcome(&self) -> Option<&()> {
                None
            }
        }
        let result = ready(run(&mut Stuck, &mut host(Vec::new(), 0)));
        assert_eq!(result, Some(Err(ScriptError::Procedure(ProcedureError::Stalled { procedure: "stuck" }))));
    }

    #[test]
    fn ready_refuses_a_future_that_would_wait() {
        assert_eq!(ready(async { 7 }), Some(7));
        assert_eq!(ready(std::future::pending::<()>()), None);
    }
}
