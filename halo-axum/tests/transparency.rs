//! Do no harm: one app, served with and without the layer, gets the same requests; every
//! answer the layer does not own is the same, byte for byte (status, the headers the app
//! set, body), and an event stream the app serves itself arrives as it is sent.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, HeaderName, StatusCode};
use axum::response::sse::{Event, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use futures_util::{Stream, StreamExt};
use halo_axum::{HaloLayer, Principal, StaticAuthenticator, Validation};
use serde::{Deserialize, Serialize};
use tokio::sync::Notify;
use tower::Layer;
use utoipa::{IntoParams, Modify, ToSchema};
use utoipa_axum::{router::OpenApiRouter, routes};

/// What the event stream waits for between its two events.
#[derive(Clone, Default)]
struct Gate(Arc<Notify>);

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
struct Paging {
    /// At most this many.
    #[param(maximum = 50)]
    limit: Option<u8>,
}

#[derive(Serialize, Deserialize, ToSchema)]
struct Item {
    name: String,
    count: u32,
}

/// One item.
#[utoipa::path(get, path = "/items/{id}", params(("id" = u32, Path), Paging),
               responses((status = 200, body = Item)))]
async fn get_item(Path(id): Path<u32>, Query(paging): Query<Paging>) -> Response {
    let body = Json(Item {
        name: format!("item {id}"),
        count: u32::from(paging.limit.unwrap_or(1)),
    });
    ([(HeaderName::from_static("x-app"), "items")], body).into_response()
}

/// Adds an item.
#[utoipa::path(post, path = "/items", request_body = Item,
               responses((status = 201, body = Item)))]
async fn add_item(Json(item): Json<Item>) -> Response {
    if item.name == "teapot" {
        // The app's own error format, not problem+json.
        return (StatusCode::IM_A_TEAPOT, "short and stout").into_response();
    }
    (StatusCode::CREATED, Json(item)).into_response()
}

/// The app's own event stream.
#[utoipa::path(get, path = "/events",
               responses((status = 200, content_type = "text/event-stream", body = String)))]
async fn events(State(gate): State<Gate>) -> Sse<impl Stream<Item = Result<Event, Infallible>>> {
    let first = futures_util::stream::once(async { Ok(Event::default().event("first").data("1")) });
    let second = futures_util::stream::once(async move {
        gate.0.notified().await;
        Ok(Event::default().event("second").data("2"))
    });
    Sse::new(first.chain(second))
}

/// The app, and its document.
fn app(gate: &Gate) -> (Router, utoipa::openapi::OpenApi) {
    let (router, api) = OpenApiRouter::new()
        .routes(routes!(get_item))
        .routes(routes!(add_item))
        .routes(routes!(events))
        .split_for_parts();
    let router = router
        // Not described: a probe.
        .route("/health", get(|| async { "ok" }))
        .with_state(gate.clone());
    (router, api)
}

async fn serve<S>(service: S) -> String
where
    S: tower::Service<
            axum::extract::Request,
            Response = Response,
            Error = Infallible,
            Future: Send + 'static,
        > + Clone
        + Send
        + 'static,
{
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr: SocketAddr = listener.local_addr().unwrap();
    let make = axum::ServiceExt::<axum::extract::Request>::into_make_service(service);
    tokio::spawn(async move { axum::serve(listener, make).await.unwrap() });
    format!("http://{addr}")
}

/// What an answer is made of, but the `Date` the server adds.
#[derive(Debug, PartialEq, Eq)]
struct Answer {
    status: StatusCode,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

/// A request: method, path, headers, body.
type Sent = (
    &'static str,
    &'static str,
    &'static [(&'static str, &'static str)],
    Vec<u8>,
);

async fn send(base: &str, (method, path, headers, body): &Sent) -> Answer {
    let mut request = reqwest::Client::new()
        .request(method.parse().unwrap(), format!("{base}{path}"))
        .body(body.clone());
    for (name, value) in *headers {
        request = request.header(*name, *value);
    }
    let response = request.send().await.unwrap();
    let status = response.status();
    let mut headers: Vec<(String, String)> = response
        .headers()
        .iter()
        .filter(|(name, _)| *name != "date")
        .map(|(name, value)| (name.to_string(), value.to_str().unwrap().to_owned()))
        .collect();
    headers.sort();
    let body = response.bytes().await.unwrap().to_vec();
    Answer {
        status,
        headers,
        body,
    }
}

const JSON: (&str, &str) = ("content-type", "application/json");

/// Requests the layer does not own, valid and not: described operations called plainly,
/// routes it does not describe, unknown paths and methods, and what axum's extractors turn
/// away.
fn requests() -> Vec<Sent> {
    let big = format!(
        r#"{{"name": "{}", "count": 1}}"#,
        "x".repeat(3 * 1024 * 1024)
    );
    vec![
        ("GET", "/items/7", &[], vec![]),
        ("GET", "/items/7?limit=3", &[], vec![]),
        ("HEAD", "/items/7", &[], vec![]),
        ("GET", "/items/seven", &[], vec![]),
        ("GET", "/items/7?limit=many", &[], vec![]),
        ("GET", "/items/7?limit=99", &[], vec![]),
        ("GET", "/items/7", &[("accept", "application/json")], vec![]),
        ("GET", "/items/7", &[("accept", "*/*")], vec![]),
        (
            "POST",
            "/items",
            &[JSON],
            br#"{"name": "a", "count": 2}"#.to_vec(),
        ),
        (
            "POST",
            "/items",
            &[JSON],
            br#"{"name": "teapot", "count": 2}"#.to_vec(),
        ),
        ("POST", "/items", &[JSON], br#"{"name": "#.to_vec()),
        ("POST", "/items", &[JSON], br#"{"name": "a"}"#.to_vec()),
        (
            "POST",
            "/items",
            &[JSON],
            br#"{"name": 1, "count": "x"}"#.to_vec(),
        ),
        ("POST", "/items", &[JSON], vec![]),
        (
            "POST",
            "/items",
            &[],
            br#"{"name": "a", "count": 2}"#.to_vec(),
        ),
        (
            "POST",
            "/items",
            &[("content-type", "text/plain")],
            b"a".to_vec(),
        ),
        ("POST", "/items", &[JSON], big.into_bytes()),
        ("DELETE", "/items/7", &[], vec![]),
        ("PUT", "/items", &[JSON], b"{}".to_vec()),
        ("GET", "/health", &[], vec![]),
        ("POST", "/health", &[], vec![]),
        ("GET", "/nowhere", &[], vec![]),
        ("GET", "/", &[], vec![]),
        (
            "GET",
            "/items/7",
            &[("authorization", "Bearer not-a-token")],
            vec![],
        ),
    ]
}

/// Every request answered the same with and without the layer in front of the app.
async fn same_answers(bare: &str, layered: &str, label: &str) {
    for sent in requests() {
        let (without, with) = (send(bare, &sent).await, send(layered, &sent).await);
        assert_eq!(without, with, "{label}: {} {}", sent.0, sent.1);
    }
}

#[tokio::test]
async fn requests_the_layer_does_not_own_are_answered_as_without_it() {
    let gate = Gate::default();
    let (router, api) = app(&gate);
    let bare = serve(router.clone()).await;
    let per_route = serve(router.clone().layer(HaloLayer::from_openapi(api.clone()))).await;
    let outermost = serve(HaloLayer::from_openapi(api).layer(router)).await;
    same_answers(&bare, &per_route, "router.layer(halo)").await;
    same_answers(&bare, &outermost, "halo.layer(router)").await;
}

#[tokio::test]
async fn an_authenticator_alone_changes_no_answer_to_public_operations() {
    let gate = Gate::default();
    let (router, api) = app(&gate);
    let bare = serve(router.clone()).await;
    let layer = HaloLayer::builder(api)
        .authenticator(StaticAuthenticator::new().bearer("t0ken", Principal::new("ops")))
        .build()
        .unwrap();
    let layered = serve(router.layer(layer)).await;
    for sent in requests() {
        // Credentials the authenticator refuses are the one thing it is there to answer.
        if sent.2.iter().any(|(name, _)| *name == "authorization") {
            continue;
        }
        let (without, with) = (send(&bare, &sent).await, send(&layered, &sent).await);
        assert_eq!(without, with, "{} {}", sent.0, sent.1);
    }
}

#[tokio::test]
async fn validation_answers_with_axum_statuses() {
    let gate = Gate::default();
    let (router, api) = app(&gate);
    let bare = serve(router.clone()).await;
    let layer = HaloLayer::builder(api)
        .validate(Validation::On)
        .build()
        .unwrap();
    let layered = serve(router.layer(layer)).await;
    for sent in requests() {
        let (without, with) = (send(&bare, &sent).await, send(&layered, &sent).await);
        if sent.1 == "/items/7?limit=99" {
            // Over the documented maximum: axum's `Query` takes it, validation does not.
            assert_eq!(without.status, StatusCode::OK);
            assert_eq!(with.status, StatusCode::BAD_REQUEST);
            continue;
        }
        assert_eq!(without.status, with.status, "{} {}", sent.0, sent.1);
        if with.status.is_client_error() && without.body != with.body {
            // The one documented change: the refusal is a problem document.
            let content_type = with
                .headers
                .iter()
                .find(|(name, _)| name == "content-type")
                .map(|(_, value)| value.as_str());
            assert_eq!(
                content_type,
                Some("application/problem+json"),
                "{} {}",
                sent.0,
                sent.1
            );
        }
    }
}

/// Reads an event stream's first event, then lets the app send its second.
async fn first_event_before_the_second(base: &str, headers: &[(&str, &str)], gate: &Gate) {
    let mut request = reqwest::Client::new()
        .get(format!("{base}/events"))
        .header("accept", "text/event-stream");
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response = request.send().await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(
        response.headers()["content-type"],
        "text/event-stream",
        "the app's stream, not a tool stream"
    );
    assert!(response.headers().get("halo-call-id").is_none());
    let mut chunks = response.bytes_stream();
    let mut seen = Vec::new();
    // The second event waits for the gate, which opens only once the first has arrived: a
    // buffered stream never gets that far.
    while !String::from_utf8_lossy(&seen).contains("data: 1") {
        let chunk = tokio::time::timeout(Duration::from_secs(10), chunks.next())
            .await
            .expect("the first event arrives while the handler still runs")
            .expect("more of the stream")
            .unwrap();
        seen.extend_from_slice(&chunk);
    }
    assert!(String::from_utf8_lossy(&seen).starts_with("event: first\n"));
    gate.0.notify_one();
    while let Some(chunk) = chunks.next().await {
        seen.extend_from_slice(&chunk.unwrap());
    }
    assert_eq!(
        String::from_utf8_lossy(&seen),
        "event: first\ndata: 1\n\nevent: second\ndata: 2\n\n"
    );
}

#[tokio::test]
async fn the_apps_own_event_stream_passes_through_as_it_is_sent() {
    let gate = Gate::default();
    let (router, api) = app(&gate);
    let plain = serve(router.clone().layer(HaloLayer::from_openapi(api.clone()))).await;
    first_event_before_the_second(&plain, &[], &gate).await;

    // With the checks on, the call is still checked, and still the app's stream.
    let checked = HaloLayer::builder(api)
        .authenticator(StaticAuthenticator::new().bearer("t0ken", Principal::new("ops")))
        .validate(Validation::On)
        .build()
        .unwrap();
    let checked = serve(checked.layer(router)).await;
    first_event_before_the_second(&checked, &[("authorization", "Bearer t0ken")], &gate).await;
    let refused = reqwest::Client::new()
        .get(format!("{checked}/events"))
        .header("accept", "text/event-stream")
        .header("authorization", "Bearer wrong")
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn the_apps_event_stream_is_not_described_as_a_tool_stream() {
    let gate = Gate::default();
    let (router, api) = app(&gate);
    let base = serve(router.layer(HaloLayer::from_openapi(api))).await;
    let schemas = halo_tests::discover(&format!("{base}/events"), None).await;
    assert!(schemas[0].get("stream").is_none(), "{schemas}");
}

/// What a header map says of `Allow`, if anything.
fn allow(headers: &HeaderMap) -> Option<&str> {
    headers.get("allow").map(|value| value.to_str().unwrap())
}

#[tokio::test]
async fn discovery_never_hints_at_hidden_methods() {
    // One path, a public GET and a DELETE for admins only.
    /// Reads the thing.
    #[utoipa::path(get, path = "/things/{id}", params(("id" = u32, Path)),
                   responses((status = 200)))]
    async fn read_thing(Path(_id): Path<u32>) {}
    /// Deletes the thing.
    #[utoipa::path(delete, path = "/things/{id}", params(("id" = u32, Path)),
                   responses((status = 204)), security(("bearer" = ["admin"])))]
    async fn delete_thing(Path(_id): Path<u32>) {}
    /// Purges everything.
    #[utoipa::path(post, path = "/purge", responses((status = 204)),
                   security(("bearer" = ["admin"])))]
    async fn purge() {}

    let (router, mut api) = OpenApiRouter::new()
        .routes(routes!(read_thing, delete_thing))
        .routes(routes!(purge))
        .split_for_parts();
    halo_tests::BearerScheme.modify(&mut api);
    let layer = || {
        HaloLayer::builder(api.clone())
            .authenticator(
                StaticAuthenticator::new()
                    .bearer("admin", Principal::new("admin").with_scopes(["admin"])),
            )
            .build()
            .unwrap()
    };
    for base in [
        serve(router.clone().layer(layer())).await,
        serve(layer().layer(router.clone())).await,
    ] {
        let discover = |path: &'static str, token: Option<&'static str>| {
            let mut request = reqwest::Client::new()
                .request(reqwest::Method::OPTIONS, format!("{base}{path}"))
                .header("accept", "application/llm+json");
            if let Some(token) = token {
                request = request.bearer_auth(token);
            }
            request.send()
        };
        let hidden = discover("/purge", None).await.unwrap();
        let unknown = discover("/nowhere", None).await.unwrap();
        assert_eq!(hidden.status(), StatusCode::NOT_FOUND);
        assert_eq!(allow(hidden.headers()), allow(unknown.headers()));
        assert_eq!(allow(hidden.headers()), Some("OPTIONS"));
        let partly = discover("/things/1", None).await.unwrap();
        assert_eq!(allow(partly.headers()), Some("GET, HEAD, OPTIONS"));
        let admin = discover("/things/1", Some("admin")).await.unwrap();
        assert_eq!(allow(admin.headers()), Some("GET, HEAD, DELETE, OPTIONS"));
        let admin = discover("/purge", Some("admin")).await.unwrap();
        assert_eq!(allow(admin.headers()), Some("POST, OPTIONS"));
    }
}

#[test]
fn the_layer_leaves_the_order_of_the_apps_json_alone() {
    // No crate of the workspace turns on serde_json's `preserve_order` (nor utoipa's, which
    // turns it on too): an app's objects keep serde_json's own order, sorted by key.
    let written = serde_json::json!({"zebra": 1, "apple": 2}).to_string();
    assert_eq!(written, r#"{"apple":2,"zebra":1}"#);
}
