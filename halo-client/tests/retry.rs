//! Retries against scripted failures: what is safe to repeat is repeated (idempotent methods,
//! declared idempotence, an idempotency key, requests that never left), what is not is sent
//! exactly once, `Retry-After` is a floor, `resilience.retry: false` and `max_attempts` bound
//! everything, and timeouts are reported as timeouts.

use crate::support;

use std::time::Duration;

use halo_client::{Client, Method, RetryPolicy, StatusCode};
use serde_json::{Value, json};
use support::fault::{self, Action};
use support::halo::{self, count};
use tokio::time::Instant;

/// A fault server describing one tool, and a client (fast retries) that already read its
/// schema, so the script applies to the calls only.
async fn setup(method: &str, url: &str, extra: Value) -> (fault::Server, Client) {
    setup_with(method, url, extra, support::fast_retry()).await
}

async fn setup_with(
    method: &str,
    url: &str,
    extra: Value,
    policy: RetryPolicy,
) -> (fault::Server, Client) {
    let server = fault::Server::start().await;
    server.describe(url, &json!([fault::schema(method, url, &extra)]));
    let client = Client::builder(&server.base)
        .retry(policy)
        .timeout(Some(Duration::from_secs(5)))
        .build()
        .unwrap();
    let method = Method::from_bytes(method.as_bytes()).unwrap();
    client.describe(url, method).await.unwrap();
    (server, client)
}

/// How long a `GET /busy` that succeeds takes, its retries included.
async fn busy_for(client: &Client) -> Duration {
    let started = Instant::now();
    client
        .invoke("/busy", Method::GET, json!({}))
        .await
        .unwrap();
    started.elapsed()
}

fn post_without_key() -> Value {
    json!({"limits": {"idempotent": false}})
}

#[tokio::test]
async fn an_idempotent_get_succeeds_after_503s() {
    let (server, client) = setup("GET", "/flaky", json!({})).await;
    server.script([Action::status(503), Action::status(503)]);
    let response = client
        .invoke("/flaky", Method::GET, json!({"q": "x"}))
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    assert!(requests.iter().all(|r| r.target == "/flaky?q=x"));
}

#[tokio::test]
async fn an_idempotent_put_succeeds_after_503_and_429() {
    let (server, client) = setup("PUT", "/things/{id}", json!({})).await;
    server.script([Action::status(503), Action::status(429)]);
    let response = client
        .invoke("/things/{id}", Method::PUT, json!({"id": 3, "name": "x"}))
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    for request in &requests {
        assert_eq!(request.method, "PUT");
        assert_eq!(request.target, "/things/3");
        assert_eq!(
            request.json(),
            json!({"name": "x"}),
            "the same body each time"
        );
    }
}

// On tokio's paused clock (the client's delays, the server's request times): the second
// of waiting passes at once.
#[tokio::test(start_paused = true)]
async fn retry_after_in_seconds_is_a_floor() {
    let (server, client) = setup("GET", "/busy", json!({})).await;
    server.script([Action::retry_after(503, 1)]);
    let elapsed = busy_for(&client).await;
    assert!(elapsed >= Duration::from_secs(1), "{elapsed:?}");
    assert!(elapsed < Duration::from_secs(10), "{elapsed:?}");
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    let gap = requests[1].at - requests[0].at;
    assert!(gap >= Duration::from_secs(1), "{gap:?}");
}

#[tokio::test(start_paused = true)]
async fn retry_after_as_an_http_date_is_a_floor() {
    let (server, client) = setup("GET", "/busy", json!({})).await;
    // The date has one-second resolution: two seconds from now is at least one second away.
    server.script([Action::RetryAfterDate {
        status: 429,
        after: Duration::from_secs(2),
    }]);
    let elapsed = busy_for(&client).await;
    assert!(elapsed >= Duration::from_secs(1), "{elapsed:?}");
    assert!(elapsed < Duration::from_secs(10), "{elapsed:?}");
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn a_retry_after_beyond_the_budget_gives_up_at_once() {
    let (server, client) = setup_with(
        "GET",
        "/busy",
        json!({}),
        support::fast_retry().max_elapsed(Duration::from_secs(5)),
    )
    .await;
    server.script([Action::retry_after(503, 3600)]);
    let started = Instant::now();
    let error = client
        .invoke("/busy", Method::GET, json!({}))
        .await
        .unwrap_err();
    assert_eq!(error.status(), Some(StatusCode::SERVICE_UNAVAILABLE));
    assert!(started.elapsed() < Duration::from_secs(3));
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn a_post_without_key_is_sent_once_on_503() {
    let (server, client) = setup("POST", "/orders", post_without_key()).await;
    server.script([Action::status(503)]);
    let error = client
        .invoke("/orders", Method::POST, json!({"item": "lamp"}))
        .await
        .unwrap_err();
    assert_eq!(error.status(), Some(StatusCode::SERVICE_UNAVAILABLE));
    assert_eq!(server.requests().len(), 1);
    assert!(server.requests()[0].header("idempotency-key").is_none());
}

#[tokio::test]
async fn a_post_without_key_runs_once_on_a_halo_server_answering_503() {
    let server = halo::Server::start().await;
    let client = Client::builder(&server.base)
        .retry(support::fast_retry())
        .build()
        .unwrap();
    server.fail_next(1);
    let error = client
        .invoke("/orders", Method::POST, json!({"item": "lamp", "qty": 1}))
        .await
        .unwrap_err();
    assert_eq!(error.status(), Some(StatusCode::SERVICE_UNAVAILABLE));
    assert_eq!(count(&server.executions().create_order), 1);
    assert_eq!(server.calls("POST", "/orders").len(), 1);
}

#[tokio::test]
async fn a_post_without_key_is_sent_once_on_a_reset_after_reading() {
    let (server, client) = setup("POST", "/orders", post_without_key()).await;
    server.script([Action::ResetAfterRead]);
    let error = client
        .invoke("/orders", Method::POST, json!({"item": "lamp"}))
        .await
        .unwrap_err();
    assert!(!error.is_status() && !error.is_timeout(), "{error:?}");
    assert_eq!(server.requests().len(), 1, "it reached the server once");
    // The server is fine afterwards.
    client
        .invoke("/orders", Method::POST, json!({"item": "lamp"}))
        .await
        .unwrap();
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn a_get_is_retried_after_a_reset_after_reading() {
    let (server, client) = setup("GET", "/flaky", json!({})).await;
    server.script([Action::ResetAfterRead]);
    client
        .invoke("/flaky", Method::GET, json!({}))
        .await
        .unwrap();
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn a_reset_before_reading_is_retried() {
    let (server, client) = setup("GET", "/flaky", json!({})).await;
    let connections = server.connections();
    server.script([Action::ResetBeforeRead]);
    client
        .invoke("/flaky", Method::GET, json!({}))
        .await
        .unwrap();
    assert_eq!(server.connections() - connections, 2);
    assert_eq!(server.requests().len(), 1, "only the retry was read");
}

/// Whatever the client makes of a reset before the server read anything, a POST without a
/// key never runs twice, and it runs exactly when the call succeeds.
#[tokio::test]
async fn a_post_without_key_reset_before_reading_never_runs_twice() {
    let (server, client) = setup("POST", "/orders", post_without_key()).await;
    server.script([Action::ResetBeforeRead]);
    let result = client
        .invoke("/orders", Method::POST, json!({"item": "lamp"}))
        .await;
    let requests = server.requests();
    assert!(requests.len() <= 1, "never twice: {requests:#?}");
    assert_eq!(result.is_ok(), requests.len() == 1, "{result:?}");
}

/// The request never reached the server, so even a POST without a key may be sent again.
/// hyper says so: the error of a request that was never written is `Canceled` ("the message
/// was never even started, so it's safe", hyper `proto/h1/dispatch.rs`), and here hyper
/// reports exactly that (`hyper::Error(Canceled, Io(ConnectionReset))`).
///
/// Regression test: only `is_connect()` transport errors used to count as "never sent", so
/// this call failed instead of being retried.
#[tokio::test]
async fn a_post_without_key_reset_before_reading_is_retried() {
    let (server, client) = setup("POST", "/orders", post_without_key()).await;
    let connections = server.connections();
    server.script([Action::ResetBeforeRead]);
    let result = client
        .invoke("/orders", Method::POST, json!({"item": "lamp"}))
        .await;
    assert!(server.requests().len() <= 1, "never twice");
    assert!(result.is_ok(), "{result:?}");
    assert_eq!(server.connections() - connections, 2);
    assert_eq!(server.requests().len(), 1, "ran exactly once");
}

#[tokio::test(start_paused = true)]
async fn a_refused_connection_is_retried_even_for_a_post_without_key() {
    let addr = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap()
    };
    let schema: halo_client::protocol::ToolSchema =
        serde_json::from_value(fault::schema("POST", "/orders", &post_without_key())).unwrap();
    let client = Client::builder(format!("http://{addr}"))
        .retry(
            RetryPolicy::new()
                .max_attempts(60)
                .min_delay(Duration::from_millis(10))
                .max_delay(Duration::from_millis(40)),
        )
        .build()
        .unwrap();
    let mut call = tokio::spawn(async move { client.call(&schema, json!({"item": "lamp"})).await });
    let early = tokio::time::timeout(Duration::from_millis(150), &mut call).await;
    assert!(early.is_err(), "still retrying while nothing listens");
    let server = fault::Server::start_on(addr).await;
    let response = call.await.unwrap().unwrap();
    assert_eq!(response.status(), 200);
    let requests = server.requests();
    assert_eq!(requests.len(), 1, "sent once it could be");
    assert_eq!(requests[0].json(), json!({"item": "lamp"}));
}

#[tokio::test]
async fn an_advertised_idempotency_key_makes_a_post_retryable_with_one_key() {
    let server = halo::Server::start().await;
    let client = Client::builder(&server.base)
        .retry(support::fast_retry())
        .build()
        .unwrap();
    let schema = client.describe("/payments", Method::POST).await.unwrap();
    let limits = schema.limits.as_ref().unwrap();
    assert_eq!(limits.idempotency_key.as_deref(), Some("Idempotency-Key"));
    assert_eq!(limits.idempotent, Some(false));

    server.fail_next(2);
    let response = client
        .invoke("/payments", Method::POST, json!({"amount": 500}))
        .await
        .unwrap();
    // Three requests with one key, and one execution: the server honours the key.
    assert_eq!(count(&server.executions().pay), 1);
    let keys: Vec<String> = server
        .calls("POST", "/payments")
        .iter()
        .map(|seen| seen.header("idempotency-key").unwrap().to_owned())
        .collect();
    assert_eq!(keys.len(), 3);
    assert!(keys.iter().all(|key| *key == keys[0]), "{keys:?}");
    assert_eq!(keys[0].len(), 36, "a UUID: {}", keys[0]);
    assert_eq!(response.to_value()["key"], keys[0].as_str());

    // The next call is another operation: a fresh key.
    client
        .invoke("/payments", Method::POST, json!({"amount": 500}))
        .await
        .unwrap();
    let calls = server.calls("POST", "/payments");
    assert_ne!(calls[3].header("idempotency-key").unwrap(), keys[0]);
}

#[tokio::test]
async fn a_callers_idempotency_key_is_kept_and_makes_a_post_retryable() {
    let (server, client) = setup(
        "POST",
        "/charges",
        json!({"input": {"Idempotency-Key": {"type": "string", "in": "header"},
                         "amount": {"type": "integer", "in": "body"}},
               "limits": {"idempotent": false}}),
    )
    .await;
    server.script([Action::status(503)]);
    client
        .invoke(
            "/charges",
            Method::POST,
            json!({"Idempotency-Key": "mine-1", "amount": 5}),
        )
        .await
        .unwrap();
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    assert!(
        requests
            .iter()
            .all(|r| r.header("idempotency-key") == Some("mine-1"))
    );
}

#[tokio::test]
async fn a_post_declared_idempotent_is_retried() {
    let (server, client) = setup("POST", "/query", json!({"limits": {"idempotent": true}})).await;
    server.script([Action::status(502)]);
    client
        .invoke("/query", Method::POST, json!({"q": "x"}))
        .await
        .unwrap();
    assert_eq!(server.requests().len(), 2);
}

/// A schema that declares `limits.idempotent: false` says repeating the call is not safe,
/// whatever its method (a DELETE that pops a queue, a PUT that appends). The crate promises
/// "retries that never duplicate a side effect", and the spec makes `idempotent` an explicit
/// field precisely so that the method's default can be overridden (§4.3).
///
/// Regression test: an explicit `idempotent: false` used to be ignored for DELETE, which then
/// ran three times (the HALO server answers 503 after each execution).
#[tokio::test]
async fn a_declared_non_idempotent_delete_is_not_retried() {
    let server = halo::Server::start().await;
    let client = Client::builder(&server.base)
        .retry(support::fast_retry())
        .build()
        .unwrap();
    let schema = client
        .describe("/queue/head", Method::DELETE)
        .await
        .unwrap();
    assert_eq!(schema.limits.as_ref().unwrap().idempotent, Some(false));
    server.fail_next(2);
    let result = client
        .invoke("/queue/head", Method::DELETE, json!({}))
        .await;
    assert_eq!(
        count(&server.executions().pop),
        1,
        "a declared non-idempotent call ran more than once ({result:?})"
    );
    let error = result.unwrap_err();
    assert_eq!(error.status(), Some(StatusCode::SERVICE_UNAVAILABLE));
}

/// As above, for a PUT on a scripted server.
///
/// Regression test, as above.
#[tokio::test]
async fn a_declared_non_idempotent_put_is_not_retried() {
    let (server, client) = setup("PUT", "/log", json!({"limits": {"idempotent": false}})).await;
    server.script([Action::status(503)]);
    let error = client
        .invoke("/log", Method::PUT, json!({"line": "x"}))
        .await
        .unwrap_err();
    assert_eq!(error.status(), Some(StatusCode::SERVICE_UNAVAILABLE));
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn resilience_retry_false_disables_retries() {
    let (server, client) = setup("GET", "/once", json!({"resilience": {"retry": false}})).await;
    server.script([Action::status(503)]);
    let error = client
        .invoke("/once", Method::GET, json!({}))
        .await
        .unwrap_err();
    assert_eq!(error.status(), Some(StatusCode::SERVICE_UNAVAILABLE));
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn attempts_are_bounded_by_max_attempts() {
    let (server, client) = setup_with(
        "GET",
        "/down",
        json!({}),
        support::fast_retry().max_attempts(3),
    )
    .await;
    server.otherwise(fault::Reply::status(503));
    let error = client
        .invoke("/down", Method::GET, json!({}))
        .await
        .unwrap_err();
    assert_eq!(error.status(), Some(StatusCode::SERVICE_UNAVAILABLE));
    assert_eq!(
        error.response().unwrap().status(),
        StatusCode::SERVICE_UNAVAILABLE
    );
    assert_eq!(server.requests().len(), 3);

    let none = Client::builder(&server.base)
        .retry(RetryPolicy::none())
        .build()
        .unwrap();
    let before = server.requests().len();
    none.invoke("/down", Method::GET, json!({}))
        .await
        .unwrap_err();
    assert_eq!(server.requests().len() - before, 1);
}

#[tokio::test]
async fn a_4xx_is_never_retried() {
    let (server, client) = setup("GET", "/bad", json!({})).await;
    server.script([fault::Action::Reply(fault::Reply::json(
        400,
        &json!({"title": "Bad Request", "status": 400}),
    ))]);
    let error = client
        .invoke("/bad", Method::GET, json!({}))
        .await
        .unwrap_err();
    assert_eq!(error.status(), Some(StatusCode::BAD_REQUEST));
    assert_eq!(server.requests().len(), 1);
}

// On tokio's paused clock: the client's timeouts pass at once, the server's slow answers
// never come.
#[tokio::test(start_paused = true)]
async fn timeouts_are_timeouts_and_retried_only_when_safe() {
    let server = fault::Server::start().await;
    server.describe("/slow", &json!([fault::schema("GET", "/slow", &json!({}))]));
    server.describe(
        "/slow-post",
        &json!([fault::schema("POST", "/slow-post", &post_without_key())]),
    );
    let client = Client::builder(&server.base)
        .retry(support::fast_retry().max_attempts(2))
        .timeout(Some(Duration::from_millis(250)))
        .build()
        .unwrap();
    client.describe("/slow", Method::GET).await.unwrap();
    client.describe("/slow-post", Method::POST).await.unwrap();
    server.otherwise(fault::Reply::status(200));
    server.script([
        Action::slow(Duration::from_secs(10)),
        Action::slow(Duration::from_secs(10)),
    ]);
    let started = Instant::now();
    let error = client
        .invoke("/slow", Method::GET, json!({}))
        .await
        .unwrap_err();
    assert!(error.is_timeout(), "{error:?}");
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_eq!(
        server.requests().len(),
        2,
        "a GET is retried after a timeout"
    );

    server.script([Action::slow(Duration::from_secs(10))]);
    let error = client
        .invoke("/slow-post", Method::POST, json!({"x": 1}))
        .await
        .unwrap_err();
    assert!(error.is_timeout(), "{error:?}");
    let posts = server
        .requests()
        .iter()
        .filter(|r| r.method == "POST")
        .count();
    assert_eq!(
        posts, 1,
        "a POST without key is not retried after a timeout"
    );
}
