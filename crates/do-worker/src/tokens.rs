//! Client authentication: who a request's `Authorization: Bearer <token>`
//! speaks for. Pure (no Workers runtime), so every rule is unit-tested on
//! the host.
//!
//! Two kinds of token (docs/handoff.md section 4, "Authentication"):
//!
//! - the deployment's admin token, the Worker secret [`ADMIN_BINDING`]
//!   (`wrangler secret put HANDOFF_ADMIN_TOKEN`): every right on every
//!   namespace. Compared in constant time (both sides hashed first, so the
//!   comparison does not even depend on the lengths);
//! - scoped tokens, minted by `POST /v1/_tokens` with an admin right:
//!   `hs1.<payload>.<signature>`, the payload a [`Grant`] (one namespace or
//!   all, a set of [`Right`]s, an expiry) as URL-safe base64 of JSON, the
//!   signature HMAC-SHA256 over `hs1.<payload>` with a key derived from the
//!   admin token (HMAC-SHA256 of a fixed label under it), verified in
//!   constant time by the `hmac` crate. Rotating the admin token revokes
//!   every scoped token.

use crate::error::Code;
use std::fmt;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use hmac::{Hmac, Mac};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

/// The Worker secret holding the admin token.
pub const ADMIN_BINDING: &str = "HANDOFF_ADMIN_TOKEN";
/// Shortest admin token accepted (xtask generates 64 hex digits).
pub const MIN_ADMIN_TOKEN_LEN: usize = 32;
/// Every scoped token starts with this (the format's version).
const PREFIX: &str = "hs1.";
/// What the signing key is derived for: changing it revokes every token.
const KEY_LABEL: &[u8] = b"handoff scoped token signing key v1";
/// Longest token accepted, in bytes (a grant names at most one namespace of
/// 512 bytes; base64 and the signature add about half again).
pub const MAX_TOKEN_BYTES: usize = 2048;
/// Longest lifetime a minted token may have: 400 days.
pub const MAX_TTL_SECONDS: u64 = 400 * 24 * 60 * 60;

type HmacSha256 = Hmac<Sha256>;

/// What a token may do on a namespace.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Right {
    /// Read keys, the namespace's status, settings and claims.
    Read,
    /// Write and delete keys.
    Write,
    /// Create, activate and heartbeat claims (and read them).
    Claims,
    /// Everything above, plus create and delete the namespace and mint
    /// tokens for it.
    Admin,
}

impl Right {
    pub const ALL: [Right; 4] = [Right::Read, Right::Write, Right::Claims, Right::Admin];

    pub fn name(self) -> &'static str {
        match self {
            Right::Read => "read",
            Right::Write => "write",
            Right::Claims => "claims",
            Right::Admin => "admin",
        }
    }
}

impl fmt::Display for Right {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What a scoped token grants.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Grant {
    /// The namespace, or `None` for every namespace (and the deployment-wide
    /// routes, with `admin`).
    pub ns: Option<String>,
    pub rights: Vec<Right>,
    /// Unix seconds; the token is refused from then on.
    pub exp: u64,
}

/// Who a request speaks for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Bearer {
    /// The deployment's admin token.
    Admin,
    Scoped(Grant),
}

/// Why a request is not authenticated (401), or cannot be (500).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum AuthError {
    #[error("this route needs `Authorization: Bearer <token>`")]
    Missing,
    #[error("the Authorization header is not `Bearer <token>`")]
    NotBearer,
    #[error("the token is not one this deployment issued")]
    Invalid,
    #[error("the token expired at {exp} (unix seconds)")]
    Expired { exp: u64 },
    /// The deployment has no usable admin token (500: it fails closed).
    #[error(
        "{ADMIN_BINDING} is not set or shorter than {MIN_ADMIN_TOKEN_LEN} characters; `cargo xtask dev` sets one, a \
         deployment needs `wrangler secret put {ADMIN_BINDING}`"
    )]
    NoAdminToken,
}

impl AuthError {
    /// The error code (and so the status).
    pub fn code(&self) -> Code {
        match self {
            AuthError::NoAdminToken => Code::AdminTokenMissing,
            _ => Code::Unauthorized,
        }
    }
}

/// The deployment's admin token, if usable (at least
/// [`MIN_ADMIN_TOKEN_LEN`] printable ASCII characters).
pub fn admin_token(configured: Option<&str>) -> Result<&str, AuthError> {
    configured
        .filter(|t| t.len() >= MIN_ADMIN_TOKEN_LEN && t.bytes().all(|b| b.is_ascii_graphic()))
        .ok_or(AuthError::NoAdminToken)
}

/// Who the `Authorization` header `header` speaks for, at `now` (unix
/// seconds), for a deployment whose admin token is `admin`.
pub fn authenticate(admin: &str, header: Option<&str>, now: u64) -> Result<Bearer, AuthError> {
    let header = header.ok_or(AuthError::Missing)?;
    let token = match header.trim().split_once(' ') {
        Some((scheme, token)) if scheme.eq_ignore_ascii_case("bearer") => token.trim(),
        _ => return Err(AuthError::NotBearer),
    };
    if token.is_empty() || token.len() > MAX_TOKEN_BYTES {
        return Err(AuthError::Invalid);
    }
    if bool::from(Sha256::digest(token.as_bytes()).ct_eq(&Sha256::digest(admin.as_bytes()))) {
        return Ok(Bearer::Admin);
    }
    let grant = verify(admin, token).ok_or(AuthError::Invalid)?;
    if now >= grant.exp {
        return Err(AuthError::Expired { exp: grant.exp });
    }
    Ok(Bearer::Scoped(grant))
}

/// A scoped token for `grant`, signed for the deployment whose admin token
/// is `admin`.
pub fn mint(admin: &str, grant: &Grant) -> String {
    // A struct of strings, numbers and enums always serializes.
    let json = serde_json::to_vec(grant).unwrap_or_default();
    let signed = format!("{PREFIX}{}", B64.encode(json));
    let signature = B64.encode(mac(admin, &signed).finalize().into_bytes());
    format!("{signed}.{signature}")
}

/// The grant of a well-signed token (expired or not).
fn verify(admin: &str, token: &str) -> Option<Grant> {
    let (signed, signature) = token.rsplit_once('.')?;
    let payload = signed.strip_prefix(PREFIX)?;
    let signature = B64.decode(signature).ok()?;
    mac(admin, signed).verify_slice(&signature).ok()?;
    serde_json::from_slice(&B64.decode(payload).ok()?).ok()
}

/// HMAC-SHA256 over `message` with the key derived from `admin`.
fn mac(admin: &str, message: &str) -> HmacSha256 {
    // HMAC takes keys of any length: `new_from_slice` cannot fail.
    let key = match HmacSha256::new_from_slice(admin.as_bytes()) {
        Ok(mut derive) => {
            derive.update(KEY_LABEL);
            derive.finalize().into_bytes()
        }
        Err(_) => Default::default(),
    };
    let mut mac = match HmacSha256::new_from_slice(&key) {
        Ok(mac) => mac,
        Err(_) => return HmacSha256::new(&Default::default()),
    };
    mac.update(message.as_bytes());
    mac
}

impl Bearer {
    /// Whether this bearer may exercise `right` on namespace `ns` (`None`:
    /// the deployment-wide routes, which need `admin` on every namespace).
    /// `admin` implies every other right on the same namespaces.
    pub fn allows(&self, ns: Option<&str>, right: Right) -> bool {
        match self {
            Bearer::Admin => true,
            Bearer::Scoped(grant) => {
                let covers = match (&grant.ns, ns) {
                    (None, _) => true,
                    (Some(mine), Some(ns)) => mine == ns,
                    (Some(_), None) => false,
                };
                covers && (grant.rights.contains(&right) || grant.rights.contains(&Right::Admin))
            }
        }
    }

    /// The latest expiry a token minted by this bearer may have.
    pub fn expires(&self) -> Option<u64> {
        match self {
            Bearer::Admin => None,
            Bearer::Scoped(grant) => Some(grant.exp),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ADMIN: &str = "0123456789abcdef0123456789abcdef0123456789abcdef";
    const NOW: u64 = 1_800_000_000;

    fn bearer(token: &str) -> String {
        format!("Bearer {token}")
    }

    fn grant(ns: Option<&str>, rights: &[Right]) -> Grant {
        Grant { ns: ns.map(str::to_string), rights: rights.to_vec(), exp: NOW + 60 }
    }

    #[test]
    fn the_admin_token_is_admin_everywhere() {
        assert_eq!(authenticate(ADMIN, Some(&bearer(ADMIN)), NOW), Ok(Bearer::Admin));
        assert_eq!(authenticate(ADMIN, Some(&format!("bearer  {ADMIN} ")), NOW), Ok(Bearer::Admin));
        for right in Right::ALL {
            assert!(Bearer::Admin.allows(Some("any"), right) && Bearer::Admin.allows(None, right));
        }
    }

    #[test]
    fn missing_malformed_and_wrong_tokens_are_refused() {
        assert_eq!(authenticate(ADMIN, None, NOW), Err(AuthError::Missing));
        assert_eq!(authenticate(ADMIN, Some(ADMIN), NOW), Err(AuthError::NotBearer));
        assert_eq!(authenticate(ADMIN, Some(&format!("Basic {ADMIN}")), NOW), Err(AuthError::NotBearer));
        assert_eq!(authenticate(ADMIN, Some("Bearer "), NOW), Err(AuthError::NotBearer));
        let near_miss = format!("{}X", &ADMIN[..ADMIN.len() - 1]);
        assert_eq!(authenticate(ADMIN, Some(&bearer(&near_miss)), NOW), Err(AuthError::Invalid));
        assert_eq!(authenticate(ADMIN, Some(&bearer(&ADMIN[1..])), NOW), Err(AuthError::Invalid));
        let huge = "x".repeat(MAX_TOKEN_BYTES + 1);
        assert_eq!(authenticate(ADMIN, Some(&bearer(&huge)), NOW), Err(AuthError::Invalid));
        assert_eq!(authenticate(ADMIN, Some(&bearer("hs1..")), NOW), Err(AuthError::Invalid));
    }

    #[test]
    fn a_scoped_token_grants_its_rights_on_its_namespace_until_it_expires() {
        let g = grant(Some("shop"), &[Right::Read, Right::Claims]);
        let token = mint(ADMIN, &g);
        assert!(token.starts_with(PREFIX));
        let b = authenticate(ADMIN, Some(&bearer(&token)), NOW).unwrap();
        assert_eq!(b, Bearer::Scoped(g.clone()));
        assert!(b.allows(Some("shop"), Right::Read) && b.allows(Some("shop"), Right::Claims));
        assert!(!b.allows(Some("shop"), Right::Write) && !b.allows(Some("shop"), Right::Admin));
        assert!(!b.allows(Some("shop2"), Right::Read), "another namespace");
        assert!(!b.allows(None, Right::Read), "the deployment-wide routes");
        assert_eq!(authenticate(ADMIN, Some(&bearer(&token)), g.exp), Err(AuthError::Expired { exp: g.exp }));
    }

    #[test]
    fn admin_on_a_namespace_implies_every_right_there_and_all_namespaces_admin_the_deployment() {
        let b = Bearer::Scoped(grant(Some("shop"), &[Right::Admin]));
        assert!(Right::ALL.iter().all(|&r| b.allows(Some("shop"), r)));
        assert!(!b.allows(None, Right::Admin));
        let all = Bearer::Scoped(grant(None, &[Right::Admin]));
        assert!(all.allows(None, Right::Admin) && all.allows(Some("x"), Right::Write));
        let readers = Bearer::Scoped(grant(None, &[Right::Read]));
        assert!(readers.allows(Some("x"), Right::Read) && !readers.allows(None, Right::Admin));
    }

    #[test]
    fn a_tampered_or_foreign_token_is_refused() {
        let token = mint(ADMIN, &grant(Some("shop"), &[Right::Read]));
        let other_deployment = mint(&ADMIN.replace('0', "1"), &grant(Some("shop"), &[Right::Read]));
        assert_eq!(authenticate(ADMIN, Some(&bearer(&other_deployment)), NOW), Err(AuthError::Invalid));
        let (signed, signature) = token.rsplit_once('.').unwrap();
        // The payload of a wider grant under the narrower grant's signature.
        let wider = mint(ADMIN, &grant(None, &[Right::Admin]));
        let (wider_signed, _) = wider.rsplit_once('.').unwrap();
        let forged = format!("{wider_signed}.{signature}");
        assert_eq!(authenticate(ADMIN, Some(&bearer(&forged)), NOW), Err(AuthError::Invalid));
        let truncated = format!("{signed}.{}", &signature[1..]);
        assert_eq!(authenticate(ADMIN, Some(&bearer(&truncated)), NOW), Err(AuthError::Invalid));
    }

    #[test]
    fn an_unusable_admin_token_fails_closed() {
        assert_eq!(admin_token(None), Err(AuthError::NoAdminToken));
        assert_eq!(admin_token(Some("short")), Err(AuthError::NoAdminToken));
        assert_eq!(admin_token(Some(&format!("{ADMIN} x"))), Err(AuthError::NoAdminToken));
        assert_eq!(admin_token(Some(ADMIN)), Ok(ADMIN));
        assert_eq!(AuthError::NoAdminToken.code(), Code::AdminTokenMissing);
        assert_eq!(AuthError::Missing.code(), Code::Unauthorized);
    }
}
