//! Which of a caller's headers an upstream gets, and which of an upstream's the caller gets.

use http::HeaderMap;
use http::header::{self, HeaderName};

use crate::merge::Credentials;

/// Headers that describe one hop (RFC 9110 §7.6.1), never forwarded either way.
const HOP_BY_HOP: [HeaderName; 8] = [
    header::CONNECTION,
    HeaderName::from_static("keep-alive"),
    header::PROXY_AUTHENTICATE,
    header::PROXY_AUTHORIZATION,
    header::TE,
    header::TRAILER,
    header::TRANSFER_ENCODING,
    header::UPGRADE,
];

/// The headers an upstream gets from a caller's `headers`: none of one hop, no `Host` or
/// length (the client sets them), none the layer reads for itself (`Halo-Call-Id`), no
/// credential of the caller's (`Authorization`, cookies, the upstream's API key headers),
/// then the upstream's own `configured` headers.
pub(crate) fn to_upstream(
    headers: &HeaderMap,
    credentials: &Credentials,
    configured: &HeaderMap,
) -> HeaderMap {
    let mut out = HeaderMap::with_capacity(headers.len() + configured.len());
    for (name, value) in headers {
        if HOP_BY_HOP.contains(name)
            || name == header::HOST
            || name == header::CONTENT_LENGTH
            || name == "halo-call-id"
            || connection_listed(headers, name)
            || credentials.headers.iter().any(|c| name.as_str() == c)
        {
            continue;
        }
        out.append(name.clone(), value.clone());
    }
    for (name, value) in configured {
        out.insert(name.clone(), value.clone());
    }
    out
}

/// The headers a caller gets from an upstream's answer: none of one hop, no cookies the
/// upstream sets (they are the gateway's, for the upstream's host), no length (the body is
/// passed as it comes).
pub(crate) fn to_caller(headers: &HeaderMap) -> HeaderMap {
    let mut out = HeaderMap::with_capacity(headers.len());
    for (name, value) in headers {
        if HOP_BY_HOP.contains(name)
            || name == header::SET_COOKIE
            || name == header::CONTENT_LENGTH
            || connection_listed(headers, name)
        {
            continue;
        }
        out.append(name.clone(), value.clone());
    }
    out
}

/// Whether `Connection` names `name` as a header of this hop.
fn connection_listed(headers: &HeaderMap, name: &HeaderName) -> bool {
    headers
        .get_all(header::CONNECTION)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(','))
        .any(|listed| listed.trim().eq_ignore_ascii_case(name.as_str()))
}

#[cfg(test)]
mod tests {
    use http::HeaderValue;

    use super::*;

    #[test]
    fn credentials_and_hop_headers_stay_behind() {
        let mut headers = HeaderMap::new();
        for (name, value) in [
            ("authorization", "Bearer caller"),
            ("cookie", "session=1"),
            ("x-api-key", "caller-key"),
            ("connection", "x-hop"),
            ("x-hop", "1"),
            ("host", "gateway"),
            ("halo-call-id", "c1"),
            ("accept", "application/json"),
            ("x-request-id", "r1"),
        ] {
            headers.append(name, HeaderValue::from_static(value));
        }
        let credentials = Credentials {
            headers: vec!["authorization".into(), "cookie".into(), "x-api-key".into()],
            query: Vec::new(),
        };
        let mut configured = HeaderMap::new();
        configured.insert("x-api-key", HeaderValue::from_static("gateway-key"));
        let out = to_upstream(&headers, &credentials, &configured);
        let names: Vec<&str> = out.keys().map(HeaderName::as_str).collect();
        assert_eq!(names, ["accept", "x-request-id", "x-api-key"]);
        assert_eq!(out["x-api-key"], "gateway-key");

        let mut answer = HeaderMap::new();
        answer.insert("set-cookie", HeaderValue::from_static("upstream=1"));
        answer.insert("content-type", HeaderValue::from_static("application/json"));
        answer.insert("transfer-encoding", HeaderValue::from_static("chunked"));
        let out = to_caller(&answer);
        assert_eq!(out.len(), 1);
        assert!(out.contains_key("content-type"));
    }
}
