//! Test support: real servers on loopback ports, in the style of reqwest's `tests/support`.
//!
//! - [`halo`]: a HALO API built with axum + utoipa + `HaloLayer` (the tools of `shop.rs`).
//!   Its handlers count their executions, and an outermost middleware records every request
//!   it sees (discovery included), the status it answered and the size of the body it sent.
//! - [`fault`]: a hand-written HTTP/1.1 server (`wire.rs`) on a raw `TcpListener` that plays
//!   a script of answers and failures (error statuses, `Retry-After`, resets, slow answers,
//!   redirects), counts connections and requests, and answers HALO discovery from fixed
//!   schemas.
//! - [`sse`]: an event-stream server that runs streamed calls from a replay buffer per call
//!   and resumes them, and a TCP proxy (`proxy.rs`) that cuts event streams part-way.
//! - Here: what clients of these servers share (a fast retry policy, credentials by host,
//!   a jump of tokio's clock).
//!
//! Each test file uses a different part, hence `dead_code`.

#![allow(dead_code, unreachable_pub)]

pub mod fault;
pub mod halo;
mod shop;
pub mod sse;
mod wire;

use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use halo_client::{Client, Credential, Credentials, Method, RetryPolicy};
use serde_json::{Value, json};

/// A retry policy for tests: a few attempts with millisecond delays.
pub fn fast_retry() -> RetryPolicy {
    RetryPolicy::new()
        .max_attempts(4)
        .min_delay(Duration::from_millis(5))
        .max_delay(Duration::from_millis(20))
}

/// The `host:port` of a base URL such as `http://127.0.0.1:4000`.
pub fn authority(base: &str) -> &str {
    base.trim_start_matches("http://")
}

/// A fault server describing `GET /go` (its schema with `extra` fields), and a client of it
/// holding `credential` for it (by `host:port`), schema already read.
pub async fn go_with(extra: &Value, credential: Credential) -> (fault::Server, Client) {
    let server = fault::Server::start().await;
    server.describe("/go", &json!([fault::schema("GET", "/go", extra)]));
    let client = Client::builder(&server.base)
        .credentials(Credentials::new().with(authority(&server.base), credential))
        .build()
        .unwrap();
    client.describe("/go", Method::GET).await.unwrap();
    (server, client)
}

/// Moves tokio's clock (the one the client's schema cache and OAuth tokens read) on by `by`
/// at once, as if that much time had passed. Time is paused only for the jump, so that the
/// real sockets before and after it run in real time. Needs the current-thread runtime of a
/// plain `#[tokio::test]`.
pub async fn fast_forward(by: Duration) {
    tokio::time::pause();
    tokio::time::advance(by).await;
    tokio::time::resume();
}

/// A lock, even one a panicking test left poisoned.
pub fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}
