//! The internal wire between the Worker and its Durable Objects, and
//! between replicas: which URL means what. Pure (the `url` crate only), so
//! building and parsing are unit-tested on the host.
//!
//! Every internal URL is `https://handoff.internal/<op>?ns=..&r=..&key=..`.
//! The host is never resolved (a stub routes to its object) but the runtime
//! wants an absolute URL. Names travel as query parameters so that any
//! UTF-8 namespace or key survives encoding exactly (`url` encodes,
//! `query_pairs` decodes). Objects re-validate them (`names::check`).

use url::Url;

use crate::names::ReplicaName;

const BASE: &str = "https://handoff.internal/";

/// What an internal request asks of an object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// `GET /ping`: liveness, for `/health?deep=1`.
    Ping,
    /// `GET /whoami`: this object instance's birth nonce (test hooks).
    Whoami,
    /// `POST /msg`: a replica-to-replica protocol message.
    Msg,
    /// `POST /put?key=`: a client write (body = value).
    Put,
    /// `POST /delete?key=`: a client delete.
    Delete,
    /// `GET /get?key=`: a client read.
    Get,
    /// `GET /status`: this replica's status line.
    Status,
    /// `POST /evict`: reset this object, losing its memory (test hook).
    Evict,
    /// `POST /pause?ms=`: drop all peer messages for a while (test hook).
    Pause,
    /// `POST /claims/create`: authorize an attempt (body: `claims::request::Create`).
    ClaimCreate,
    /// `POST /claims/activate`: activate (body: `claims::request::Activate`).
    ClaimActivate,
    /// `POST /claims/activate-baseline`: the benchmark baseline's activation,
    /// one SQLite transaction without the lease store (test hooks only).
    ClaimActivateBaseline,
    /// `POST /claims/heartbeat`: renew the lease (body: `claims::request::Heartbeat`).
    ClaimHeartbeat,
    /// `GET /claims/get?key=`: a claim's state (the claim id travels as `key`).
    ClaimGet,
    /// `POST /claims/reap`: run one recovery pass now (test hook).
    ClaimReap,
}

impl Op {
    const ALL: [Op; 15] = [
        Op::Ping,
        Op::Whoami,
        Op::Msg,
        Op::Put,
        Op::Delete,
        Op::Get,
        Op::Status,
        Op::Evict,
        Op::Pause,
        Op::ClaimCreate,
        Op::ClaimActivate,
        Op::ClaimActivateBaseline,
        Op::ClaimHeartbeat,
        Op::ClaimGet,
        Op::ClaimReap,
    ];

    fn path(self) -> &'static str {
        match self {
            Op::Ping => "/ping",
            Op::Whoami => "/whoami",
            Op::Msg => "/msg",
            Op::Put => "/put",
            Op::Delete => "/delete",
            Op::Get => "/get",
            Op::Status => "/status",
            Op::Evict => "/evict",
            Op::Pause => "/pause",
            Op::ClaimCreate => "/claims/create",
            Op::ClaimActivate => "/claims/activate",
            Op::ClaimActivateBaseline => "/claims/activate-baseline",
            Op::ClaimHeartbeat => "/claims/heartbeat",
            Op::ClaimGet => "/claims/get",
            Op::ClaimReap => "/claims/reap",
        }
    }

    /// The only method the op is served with.
    pub fn method(self) -> &'static str {
        match self {
            Op::Ping | Op::Whoami | Op::Get | Op::Status | Op::ClaimGet => "GET",
            Op::Msg
            | Op::Put
            | Op::Delete
            | Op::Evict
            | Op::Pause
            | Op::ClaimCreate
            | Op::ClaimActivate
            | Op::ClaimActivateBaseline
            | Op::ClaimHeartbeat
            | Op::ClaimReap => "POST",
        }
    }
}

/// An internal request's target, as built by the sender and parsed by the
/// object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    pub op: Op,
    /// The namespace the sender means (checked against the object's name).
    pub ns: String,
    /// The replica the sender means; `None` for the baseline objects.
    pub replica: Option<ReplicaName>,
    pub key: Option<String>,
    pub ms: Option<u64>,
}

impl Target {
    pub fn new(op: Op, ns: &str, replica: Option<ReplicaName>) -> Target {
        Target { op, ns: ns.to_string(), replica, key: None, ms: None }
    }

    pub fn with_key(mut self, key: &str) -> Target {
        self.key = Some(key.to_string());
        self
    }

    pub fn with_ms(mut self, ms: u64) -> Target {
        self.ms = Some(ms);
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
        }
        Ok(url.into())
    }

    /// Parses an internal URL; `None` for anything this module did not build.
    pub fn parse(url: &Url) -> Option<Target> {
        let op = Op::ALL.into_iter().find(|op| op.path() == url.path())?;
        let mut target = Target { op, ns: String::new(), replica: None, key: None, ms: None };
        let mut ns = None;
        for (k, v) in url.query_pairs() {
            match k.as_ref() {
                "ns" => ns = Some(v.into_owned()),
                "r" => target.replica = Some(ReplicaName::parse(&v)?),
                "key" => target.key = Some(v.into_owned()),
                "ms" => target.ms = Some(v.parse().ok()?),
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

    fn round_trip(t: &Target) -> Option<Target> {
        let url = Url::parse(&t.url().ok()?).ok()?;
        Target::parse(&url)
    }

    #[test]
    fn every_op_round_trips_with_awkward_names() {
        for op in Op::ALL {
            for (ns, key) in [("shop", "cart"), ("a:b&c=d", "k/with/slashes?x#y"), ("café", "🔑 %2F+%"), ("ns", " ")]
            {
                let t = Target::new(op, ns, Some(ReplicaName::R2)).with_key(key).with_ms(1500);
                assert_eq!(round_trip(&t).as_ref(), Some(&t), "{op:?} {ns:?} {key:?}");
                let bare = Target::new(op, ns, None);
                assert_eq!(round_trip(&bare).as_ref(), Some(&bare));
            }
        }
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
            assert_eq!(url.as_ref().and_then(Target::parse), None, "{u}");
        }
    }
}
