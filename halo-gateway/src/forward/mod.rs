//! The service behind the layer: each call the layer let through, sent to its upstream.
//!
//! Only calls the layer checked go on (they carry [`ToolCall`]); any other request is
//! answered `404` here, so a path no tool describes never reaches an upstream. A call goes to
//! its upstream's base URL plus its path after `/<upstream>`, with its query and body as they
//! came, without the caller's credentials, with the upstream's configured headers. The
//! answer comes back as it is sent (streamed), without the upstream's cookies. A call the
//! layer streams to its caller is streamed from a HALO upstream too ([`relay`]).

mod headers;
mod mcp;
mod problem;
mod relay;

use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::Arc;

use axum::body::Body;
use axum::response::Response;
use halo_axum::{Progress, ToolCall};
use halo_client::ClientCredentials;
use http::header::ACCEPT;
use http::{HeaderMap, HeaderValue, Request, StatusCode};
use http_body::Body as _;
use http_body_util::BodyExt as _;
use reqwest::Url;
use tower_service::Service;

use crate::merge::Credentials;
use crate::upstream::document::without_url;
use crate::upstream::mcp::Server;

/// What an upstream is asked for when the layer streams the call itself: its plain answer,
/// JSON preferred.
const PLAIN_ACCEPT: &str = "application/json, */*;q=0.8";

/// Where one upstream's calls go, and how.
#[derive(Debug)]
pub(crate) enum Target {
    /// An API reached over HTTP.
    Http(Box<HttpTarget>),
    /// An MCP server, its calls `tools/call`s.
    Mcp(Arc<Server>),
}

/// An API reached over HTTP: where, with which credentials.
#[derive(Debug)]
pub(crate) struct HttpTarget {
    pub(crate) base_url: Url,
    pub(crate) headers: HeaderMap,
    /// Where its access tokens come from, when it takes OAuth.
    pub(crate) oauth: Option<ClientCredentials>,
    pub(crate) credentials: Credentials,
    pub(crate) client: reqwest::Client,
    /// A HALO upstream's client, through which streamed calls go.
    pub(crate) halo: Option<halo_client::Client>,
}

/// The service that sends calls to their upstreams (`targets`, by upstream name).
pub(crate) fn forwarder(
    targets: HashMap<String, Target>,
) -> impl Service<Request<Body>, Response = Response, Error = Infallible, Future: Send>
+ Clone
+ Send
+ Sync
+ 'static {
    let targets = Arc::new(targets);
    tower::service_fn(move |request| {
        let targets = Arc::clone(&targets);
        async move { Ok(forward(&targets, request).await) }
    })
}

async fn forward(targets: &HashMap<String, Target>, request: Request<Body>) -> Response {
    let (parts, body) = request.into_parts();
    let path = parts.uri.path();
    let found = path
        .strip_prefix('/')
        .map(|rest| rest.split_once('/').unwrap_or((rest, "")))
        .and_then(|(name, rest)| Some((name, rest, targets.get(name)?)));
    let (Some((name, rest, target)), Some(_)) = (found, parts.extensions.get::<ToolCall>()) else {
        return problem::answer(StatusCode::NOT_FOUND, "no tool is served at this path");
    };
    match target {
        Target::Http(target) => http(name, rest, target, &parts, body).await,
        Target::Mcp(server) => mcp::forward(name, rest, server, &parts, body).await,
    }
}

/// A call sent to an API over HTTP.
async fn http(
    name: &str,
    rest: &str,
    target: &HttpTarget,
    parts: &http::request::Parts,
    body: Body,
) -> Response {
    let url = upstream_url(
        &target.base_url,
        rest,
        parts.uri.query(),
        &target.credentials,
    );
    let mut headers = headers::to_upstream(&parts.headers, &target.credentials, &target.headers);
    // A call the layer streams to its caller: a HALO upstream streams it too, its progress
    // relayed; any other upstream answers it plainly, and the layer makes the stream.
    if let Some(progress) = parts
        .extensions
        .get::<Progress>()
        .filter(|p| p.is_streaming())
    {
        match &target.halo {
            Some(client) => {
                let Ok(body) = body.collect().await.map(|body| body.to_bytes()) else {
                    return problem::answer(
                        StatusCode::BAD_REQUEST,
                        "the request body could not be read",
                    );
                };
                let body = (!body.is_empty()).then_some(body);
                let request = (parts.method.clone(), url.as_str(), headers);
                return relay::stream(client, name, progress, request, body).await;
            }
            None => {
                headers.insert(ACCEPT, HeaderValue::from_static(PLAIN_ACCEPT));
            }
        }
    }
    let token = match &target.oauth {
        None => None,
        Some(oauth) => match oauth.authorization(&target.client, &url).await {
            Ok(token) => {
                headers.insert(http::header::AUTHORIZATION, token.clone());
                Some(token)
            }
            Err(error) => {
                tracing::warn!(upstream = name, %error, "no access token for an upstream");
                return problem::answer(
                    StatusCode::BAD_GATEWAY,
                    format!("the gateway could not get an access token for the upstream `{name}`"),
                );
            }
        },
    };
    let body = match body.size_hint().exact() {
        // Read by the layer already (validated): sent whole, with its length.
        Some(_) => match body.collect().await {
            Ok(collected) => reqwest::Body::from(collected.to_bytes()),
            Err(_) => {
                return problem::answer(
                    StatusCode::BAD_REQUEST,
                    "the request body could not be read",
                );
            }
        },
        None => reqwest::Body::wrap_stream(body.into_data_stream()),
    };
    let sent = target
        .client
        .request(parts.method.clone(), url)
        .headers(headers)
        .body(body)
        .send()
        .await;
    let answer = match sent {
        Ok(answer) => answer,
        Err(error) => {
            tracing::warn!(upstream = name, cause = %without_url(&error), "an upstream call failed");
            let (status, what) = match error.is_timeout() {
                true => (StatusCode::GATEWAY_TIMEOUT, "did not answer in time"),
                false => (StatusCode::BAD_GATEWAY, "could not be reached"),
            };
            return problem::answer(status, format!("the upstream `{name}` {what}"));
        }
    };
    // A refused token is not sent again: the next call gets a new one.
    if let (Some(oauth), Some(token)) = (&target.oauth, &token)
        && answer.status() == StatusCode::UNAUTHORIZED
    {
        oauth.refused(token).await;
    }
    let mut response = Response::new(Body::empty());
    *response.status_mut() = answer.status();
    *response.headers_mut() = headers::to_caller(answer.headers());
    *response.body_mut() = Body::from_stream(answer.bytes_stream());
    response
}

/// The upstream URL of a call: the base URL's path, then the call's path after its
/// upstream's segment, then its query without the credentials the upstream reads there.
fn upstream_url(base: &Url, rest: &str, query: Option<&str>, credentials: &Credentials) -> Url {
    let mut url = base.clone();
    let base_path = base.path().trim_end_matches('/');
    let path = match rest.is_empty() {
        true => format!("{base_path}/"),
        false => format!("{base_path}/{rest}"),
    };
    url.set_path(&path);
    let query = query.map(|query| {
        query
            .split('&')
            .filter(|pair| {
                let key = pair.split('=').next().unwrap_or_default();
                !credentials
                    .query
                    .iter()
                    .any(|name| key.eq_ignore_ascii_case(name))
            })
            .collect::<Vec<_>>()
            .join("&")
    });
    match query.as_deref() {
        Some("") | None => url.set_query(None),
        Some(query) => url.set_query(Some(query)),
    }
    url
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_join_the_base_and_queries_lose_credentials() {
        let credentials = Credentials {
            headers: Vec::new(),
            query: vec!["api_key".into()],
        };
        let base = Url::parse("https://api.example.com/v1/").unwrap();
        let url = upstream_url(&base, "pets/7", Some("a=1&API_KEY=x&b=%20"), &credentials);
        assert_eq!(url.as_str(), "https://api.example.com/v1/pets/7?a=1&b=%20");
        let bare = Url::parse("https://api.example.com").unwrap();
        assert_eq!(
            upstream_url(&bare, "", Some("api_key=x"), &credentials).as_str(),
            "https://api.example.com/"
        );
    }
}
