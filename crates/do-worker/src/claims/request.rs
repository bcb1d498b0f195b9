//! The claims API's requests as clients send them, and their validation:
//! pure, so every limit is unit-tested on the host.
//!
//! Limits (400 otherwise):
//!
//! - claim ids, worker ids and idempotency keys: 1 to [`names::MAX_ID_BYTES`] bytes of
//!   UTF-8, no control characters; a claim id (a path segment) also no `/`;
//! - `fence`: any `u64`;
//! - `reservation_ttl_ms`, `lease_ttl_ms`: 1 ms to [`MAX_TTL_MS`] (24 h);
//! - `max_attempts`: 1 to [`MAX_ATTEMPTS`] (default 3);
//! - a completion's `outcome`: `succeeded` or `failed`; its `result`: any
//!   JSON value of at most [`MAX_RESULT_BYTES`] in its canonical spelling
//!   (413 `result_too_large`);
//! - bodies: at most [`MAX_BODY_BYTES`] ([`MAX_COMPLETE_BODY_BYTES`] for a
//!   completion), JSON objects with exactly the documented fields;
//! - listings: `state` one of the claim states, `after` a claim id, `limit`
//!   1 to [`MAX_LIST_LIMIT`] (default [`DEFAULT_LIST_LIMIT`]).
//!
//! The Worker validates what clients send; the claim store re-validates what
//! reaches it over the internal wire (the same functions), so no request
//! reaches the protocol unchecked.

use percent_encoding::percent_decode_str;
use protocol::claim::{
    ClaimId, ClaimRow, ClaimState, DEFAULT_MAX_ATTEMPTS, Fence, Millis, OperationId, Outcome, RequestKey, WorkerId,
};
use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use crate::error::Code;
use crate::names::{self, IdProblem};

/// Longest reservation or lease lifetime: 24 h.
pub const MAX_TTL_MS: u64 = 24 * 60 * 60 * 1000;
/// Largest request body but a completion's; the largest valid one is well
/// under 2 KiB.
pub const MAX_BODY_BYTES: usize = 16 * 1024;
/// Largest completion result, in its canonical spelling.
pub const MAX_RESULT_BYTES: usize = 16 * 1024;
/// Largest completion body: a result of [`MAX_RESULT_BYTES`] with room for
/// the other fields and the client's whitespace.
pub const MAX_COMPLETE_BODY_BYTES: usize = 32 * 1024;
/// Largest completion the Worker forwards to the claim object: the result
/// travels as a JSON string there, so each of its quotes and backslashes
/// is escaped again (at worst twice its bytes), beside the other fields.
pub const MAX_INTERNAL_COMPLETE_BYTES: usize = 2 * MAX_RESULT_BYTES + MAX_BODY_BYTES;
/// Most attempts a claim may allow.
pub const MAX_ATTEMPTS: u32 = 100;
/// Most claims a listing's page holds, and how many when not given.
pub const MAX_LIST_LIMIT: usize = 1000;
pub const DEFAULT_LIST_LIMIT: usize = 100;
/// The header carrying an activation's operation id.
pub const IDEMPOTENCY_KEY: &str = "idempotency-key";

/// Why a request was refused; `code()` is the JSON error code (all 400).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InvalidRequest {
    #[error("the body is not the expected JSON object: {0}")]
    Body(String),
    #[error("the {field} {problem}")]
    Id { field: &'static str, problem: IdProblem },
    #[error("{field} must be 1 to {MAX_TTL_MS} ms, not {value}")]
    Ttl { field: &'static str, value: u64 },
    #[error("the Idempotency-Key header is required")]
    MissingIdempotencyKey,
    #[error("max_attempts must be 1 to {MAX_ATTEMPTS}, not {0}")]
    MaxAttempts(u32),
    #[error("the result is {0} bytes serialized; at most {MAX_RESULT_BYTES}")]
    ResultTooLarge(usize),
    #[error("{0}")]
    Query(String),
    #[error("state must be one of authorized, executing, succeeded, failed, reaped, dead, not {0:?}")]
    State(String),
    #[error("limit must be 1 to {MAX_LIST_LIMIT}, not {0:?}")]
    Limit(String),
    #[error("after must be a claim id, as a page's `next` gives it: it {0}")]
    Cursor(IdProblem),
}

impl InvalidRequest {
    pub fn code(&self) -> Code {
        match self {
            InvalidRequest::Body(_) => Code::InvalidBody,
            InvalidRequest::Id { field: "claim", .. } => Code::InvalidClaim,
            InvalidRequest::Id { field: "worker", .. } => Code::InvalidWorker,
            InvalidRequest::Id { .. } => Code::InvalidIdempotencyKey,
            InvalidRequest::Ttl { .. } => Code::InvalidTtl,
            InvalidRequest::MissingIdempotencyKey => Code::MissingIdempotencyKey,
            InvalidRequest::MaxAttempts(_) => Code::InvalidMaxAttempts,
            InvalidRequest::ResultTooLarge(_) => Code::ResultTooLarge,
            InvalidRequest::Query(_) => Code::BadRequest,
            InvalidRequest::State(_) => Code::InvalidState,
            InvalidRequest::Limit(_) => Code::InvalidLimit,
            InvalidRequest::Cursor(_) => Code::InvalidCursor,
        }
    }
}

fn check_id(field: &'static str, id: &str) -> Result<(), InvalidRequest> {
    let checked = if field == "claim" { names::check_claim(id) } else { names::check_id(id) };
    checked.map_err(|problem| InvalidRequest::Id { field, problem })
}

fn check_ttl(field: &'static str, value: u64) -> Result<Millis, InvalidRequest> {
    if (1..=MAX_TTL_MS).contains(&value) { Ok(value) } else { Err(InvalidRequest::Ttl { field, value }) }
}

/// An idempotency key from its header (absent → 400).
pub fn operation(header: Option<&str>) -> Result<OperationId, InvalidRequest> {
    let key = header.ok_or(InvalidRequest::MissingIdempotencyKey)?;
    check_id("idempotency key", key)?;
    Ok(OperationId(key.to_string()))
}

fn parse<'a, T: Deserialize<'a>>(body: &'a [u8]) -> Result<T, InvalidRequest> {
    parse_within(body, MAX_BODY_BYTES)
}

fn parse_within<'a, T: Deserialize<'a>>(body: &'a [u8], limit: usize) -> Result<T, InvalidRequest> {
    if body.len() > limit {
        return Err(InvalidRequest::Body(format!("{} bytes; at most {limit}", body.len())));
    }
    serde_json::from_slice(body).map_err(|e| InvalidRequest::Body(e.to_string()))
}

/// `POST /v1/{ns}/claims`: authorize attempt `fence` of `claim` for `worker`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Create {
    pub claim: ClaimId,
    pub fence: Fence,
    pub worker: WorkerId,
    pub reservation_ttl_ms: Millis,
    /// How many attempts a new claim allows (default 3); a new attempt on
    /// an existing claim keeps the claim's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_attempts: Option<u32>,
}

impl Create {
    /// The attempts a new claim allows.
    pub fn max_attempts(&self) -> u32 {
        self.max_attempts.unwrap_or(DEFAULT_MAX_ATTEMPTS)
    }

    pub fn parse(body: &[u8]) -> Result<Create, InvalidRequest> {
        parse::<Create>(body)?.validated()
    }

    /// Whether this create asks for `row`'s current attempt again: the same
    /// fence and worker, and, for a first attempt (whose `max_attempts` the
    /// create set), the same `max_attempts`; a later attempt keeps the
    /// claim's, whatever its create said. The reservation's TTL is not
    /// compared: the row keeps the deadline the first create set, and shows
    /// it.
    pub fn repeats(&self, row: &ClaimRow) -> bool {
        row.fence == self.fence
            && row.worker == self.worker
            && (row.attempt > 1 || row.max_attempts == self.max_attempts())
    }

    pub fn validated(self) -> Result<Create, InvalidRequest> {
        check_id("claim", &self.claim.0)?;
        check_id("worker", &self.worker.0)?;
        check_ttl("reservation_ttl_ms", self.reservation_ttl_ms)?;
        if !(1..=MAX_ATTEMPTS).contains(&self.max_attempts()) {
            return Err(InvalidRequest::MaxAttempts(self.max_attempts()));
        }
        Ok(self)
    }
}

/// The public body of activate and heartbeat requests (the claim is in the path).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct AttemptBody {
    fence: Fence,
    worker: WorkerId,
    lease_ttl_ms: Millis,
}

/// An activate request: `operation` (the Idempotency-Key) for attempt
/// `(claim, fence, worker)`, asking for a lease of `lease_ttl_ms`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Activate {
    pub operation: OperationId,
    pub request: RequestKey,
    pub lease_ttl_ms: Millis,
}

impl Activate {
    pub fn parse(claim: ClaimId, operation: OperationId, body: &[u8]) -> Result<Activate, InvalidRequest> {
        let b: AttemptBody = parse(body)?;
        let request = RequestKey { claim, fence: b.fence, worker: b.worker };
        Activate { operation, request, lease_ttl_ms: b.lease_ttl_ms }.validated()
    }

    pub fn validated(self) -> Result<Activate, InvalidRequest> {
        check_id("idempotency key", &self.operation.0)?;
        check_attempt(&self.request)?;
        check_ttl("lease_ttl_ms", self.lease_ttl_ms)?;
        Ok(self)
    }
}

/// A heartbeat: the executing worker renews its lease for `lease_ttl_ms`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Heartbeat {
    pub request: RequestKey,
    pub lease_ttl_ms: Millis,
}

impl Heartbeat {
    pub fn parse(claim: ClaimId, body: &[u8]) -> Result<Heartbeat, InvalidRequest> {
        let b: AttemptBody = parse(body)?;
        Heartbeat { request: RequestKey { claim, fence: b.fence, worker: b.worker }, lease_ttl_ms: b.lease_ttl_ms }
            .validated()
    }

    pub fn validated(self) -> Result<Heartbeat, InvalidRequest> {
        check_attempt(&self.request)?;
        check_ttl("lease_ttl_ms", self.lease_ttl_ms)?;
        Ok(self)
    }
}

/// The public body of a completion.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct CompleteBody {
    fence: Fence,
    worker: WorkerId,
    outcome: Outcome,
    /// `null` (or absent) is no result.
    #[serde(default)]
    result: Option<Box<RawValue>>,
}

/// A completion: `operation` (the Idempotency-Key) reports that attempt
/// `(claim, fence, worker)` ended with `outcome`, and its `result` (JSON
/// text, spelled canonically by [`canonical`]: the key binds the value,
/// not its whitespace or key order, and every digit of a number is kept).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Complete {
    pub operation: OperationId,
    pub request: RequestKey,
    pub outcome: Outcome,
    pub result: Option<String>,
}

impl Complete {
    pub fn parse(claim: ClaimId, operation: OperationId, body: &[u8]) -> Result<Complete, InvalidRequest> {
        let b: CompleteBody = parse_within(body, MAX_COMPLETE_BODY_BYTES)?;
        let result = match b.result {
            None => None,
            Some(raw) => {
                let mut text = String::with_capacity(raw.get().len());
                canonical(&raw, &mut text).map_err(|e| InvalidRequest::Body(e.to_string()))?;
                Some(text)
            }
        };
        let request = RequestKey { claim, fence: b.fence, worker: b.worker };
        Complete { operation, request, outcome: b.outcome, result }.validated()
    }

    pub fn validated(self) -> Result<Complete, InvalidRequest> {
        check_id("idempotency key", &self.operation.0)?;
        check_attempt(&self.request)?;
        if let Some(result) = &self.result {
            if result.len() > MAX_RESULT_BYTES {
                return Err(InvalidRequest::ResultTooLarge(result.len()));
            }
            serde_json::from_str::<serde::de::IgnoredAny>(result).map_err(|e| InvalidRequest::Body(e.to_string()))?;
        }
        Ok(self)
    }
}

/// Appends `raw` spelled canonically: no whitespace, an object's keys in
/// order (a repeated key: its last value), strings escaped as serde_json
/// writes them, numbers exactly as written. Parsing to a `Value` would do
/// the rest but turn an integer beyond 64 bits into a float, which the
/// claim would then store and show (and `1.0` and `1.00` into one value).
/// The depth is serde_json's nesting limit, which `raw` passed.
fn canonical(raw: &RawValue, out: &mut String) -> serde_json::Result<()> {
    let text = raw.get();
    match text.as_bytes().first() {
        Some(b'{') => {
            let members: BTreeMap<String, &RawValue> = serde_json::from_str(text)?;
            out.push('{');
            for (i, (key, value)) in members.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&serde_json::to_string(&key)?);
                out.push(':');
                canonical(value, out)?;
            }
            out.push('}');
        }
        Some(b'[') => {
            let items: Vec<&RawValue> = serde_json::from_str(text)?;
            out.push('[');
            for (i, item) in items.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                canonical(item, out)?;
            }
            out.push(']');
        }
        Some(b'"') => out.push_str(&serde_json::to_string(&serde_json::from_str::<String>(text)?)?),
        // A number, `true`, `false` or `null`, as the parser accepted it.
        _ => out.push_str(text),
    }
    Ok(())
}

/// One page of a claim listing, `GET /v1/{ns}/claims?state=S&after=C&limit=N`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ListPage {
    pub state: Option<ClaimState>,
    pub after: Option<ClaimId>,
    pub limit: usize,
}

impl ListPage {
    /// From the public query string (without `?`); unknown parameters are
    /// refused.
    pub fn from_query(query: Option<&str>) -> Result<ListPage, InvalidRequest> {
        let (mut state, mut after, mut limit) = (None, None, None);
        for pair in query.unwrap_or("").split('&').filter(|p| !p.is_empty()) {
            let (name, raw) = pair.split_once('=').unwrap_or((pair, ""));
            let value = percent_decode_str(&raw.replace('+', " "))
                .decode_utf8()
                .map_err(|_| InvalidRequest::Query(format!("query parameter `{name}` is not UTF-8 once decoded")))?
                .into_owned();
            match name {
                "state" => state = Some(ClaimState::from_name(&value).ok_or(InvalidRequest::State(value))?),
                "after" => after = Some(ClaimId(value)),
                "limit" => limit = Some(value.parse::<usize>().map_err(|_| InvalidRequest::Limit(value))?),
                other => {
                    return Err(InvalidRequest::Query(format!(
                        "unknown query parameter `{other}` (state, after, limit)"
                    )));
                }
            }
        }
        ListPage { state, after, limit: limit.unwrap_or(DEFAULT_LIST_LIMIT) }.validated()
    }

    pub fn validated(self) -> Result<ListPage, InvalidRequest> {
        if !(1..=MAX_LIST_LIMIT).contains(&self.limit) {
            return Err(InvalidRequest::Limit(self.limit.to_string()));
        }
        if let Some(after) = &self.after {
            names::check_claim(&after.0).map_err(InvalidRequest::Cursor)?;
        }
        Ok(self)
    }
}

fn check_attempt(request: &RequestKey) -> Result<(), InvalidRequest> {
    check_id("claim", &request.claim.0)?;
    check_id("worker", &request.worker.0)
}

/// The bulk test hook: `count` claims `bulk-{i}` (fence 1, worker `w`),
/// reserved for `reservation_ttl_ms`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Bulk {
    pub count: u64,
    pub reservation_ttl_ms: Millis,
}

/// Parses an internal body (built by the Worker from a validated request)
/// and validates it again.
pub fn internal<T: for<'a> Deserialize<'a>>(
    body: &[u8],
    validated: impl FnOnce(T) -> Result<T, InvalidRequest>,
) -> Result<T, InvalidRequest> {
    internal_within(body, MAX_BODY_BYTES, validated)
}

/// [`internal`], for a body of at most `limit` bytes.
pub fn internal_within<T: for<'a> Deserialize<'a>>(
    body: &[u8],
    limit: usize,
    validated: impl FnOnce(T) -> Result<T, InvalidRequest>,
) -> Result<T, InvalidRequest> {
    validated(parse_within(body, limit)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::names::MAX_ID_BYTES;

    fn claim(s: &str) -> ClaimId {
        ClaimId::from(s)
    }

    #[test]
    fn a_create_repeats_the_current_attempt_only_with_the_same_fence_worker_and_first_max_attempts() {
        let create = |body: &str| Create::parse(body.as_bytes()).unwrap();
        let first = create(r#"{"claim":"j","fence":3,"worker":"w1","reservation_ttl_ms":60000,"max_attempts":5}"#);
        let mut row = ClaimRow::authorize(claim("j"), Fence(3), WorkerId::from("w1"), 1_000);
        row.max_attempts = 5;
        assert!(first.repeats(&row));
        let lasting = create(r#"{"claim":"j","fence":3,"worker":"w1","reservation_ttl_ms":5,"max_attempts":5}"#);
        assert!(lasting.repeats(&row), "the reservation's TTL is the first create's");
        assert!(
            !create(r#"{"claim":"j","fence":3,"worker":"w2","reservation_ttl_ms":60000,"max_attempts":5}"#)
                .repeats(&row)
        );
        assert!(
            !create(r#"{"claim":"j","fence":4,"worker":"w1","reservation_ttl_ms":60000,"max_attempts":5}"#)
                .repeats(&row)
        );
        let default = create(r#"{"claim":"j","fence":3,"worker":"w1","reservation_ttl_ms":60000}"#);
        assert!(!default.repeats(&row), "a first attempt's create set max_attempts (3 when left out)");
        row.attempt = 2;
        assert!(default.repeats(&row), "a later attempt keeps the claim's max_attempts, whatever its create says");
    }

    #[test]
    fn a_create_body_is_parsed_and_checked() {
        let ok =
            Create::parse(br#"{"claim":"job-1","fence":18446744073709551615,"worker":"w","reservation_ttl_ms":1}"#);
        assert_eq!(ok.map(|c| c.fence), Ok(Fence(u64::MAX)));
        for (body, code) in [
            (r#"{"claim":"","fence":1,"worker":"w","reservation_ttl_ms":5}"#, "invalid_claim"),
            (r#"{"claim":"a/b","fence":1,"worker":"w","reservation_ttl_ms":5}"#, "invalid_claim"),
            (r#"{"claim":"a","fence":1,"worker":"w\u0007","reservation_ttl_ms":5}"#, "invalid_worker"),
            (r#"{"claim":"a","fence":1,"worker":"w","reservation_ttl_ms":0}"#, "invalid_ttl"),
            (r#"{"claim":"a","fence":1,"worker":"w","reservation_ttl_ms":86400001}"#, "invalid_ttl"),
            (r#"{"claim":"a","fence":-1,"worker":"w","reservation_ttl_ms":5}"#, "invalid_body"),
            (r#"{"claim":"a","fence":1,"worker":"w"}"#, "invalid_body"),
            (r#"{"claim":"a","fence":1,"worker":"w","reservation_ttl_ms":5,"x":1}"#, "invalid_body"),
            ("[1,2]", "invalid_body"),
            ("{", "invalid_body"),
        ] {
            assert_eq!(Create::parse(body.as_bytes()).map_err(|e| e.code().as_str()), Err(code), "{body}");
        }
        let long = format!(r#"{{"claim":"{}","fence":1,"worker":"w","reservation_ttl_ms":5}}"#, "c".repeat(257));
        assert_eq!(Create::parse(long.as_bytes()).map_err(|e| e.code().as_str()), Err("invalid_claim"));
        let huge = vec![b' '; MAX_BODY_BYTES + 1];
        assert_eq!(Create::parse(&huge).map_err(|e| e.code().as_str()), Err("invalid_body"));
    }

    #[test]
    fn activate_needs_a_key_and_a_valid_body() {
        let body = br#"{"fence":3,"worker":"w1","lease_ttl_ms":1000}"#;
        let op = operation(Some("k1")).unwrap();
        let a = Activate::parse(claim("c"), op.clone(), body).unwrap();
        assert_eq!(a.request, RequestKey { claim: claim("c"), fence: Fence(3), worker: WorkerId::from("w1") });
        assert_eq!(operation(None).map_err(|e| e.code().as_str()), Err("missing_idempotency_key"));
        assert_eq!(operation(Some("")).map_err(|e| e.code().as_str()), Err("invalid_idempotency_key"));
        assert_eq!(operation(Some(&"k".repeat(257))).map_err(|e| e.code().as_str()), Err("invalid_idempotency_key"));
        let no_ttl = br#"{"fence":3,"worker":"w1"}"#;
        assert_eq!(Activate::parse(claim("c"), op, no_ttl).map_err(|e| e.code().as_str()), Err("invalid_body"));
    }

    #[test]
    fn a_completion_is_checked_and_its_result_bounded() {
        let op = operation(Some("k")).unwrap();
        let ok = Complete::parse(
            claim("c"),
            op.clone(),
            br#"{"fence":1,"worker":"w","outcome":"failed","result":{"b": 1, "a": [true]}}"#,
        );
        assert_eq!(ok.map(|c| (c.outcome, c.result)), Ok((Outcome::Failed, Some(r#"{"a":[true],"b":1}"#.to_string()))));
        let none =
            Complete::parse(claim("c"), op.clone(), br#"{"fence":1,"worker":"w","outcome":"succeeded","result":null}"#);
        assert_eq!(none.map(|c| c.result), Ok(None));
        let spelled = |result: &str| {
            let body = format!(r#"{{"fence":1,"worker":"w","outcome":"succeeded","result":{result}}}"#);
            Complete::parse(claim("c"), op.clone(), body.as_bytes()).map(|c| c.result)
        };
        // Every digit kept (a float would be 1.8446744073709552e19), and
        // one spelling per value otherwise.
        assert_eq!(
            spelled(r#" { "z" : [ 18446744073709551617 , -0.10 , 1e400 ], "a\u0041" : "\u00e9\/" , "z": [1] } "#),
            Ok(Some(r#"{"aA":"é/","z":[1]}"#.to_string()))
        );
        assert_eq!(
            spelled("[18446744073709551617, 1.0, -0.10, 2E+3]"),
            Ok(Some("[18446744073709551617,1.0,-0.10,2E+3]".into()))
        );
        assert_eq!(spelled(r#"{"b":{"d":[],"c":{}},"a":null}"#), Ok(Some(r#"{"a":null,"b":{"c":{},"d":[]}}"#.into())));
        assert_eq!(spelled("[[[\"x\"]], true]"), Ok(Some(r#"[[["x"]],true]"#.into())));
        assert_eq!(spelled("1e400"), Ok(Some("1e400".into())));
        let code = |body: &[u8]| Complete::parse(claim("c"), op.clone(), body).map_err(|e| e.code().as_str());
        assert_eq!(code(br#"{"fence":1,"worker":"w","outcome":"done"}"#), Err("invalid_body"));
        assert_eq!(code(br#"{"fence":1,"worker":"w"}"#), Err("invalid_body"));
        let big =
            format!(r#"{{"fence":1,"worker":"w","outcome":"failed","result":"{}"}}"#, "x".repeat(MAX_RESULT_BYTES));
        assert_eq!(code(big.as_bytes()), Err("result_too_large"));
        let fits =
            format!(r#"{{"fence":1,"worker":"w","outcome":"failed","result":"{}"}}"#, "x".repeat(MAX_RESULT_BYTES - 2));
        assert!(code(fits.as_bytes()).is_ok());
        // The worst result for the hop to the claim object: all backslashes,
        // escaped once in the stored text and again on the way.
        let backslashes = format!(
            r#"{{"fence":1,"worker":"{}","outcome":"failed","result":"{}"}}"#,
            "w".repeat(MAX_ID_BYTES),
            "\\\\".repeat((MAX_RESULT_BYTES - 2) / 2)
        );
        let parsed = Complete::parse(
            claim(&"c".repeat(MAX_ID_BYTES)),
            operation(Some(&"k".repeat(MAX_ID_BYTES))).unwrap(),
            backslashes.as_bytes(),
        );
        let forwarded = serde_json::to_vec(&parsed.expect("a valid completion")).unwrap();
        assert!(forwarded.len() > MAX_COMPLETE_BODY_BYTES, "the case this bound is for");
        assert!(internal_within(&forwarded, MAX_INTERNAL_COMPLETE_BYTES, Complete::validated).is_ok());
    }

    #[test]
    fn a_listing_page_is_checked() {
        assert_eq!(ListPage::from_query(None), Ok(ListPage { state: None, after: None, limit: DEFAULT_LIST_LIMIT }));
        assert_eq!(
            ListPage::from_query(Some("state=dead&after=job%201&limit=1000")),
            Ok(ListPage { state: Some(ClaimState::Dead), after: Some(claim("job 1")), limit: 1000 })
        );
        for (query, code) in [
            ("limit=0", "invalid_limit"),
            ("limit=1001", "invalid_limit"),
            ("limit=x", "invalid_limit"),
            ("state=done", "invalid_state"),
            ("after=a%2Fb", "invalid_cursor"),
            ("after=", "invalid_cursor"),
            ("page=2", "bad_request"),
        ] {
            assert_eq!(ListPage::from_query(Some(query)).map_err(|e| e.code().as_str()), Err(code), "{query}");
        }
    }

    #[test]
    fn max_attempts_is_bounded() {
        let with =
            |n: &str| format!(r#"{{"claim":"a","fence":1,"worker":"w","reservation_ttl_ms":5,"max_attempts":{n}}}"#);
        assert_eq!(Create::parse(with("5").as_bytes()).map(|c| c.max_attempts()), Ok(5));
        assert_eq!(Create::parse(with("0").as_bytes()).map_err(|e| e.code().as_str()), Err("invalid_max_attempts"));
        assert_eq!(Create::parse(with("101").as_bytes()).map_err(|e| e.code().as_str()), Err("invalid_max_attempts"));
    }

    #[test]
    fn claim_ids_in_paths_are_decoded_then_checked() {
        assert_eq!(names::claim("caf%C3%A9"), Ok(claim("café")));
        assert_eq!(names::claim("a%2Fb"), Err(IdProblem::Slash));
        assert_eq!(names::claim("%FF"), Err(IdProblem::NotUtf8));
        assert_eq!(names::claim("%00"), Err(IdProblem::Control(0)));
        assert!(names::claim(&"c".repeat(MAX_ID_BYTES)).is_ok());
    }

    #[test]
    fn internal_bodies_round_trip_and_are_checked_again() {
        let h = Heartbeat::parse(claim("c"), br#"{"fence":1,"worker":"w","lease_ttl_ms":10}"#).unwrap();
        let bytes = serde_json::to_vec(&h).unwrap();
        assert_eq!(internal(&bytes, Heartbeat::validated), Ok(h));
        let forged = br#"{"request":{"claim":"c","fence":1,"worker":"w"},"lease_ttl_ms":0}"#;
        assert_eq!(internal(forged, Heartbeat::validated).map_err(|e| e.code().as_str()), Err("invalid_ttl"));
    }
}
