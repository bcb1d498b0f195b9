//! The vocabulary of routing: what a request is ([`Route`], with the test
//! hooks' [`Hook`]s) and what it must show to be served ([`Access`]).

use protocol::claim::ClaimId;

use crate::claims::request::ListPage;
use crate::error::Code;
use crate::listing::Page;
use crate::names::ReplicaName;
use crate::tokens::Right;
use crate::vocab::KvOp;

/// An operation on a namespace itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NsOp {
    Put,
    Get,
    Delete,
}

/// What the worker should do with a request.
#[derive(Debug, PartialEq, Eq)]
pub enum Route {
    /// `GET /health`; `deep` also pings a `Replica` Durable Object.
    Health { deep: bool },
    /// `GET /v1/openapi.json`: the API's OpenAPI document.
    OpenApi,
    /// `GET /v1`: every namespace.
    NamespaceList,
    /// `PUT|GET|DELETE /v1/{ns}`.
    Namespace { ns: String, op: NsOp },
    /// `POST /v1/_tokens`: mint a scoped token.
    TokenMint,
    /// `GET|HEAD|PUT|DELETE /v1/{ns}/kv/{key}` (HEAD is a GET without the
    /// body).
    Kv { ns: String, key: String, op: KvOp },
    /// `GET /v1/{ns}/kv?prefix=&after=&limit=`: one page of the keys.
    KvList { ns: String, page: Page },
    /// `GET /v1/{ns}/status`.
    Status { ns: String },
    /// `POST /v1/{ns}/claims`: authorize an attempt.
    ClaimCreate { ns: String },
    /// `GET /v1/{ns}/claims/{claim}`.
    ClaimGet { ns: String, claim: ClaimId },
    /// `POST /v1/{ns}/claims/{claim}/activate`.
    ClaimActivate { ns: String, claim: ClaimId },
    /// `POST /v1/{ns}/claims/{claim}/heartbeat`.
    ClaimHeartbeat { ns: String, claim: ClaimId },
    /// `POST /v1/{ns}/claims/{claim}/complete`.
    ClaimComplete { ns: String, claim: ClaimId },
    /// `GET /v1/{ns}/claims?state=&after=&limit=`: one page of the claims.
    ClaimList { ns: String, page: ListPage },
    /// A test hook or benchmark baseline (only with the hooks on).
    Hook(Hook),
    /// A write to a key the service reserves for itself (403).
    Forbidden { code: Code, message: String },
    /// A known path with a method it does not serve.
    MethodNotAllowed { allow: &'static str },
    /// A known path with a bad name or a malformed query.
    BadRequest { code: Code, message: String },
    /// Anything else.
    NotFound,
}

/// What a request must show to be served ([`Route::access`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Access {
    /// Nothing: `GET /health` (the shallow liveness check) only.
    Public,
    /// Any valid token (the handler may ask more, as minting does).
    Token,
    /// One of `any_of` on namespace `ns` (`None`: on every namespace).
    Rights { ns: Option<String>, any_of: &'static [Right] },
}

impl Route {
    /// What the request must show. Requests the router refuses (404, 405,
    /// 400, 403 for a reserved key) still need a valid token: an
    /// unauthenticated client learns nothing but 401.
    pub fn access(&self) -> Access {
        use Right::*;
        let on = |ns: &String, any_of: &'static [Right]| Access::Rights { ns: Some(ns.clone()), any_of };
        match self {
            Route::Health { deep: false } => Access::Public,
            Route::Health { deep: true } | Route::OpenApi | Route::TokenMint => Access::Token,
            Route::NamespaceList => Access::Rights { ns: None, any_of: &[Admin] },
            Route::Namespace { ns, op: NsOp::Get } => on(ns, &[Read]),
            Route::Namespace { ns, op: NsOp::Put | NsOp::Delete } => on(ns, &[Admin]),
            Route::Kv { ns, op: KvOp::Get, .. } | Route::KvList { ns, .. } => on(ns, &[Read]),
            Route::Kv { ns, op: KvOp::Put | KvOp::Delete, .. } => on(ns, &[Write]),
            Route::Status { ns } => on(ns, &[Read]),
            Route::ClaimGet { ns, .. } => on(ns, &[Read, Claims]),
            Route::ClaimList { ns, .. } => on(ns, &[Read, Claims]),
            Route::ClaimCreate { ns }
            | Route::ClaimActivate { ns, .. }
            | Route::ClaimHeartbeat { ns, .. }
            | Route::ClaimComplete { ns, .. } => on(ns, &[Claims]),
            Route::Hook(hook) => on(hook.ns(), &[Admin]),
            Route::Forbidden { .. } | Route::MethodNotAllowed { .. } | Route::BadRequest { .. } | Route::NotFound => {
                Access::Token
            }
        }
    }
}

/// A benchmark baseline `cargo xtask bench kv` compares the store with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Baseline {
    /// One Durable Object holding a map in memory.
    Mem,
    /// One Durable Object writing to SQLite storage.
    Sql,
    /// The floor of one hop (PUT only): one Durable Object sending a
    /// replica-sized message to a second, which just answers.
    Echo,
}

/// A test hook.
#[derive(Debug, PartialEq, Eq)]
pub enum Hook {
    /// `POST /v1/{ns}/_test/evict/{replica}`: reset that replica object.
    Evict { ns: String, replica: ReplicaName },
    /// `POST /v1/{ns}/_test/evict/all`: all three at once, so that nothing
    /// of the namespace's memory survives.
    EvictAll { ns: String },
    /// `POST /v1/{ns}/_test/migrations`: the claim store's migrations are
    /// idempotent and atomic.
    Migrations { ns: String },
    /// `POST /v1/{ns}/_test/pause/{replica}?ms=N`: the replica drops every
    /// peer message, in and out, for N ms.
    Pause { ns: String, replica: ReplicaName, ms: u64 },
    /// `GET /v1/{ns}/_test/trace/{replica}?after=N`: the replica object's
    /// recorded trace rows after row id N (0: from the first), one page;
    /// `handoff-trace-next` names the next N.
    Trace { ns: String, replica: ReplicaName, after: u64 },
    /// `POST /v1/{ns}/_test/raw/{replica}?auth=0|1`: the body is delivered
    /// to the replica's peer-message endpoint as is, with or without the
    /// internal credential, and its answer returned.
    Raw { ns: String, replica: ReplicaName, auth: bool },
    /// `POST /v1/{ns}/_test/link/{replica}?auth=0|1`: the Worker asks the
    /// replica for a socket (`GET /link`, as another replica does), with or
    /// without the internal credential, and answers the status it got (a
    /// socket that opened is closed at once).
    Link { ns: String, replica: ReplicaName, auth: bool },
    /// `POST /v1/{ns}/_test/reap`: run the claims reaper now.
    Reap { ns: String },
    /// `POST /v1/{ns}/_test/claims?count=N&reservation_ttl_ms=M`: authorize
    /// N claims at once.
    Bulk { ns: String, count: u64, reservation_ttl_ms: u64 },
    /// `GET /v1/{ns}/_test/claims`: claims by state.
    Count { ns: String },
    /// `GET /v1/{ns}/_test/replicas`: whether each replica object is
    /// running, asked without starting it.
    Replicas { ns: String },
    /// `/_bench/{mem|sql|echo}/{ns}/kv/{key}`: a KV operation on a baseline
    /// (the echo serves PUT only).
    Bench { baseline: Baseline, ns: String, key: String, op: KvOp },
    /// `POST /_bench/claims/{ns}/claims/{claim}/activate`: the same
    /// activation in one SQLite transaction, without the lease store.
    BenchActivate { ns: String, claim: ClaimId },
}

impl Hook {
    /// The namespace the hook acts on.
    pub fn ns(&self) -> &String {
        match self {
            Hook::Evict { ns, .. }
            | Hook::EvictAll { ns }
            | Hook::Migrations { ns }
            | Hook::Pause { ns, .. }
            | Hook::Trace { ns, .. }
            | Hook::Raw { ns, .. }
            | Hook::Link { ns, .. }
            | Hook::Reap { ns }
            | Hook::Bulk { ns, .. }
            | Hook::Count { ns }
            | Hook::Replicas { ns }
            | Hook::Bench { ns, .. }
            | Hook::BenchActivate { ns, .. } => ns,
        }
    }
}
