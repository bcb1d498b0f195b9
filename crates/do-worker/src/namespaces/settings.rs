//! A namespace's settings: what `PUT /v1/{ns}` takes, the registry stores
//! and the namespace's objects learn when they start. Pure, so the ranges
//! are unit-tested on the host.

use serde::{Deserialize, Serialize};

use crate::error::Code;

const MIB: u64 = 1024 * 1024;
const DAY: u64 = 24 * 60 * 60;

/// `memory_budget_bytes`: at least 1 MiB, at most 32 MiB. An isolate has
/// 128 MB for all the objects it hosts, and the three replicas of a
/// namespace at a 32 MiB budget measured 108 MiB of wasm memory after
/// evictions (`cargo xtask bench scale --budget-mib 32`).
pub const MEMORY_BUDGET: (u64, u64) = (MIB, 32 * MIB);
/// `idle_expiry_seconds`: 5 s to 30 days; 1 day when not given.
pub const IDLE_EXPIRY: (u64, u64) = (5, 30 * DAY);
pub const DEFAULT_IDLE_EXPIRY_SECONDS: u64 = DAY;
/// `claim_retention_seconds`: 1 s to 365 days; 7 days when not given.
pub const CLAIM_RETENTION: (u64, u64) = (1, 365 * DAY);
pub const DEFAULT_CLAIM_RETENTION_SECONDS: u64 = 7 * DAY;
/// `max_claims`: 1 to 1,000,000 claims in a namespace's claim store (507
/// `claims_full` beyond); 100,000 when not given. What they store is
/// bounded by `max_claim_bytes`.
pub const MAX_CLAIMS: (u64, u64) = (1, 1_000_000);
pub const DEFAULT_MAX_CLAIMS: u64 = 100_000;
/// `max_claim_bytes`: 1 MiB to 4 GiB of claim and operation rows (their
/// JSON and keys) in a namespace's claim store; 1 GiB when not given. New
/// claims stop there; claims already held may bind new Idempotency-Keys
/// for an eighth more (`claims::store::Room`). 4 GiB and its eighth, with
/// SQLite's indexes and pages around the rows, stay within a Durable
/// Object's 10 GB.
pub const MAX_CLAIM_BYTES: (u64, u64) = (MIB, 4096 * MIB);
pub const DEFAULT_MAX_CLAIM_BYTES: u64 = 1024 * MIB;

fn default_max_claims() -> u64 {
    DEFAULT_MAX_CLAIMS
}

fn default_max_claim_bytes() -> u64 {
    DEFAULT_MAX_CLAIM_BYTES
}

/// The settings of a namespace, defaults filled in.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Settings {
    /// The replicas' memory budget; `None`: the protocol's default.
    pub memory_budget_bytes: Option<u64>,
    /// A namespace with no client request for this long stops its replicas
    /// (their data goes with them).
    pub idle_expiry_seconds: u64,
    /// How long a finished claim (reaped, or executing with its lease
    /// lapsed) and its operations are kept before they are deleted.
    pub claim_retention_seconds: u64,
    /// How many claims the namespace's claim store holds at most (settings
    /// stored before this existed: the default).
    #[serde(default = "default_max_claims")]
    pub max_claims: u64,
    /// How many bytes of rows the claim store holds before it refuses new
    /// claims (settings stored before this existed: the default).
    #[serde(default = "default_max_claim_bytes")]
    pub max_claim_bytes: u64,
}

/// The body of `PUT /v1/{ns}`: every field optional.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct Requested {
    memory_budget_bytes: Option<u64>,
    idle_expiry_seconds: Option<u64>,
    claim_retention_seconds: Option<u64>,
    max_claims: Option<u64>,
    max_claim_bytes: Option<u64>,
}

/// Why settings were refused (400); the message names the field.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SettingsError {
    #[error("the body is not a JSON object of settings: {0}")]
    Body(String),
    #[error("{field} must be {min} to {max}, not {value}")]
    OutOfRange { field: &'static str, value: u64, min: u64, max: u64 },
}

impl SettingsError {
    pub fn code(&self) -> Code {
        match self {
            SettingsError::Body(_) => Code::InvalidBody,
            SettingsError::OutOfRange { .. } => Code::InvalidSetting,
        }
    }
}

impl Settings {
    /// Parses and checks a `PUT /v1/{ns}` body; an empty body is `{}`.
    pub fn parse(body: &[u8]) -> Result<Settings, SettingsError> {
        let requested: Requested = if body.iter().all(u8::is_ascii_whitespace) {
            Requested::default()
        } else {
            serde_json::from_slice(body).map_err(|e| SettingsError::Body(e.to_string()))?
        };
        Ok(Settings {
            memory_budget_bytes: requested
                .memory_budget_bytes
                .map(|v| in_range("memory_budget_bytes", v, MEMORY_BUDGET))
                .transpose()?,
            idle_expiry_seconds: in_range(
                "idle_expiry_seconds",
                requested.idle_expiry_seconds.unwrap_or(DEFAULT_IDLE_EXPIRY_SECONDS),
                IDLE_EXPIRY,
            )?,
            claim_retention_seconds: in_range(
                "claim_retention_seconds",
                requested.claim_retention_seconds.unwrap_or(DEFAULT_CLAIM_RETENTION_SECONDS),
                CLAIM_RETENTION,
            )?,
            max_claims: in_range("max_claims", requested.max_claims.unwrap_or(DEFAULT_MAX_CLAIMS), MAX_CLAIMS)?,
            max_claim_bytes: in_range(
                "max_claim_bytes",
                requested.max_claim_bytes.unwrap_or(DEFAULT_MAX_CLAIM_BYTES),
                MAX_CLAIM_BYTES,
            )?,
        })
    }

    pub fn idle_expiry_ms(&self) -> u64 {
        self.idle_expiry_seconds.saturating_mul(1000)
    }

    pub fn claim_retention_ms(&self) -> u64 {
        self.claim_retention_seconds.saturating_mul(1000)
    }
}

fn in_range(field: &'static str, value: u64, (min, max): (u64, u64)) -> Result<u64, SettingsError> {
    if (min..=max).contains(&value) { Ok(value) } else { Err(SettingsError::OutOfRange { field, value, min, max }) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_fill_what_is_not_given() {
        let defaults = Settings {
            memory_budget_bytes: None,
            idle_expiry_seconds: DEFAULT_IDLE_EXPIRY_SECONDS,
            claim_retention_seconds: DEFAULT_CLAIM_RETENTION_SECONDS,
            max_claims: DEFAULT_MAX_CLAIMS,
            max_claim_bytes: DEFAULT_MAX_CLAIM_BYTES,
        };
        assert_eq!(Settings::parse(b""), Ok(defaults.clone()));
        assert_eq!(Settings::parse(b" {} "), Ok(defaults.clone()));
        let given =
            br#"{"memory_budget_bytes":2097152,"idle_expiry_seconds":5,"claim_retention_seconds":1,"max_claims":7,"max_claim_bytes":1048576}"#;
        assert_eq!(
            Settings::parse(given),
            Ok(Settings {
                memory_budget_bytes: Some(2 * MIB),
                idle_expiry_seconds: 5,
                claim_retention_seconds: 1,
                max_claims: 7,
                max_claim_bytes: MIB,
            })
        );
        let stored = r#"{"memory_budget_bytes":null,"idle_expiry_seconds":5,"claim_retention_seconds":1}"#;
        let old: Settings = serde_json::from_str(stored).unwrap();
        assert_eq!(old.max_claims, DEFAULT_MAX_CLAIMS, "settings stored before max_claims get the default");
        assert_eq!(old.max_claim_bytes, DEFAULT_MAX_CLAIM_BYTES, "and before max_claim_bytes");
    }

    #[test]
    fn out_of_range_names_the_field() {
        for (body, field) in [
            (r#"{"memory_budget_bytes":1}"#, "memory_budget_bytes"),
            (r#"{"memory_budget_bytes":100663297}"#, "memory_budget_bytes"),
            (r#"{"idle_expiry_seconds":4}"#, "idle_expiry_seconds"),
            (r#"{"idle_expiry_seconds":2592001}"#, "idle_expiry_seconds"),
            (r#"{"claim_retention_seconds":0}"#, "claim_retention_seconds"),
            (r#"{"max_claims":0}"#, "max_claims"),
            (r#"{"max_claims":1000001}"#, "max_claims"),
            (r#"{"max_claim_bytes":1048575}"#, "max_claim_bytes"),
            (r#"{"max_claim_bytes":4294967297}"#, "max_claim_bytes"),
        ] {
            let err = Settings::parse(body.as_bytes()).unwrap_err();
            assert_eq!(err.code(), Code::InvalidSetting, "{body}");
            assert!(err.to_string().starts_with(field), "{err}");
        }
        for body in [r#"{"idle_expiry_seconds":-1}"#, r#"{"other":1}"#, "[]", "{", r#"{"idle_expiry_seconds":"5"}"#] {
            assert_eq!(Settings::parse(body.as_bytes()).map_err(|e| e.code()), Err(Code::InvalidBody), "{body}");
        }
    }
}
