//! What `/mcp` checks of a request's `Host` and `Origin` before anything else: one of each at
//! most, and an `Origin` that is an origin. rmcp then checks them against the allowed lists
//! (DNS rebinding protection); these checks keep a request it would read loosely from
//! reaching it: a second `Host` or `Origin` (one loopback, one not), or an `Origin` that does
//! not parse but begins like a loopback one (`http://127.0.0.1:8080.evil.example`).

use axum::response::Response;
use http::header::{HOST, ORIGIN};
use http::{HeaderMap, StatusCode};

use crate::problem;

/// The answer for a request `/mcp` refuses on its `Host` or `Origin`, if it does.
pub(super) fn refusal(headers: &HeaderMap) -> Option<Response> {
    for (name, header) in [("Host", HOST), ("Origin", ORIGIN)] {
        if headers.get_all(&header).iter().nth(1).is_some() {
            return Some(problem::response(
                StatusCode::BAD_REQUEST,
                format!("a request carries one `{name}` header at most"),
            ));
        }
    }
    match headers
        .get(ORIGIN)
        .map(|value| value.to_str().map(is_origin))
    {
        None | Some(Ok(true)) => None,
        Some(_) => Some(problem::response(
            StatusCode::FORBIDDEN,
            "the `Origin` header is not an origin (scheme://host[:port])",
        )),
    }
}

/// Whether `text` is an origin as browsers send it (RFC 6454 §6.2): `scheme://host` with an
/// optional port, a host that is a name, an IPv4 address or a bracketed IPv6 one; or `null`.
fn is_origin(text: &str) -> bool {
    if text == "null" {
        return true;
    }
    let Some((scheme, authority)) = text.split_once("://") else {
        return false;
    };
    let scheme_ok = scheme
        .bytes()
        .next()
        .is_some_and(|b| b.is_ascii_alphabetic())
        && scheme
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'-' | b'.'));
    if !scheme_ok {
        return false;
    }
    let (host, port) = match authority.strip_prefix('[') {
        Some(rest) => {
            let Some((inner, after)) = rest.split_once(']') else {
                return false;
            };
            let literal = !inner.is_empty()
                && inner.contains(':')
                && inner
                    .bytes()
                    .all(|b| b.is_ascii_hexdigit() || matches!(b, b':' | b'.'));
            if !literal {
                return false;
            }
            match after {
                "" => return true,
                _ => match after.strip_prefix(':') {
                    Some(port) => (inner, Some(port)),
                    None => return false,
                },
            }
        }
        None => match authority.split_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (authority, None),
        },
    };
    let name_ok = authority.starts_with('[')
        || (!host.is_empty()
            && host.split('.').all(|label| {
                !label.is_empty()
                    && label.len() <= 63
                    && label
                        .bytes()
                        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_'))
            }));
    let port_ok = port.is_none_or(|port| {
        !port.is_empty()
            && port.len() <= 5
            && port.bytes().all(|b| b.is_ascii_digit())
            && port.parse::<u32>().is_ok_and(|n| n <= 65_535)
    });
    name_ok && port_ok
}

#[cfg(test)]
mod tests {
    use http::HeaderValue;

    use super::*;

    #[test]
    fn origins_are_origins() {
        for good in [
            "http://localhost:3000",
            "http://127.0.0.1",
            "https://tools.example.com",
            "http://[::1]:8080",
            "http://[::1]",
            "null",
        ] {
            assert!(is_origin(good), "{good}");
        }
        for bad in [
            "http://127.0.0.1:8080.evil.example",
            "http://[::1].evil.example",
            "http://localhost:3000/path",
            "http://user@localhost",
            "http://localhost:99999",
            "http://localhost:",
            "http://",
            "localhost:3000",
            "http://[evil.example]",
            "http://a..b",
        ] {
            assert!(!is_origin(bad), "{bad}");
        }
    }

    #[test]
    fn two_hosts_or_origins_are_refused() {
        let mut headers = HeaderMap::new();
        headers.append(HOST, HeaderValue::from_static("127.0.0.1:3000"));
        assert!(refusal(&headers).is_none());
        headers.append(HOST, HeaderValue::from_static("evil.example"));
        assert_eq!(refusal(&headers).unwrap().status(), StatusCode::BAD_REQUEST);
        let mut headers = HeaderMap::new();
        headers.append(ORIGIN, HeaderValue::from_static("http://127.0.0.1:3000"));
        headers.append(ORIGIN, HeaderValue::from_static("http://evil.example"));
        assert_eq!(refusal(&headers).unwrap().status(), StatusCode::BAD_REQUEST);
        let mut headers = HeaderMap::new();
        headers.insert(
            ORIGIN,
            HeaderValue::from_static("http://127.0.0.1:3000.evil.example"),
        );
        assert_eq!(refusal(&headers).unwrap().status(), StatusCode::FORBIDDEN);
    }
}
