//! `Idempotency-Key`: the first request with a key runs, and its response is kept; a repeat
//! gets that response again and never runs the handler a second time. What is kept is
//! bounded ([`IdempotencyLimits`]): per caller and in all, in records and in bytes; a new key
//! that does not fit is refused, and a live record is never dropped to make room.

mod limits;
mod local;

use sha2::{Digest, Sha256};

pub use self::limits::IdempotencyLimits;
pub use self::local::Idempotency;
use crate::store::Fingerprint;

/// The fingerprint of a request.
#[must_use]
pub fn fingerprint(method: &str, target: &str, caller: &str, body: &[u8]) -> Fingerprint {
    let mut digest = Sha256::new();
    for part in [
        method.as_bytes(),
        target.as_bytes(),
        caller.as_bytes(),
        body,
    ] {
        digest.update((part.len() as u64).to_be_bytes());
        digest.update(part);
    }
    digest.finalize().into()
}

/// The longest key kept: a key is a token the client makes up (a UUID is 36 characters),
/// and every one kept takes memory for a day.
pub const MAX_KEY: usize = 255;

/// A key as the header gave it, if it is one: 1 to [`MAX_KEY`] visible ASCII characters.
/// Anything else is refused before it is kept or looked up.
pub fn check_key(
    header: &str,
    value: &http::HeaderValue,
) -> Result<(), Box<halo_protocol::Problem>> {
    let bytes = value.as_bytes();
    if (1..=MAX_KEY).contains(&bytes.len()) && bytes.iter().all(|b| b.is_ascii_graphic()) {
        return Ok(());
    }
    Err(Box::new(halo_protocol::Problem::new(400).with_detail(
        format!("`{header}` must be 1 to {MAX_KEY} visible ASCII characters (a UUID will do)"),
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_short_visible_tokens() {
        let check = |text: &str| {
            check_key(
                "Idempotency-Key",
                &http::HeaderValue::from_str(text).unwrap(),
            )
        };
        assert!(check("8e0f0c1c-4d1a-4c8e-9b1e-2f1d1c0a9b7e").is_ok());
        assert!(check(&"k".repeat(MAX_KEY)).is_ok());
        for bad in ["", " ", "two words", "tab\there"] {
            assert_eq!(check(bad).unwrap_err().status, 400, "{bad:?}");
        }
        assert!(check(&"k".repeat(MAX_KEY + 1)).is_err());
        let refused = check("").unwrap_err();
        assert!(refused.detail.unwrap().contains("`Idempotency-Key`"));
    }
}
