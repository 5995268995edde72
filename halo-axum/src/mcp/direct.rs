//! `tools/call` answered directly: the plainest MCP request, answered by the bridge without
//! rmcp's per-request machinery.
//!
//! rmcp's stateless transport handles each request by parsing it as any of MCP's messages (an
//! untagged enum that tries variant after variant), starting a service for it, spawning a
//! task and moving the handler's future into it: for a small `tools/call` that is twice the
//! work of the call it wraps. A request that asks nothing of that machinery is answered here
//! instead, by the same handler ([`Bridge::answer`]) and in rmcp's own types, shaped as
//! rmcp's handler shapes a result for a client of a version before `2026-07-28`, so the
//! answer is the one rmcp would write: a `POST` with `Content-Length` of at most 64 KiB, JSON, that
//! accepts both JSON and event streams, without `Origin`, whose `Host` is plainly one of the
//! allowed hosts, of a protocol version before `2026-07-28` (or none) and with no other
//! `Mcp-*` header, whose body is a JSON-RPC `tools/call` request and nothing more, without
//! `_meta` (no progress token, no per-request version or capabilities) and without a retry's
//! `requestState`. Anything else, and anything this cannot tell, goes to rmcp unchanged, so
//! what rmcp would refuse is still refused by rmcp.

use std::sync::Arc;

use axum::body::Body;
use axum::response::Response;
use bytes::Bytes;
use http::header::{ACCEPT, CONTENT_LENGTH, CONTENT_TYPE, HOST, ORIGIN};
use http::{HeaderMap, HeaderValue, Method, Request};
use http_body_util::{BodyExt as _, Full};
use rmcp::ErrorData;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, ProtocolVersion, RequestId, ServerJsonRpcMessage,
    ServerResult,
};
use serde::Deserialize;

use super::asked::Asked;
use super::bridge::Bridge;

/// The largest body answered directly.
const MAX_BODY: u64 = 64 * 1024;

/// A JSON-RPC request, of nothing but its four members.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Envelope<'a> {
    #[serde(borrow)]
    jsonrpc: &'a str,
    id: RequestId,
    #[serde(borrow)]
    method: &'a str,
    params: Option<CallToolRequestParams>,
}

/// What became of a request: answered, or left to rmcp as it came (its body unread, or read
/// and given back whole).
pub(super) enum Direct<B> {
    Answered(Response),
    Untouched(Request<B>),
    Read(Request<Full<Bytes>>),
}

/// Answers `request` when it is a plain `tools/call` (its caller already identified, when the
/// layer identifies callers); else gives it back, its body as it came, for rmcp.
pub(super) async fn answer<B>(bridge: &Bridge, hosts: &Hosts, request: Request<B>) -> Direct<B>
where
    B: http_body::Body,
{
    if !plain(request.method(), request.headers(), hosts) {
        return Direct::Untouched(request);
    }
    // At most `MAX_BODY` bytes: HTTP frames the body by the `Content-Length` checked above.
    let (parts, body) = request.into_parts();
    let bytes = match body.collect().await {
        Ok(collected) => collected.to_bytes(),
        // A body that broke off: rmcp answers for what it got.
        Err(_) => return Direct::Read(Request::from_parts(parts, Full::default())),
    };
    let Some((id, params)) = call(&bytes) else {
        return Direct::Read(Request::from_parts(parts, Full::new(bytes)));
    };
    let message = match bridge
        .answer(params, Asked::Direct(&parts))
        .await
        .map(legacy)
    {
        Ok(Some(result)) => ServerJsonRpcMessage::response(result, id),
        // Never made for a direct call, whose client cannot be asked; refused as rmcp does.
        Ok(None) => ServerJsonRpcMessage::error(
            ErrorData::invalid_request(
                "InputRequiredResult requires negotiated protocol version 2026-07-28 or newer",
                None,
            ),
            Some(id),
        ),
        Err(error) => ServerJsonRpcMessage::error(error, Some(id)),
    };
    let json = serde_json::to_vec(&message).expect("rmcp's messages serialise to JSON");
    let mut response = Response::new(Body::from(json));
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    Direct::Answered(response)
}

/// `answer` as rmcp's handler writes it for a client of a version before `2026-07-28`:
/// without `resultType: "complete"`, structured content only as an object; `None` for an
/// `input_required` result, which such a client cannot take.
fn legacy(answer: CallToolResponse) -> Option<ServerResult> {
    let mut result = ServerResult::from(answer);
    if matches!(result, ServerResult::InputRequiredResult(_)) {
        return None;
    }
    result.strip_result_type_for_legacy_peer();
    result.strip_non_object_output_for_legacy_peer();
    Some(result)
}

/// The id and parameters of `body` when it is a JSON-RPC `tools/call` request that needs
/// nothing of rmcp's: no `_meta`, no retry's `requestState` or `inputResponses`.
fn call(body: &Bytes) -> Option<(RequestId, CallToolRequestParams)> {
    let envelope: Envelope<'_> = serde_json::from_slice(body).ok()?;
    let params = envelope.params?;
    let plain = envelope.jsonrpc == "2.0"
        && envelope.method == "tools/call"
        && params.meta.is_none()
        && params.request_state.is_none()
        && params.input_responses.is_none();
    plain.then_some((envelope.id, params))
}

/// Whether the head of a request is one rmcp would accept as it is, and asks nothing of its
/// sessions, versions or origin checks.
fn plain(method: &Method, headers: &HeaderMap, hosts: &Hosts) -> bool {
    let length = headers
        .get(CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    method == Method::POST
        && length.is_some_and(|length| length <= MAX_BODY)
        && !headers.contains_key(ORIGIN)
        && hosts.admit(headers)
        && accepts_json_and_events(headers)
        && headers
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.trim().eq_ignore_ascii_case("application/json"))
        && headers.keys().all(|name| {
            let name = name.as_str();
            !name.starts_with("mcp-") || name == "mcp-protocol-version"
        })
        && version_before_2026(headers)
}

/// The hosts a request may name to be answered directly: the allowed hosts given without a
/// port (allowed at any port), found once when the service is built; any host when every
/// host is allowed. A plain case of what rmcp allows (it also normalises names, and allows
/// hosts at one port only).
#[derive(Debug, Clone)]
pub(super) struct Hosts(Option<Arc<[String]>>);

impl Hosts {
    /// The hosts of `allowed`, the list rmcp is given (empty: any host).
    pub(super) fn new(allowed: &[String]) -> Self {
        if allowed.is_empty() {
            return Self(None);
        }
        let names: Vec<String> = allowed
            .iter()
            .filter_map(|entry| portless(entry))
            .map(str::to_owned)
            .collect();
        Self(Some(names.into()))
    }

    /// Whether the request's one `Host` names, exactly, one of them.
    fn admit(&self, headers: &HeaderMap) -> bool {
        let mut hosts = headers.get_all(HOST).iter();
        let (Some(host), None) = (hosts.next(), hosts.next()) else {
            return false;
        };
        let Some(name) = host.to_str().ok().and_then(host_name) else {
            return false;
        };
        self.0
            .as_ref()
            .is_none_or(|names| names.iter().any(|entry| entry == name))
    }
}

/// The name of a `Host` value (`localhost:3000`, `[::1]:3000`, `example.com`).
fn host_name(host: &str) -> Option<&str> {
    let port = |port: &str| !port.is_empty() && port.bytes().all(|b| b.is_ascii_digit());
    if let Some(rest) = host.strip_prefix('[') {
        let (name, after) = rest.split_once(']')?;
        return (after.is_empty() || after.strip_prefix(':').is_some_and(port)).then_some(name);
    }
    match host.split_once(':') {
        None => Some(host),
        Some((name, rest)) if port(rest) => Some(name),
        Some(_) => None,
    }
}

/// The name of an allowed host given without a port (`localhost`, `::1`, `[::1]`); `None`
/// for one with a port (`example.com:8443`).
fn portless(entry: &str) -> Option<&str> {
    if let Some(inner) = entry.strip_prefix('[') {
        return inner.strip_suffix(']');
    }
    match entry.matches(':').count() {
        1 => None,
        _ => Some(entry),
    }
}

/// Whether `Accept` lists both `application/json` and `text/event-stream`, plainly (no
/// parameters, which rmcp weighs).
fn accepts_json_and_events(headers: &HeaderMap) -> bool {
    let (mut json, mut events) = (false, false);
    for value in headers.get_all(ACCEPT) {
        let Ok(value) = value.to_str() else {
            return false;
        };
        for entry in value.split(',').map(str::trim) {
            if entry.contains(';') {
                return false;
            }
            json |= entry.eq_ignore_ascii_case("application/json");
            events |= entry.eq_ignore_ascii_case("text/event-stream");
        }
    }
    json && events
}

/// Whether `MCP-Protocol-Version` is absent or a version rmcp knows that is older than
/// `2026-07-28`, whose requests carry their own metadata and headers.
fn version_before_2026(headers: &HeaderMap) -> bool {
    let mut versions = headers.get_all("mcp-protocol-version").iter();
    match (versions.next(), versions.next()) {
        (None, _) => true,
        (Some(version), None) => version.to_str().is_ok_and(|version| {
            version < ProtocolVersion::V_2026_07_28.as_str()
                && ProtocolVersion::KNOWN_VERSIONS
                    .iter()
                    .any(|known| known.as_str() == version)
        }),
        (Some(_), Some(_)) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn head(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut headers = HeaderMap::new();
        for (name, value) in pairs {
            headers.append(*name, HeaderValue::from_static(value));
        }
        headers
    }

    const PLAIN: [(&str, &str); 5] = [
        ("host", "127.0.0.1:8080"),
        ("accept", "application/json, text/event-stream"),
        ("content-type", "application/json"),
        ("content-length", "90"),
        ("mcp-protocol-version", "2025-06-18"),
    ];

    fn loopback() -> Hosts {
        Hosts::new(&["localhost", "127.0.0.1", "::1"].map(str::to_owned))
    }

    #[test]
    fn only_the_plainest_heads_are_answered_directly() {
        let hosts = loopback();
        assert!(plain(&Method::POST, &head(&PLAIN), &hosts));
        assert!(!plain(&Method::GET, &head(&PLAIN), &hosts));
        let with = |extra: (&'static str, &'static str)| {
            let mut pairs = PLAIN.to_vec();
            pairs.retain(|(name, _)| *name != extra.0);
            pairs.push(extra);
            plain(&Method::POST, &head(&pairs), &hosts)
        };
        assert!(with(("host", "[::1]:3000")));
        assert!(with(("host", "localhost")));
        // An entry with a port is left to rmcp.
        let ported = Hosts::new(&["example.com:8443".to_owned()]);
        let mut pairs = PLAIN.to_vec();
        pairs[0] = ("host", "example.com:8443");
        assert!(!plain(&Method::POST, &head(&pairs), &ported));
        for declined in [
            ("host", "evil.example"),
            ("host", "127.0.0.1.evil.example:80"),
            ("host", "LOCALHOST"),
            ("host", "localhost:80x"),
            ("origin", "http://localhost:3000"),
            ("accept", "application/json"),
            ("accept", "application/json;q=0, text/event-stream"),
            ("content-type", "text/plain"),
            ("content-length", "1000000"),
            ("mcp-protocol-version", "2026-07-28"),
            ("mcp-protocol-version", "1999-01-01"),
            ("mcp-session-id", "s"),
            ("mcp-method", "tools/call"),
        ] {
            assert!(!with(declined), "{declined:?}");
        }
        let mut without_length = head(&PLAIN);
        without_length.remove(CONTENT_LENGTH);
        assert!(!plain(&Method::POST, &without_length, &hosts));
    }

    #[test]
    fn only_plain_calls_are_answered_directly() {
        let body = |text: &str| Bytes::from(text.to_owned());
        let (id, params) = call(&body(
            r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"get_book","arguments":{"id":1}}}"#,
        ))
        .unwrap();
        assert_eq!(id, RequestId::Number(7));
        assert_eq!(params.name, "get_book");
        for declined in [
            r#"{"jsonrpc":"2.0","id":7,"method":"tools/list"}"#,
            r#"{"jsonrpc":"2.0","id":7,"method":"tools/call"}"#,
            r#"{"jsonrpc":"2.0","method":"tools/call","params":{"name":"a"}}"#,
            r#"{"jsonrpc":"1.0","id":7,"method":"tools/call","params":{"name":"a"}}"#,
            r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"a","_meta":{"progressToken":1}}}"#,
            r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"a","requestState":"s"}}"#,
            r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"a"},"extra":1}"#,
            r#"[{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"a"}}]"#,
            "not json",
        ] {
            assert!(call(&body(declined)).is_none(), "{declined}");
        }
    }
}
