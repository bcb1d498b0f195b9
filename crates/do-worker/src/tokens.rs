//! Client authentication: who a request's `Authorization: Bearer <token>`
//! speaks for. Pure (no Workers runtime), so every rule is unit-tested on
//! the host.
//!
//! Two kinds of token (docs/operating.md 4.3, "Authentication"):
//!
//! - the deployment's admin token, the Worker secret [`ADMIN_BINDING`]
//!   (`wrangler secret put HANDOFF_ADMIN_TOKEN`): every right on every
//!   namespace. Compared in constant time (both sides hashed first, so the
//!   comparison does not even depend on the lengths);
//! - scoped tokens, minted by `POST /v1/_tokens` with an admin right:
//!   `hs2.<payload>.<signature>`, the payload a [`Grant`] (one namespace
//!   and its life, or all; a set of [`Right`]s; an expiry) as URL-safe
//!   base64 of JSON, the
//!   signature HMAC-SHA256 over `hs1.<payload>` with a key derived from the
//!   admin token (HMAC-SHA256 of a fixed label under it), verified in
//!   constant time by the `hmac` crate. Rotating the admin token revokes
//!   every scoped token. A token for one namespace names the life it was
//!   minted in (the namespace's `created_at`): the object serving the
//!   namespace compares it with its own ([`check_life`]), so deleting the
//!   namespace ends the token even if one of the same name is created
//!   again. (Format 1 had no life; its tokens are refused.)

use crate::error::{Code, HttpError};
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
const PREFIX: &str = "hs2.";
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
    /// With `ns`: that namespace's `created_at` (unix ms) when the token was
    /// minted. The token ends with that life of the namespace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub life: Option<u64>,
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
    /// The token's namespace was deleted since it was minted (one of the
    /// same name may have been created again).
    #[error(
        "the token was minted for namespace {ns:?} as created at {minted_for} (unix ms); that namespace was deleted{}",
        now.map_or(String::new(), |at| format!(" (the one of that name now was created at {at})"))
    )]
    Ended { ns: String, minted_for: u64, now: Option<u64> },
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

impl From<AuthError> for HttpError {
    /// A 401 names the scheme it wants (RFC 9110, `WWW-Authenticate`).
    fn from(e: AuthError) -> HttpError {
        let code = e.code();
        let error = HttpError::new(code, e.to_string());
        if code == Code::Unauthorized { error.with_header("www-authenticate", "Bearer") } else { error }
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
    let grant = verify(admin, token).filter(|g| g.ns.is_some() == g.life.is_some()).ok_or(AuthError::Invalid)?;
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

    /// The life of its namespace a scoped token is bound to (`None`: the
    /// admin token, and tokens for every namespace).
    pub fn life(&self) -> Option<u64> {
        match self {
            Bearer::Admin => None,
            Bearer::Scoped(grant) => grant.life,
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

/// Whether a token bound to life `token` (`None`: bound to none) may act on
/// namespace `ns`, whose current life is `current` (`None`: it does not
/// exist). Called by the object that knows `current`.
pub fn check_life(token: Option<u64>, ns: &str, current: Option<u64>) -> Result<(), AuthError> {
    match token {
        Some(minted_for) if current != Some(minted_for) => {
            Err(AuthError::Ended { ns: ns.to_string(), minted_for, now: current })
        }
        _ => Ok(()),
    }
}

/// Whether an object that runs in namespace life `mine` (`None`: none yet)
/// is of another life than the `asked` one (`None`: any) an internal
/// operation names: a late stop or drop of a deleted life, which must leave
/// the namespace created again alone.
pub fn of_other_life(asked: Option<u64>, mine: Option<u64>) -> bool {
    matches!((asked, mine), (Some(asked), Some(mine)) if asked != mine)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_named_life_other_than_the_objects_is_another() {
        assert!(of_other_life(Some(1), Some(2)), "a late stop of life 1 would stop life 2");
        assert!(!of_other_life(Some(2), Some(2)));
        assert!(!of_other_life(None, Some(2)), "no life named: any");
        assert!(!of_other_life(Some(1), None), "an object of no life yet has nothing to keep");
    }

    const ADMIN: &str = "0123456789abcdef0123456789abcdef0123456789abcdef";
    const NOW: u64 = 1_800_000_000;

    fn bearer(token: &str) -> String {
        format!("Bearer {token}")
    }

    const LIFE: u64 = 1_799_999_999_000;

    fn grant(ns: Option<&str>, rights: &[Right]) -> Grant {
        Grant { ns: ns.map(str::to_string), rights: rights.to_vec(), exp: NOW + 60, life: ns.map(|_| LIFE) }
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
        assert_eq!(authenticate(ADMIN, Some(&bearer("hs2..")), NOW), Err(AuthError::Invalid));
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
    fn a_namespace_token_ends_with_the_life_it_was_minted_in() {
        let b = authenticate(ADMIN, Some(&bearer(&mint(ADMIN, &grant(Some("shop"), &[Right::Read])))), NOW).unwrap();
        assert_eq!(b.life(), Some(LIFE));
        assert_eq!(check_life(b.life(), "shop", Some(LIFE)), Ok(()));
        let ended = check_life(b.life(), "shop", Some(LIFE + 5));
        assert_eq!(ended, Err(AuthError::Ended { ns: "shop".into(), minted_for: LIFE, now: Some(LIFE + 5) }));
        assert!(check_life(b.life(), "shop", None).is_err(), "deleted and not created again");
        assert_eq!(ended.map_err(|e| e.code()), Err(Code::Unauthorized));
        assert_eq!(check_life(None, "shop", Some(LIFE + 5)), Ok(()), "the admin token, or one for every namespace");
    }

    #[test]
    fn a_namespace_token_without_a_life_or_of_the_first_format_is_refused() {
        let unbound = Grant { life: None, ..grant(Some("shop"), &[Right::Read]) };
        assert_eq!(authenticate(ADMIN, Some(&bearer(&mint(ADMIN, &unbound))), NOW), Err(AuthError::Invalid));
        let stray = Grant { life: Some(LIFE), ..grant(None, &[Right::Read]) };
        assert_eq!(authenticate(ADMIN, Some(&bearer(&mint(ADMIN, &stray))), NOW), Err(AuthError::Invalid));
        let first_format = mint(ADMIN, &grant(Some("shop"), &[Right::Read])).replacen("hs2.", "hs1.", 1);
        assert_eq!(authenticate(ADMIN, Some(&bearer(&first_format)), NOW), Err(AuthError::Invalid));
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
