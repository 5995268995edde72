//! `--metrics`: calls and discovery counted, scraped from `GET /metrics` over real HTTP.

use bookstore::{AppState, Options};
use halo_axum::Prometheus;
use reqwest::{Client, Method, StatusCode};
use serde_json::json;

async fn serve(options: Options) -> String {
    let app = bookstore::app_with(AppState::seeded(), options);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    base
}

/// The value of the one line of `text` that starts with `series` and a space.
fn value(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .find_map(|line| line.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
}

#[tokio::test]
async fn calls_and_discovery_show_up_at_get_metrics() {
    let base = serve(Options::default().metrics(Prometheus::install().unwrap())).await;
    let client = Client::new();
    for _ in 0..2 {
        let book = client
            .get(format!("{base}/api/books/1"))
            .send()
            .await
            .unwrap();
        assert_eq!(book.status(), StatusCode::OK);
    }
    let charge = json!({"order_id": 1001, "amount": 21.98, "currency": "EUR",
                        "payment_method": "pm_card_visa"});
    let mut statuses = Vec::new();
    for _ in 0..6 {
        let response = client
            .post(format!("{base}/api/payments/charge"))
            .bearer_auth("demo-admin")
            .json(&charge)
            .send()
            .await
            .unwrap();
        statuses.push(response.status().as_u16());
    }
    // No order 1001 exists: five calls reach the handler (422), the sixth is over the rate.
    assert_eq!(statuses, [422, 422, 422, 422, 422, 429]);
    let manifest = client
        .request(Method::OPTIONS, format!("{base}/"))
        .header("accept", "application/llm+json")
        .send()
        .await
        .unwrap();
    assert_eq!(manifest.status(), StatusCode::OK);
    let health = client.get(format!("{base}/health")).send().await.unwrap();
    assert_eq!(health.status(), StatusCode::OK);

    // The metrics name every tool: for the administrator only (`tests/admin_routes.rs`).
    let response = client
        .get(format!("{base}/metrics"))
        .bearer_auth("demo-admin")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let text = response.text().await.unwrap();
    let calls = |tool: &str, outcome: &str, status: &str| {
        value(
            &text,
            &format!(
                "halo_tool_calls_total{{tool=\"{tool}\",outcome=\"{outcome}\",status=\"{status}\"}}"
            ),
        )
    };
    assert_eq!(calls("get_book", "executed", "2xx"), Some(2.0), "{text}");
    assert_eq!(calls("charge_payment", "executed", "4xx"), Some(5.0));
    assert_eq!(calls("charge_payment", "rate_limited", "4xx"), Some(1.0));
    assert_eq!(
        value(
            &text,
            "halo_discovery_requests_total{target=\"manifest\",status=\"2xx\"}"
        ),
        Some(1.0)
    );
    // Neither the probe nor the metrics route is a tool.
    assert!(
        !text.contains("health") && !text.contains("tool=\"metrics"),
        "{text}"
    );
    let discover = |path: &str| {
        client
            .request(Method::OPTIONS, format!("{base}{path}"))
            .header("accept", "application/llm+json")
            .send()
    };
    assert_eq!(
        discover("/metrics").await.unwrap().status(),
        StatusCode::NOT_FOUND
    );
}

#[tokio::test]
async fn without_metrics_there_is_no_metrics_route() {
    let base = serve(Options::default()).await;
    let response = Client::new()
        .get(format!("{base}/metrics"))
        .bearer_auth("demo-admin")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::NOT_FOUND);
    let health = reqwest::get(format!("{base}/health")).await.unwrap();
    assert_eq!(health.text().await.unwrap(), "ok");
}

#[test]
fn the_flag_is_off_unless_given() {
    use bookstore::cli::Cli;

    let on = Cli::parse_from_args(["bookstore", "--metrics"]).unwrap();
    assert!(on.metrics);
    if std::env::var_os("HALO_METRICS").is_none() {
        assert!(!Cli::parse_from_args(["bookstore"]).unwrap().metrics);
    }
}
