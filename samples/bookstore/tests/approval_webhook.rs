//! The bookstore with an approval webhook (`--approval-webhook`): the hook, on loopback,
//! checks each signed event; it denies the refunds it flags and leaves the others to the
//! administrators, who still decide them over HTTP.

use crate::support;

use std::time::{Duration, SystemTime};

use axum::body::Bytes;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use halo_axum::{WebhookApprover, WebhookSecret};
use serde_json::{Value, json};
use support::{ADMIN, Server};

const SECRET: &str = "bookstore-hook-secret-0123";

/// The risk check: refunds whose reason mentions fraud are denied; the rest are left to
/// people. A request whose signature does not verify is `401`.
async fn risk_check(headers: HeaderMap, body: Bytes) -> Response {
    let signature = headers
        .get(WebhookApprover::SIGNATURE_HEADER)
        .and_then(|value| value.to_str().ok())
        .unwrap_or("");
    let secret = WebhookSecret::new(SECRET);
    let tolerance = Duration::from_secs(300);
    if secret
        .verify(signature, &body, SystemTime::now(), tolerance)
        .is_err()
    {
        return StatusCode::UNAUTHORIZED.into_response();
    }
    let event: Value = serde_json::from_slice(&body).unwrap_or_default();
    let reason = event["data"]["arguments"]["reason"].as_str().unwrap_or("");
    let answer = match reason.contains("fraud") {
        true => json!({"approved": false, "code": "fraud", "message": "flagged by the risk check"}),
        false => json!({"approved": null}),
    };
    axum::Json(answer).into_response()
}

#[tokio::test]
async fn the_hook_decides_first_and_the_admins_decide_the_rest() {
    let hook = Server::start_with(
        axum::Router::new().route("/hook", axum::routing::post(risk_check)),
        bookstore::Limits::default(),
    )
    .await;
    let url = format!("{}/hook", hook.base);
    let cli = bookstore::cli::Cli::parse_from_args(["bookstore", "--approval-webhook", &url])
        .expect("valid arguments");
    let builder = cli
        .approval_webhook(Some(SECRET))
        .expect("a usable hook")
        .expect("asked for");
    let options = bookstore::Options::default().approval_webhook(builder);
    let server = Server::start_with(
        bookstore::app_with(bookstore::AppState::seeded(), options),
        bookstore::Limits::default(),
    )
    .await;

    // Flagged: denied by the hook; the streamed caller reads why, and nothing ran.
    let flagged = json!({"reason": "fraud reported by the bank"});
    let events = support::stream(
        server
            .post("/api/payments/ch_1/refund")
            .bearer_auth(ADMIN)
            .json(&flagged),
    )
    .await;
    let names: Vec<&str> = events.iter().map(|event| event.name()).collect();
    assert_eq!(names, ["tool_start", "approval_pending", "tool_error"]);
    let error = serde_json::to_value(events.last()).expect("JSON");
    assert_eq!(error["data"]["status"], 403, "{error}");
    let detail = error["data"]["detail"].as_str().unwrap_or("");
    assert!(
        detail.contains("denied by webhook: flagged by the risk check (fraud)"),
        "{detail}"
    );

    // Not flagged: the hook leaves it to the administrators, who approve it over HTTP.
    let plain = json!({"reason": "customer returned the book"});
    let (location, _) = server
        .held_for_the_admin("/api/payments/ch_1/refund", &plain)
        .await;
    let decided = server.approved_by_the_admin(&location).await;
    assert_eq!(decided["decided_by"], "admin");
    assert!(decided["response"]["status"].is_u64(), "{decided}");
}
