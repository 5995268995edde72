//! What Redis holds, written and read: a kept response (status, headers as `name:value`
//! lines, body), and durations as script arguments.

use std::time::Duration;

use bytes::Bytes;
use http::{HeaderMap, HeaderName, HeaderValue, StatusCode};

use crate::store::Stored;

/// A duration as a script argument: whole milliseconds, at least 1 (Redis refuses an expiry
/// of 0).
pub(crate) fn millis(duration: Duration) -> String {
    u64::try_from(duration.as_millis())
        .unwrap_or(u64::MAX)
        .max(1)
        .to_string()
}

/// Headers as `name:value` lines (a header value never holds a line break).
#[must_use]
pub fn encode_headers(headers: &HeaderMap) -> Vec<u8> {
    let mut out = Vec::new();
    for (name, value) in headers {
        out.extend_from_slice(name.as_str().as_bytes());
        out.push(b':');
        out.extend_from_slice(value.as_bytes());
        out.push(b'\n');
    }
    out
}

/// Headers read back from `name:value` lines; a line that is not a header is left out.
#[must_use]
pub fn decode_headers(bytes: &[u8]) -> HeaderMap {
    let mut headers = HeaderMap::new();
    for line in bytes.split(|b| *b == b'\n') {
        let Some(colon) = line.iter().position(|b| *b == b':') else {
            continue;
        };
        if let (Ok(name), Ok(value)) = (
            HeaderName::from_bytes(&line[..colon]),
            HeaderValue::from_bytes(&line[colon + 1..]),
        ) {
            headers.append(name, value);
        }
    }
    headers
}

/// A kept response read back, or `None` when the record is damaged.
pub(crate) fn decode_stored(status: &[u8], headers: &[u8], body: Vec<u8>) -> Option<Stored> {
    let status = std::str::from_utf8(status).ok()?.parse::<u16>().ok()?;
    Some(Stored {
        status: StatusCode::from_u16(status).ok()?,
        headers: decode_headers(headers),
        body: Bytes::from(body),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_survive_the_round_trip() {
        let mut headers = HeaderMap::new();
        headers.insert("content-type", HeaderValue::from_static("application/json"));
        headers.append("set-cookie", HeaderValue::from_static("a=1; Path=/"));
        headers.append("set-cookie", HeaderValue::from_static("b=2"));
        headers.insert(
            "x-odd",
            HeaderValue::from_bytes(b"caf\xc3\xa9: yes").unwrap(),
        );
        assert_eq!(decode_headers(&encode_headers(&headers)), headers);
        let stored = decode_stored(b"201", &encode_headers(&headers), b"{}".to_vec()).unwrap();
        assert_eq!(stored.status, StatusCode::CREATED);
        assert!(decode_stored(b"abc", b"", Vec::new()).is_none());
    }
}
