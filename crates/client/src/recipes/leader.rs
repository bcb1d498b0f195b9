//! Leader election: the leader holds a [`Lock`] and renews it before its
//! TTL runs out; the others try to take it at each step and take over
//! once it expires.

use std::time::Duration;

use crate::error::Error;
use crate::namespace::Namespace;
use crate::recipes::lock::Lock;

/// What a candidate is after a step.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// It holds the key, until [`Lock::valid_until`] of [`Candidate::lease`].
    Leader,
    /// Someone else holds the key.
    Follower,
}

/// One candidate for leadership of `key`.
#[derive(Debug)]
pub struct Candidate {
    ns: Namespace,
    key: String,
    id: Vec<u8>,
    ttl: Duration,
    lease: Option<Lock>,
}

impl Candidate {
    /// A candidate named `id` (the key's value while it leads), leading
    /// for `ttl` per renewal. Call [`Candidate::step`] well within `ttl`
    /// (every `ttl / 3`, say).
    pub fn new(ns: &Namespace, key: &str, id: &[u8], ttl: Duration) -> Candidate {
        Candidate { ns: ns.clone(), key: key.to_owned(), id: id.to_vec(), ttl, lease: None }
    }

    /// One round: the leader renews (`If-Match`), a follower tries to take
    /// the key (`If-None-Match: *`). A leader whose renewal finds the key
    /// changed lost it (it expired) and tries again as a follower. On an
    /// error the role is unknown; a leader stays one until its lease ends.
    pub async fn step(&mut self) -> Result<Role, Error> {
        if let Some(lease) = &mut self.lease {
            match lease.renew().await {
                Ok(()) => return Ok(Role::Leader),
                Err(Error::PreconditionFailed { .. }) => self.lease = None,
                Err(e) => return Err(e),
            }
        }
        self.lease = Lock::acquire(&self.ns, &self.key, &self.id, self.ttl).await?;
        Ok(if self.lease.is_some() { Role::Leader } else { Role::Follower })
    }

    /// The lease while this candidate leads.
    pub fn lease(&self) -> Option<&Lock> {
        self.lease.as_ref()
    }

    /// Steps down: deletes the key if it still leads, so a follower can
    /// take over at its next step instead of after the TTL.
    pub async fn resign(self) -> Result<(), Error> {
        let Some(lease) = self.lease else { return Ok(()) };
        match lease.release().await {
            // It had expired: there is nothing to give up.
            Err(Error::PreconditionFailed { .. }) => Ok(()),
            other => other,
        }
    }
}
