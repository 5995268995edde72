//! A weather service a test controls, for the weather tool's upstream
//! (`--weather-upstream`).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use axum::Json;
use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde_json::json;

/// A weather service the test controls: healthy or failing, counting its calls.
#[derive(Clone, Default)]
pub struct Upstream {
    pub calls: Arc<AtomicUsize>,
    pub failing: Arc<AtomicBool>,
}

impl Upstream {
    pub fn calls(&self) -> usize {
        self.calls.load(Ordering::SeqCst)
    }
}

async fn weather(
    State(upstream): State<Upstream>,
    Query(query): Query<std::collections::HashMap<String, String>>,
) -> Response {
    upstream.calls.fetch_add(1, Ordering::SeqCst);
    if upstream.failing.load(Ordering::SeqCst) {
        return (StatusCode::INTERNAL_SERVER_ERROR, "down").into_response();
    }
    match query.get("city").map(String::as_str) {
        Some("Porto") => Json(
            json!({"city": "Porto", "country": "PT", "temperature_c": 18.5,
            "humidity_pct": 72, "conditions": "fog"}),
        )
        .into_response(),
        _ => StatusCode::NOT_FOUND.into_response(),
    }
}

/// The weather service on `127.0.0.1:<free port>`, and its URL.
pub async fn start_upstream(upstream: &Upstream) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let app = axum::Router::new()
        .route("/weather", get(weather))
        .with_state(upstream.clone());
    tokio::spawn(async move { axum::serve(listener, app).await });
    format!("http://{addr}/weather")
}
