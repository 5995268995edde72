//! The signature of a webhook's body: HMAC-SHA256 over a timestamp and the exact bytes sent,
//! written as `t=<unix seconds>,v1=<hex>` in the `Halo-Signature` header, and checked by the
//! receiver within a tolerance, so a captured request cannot be replayed later.

use std::fmt;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use aws_lc_rs::{constant_time, hmac};

/// The longest signature header read: a timestamp and a few signatures fit many times over.
const MAX_HEADER: usize = 4096;
/// The most `v1` signatures of one header compared (one per secret being rotated in).
const MAX_SIGNATURES: usize = 8;
/// The bytes of an HMAC-SHA256 tag.
const TAG_BYTES: usize = 32;

/// The secret a webhook's sender and receiver share, to sign and check its bodies
/// (HMAC-SHA256). Its bytes never show in `Debug` output, logs or errors.
///
/// The header a body is sent with reads `t=1733133600,v1=5f3c…`: `t` is when it was signed
/// (seconds since the Unix epoch) and `v1` the hex HMAC-SHA256 of `"{t}.{body}"`. A receiver
/// checks it with [`verify`](Self::verify) before it reads the body:
///
/// ```
/// use std::time::{Duration, SystemTime};
/// use halo_govern::approval::{SignatureError, WebhookSecret};
///
/// let secret = WebhookSecret::new("whsec-7f1c9a0e5b2d4c68");
/// let body = br#"{"event":"approval.requested"}"#;
/// let now = SystemTime::now();
/// let header = secret.sign(now, body);
/// let tolerance = Duration::from_secs(300);
///
/// assert_eq!(secret.verify(&header, body, now, tolerance), Ok(()));
/// // Another body, another secret, or a header replayed too late: refused.
/// let tampered = br#"{"event":"approval.granted"}"#;
/// assert_eq!(secret.verify(&header, tampered, now, tolerance), Err(SignatureError::Mismatch));
/// let wrong = WebhookSecret::new("another-secret-of-16+");
/// assert_eq!(wrong.verify(&header, body, now, tolerance), Err(SignatureError::Mismatch));
/// let later = now + Duration::from_secs(3600);
/// assert_eq!(secret.verify(&header, body, later, tolerance), Err(SignatureError::Stale));
/// assert_eq!(secret.verify("v1=zz", body, now, tolerance), Err(SignatureError::Malformed));
/// ```
#[derive(Clone)]
pub struct WebhookSecret {
    key: hmac::Key,
    len: usize,
}

/// Why a signature header was refused by [`WebhookSecret::verify`].
///
/// A receiver answers any of them with `401` and reads nothing of the body (an axum handler
/// takes the same `HeaderMap`, and the body as `Bytes`):
///
/// ```
/// use std::time::{Duration, SystemTime};
/// use http::{HeaderMap, StatusCode};
/// use halo_govern::approval::{WebhookApprover, WebhookSecret};
///
/// fn hook(headers: &HeaderMap, body: &[u8]) -> (StatusCode, &'static str) {
///     let secret = WebhookSecret::new("whsec-7f1c9a0e5b2d4c68");
///     let header = headers
///         .get(WebhookApprover::SIGNATURE_HEADER)
///         .and_then(|value| value.to_str().ok())
///         .unwrap_or("");
///     let tolerance = Duration::from_secs(300);
///     match secret.verify(header, body, SystemTime::now(), tolerance) {
///         Ok(()) => (StatusCode::OK, r#"{"approved": true}"#),
///         Err(_) => (StatusCode::UNAUTHORIZED, "bad signature"),
///     }
/// }
/// # let _ = hook;
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum SignatureError {
    /// Not `t=<seconds>,v1=<hex>` (or over 4,096 bytes).
    Malformed,
    /// Signed further from now than the tolerance allows: a replay, or a clock far off.
    Stale,
    /// No `v1` signature matches the body with this secret.
    Mismatch,
}

impl fmt::Display for SignatureError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Malformed => "the signature header is not t=<seconds>,v1=<hex>",
            Self::Stale => "the signature's timestamp is outside the tolerance",
            Self::Mismatch => "the signature does not match the body",
        })
    }
}

impl std::error::Error for SignatureError {}

impl fmt::Debug for WebhookSecret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("WebhookSecret([redacted])")
    }
}

impl WebhookSecret {
    /// A secret of these bytes (any length; a webhook approver asks for at least 16).
    #[must_use]
    pub fn new(secret: impl AsRef<[u8]>) -> Self {
        let secret = secret.as_ref();
        Self {
            key: hmac::Key::new(hmac::HMAC_SHA256, secret),
            len: secret.len(),
        }
    }

    /// The secret's length in bytes.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// The signature header of `body` signed at `at`: `t=<unix seconds>,v1=<hex>`.
    #[must_use]
    pub fn sign(&self, at: SystemTime, body: &[u8]) -> String {
        let seconds = at.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
        let tag = self.tag(seconds, body);
        let mut header = format!("t={seconds},v1=");
        for byte in tag.as_ref() {
            header.push(char::from(HEX[usize::from(byte >> 4)]));
            header.push(char::from(HEX[usize::from(byte & 0xf)]));
        }
        header
    }

    /// Checks the signature `header` of `body` at `now`: it must have been signed no further
    /// than `tolerance` from `now` (either way, for clocks a little apart), and one of its
    /// `v1` signatures must match (several are allowed while a new secret is rolled out;
    /// other schemes are ignored). Compared in constant time; never panics, whatever the
    /// header holds.
    ///
    /// # Errors
    /// [`SignatureError::Malformed`] for a header that is not `t=<seconds>,v1=<hex>`,
    /// [`SignatureError::Stale`] outside the tolerance, [`SignatureError::Mismatch`] when no
    /// signature matches.
    pub fn verify(
        &self,
        header: &str,
        body: &[u8],
        now: SystemTime,
        tolerance: Duration,
    ) -> Result<(), SignatureError> {
        let parsed = Parsed::read(header)?;
        // A timestamp past what the clock can hold is as stale as any other far one.
        let signed = UNIX_EPOCH.checked_add(Duration::from_secs(parsed.timestamp));
        let apart = signed.map(|signed| {
            now.duration_since(signed)
                .unwrap_or_else(|early| early.duration())
        });
        if apart.is_none_or(|apart| apart > tolerance) {
            return Err(SignatureError::Stale);
        }
        let tag = self.tag(parsed.timestamp, body);
        let matches = parsed.signatures[..parsed.count].iter().any(|signature| {
            constant_time::verify_slices_are_equal(signature, tag.as_ref()).is_ok()
        });
        if matches {
            Ok(())
        } else {
            Err(SignatureError::Mismatch)
        }
    }

    /// The HMAC of `"{seconds}.{body}"`.
    fn tag(&self, seconds: u64, body: &[u8]) -> hmac::Tag {
        let mut context = hmac::Context::with_key(&self.key);
        context.update(seconds.to_string().as_bytes());
        context.update(b".");
        context.update(body);
        context.sign()
    }
}

const HEX: &[u8; 16] = b"0123456789abcdef";

/// A signature header, read.
struct Parsed {
    timestamp: u64,
    signatures: [[u8; TAG_BYTES]; MAX_SIGNATURES],
    count: usize,
}

impl Parsed {
    /// Reads `t=<seconds>` (once) and up to eight `v1=<64 hex digits>`.
    fn read(header: &str) -> Result<Self, SignatureError> {
        if header.len() > MAX_HEADER {
            return Err(SignatureError::Malformed);
        }
        let mut parsed = Self {
            timestamp: 0,
            signatures: [[0; TAG_BYTES]; MAX_SIGNATURES],
            count: 0,
        };
        let mut timestamp = None;
        for item in header.split(',') {
            let (name, value) = item
                .trim()
                .split_once('=')
                .ok_or(SignatureError::Malformed)?;
            match name {
                "t" if timestamp.is_none() => {
                    let seconds = value
                        .bytes()
                        .all(|b| b.is_ascii_digit())
                        .then(|| value.parse::<u64>().ok())
                        .flatten()
                        .ok_or(SignatureError::Malformed)?;
                    timestamp = Some(seconds);
                }
                "t" => return Err(SignatureError::Malformed),
                "v1" if parsed.count < MAX_SIGNATURES => {
                    parsed.signatures[parsed.count] = unhex(value)?;
                    parsed.count += 1;
                }
                // Past the bound, and other schemes: not compared.
                _ => {}
            }
        }
        parsed.timestamp = timestamp.ok_or(SignatureError::Malformed)?;
        if parsed.count == 0 {
            return Err(SignatureError::Malformed);
        }
        Ok(parsed)
    }
}

/// 64 hex digits (either case) as 32 bytes.
fn unhex(text: &str) -> Result<[u8; TAG_BYTES], SignatureError> {
    let digits = text.as_bytes();
    if digits.len() != TAG_BYTES * 2 {
        return Err(SignatureError::Malformed);
    }
    let digit = |b: u8| match b {
        b'0'..=b'9' => Ok(b - b'0'),
        b'a'..=b'f' => Ok(b - b'a' + 10),
        b'A'..=b'F' => Ok(b - b'A' + 10),
        _ => Err(SignatureError::Malformed),
    };
    let mut bytes = [0; TAG_BYTES];
    for (byte, pair) in bytes.iter_mut().zip(digits.chunks_exact(2)) {
        *byte = (digit(pair[0])? << 4) | digit(pair[1])?;
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    const TOLERANCE: Duration = Duration::from_secs(300);

    fn at(seconds: u64) -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(seconds)
    }

    #[test]
    fn a_signature_is_the_hmac_of_the_timestamp_and_the_body() {
        // The same as `printf '1700000000.{"a":1}' | openssl dgst -sha256 -hmac
        // secret-of-sixteen+`.
        let secret = WebhookSecret::new("secret-of-sixteen+");
        let header = secret.sign(at(1_700_000_000), br#"{"a":1}"#);
        assert_eq!(
            header,
            "t=1700000000,v1=86329fdf0f217fbf20aeaa59669081f1b0bc9efc2baa1775d979c0f90c1b5943"
        );
        assert_eq!(
            secret.verify(&header, br#"{"a":1}"#, at(1_700_000_000), TOLERANCE),
            Ok(())
        );
    }

    #[test]
    fn the_timestamp_must_be_within_the_tolerance_either_way() {
        let secret = WebhookSecret::new("secret-of-sixteen+");
        let header = secret.sign(at(1_000_000), b"body");
        for now in [1_000_000 - 300, 1_000_000, 1_000_000 + 300] {
            assert_eq!(secret.verify(&header, b"body", at(now), TOLERANCE), Ok(()));
        }
        for now in [1_000_000 - 301, 1_000_000 + 301, 0, u64::MAX / 4] {
            assert_eq!(
                secret.verify(&header, b"body", at(now), TOLERANCE),
                Err(SignatureError::Stale),
                "{now}"
            );
        }
        // A timestamp moved forward by hand no longer matches its signature.
        let moved = header.replace("t=1000000", "t=1000100");
        assert_eq!(
            secret.verify(&moved, b"body", at(1_000_100), TOLERANCE),
            Err(SignatureError::Mismatch)
        );
    }

    #[test]
    fn any_of_several_signatures_may_match_and_other_schemes_are_ignored() {
        let old = WebhookSecret::new("the-old-secret-16");
        let new = WebhookSecret::new("the-new-secret-16");
        let signed = new.sign(at(50), b"x");
        let v1 = signed.split_once(",v1=").map(|(_, v1)| v1).unwrap_or("");
        let other = old.sign(at(50), b"x");
        let old_v1 = other.split_once(",v1=").map(|(_, v1)| v1).unwrap_or("");
        let header = format!("t=50, v0=abc, v1={old_v1}, v1={}", v1.to_uppercase());
        assert_eq!(new.verify(&header, b"x", at(50), TOLERANCE), Ok(()));
        assert_eq!(old.verify(&header, b"x", at(50), TOLERANCE), Ok(()));
        let third = WebhookSecret::new("a-third-secret-16");
        assert_eq!(
            third.verify(&header, b"x", at(50), TOLERANCE),
            Err(SignatureError::Mismatch)
        );
    }

    #[test]
    fn malformed_headers_are_refused_without_panicking() {
        let secret = WebhookSecret::new("secret-of-sixteen+");
        let good = secret.sign(at(10), b"b");
        let v1 = good.split_once(",v1=").map(|(_, v1)| v1).unwrap_or("");
        let long = format!("t=10,v1={v1},{}", "x=y,".repeat(2000));
        let cases = [
            String::new(),
            ",".into(),
            "t=10".into(),
            format!("v1={v1}"),
            format!("t=,v1={v1}"),
            format!("t=-5,v1={v1}"),
            format!("t=+5,v1={v1}"),
            format!("t=99999999999999999999999,v1={v1}"),
            format!("t=10,t=10,v1={v1}"),
            format!("t=10,v1={}", &v1[..63]),
            format!("t=10,v1={v1}0"),
            format!("t=10,v1={}é", &v1[..62]),
            "t=10,v1=".into(),
            format!("t=10;v1={v1}"),
            format!("t=10,garbage,v1={v1}"),
            long,
        ];
        for header in &cases {
            assert_eq!(
                secret.verify(header, b"b", at(10), TOLERANCE),
                Err(SignatureError::Malformed),
                "{header:?}"
            );
        }
        // A timestamp far past the epoch's range is stale, not a panic.
        let far = format!("t={},v1={v1}", u64::MAX);
        assert_eq!(
            secret.verify(&far, b"b", at(10), TOLERANCE),
            Err(SignatureError::Stale)
        );
    }

    #[test]
    fn the_secret_never_shows() {
        let secret = WebhookSecret::new("do-not-print-me-please");
        assert_eq!(format!("{secret:?}"), "WebhookSecret([redacted])");
        assert_eq!(secret.len(), 22);
    }
}
