//! Write ids: the `handoff-write-id` header, 32 hex digits naming one
//! logical write. The server applies a write id once and answers every
//! later request carrying it with its first answer, which is what makes a
//! retried write safe (see [`crate::retry`]).

use std::fmt;
use std::str::FromStr;

/// A write id: 128 bits, sent as 32 lowercase hex digits. Keep one (it
/// parses back from its `Display` form) to resume a write later.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct WriteId(u128);

/// Why a string is not a write id.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("a write id is 32 hex digits, not {0:?}")]
pub struct WriteIdError(String);

impl WriteId {
    /// A fresh id from the operating system's randomness: two clients never
    /// pick the same one by chance (128 random bits).
    pub fn random() -> Result<WriteId, getrandom::Error> {
        let mut bytes = [0u8; 16];
        getrandom::getrandom(&mut bytes)?;
        Ok(WriteId(u128::from_le_bytes(bytes)))
    }
}

impl fmt::Display for WriteId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:032x}", self.0)
    }
}

impl FromStr for WriteId {
    type Err = WriteIdError;

    /// 32 hex digits, either case; nothing else (`u128::from_str_radix`
    /// alone would take a sign and shorter strings).
    fn from_str(s: &str) -> Result<WriteId, WriteIdError> {
        let bad = || WriteIdError(s.to_owned());
        if s.len() != 32 || !s.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(bad());
        }
        u128::from_str_radix(s, 16).map(WriteId).map_err(|_| bad())
    }
}

#[cfg(test)]
mod tests {
    use super::WriteId;

    #[test]
    fn formats_as_32_lowercase_hex_digits_and_parses_back() {
        let id: WriteId = "000000000000000000000000000000AB".parse().unwrap();
        assert_eq!(id.to_string(), "000000000000000000000000000000ab");
        let random = WriteId::random().unwrap();
        assert_eq!(random.to_string().parse::<WriteId>().unwrap(), random);
    }

    #[test]
    fn refuses_anything_but_32_hex_digits() {
        for bad in ["", "ab", "+0000000000000000000000000000000a", "g0000000000000000000000000000000", &"0".repeat(33)]
        {
            assert!(bad.parse::<WriteId>().is_err(), "{bad:?}");
        }
    }

    #[test]
    fn random_ids_differ() {
        assert_ne!(WriteId::random().unwrap(), WriteId::random().unwrap());
    }
}
