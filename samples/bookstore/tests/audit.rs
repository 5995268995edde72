//! `--audit FILE`: one JSON line per call of an operation.

use bookstore::{AppState, Options};
use halo_axum::JsonLinesSink;
use serde_json::Value;

#[tokio::test]
async fn every_call_is_one_line_of_the_audit_file() {
    let path = std::env::temp_dir().join(format!("bookstore-audit-{}.jsonl", std::process::id()));
    let _ = std::fs::remove_file(&path);
    let sink = JsonLinesSink::open(&path).unwrap();
    let app = bookstore::app_with(AppState::seeded(), Options::default().audit(sink.clone()));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });

    let client = reqwest::Client::new();
    let book = client
        .get(format!("{base}/api/books/1"))
        .send()
        .await
        .unwrap();
    assert_eq!(book.status(), 200);
    let denied = client
        .delete(format!("{base}/api/books/1"))
        .send()
        .await
        .unwrap();
    assert_eq!(denied.status(), 401);
    // Discovery and undescribed paths are not calls.
    client
        .get(format!("{base}/openapi.json"))
        .send()
        .await
        .unwrap();
    sink.flush();

    let text = std::fs::read_to_string(&path).unwrap();
    let records: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let summary: Vec<(&str, &str, u64)> = records
        .iter()
        .map(|r| {
            (
                r["tool"].as_str().unwrap(),
                r["outcome"].as_str().unwrap(),
                r["status"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        summary,
        [
            ("get_book", "executed", 200),
            ("delete_book", "denied", 401)
        ]
    );
    let _ = std::fs::remove_file(&path);
}
