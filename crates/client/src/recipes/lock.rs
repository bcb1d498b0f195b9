//! A lock with a lease: a key that exists while someone holds it.

use std::time::{Duration, Instant};

use crate::error::Error;
use crate::etag::ETag;
use crate::namespace::Namespace;
use crate::options::{DeleteOptions, PutOptions};

/// A held lock: the key `key` holding the owner's name, with a TTL.
#[derive(Debug)]
pub struct Lock {
    ns: Namespace,
    key: String,
    owner: Vec<u8>,
    ttl: Duration,
    /// The version this holder wrote last: any other write (an expiry and
    /// another holder's create) changes it, so `If-Match` on it fails.
    etag: ETag,
    valid_until: Instant,
}

impl Lock {
    /// Takes the lock if it is free (the key absent, deleted or expired),
    /// for `ttl`; `None` when someone else holds it.
    pub async fn acquire(ns: &Namespace, key: &str, owner: &[u8], ttl: Duration) -> Result<Option<Lock>, Error> {
        let sent = Instant::now();
        match ns.put(key, owner, PutOptions::new().if_absent().ttl(ttl)).await {
            Ok(written) => Ok(Some(Lock {
                ns: ns.clone(),
                key: key.to_owned(),
                owner: owner.to_vec(),
                ttl,
                etag: written.etag,
                valid_until: lease_end(sent, ttl),
            })),
            Err(Error::PreconditionFailed { .. }) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Extends the lease to `ttl` from now (the TTL is sent again: a PUT
    /// without one would clear it). `Err(Error::PreconditionFailed)`: the
    /// lock was lost (it expired, and someone may hold it now). On another
    /// error the renewal's outcome is unknown; the lock is still held until
    /// [`Lock::valid_until`] at most.
    pub async fn renew(&mut self) -> Result<(), Error> {
        let sent = Instant::now();
        let options = PutOptions::new().if_match(self.etag.clone()).ttl(self.ttl);
        let written = self.ns.put(&self.key, self.owner.as_slice(), options).await?;
        self.etag = written.etag;
        self.valid_until = lease_end(sent, self.ttl);
        Ok(())
    }

    /// Gives the lock back: deletes the key if it is still this holder's.
    /// `Err(Error::PreconditionFailed)`: it was lost already.
    pub async fn release(self) -> Result<(), Error> {
        self.ns.delete(&self.key, DeleteOptions::new().if_match(self.etag)).await.map(drop)
    }

    /// Until when this holder may act on the lock: `ttl` after the last
    /// successful acquire or renew was sent (the store counts from its
    /// commit, which is later).
    pub fn valid_until(&self) -> Instant {
        self.valid_until
    }
}

/// `sent + ttl`. The store accepted the TTL (30 days at most), so this does
/// not overflow; if it did, `sent` is the safe bound.
fn lease_end(sent: Instant, ttl: Duration) -> Instant {
    sent.checked_add(ttl).unwrap_or(sent)
}
