//! `GET /openapi.json` (every operation, the admin ones included) and `GET /metrics` (every
//! tool's name and use) answer only the administrator: `401` with a challenge for anonymous
//! callers and bad tokens, `403` for the reader and the API key, over real HTTP.

use crate::support;

use bookstore::{AppState, Limits, Options};
use halo_axum::Prometheus;
use reqwest::StatusCode;
use reqwest::header::{CONTENT_TYPE, WWW_AUTHENTICATE};
use support::{ADMIN, Caller, Server, expect_problem, expect_unauthorized};

const ADMIN_ROUTES: [&str; 2] = ["/openapi.json", "/metrics"];

#[tokio::test]
async fn openapi_and_metrics_answer_the_administrator_only() {
    // The only test in this file that installs the (process-wide) Prometheus recorder.
    let options = Options::default().metrics(Prometheus::install().unwrap());
    let app = bookstore::app_with(AppState::seeded(), options);
    let server = Server::start_with(app, Limits::default()).await;
    // One call, so that the metrics name a tool.
    let book = server.get("/api/books/1").send().await.unwrap();
    assert_eq!(book.status(), StatusCode::OK);

    for path in ADMIN_ROUTES {
        // Anonymous: a challenge, and nothing of the document or the metrics.
        let response = server.get(path).send().await.unwrap();
        assert_eq!(response.status(), StatusCode::UNAUTHORIZED, "{path}");
        let body = response.text().await.unwrap();
        for leak in [
            "refund",
            "charge_payment",
            "halo_tool_calls_total",
            "get_book",
        ] {
            assert!(!body.contains(leak), "{path} shows {leak}: {body}");
        }
        let challenge = expect_unauthorized(server.get(path)).await;
        assert_eq!(challenge, r#"Bearer realm="Bookstore""#, "{path}");
        // A token nobody issued: the challenge says the token is the problem.
        let challenge = expect_unauthorized(server.get(path).bearer_auth("demo-nobody")).await;
        assert_eq!(
            challenge, r#"Bearer realm="Bookstore", error="invalid_token""#,
            "{path}"
        );
        // Known callers without the admin scope.
        for caller in [Caller::Reader, Caller::Key] {
            let (headers, problem) = expect_problem(caller.sign(server.get(path)), 403).await;
            assert_eq!(
                headers[WWW_AUTHENTICATE],
                r#"Bearer realm="Bookstore", error="insufficient_scope", scope="admin""#,
                "{path} as {caller:?}"
            );
            assert!(
                problem["detail"].as_str().unwrap().contains("admin"),
                "{problem}"
            );
        }
    }

    let document = server
        .get("/openapi.json")
        .bearer_auth(ADMIN)
        .send()
        .await
        .unwrap();
    assert_eq!(document.status(), StatusCode::OK);
    assert_eq!(document.headers()[CONTENT_TYPE], "application/json");
    let document: serde_json::Value = document.json().await.unwrap();
    assert!(
        document["paths"]["/api/payments/{id}/refund"].is_object(),
        "{document}"
    );

    let metrics = server
        .get("/metrics")
        .bearer_auth(ADMIN)
        .send()
        .await
        .unwrap();
    assert_eq!(metrics.status(), StatusCode::OK);
    let text = metrics.text().await.unwrap();
    assert!(text.contains(r#"tool="get_book""#), "{text}");

    // The liveness probe stays public.
    let health = server.get("/health").send().await.unwrap();
    assert_eq!(health.status(), StatusCode::OK);
    // So does the readiness probe: ready, since this bookstore keeps its state in memory.
    let ready = server.get("/ready").send().await.unwrap();
    assert_eq!(ready.status(), StatusCode::OK);
    assert_eq!(ready.text().await.unwrap(), r#"{"ready":true}"#);
}

#[tokio::test]
async fn without_metrics_no_one_finds_a_metrics_route() {
    let server = Server::start().await;
    for caller in [Caller::Anonymous, Caller::Reader, Caller::Admin] {
        let response = caller.sign(server.get("/metrics")).send().await.unwrap();
        assert_eq!(response.status(), StatusCode::NOT_FOUND, "{caller:?}");
    }
}
