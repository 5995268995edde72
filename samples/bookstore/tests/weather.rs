//! The weather tool in front of a weather service (`--weather-upstream`), over real HTTP: the
//! service's answers, `502` when it fails, and the tool's circuit breaker (`503` without
//! calling it) once it has failed 5 times in a row.

use crate::support;

use std::sync::atomic::Ordering;

use axum::http::StatusCode;
use bookstore::{AppState, Limits, Options};
use serde_json::json;
use support::weather_service::{Upstream, start_upstream};
use support::{Server, expect_problem, send};

async fn bookstore_before(url: &str) -> Server {
    let options = Options::default().weather_upstream(url.parse().unwrap());
    let app = bookstore::app_with(AppState::seeded(), options);
    Server::start_with(app, Limits::default()).await
}

#[tokio::test]
async fn the_weather_comes_from_the_upstream() {
    let upstream = Upstream::default();
    let server = bookstore_before(&start_upstream(&upstream).await).await;
    let (status, _, weather) = send(server.get("/api/weather?city=Porto")).await;
    assert_eq!(status, StatusCode::OK, "{weather}");
    assert_eq!(weather["conditions"], "fog");
    // What the service does not know is not a failure.
    expect_problem(server.get("/api/weather?city=Lisbon"), 404).await;
    assert_eq!(upstream.calls(), 2);
}

#[tokio::test]
async fn a_failing_upstream_gets_502s_then_the_circuit_opens() {
    let upstream = Upstream::default();
    upstream.failing.store(true, Ordering::SeqCst);
    let server = bookstore_before(&start_upstream(&upstream).await).await;
    for _ in 0..5 {
        let (_, problem) = expect_problem(server.get("/api/weather?city=Porto"), 502).await;
        assert!(
            problem["detail"]
                .as_str()
                .unwrap()
                .contains("weather service failed"),
            "{problem}"
        );
    }
    assert_eq!(upstream.calls(), 5);
    // Open: refused without calling the service, for at most 10 s.
    upstream.failing.store(false, Ordering::SeqCst);
    for _ in 0..3 {
        let (headers, problem) = expect_problem(server.get("/api/weather?city=Porto"), 503).await;
        let retry_after: u64 = headers["retry-after"].to_str().unwrap().parse().unwrap();
        assert!((1..=10).contains(&retry_after), "{retry_after}");
        assert!(
            problem["detail"]
                .as_str()
                .unwrap()
                .contains("circuit is open"),
            "{problem}"
        );
    }
    assert_eq!(upstream.calls(), 5, "the upstream was not called");
    // Agents see the circuit in the tool's schema.
    let (_, _, schemas) = send(server.discover("/api/weather")).await;
    assert_eq!(
        schemas[0]["resilience"]["circuit"],
        json!({"failures": 5, "cool_down_ms": 10000, "successes": 1})
    );
}

#[tokio::test]
async fn an_unreachable_upstream_is_a_502() {
    // A port nothing listens on: bound, then closed.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/weather", listener.local_addr().unwrap());
    drop(listener);
    let server = bookstore_before(&url).await;
    let (_, problem) = expect_problem(server.get("/api/weather?city=Porto"), 502).await;
    assert!(
        !problem["detail"].as_str().unwrap().contains("127.0.0.1"),
        "the upstream's address is not shown: {problem}"
    );
}
