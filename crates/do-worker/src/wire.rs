//! The internal wire between the Worker and its Durable Objects, and
//! between replicas: which URL means what. Pure (the `url` crate only), so
//! building and parsing are unit-tested on the host.
//!
//! Every internal URL is `https://handoff.internal/<op>?ns=..&r=..&key=..`.
//! The host is never resolved (a stub routes to its object) but the runtime
//! wants an absolute URL. Names travel as query parameters so that any
//! UTF-8 namespace or key survives encoding exactly (`url` encodes,
//! `query_pairs` decodes). Objects re-validate them (`crate::names`).
//!
//! Each object class has its own enum of operations ([`ReplicaOp`],
//! [`ClaimOp`], [`RegistryOp`], [`KvOp`] for the two map baselines and
//! [`EchoOp`] for the echo baseline): an
//! object parses only its own paths, anything else is a 404.

use std::fmt;

use url::Url;

use crate::names::ReplicaName;
use crate::vocab::KvOp;

const BASE: &str = "https://handoff.internal/";

/// The operations one object class serves: each is an internal path,
/// served with one method.
pub trait Ops: Copy + Eq + fmt::Debug + 'static {
    const ALL: &'static [Self];
    fn path(self) -> &'static str;
    /// `"GET"` or `"POST"`.
    fn method(self) -> &'static str;
}

/// Declares an object class's operations: `Variant = "METHOD" "/path"`.
macro_rules! ops {
    ($(#[$doc:meta])* $name:ident { $($(#[$vdoc:meta])* $variant:ident = $method:literal $path:literal,)* }) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub enum $name {
            $($(#[$vdoc])* $variant,)*
        }

        impl Ops for $name {
            const ALL: &'static [Self] = &[$($name::$variant,)*];

            fn path(self) -> &'static str {
                match self {
                    $($name::$variant => $path,)*
                }
            }

            fn method(self) -> &'static str {
                match self {
                    $($name::$variant => $method,)*
                }
            }
        }
    };
}

ops! {
    /// What the Worker and the other replicas ask of a `Replica`.
    ReplicaOp {
        /// Liveness, for `/health?deep=1`.
        Ping = "GET" "/ping",
        /// This object instance's birth nonce (test hooks).
        Whoami = "GET" "/whoami",
        /// A replica-to-replica protocol message (or a batch of them).
        Msg = "POST" "/msg",
        /// A WebSocket to this replica carrying the same batches, each
        /// answered in order (`crate::socket`).
        Link = "GET" "/link",
        /// A WebSocket to the coordinator carrying client calls (`Get`,
        /// `Put`, `Delete`) as frames, each served as its HTTP request
        /// and answered in order (`crate::tunnel`): the claim object's.
        Calls = "GET" "/calls",
        /// A client write (`key=`, body = value).
        Put = "POST" "/put",
        /// A client delete (`key=`).
        Delete = "POST" "/delete",
        /// A client read (`key=`).
        Get = "GET" "/get",
        /// A client listing (`prefix=`, `key=` the key to list after,
        /// `ms=` the limit: `crate::listing`).
        List = "GET" "/list",
        /// This replica's status line.
        Status = "GET" "/status",
        /// Reset this object, losing its memory (test hook).
        Evict = "POST" "/evict",
        /// Drop all peer messages for a while (`ms=`, test hook).
        Pause = "POST" "/pause",
        /// The recorded trace rows after row id `ms=` (test hook; the one
        /// numeric parameter, as for `Pause`).
        Trace = "GET" "/trace",
        /// Stop this replica: reset it if it runs (its memory goes). The
        /// namespace is being deleted or has gone idle.
        Stop = "POST" "/stop",
    }
}

ops! {
    /// What the Worker asks of a `ClaimStore`.
    ClaimOp {
        /// Authorize an attempt (body: `claims::request::Create`).
        Create = "POST" "/claims/create",
        /// Activate (body: `claims::request::Activate`).
        Activate = "POST" "/claims/activate",
        /// The benchmark baseline's activation, one SQLite transaction
        /// without the lease store (test hooks only).
        ActivateBaseline = "POST" "/claims/activate-baseline",
        /// Renew the lease (body: `claims::request::Heartbeat`).
        Heartbeat = "POST" "/claims/heartbeat",
        /// Complete the executing attempt (body: `claims::request::Complete`).
        Complete = "POST" "/claims/complete",
        /// One page of the claims (body: `claims::request::ListPage`).
        List = "POST" "/claims/list",
        /// A claim's state (the claim id travels as `key=`).
        Get = "GET" "/claims/get",
        /// Run one recovery pass now (test hook).
        Reap = "POST" "/claims/reap",
        /// Delete everything: the namespace is being deleted.
        Drop = "POST" "/claims/drop",
        /// Authorize `ms=` claims at once (test hook: many claims quickly;
        /// body: `claims::request::Bulk`).
        Bulk = "POST" "/claims/bulk",
        /// How many claims are in each state (test hook).
        Count = "GET" "/claims/count",
        /// Check that migrations are idempotent and atomic (test hook).
        Migrations = "POST" "/claims/migrations",
    }
}

ops! {
    /// What the Worker and the namespaces' objects ask of the `Registry`
    /// (the namespace concerned travels as `ns=`).
    RegistryOp {
        /// Create the namespace (body: its settings).
        Create = "POST" "/registry/create",
        /// The namespace's info.
        Get = "GET" "/registry/get",
        /// Every namespace's info (`ns=*`).
        List = "GET" "/registry/list",
        /// Start deleting the namespace: its objects may no longer start.
        Delete = "POST" "/registry/delete",
        /// Forget a namespace whose objects are stopped.
        Forget = "POST" "/registry/forget",
        /// May replica `r=` start? (body: `{"client": bool}`)
        Boot = "POST" "/registry/boot",
        /// The namespace's replicas are stopping after its idle expiry.
        Idle = "POST" "/registry/idle",
    }
}

ops! {
    /// What the Worker and the other echo object ask of an `EchoBaseline`
    /// (benchmark floor of one hop, test hooks only).
    EchoOp {
        /// A client PUT (`key=`, body = value): send one replica-sized
        /// message to the answering object, then acknowledge.
        Put = "POST" "/put",
        /// The message: answered at once, with a body of the size of a
        /// replica's acknowledgement.
        Msg = "POST" "/msg",
        /// A WebSocket carrying the messages, as a replica's `Link`.
        Link = "GET" "/link",
    }
}

/// The benchmark baselines (`MemBaseline`, `SqlBaseline`) serve the public
/// KV operations as they are, on the replica's paths.
impl Ops for KvOp {
    const ALL: &'static [Self] = &[KvOp::Get, KvOp::Put, KvOp::Delete];

    fn path(self) -> &'static str {
        ReplicaOp::from(self).path()
    }

    fn method(self) -> &'static str {
        ReplicaOp::from(self).method()
    }
}

impl From<KvOp> for ReplicaOp {
    fn from(op: KvOp) -> ReplicaOp {
        match op {
            KvOp::Get => ReplicaOp::Get,
            KvOp::Put => ReplicaOp::Put,
            KvOp::Delete => ReplicaOp::Delete,
        }
    }
}

/// An internal request's target, as built by the sender and parsed by the
/// object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target<O> {
    pub op: O,
    /// The namespace the sender means (checked against the object's name).
    pub ns: String,
    /// The replica the sender means; `None` for the baseline objects.
    pub replica: Option<ReplicaName>,
    pub key: Option<String>,
    pub ms: Option<u64>,
    /// A listing's prefix.
    pub prefix: Option<String>,
    /// The namespace life the client's token is bound to
    /// ([`crate::tokens::check_life`]), for the object that knows the
    /// namespace's current one.
    pub life: Option<u64>,
}

impl<O: Ops> Target<O> {
    pub fn new(op: O, ns: &str, replica: Option<ReplicaName>) -> Target<O> {
        Target { op, ns: ns.to_string(), replica, key: None, ms: None, prefix: None, life: None }
    }

    pub fn with_key(mut self, key: &str) -> Target<O> {
        self.key = Some(key.to_string());
        self
    }

    pub fn with_ms(mut self, ms: u64) -> Target<O> {
        self.ms = Some(ms);
        self
    }

    pub fn with_prefix(mut self, prefix: &str) -> Target<O> {
        self.prefix = Some(prefix.to_string());
        self
    }

    /// Bound to the token's namespace life, if it has one.
    pub fn with_life(mut self, life: Option<u64>) -> Target<O> {
        self.life = life;
        self
    }

    /// The URL to fetch through the object's stub.
    pub fn url(&self) -> Result<String, url::ParseError> {
        let mut url = Url::parse(BASE)?.join(self.op.path())?;
        {
            let mut q = url.query_pairs_mut();
            q.append_pair("ns", &self.ns);
            if let Some(r) = self.replica {
                q.append_pair("r", r.as_str());
            }
            if let Some(key) = &self.key {
                q.append_pair("key", key);
            }
            if let Some(ms) = self.ms {
                q.append_pair("ms", &ms.to_string());
            }
            if let Some(prefix) = &self.prefix {
                q.append_pair("prefix", prefix);
            }
            if let Some(life) = self.life {
                q.append_pair("life", &life.to_string());
            }
        }
        Ok(url.into())
    }

    /// Parses an internal URL; `None` for anything this module did not
    /// build for an object of this class.
    pub fn parse(url: &Url) -> Option<Target<O>> {
        let op = O::ALL.iter().copied().find(|op| op.path() == url.path())?;
        let mut target = Target::new(op, "", None);
        let mut ns = None;
        for (k, v) in url.query_pairs() {
            match k.as_ref() {
                "ns" => ns = Some(v.into_owned()),
                "r" => target.replica = Some(ReplicaName::parse(&v)?),
                "key" => target.key = Some(v.into_owned()),
                "ms" => target.ms = Some(v.parse().ok()?),
                "prefix" => target.prefix = Some(v.into_owned()),
                "life" => target.life = Some(v.parse().ok()?),
                _ => return None,
            }
        }
        target.ns = ns?;
        Some(target)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip<O: Ops>(t: &Target<O>) -> Option<Target<O>> {
        let url = Url::parse(&t.url().ok()?).ok()?;
        Target::parse(&url)
    }

    fn every_op_round_trips<O: Ops>() {
        for &op in O::ALL {
            for (ns, key) in [("shop", "cart"), ("a:b&c=d", "k/with/slashes?x#y"), ("café", "🔑 %2F+%"), ("ns", " ")]
            {
                let t = Target::new(op, ns, Some(ReplicaName::R2))
                    .with_key(key)
                    .with_ms(1500)
                    .with_prefix(key)
                    .with_life(Some(1_800_000_000_000));
                assert_eq!(round_trip(&t).as_ref(), Some(&t), "{op:?} {ns:?} {key:?}");
                let bare = Target::new(op, ns, None);
                assert_eq!(round_trip(&bare).as_ref(), Some(&bare));
            }
        }
    }

    #[test]
    fn every_op_round_trips_with_awkward_names() {
        every_op_round_trips::<ReplicaOp>();
        every_op_round_trips::<ClaimOp>();
        every_op_round_trips::<RegistryOp>();
        every_op_round_trips::<KvOp>();
        every_op_round_trips::<EchoOp>();
    }

    #[test]
    fn an_object_parses_only_its_own_ops() {
        let claim = Url::parse(&Target::new(ClaimOp::Create, "ns", None).url().unwrap_or_default()).ok();
        assert_eq!(claim.as_ref().and_then(Target::<ReplicaOp>::parse), None);
        assert_eq!(claim.as_ref().and_then(Target::<KvOp>::parse), None);
        let msg = Url::parse(&Target::new(ReplicaOp::Msg, "ns", None).url().unwrap_or_default()).ok();
        assert_eq!(msg.as_ref().and_then(Target::<ClaimOp>::parse), None);
        assert_eq!(msg.as_ref().and_then(Target::<KvOp>::parse), None);
        let get = Url::parse(&Target::new(ReplicaOp::Get, "ns", None).url().unwrap_or_default()).ok();
        assert_eq!(get.as_ref().and_then(Target::<KvOp>::parse).map(|t| t.op), Some(KvOp::Get));
    }

    #[test]
    fn foreign_urls_are_refused() {
        for u in [
            "https://handoff.internal/",
            "https://handoff.internal/msg",
            "https://handoff.internal/nope?ns=a",
            "https://handoff.internal/msg?ns=a&r=r7",
            "https://handoff.internal/msg?ns=a&extra=1",
            "https://handoff.internal/pause?ns=a&ms=soon",
            "https://handoff.internal/v1/a/kv/k?ns=a",
        ] {
            let url = Url::parse(u).ok();
            assert_eq!(url.as_ref().and_then(Target::<ReplicaOp>::parse), None, "{u}");
        }
    }
}
