//! The circuit breaker per host, against real servers: it opens after the configured number
//! of failed calls in a row (connection errors, timeouts, `5xx`; never `4xx` or `429`), then
//! fails calls at once without a request; after the cool-down one trial goes through, whose
//! success closes it and failure re-opens it; a dropped trial does not leave it shut; hosts
//! are independent; discovery and the opening of streams go through it; and an agent's model
//! reads one clear line.

use crate::support;

use std::time::Duration;

use halo_client::{CircuitBreaker, Client, Credential, Method, RetryPolicy, StatusCode};
use serde_json::json;
use support::fault::{self, Action, Reply};

// Shorter than the schemas' `max-age` (60 s): a revalidation is not the trial.
const COOL_DOWN: Duration = Duration::from_secs(30);

/// A fault server describing `GET /go`, and a client of it (with a bearer token, fast
/// retries unless `retry` says otherwise) that opens after `failures`, schema already read.
async fn setup(failures: u32, retry: RetryPolicy) -> (fault::Server, Client) {
    let server = fault::Server::start().await;
    server.describe("/go", &json!([fault::schema("GET", "/go", &json!({}))]));
    let client = client_of(&server.base, failures, retry);
    client.describe("/go", Method::GET).await.unwrap();
    (server, client)
}

fn client_of(base: &str, failures: u32, retry: RetryPolicy) -> Client {
    Client::builder(base)
        .credential(Credential::bearer("s3cret-token"))
        .retry(retry)
        .timeout(Some(Duration::from_secs(5)))
        .circuit_breaker(
            CircuitBreaker::new()
                .failures(failures)
                .cool_down(COOL_DOWN),
        )
        .build()
        .unwrap()
}

async fn go(client: &Client) -> halo_client::Result<halo_client::ToolResponse> {
    client.invoke("/go", Method::GET, json!({})).await
}

#[tokio::test]
async fn it_opens_after_failed_calls_and_then_sends_nothing() {
    let (server, client) = setup(3, support::fast_retry()).await;
    server.otherwise(Reply::status(503));
    for _ in 0..3 {
        let error = go(&client).await.unwrap_err();
        assert_eq!(error.status(), Some(StatusCode::SERVICE_UNAVAILABLE));
    }
    // Each failed call counted once, after its four attempts.
    assert_eq!(server.requests().len(), 12);
    let connections = server.connections();

    for _ in 0..5 {
        let error = go(&client).await.unwrap_err();
        assert!(error.is_unavailable(), "{error:?}");
        assert!(!error.is_status() && !error.is_connect() && !error.is_timeout());
        let retry_in = error.retry_in().unwrap();
        assert!(retry_in <= COOL_DOWN && retry_in > COOL_DOWN - Duration::from_secs(5));
        let message = error.to_string();
        assert_eq!(
            message,
            format!(
                "unavailable: GET /go: the last 3 calls to {} failed; try again in 30 s",
                server.base
            )
        );
        assert!(!format!("{error:?}").contains("s3cret"));
    }
    assert_eq!(server.requests().len(), 12, "no request while open");
    assert_eq!(
        server.connections(),
        connections,
        "no connection while open"
    );
}

#[tokio::test]
async fn timeouts_count() {
    let (server, _) = setup(2, RetryPolicy::none()).await;
    let client = Client::builder(&server.base)
        .retry(RetryPolicy::none())
        .timeout(Some(Duration::from_millis(50)))
        .circuit_breaker(CircuitBreaker::new().failures(2).cool_down(COOL_DOWN))
        .build()
        .unwrap();
    client.describe("/go", Method::GET).await.unwrap();
    server.script([
        Action::slow(Duration::from_millis(500)),
        Action::slow(Duration::from_millis(500)),
    ]);
    assert!(go(&client).await.unwrap_err().is_timeout());
    assert!(go(&client).await.unwrap_err().is_timeout());
    assert!(go(&client).await.unwrap_err().is_unavailable());
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn discovery_goes_through_it() {
    let base = format!("http://127.0.0.1:{}", halo_tests::closed_port());
    let client = client_of(&base, 2, RetryPolicy::none());
    assert!(client.discover(&[]).await.unwrap_err().is_connect());
    assert!(client.discover(&[]).await.unwrap_err().is_connect());
    let error = client.discover(&[]).await.unwrap_err();
    assert!(error.is_unavailable(), "{error:?}");
    assert!(error.to_string().contains(&base), "{error}");
    // Descriptions too: the same host.
    let error = client.describe("/go", Method::GET).await.unwrap_err();
    assert!(error.is_unavailable(), "{error:?}");
}

#[tokio::test]
async fn four_hundreds_and_requests_to_wait_do_not_count_and_an_answer_resets_the_count() {
    let (server, client) = setup(2, RetryPolicy::none()).await;
    server.script([
        Action::status(404),
        Action::status(404),
        Action::status(422),
        Action::retry_after(429, 0),
        Action::retry_after(429, 0),
        Action::retry_after(429, 0),
        // The server asking to wait, as for an operation whose own circuit is open.
        Action::retry_after(503, 0),
        Action::retry_after(503, 0),
        // Failed, answered, failed: never two in a row.
        Action::status(503),
        Action::status(400),
        Action::status(500),
        Action::status(404),
        Action::status(502),
    ]);
    for expected in [
        404, 404, 422, 429, 429, 429, 503, 503, 503, 400, 500, 404, 502,
    ] {
        let error = go(&client).await.unwrap_err();
        assert_eq!(
            error.status().map(|s| s.as_u16()),
            Some(expected),
            "{error:?}"
        );
    }
    assert_eq!(go(&client).await.unwrap().status(), 200);
    assert_eq!(server.requests().len(), 14);
}

#[tokio::test]
async fn after_the_cool_down_a_trial_success_closes_it() {
    let (server, client) = setup(1, support::fast_retry()).await;
    server.script(vec![Action::status(500); 4]);
    assert_eq!(
        go(&client).await.unwrap_err().status(),
        Some(StatusCode::INTERNAL_SERVER_ERROR)
    );
    assert!(go(&client).await.unwrap_err().is_unavailable());
    assert_eq!(server.requests().len(), 4);

    support::fast_forward(COOL_DOWN).await;
    // The trial is slow: meanwhile, other calls still fail at once.
    server.script([Action::slow(Duration::from_millis(300))]);
    let trial = tokio::spawn({
        let client = client.clone();
        async move { go(&client).await }
    });
    server.await_requests(5).await;
    let error = go(&client).await.unwrap_err();
    assert!(error.is_unavailable(), "{error:?}");
    assert_eq!(error.retry_in(), Some(Duration::ZERO));
    assert!(
        error.to_string().contains("a trial call is under way"),
        "{error}"
    );
    assert_eq!(trial.await.unwrap().unwrap().status(), 200);

    // Closed: every call goes.
    for _ in 0..3 {
        assert_eq!(go(&client).await.unwrap().status(), 200);
    }
    assert_eq!(server.requests().len(), 8);
}

#[tokio::test]
async fn a_trial_failure_opens_it_again() {
    let (server, client) = setup(2, support::fast_retry()).await;
    server.otherwise(Reply::status(503));
    go(&client).await.unwrap_err();
    go(&client).await.unwrap_err();
    assert!(go(&client).await.unwrap_err().is_unavailable());
    assert_eq!(server.requests().len(), 8);

    support::fast_forward(COOL_DOWN).await;
    // The trial's retries go through (it is one call), then it fails.
    let error = go(&client).await.unwrap_err();
    assert_eq!(error.status(), Some(StatusCode::SERVICE_UNAVAILABLE));
    assert_eq!(server.requests().len(), 12);
    let error = go(&client).await.unwrap_err();
    assert!(error.is_unavailable(), "{error:?}");
    assert!(error.retry_in().unwrap() > COOL_DOWN - Duration::from_secs(5));
    assert!(error.to_string().contains("the last 3 calls"), "{error}");
    assert_eq!(server.requests().len(), 12);
}

#[tokio::test]
async fn a_dropped_trial_does_not_leave_it_shut() {
    let (server, client) = setup(1, RetryPolicy::none()).await;
    server.script([Action::status(503), Action::slow(Duration::from_secs(10))]);
    go(&client).await.unwrap_err();
    support::fast_forward(COOL_DOWN).await;
    // The trial is dropped before its answer.
    let dropped = tokio::time::timeout(Duration::from_millis(100), go(&client)).await;
    assert!(dropped.is_err());
    assert_eq!(server.requests().len(), 2);
    // The next call is the trial, and closes it.
    assert_eq!(go(&client).await.unwrap().status(), 200);
    assert_eq!(go(&client).await.unwrap().status(), 200);
    assert_eq!(server.requests().len(), 4);
}

#[tokio::test]
async fn hosts_are_independent() {
    let (down, client) = setup(1, RetryPolicy::none()).await;
    let up = fault::Server::start().await;
    up.describe("/go", &json!([fault::schema("GET", "/go", &json!({}))]));
    down.otherwise(Reply::status(503));
    go(&client).await.unwrap_err();
    assert!(go(&client).await.unwrap_err().is_unavailable());
    // Another host, through the same client: absolute URLs go to their own host.
    let elsewhere = up.url("/go");
    for _ in 0..3 {
        let response = client
            .invoke(&elsewhere, Method::GET, json!({}))
            .await
            .unwrap();
        assert_eq!(response.status(), 200);
    }
    assert_eq!(up.requests().len(), 3);
    assert_eq!(down.requests().len(), 1);
}

#[tokio::test]
async fn the_host_is_the_one_a_redirect_leads_to() {
    let (front, client) = setup(1, RetryPolicy::none()).await;
    let back = fault::Server::start().await;
    back.otherwise(Reply::status(503));
    front.otherwise(Reply::status(307).header("Location", &back.url("/go")));
    assert_eq!(
        go(&client).await.unwrap_err().status(),
        Some(StatusCode::SERVICE_UNAVAILABLE)
    );
    // The host behind the redirect is open; the one in front answered, and is not.
    let error = go(&client).await.unwrap_err();
    assert!(error.is_unavailable(), "{error:?}");
    assert!(error.to_string().contains(&back.base), "{error}");
    assert_eq!(front.requests().len(), 2);
    assert_eq!(back.requests().len(), 1);
}

#[tokio::test]
async fn opening_a_stream_goes_through_it() {
    let (server, client) = setup(1, RetryPolicy::none()).await;
    server.script([Action::status(502)]);
    let error = client
        .invoke_stream("/go", Method::GET, json!({}))
        .await
        .unwrap_err();
    assert_eq!(error.status(), Some(StatusCode::BAD_GATEWAY));
    let error = client
        .invoke_stream("/go", Method::GET, json!({}))
        .await
        .unwrap_err();
    assert!(error.is_unavailable(), "{error:?}");
    assert!(go(&client).await.unwrap_err().is_unavailable());
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn off_sends_every_call() {
    let server = fault::Server::start().await;
    server.describe("/go", &json!([fault::schema("GET", "/go", &json!({}))]));
    server.otherwise(Reply::status(503));
    let client = Client::builder(&server.base)
        .retry(RetryPolicy::none())
        .circuit_breaker(CircuitBreaker::off())
        .build()
        .unwrap();
    for _ in 0..8 {
        assert!(go(&client).await.unwrap_err().is_status());
    }
    assert_eq!(server.requests().len(), 8);
}

#[tokio::test]
async fn the_model_reads_one_clear_line() {
    use halo_client::protocol::ToolOutput;

    let (server, client) = setup(1, RetryPolicy::none()).await;
    server.otherwise(Reply::status(503));
    go(&client).await.unwrap_err();
    let error = go(&client).await.unwrap_err();
    let output = ToolOutput::from(&error);
    assert!(output.is_error);
    assert_eq!(
        output.text,
        format!(
            "the API at {} is unavailable (its last call failed); try again in 30 s",
            server.base
        )
    );
    assert_eq!(output.structured, None);
}

#[cfg(feature = "agent")]
#[tokio::test]
async fn an_agent_tool_call_is_told_the_api_is_unavailable() {
    use halo_client::agent::{RemoteTools, ToolSet as _};
    use halo_client::protocol::{Call, ToolEntry, ToolSchema};

    let (server, client) = setup(2, RetryPolicy::none()).await;
    server.otherwise(Reply::status(503));
    let entry = ToolEntry::new("/go", "GET", "go", "Goes.");
    let tools = RemoteTools::from_tools(
        &client,
        vec![(entry, ToolSchema::new(Call::new("GET", "/go")))],
    );
    let name = tools.definitions()[0].name.clone();
    for _ in 0..2 {
        let output = tools.call(&name, serde_json::Map::new()).await;
        assert!(output.is_error);
        assert!(output.text.contains("503"), "{}", output.text);
    }
    let output = tools.call(&name, serde_json::Map::new()).await;
    assert!(output.is_error);
    assert_eq!(
        output.text,
        format!(
            "the API at {} is unavailable (its last 2 calls failed); try again in 30 s",
            server.base
        )
    );
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn an_open_stream_is_not_cut_and_resumes_while_its_host_is_open() {
    use futures_util::StreamExt as _;
    use halo_client::protocol::ToolEvent;
    use support::sse::{Cut, Proxy, Server};

    let server = Server::builder()
        .progress(4)
        .every(Duration::from_millis(100))
        .start()
        .await;
    let proxy = Proxy::start(server.addr).await;
    proxy.cut([Cut::after(3)]);
    let client = client_of(&proxy.base, 1, support::fast_retry());
    let mut events = client
        .invoke_stream("/reports", Method::GET, json!({}))
        .await
        .unwrap();
    let first = events.next().await.unwrap().unwrap();
    assert!(matches!(first.event(), ToolEvent::ToolStart(_)));

    // Meanwhile, a call to the same host fails, and opens its circuit.
    let error = client
        .invoke("/reports", Method::GET, json!({"reject": 503}))
        .await
        .unwrap_err();
    assert_eq!(error.status(), Some(StatusCode::SERVICE_UNAVAILABLE));
    let error = client
        .invoke("/reports", Method::GET, json!({}))
        .await
        .unwrap_err();
    assert!(error.is_unavailable(), "{error:?}");

    // The stream goes on, across the cut, to its end.
    let mut rest = Vec::new();
    while let Some(event) = events.next().await {
        rest.push(event.unwrap().into_event());
    }
    assert_eq!(rest.len(), 5, "{rest:?}");
    assert!(matches!(rest.last(), Some(ToolEvent::ToolEnd(_))));
    let resumed = server
        .requests()
        .iter()
        .filter(|r| r.header("halo-call-id").is_some())
        .count();
    assert_eq!(resumed, 1);
    // Its reconnection is not counted: the circuit is still open.
    let error = client
        .invoke_stream("/reports", Method::GET, json!({}))
        .await
        .unwrap_err();
    assert!(error.is_unavailable(), "{error:?}");
}
