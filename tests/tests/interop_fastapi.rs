//! Interop with the Python reference implementation: `halo-fastapi`'s `HaloClient` discovers,
//! describes and invokes the bookstore sample served by halo-rs.
//!
//! Needs the interop virtualenv (`bash .ci/test` creates it) or `HALO_PYTHON`.

use std::time::Duration;

use halo_tests::{interop_script, python, run_to_end, spawn};
use serde_json::Value;
use tokio::process::Command;

/// Long enough for a cold Python start; short enough that a hang fails the run.
const SCRIPT_TIMEOUT: Duration = Duration::from_secs(120);

const NEW_ORDER: &str =
    r#"{"customer_email": "ada@example.com", "items": [{"book_id": 1, "quantity": 2}]}"#;

/// How many operations the bookstore's OpenAPI document describes.
fn operations() -> usize {
    let doc = serde_json::to_value(bookstore::openapi()).expect("the OpenAPI document as JSON");
    doc["paths"]
        .as_object()
        .expect("paths")
        .values()
        .filter_map(Value::as_object)
        .map(|item| {
            item.keys()
                .filter(|key| METHODS.contains(&key.as_str()))
                .count()
        })
        .sum()
}

const METHODS: &[&str] = &[
    "get", "put", "post", "delete", "options", "head", "patch", "trace",
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn halo_fastapi_client_discovers_the_bookstore() {
    let server = spawn(bookstore::app()).await;
    let script = interop_script("halo_client_discovers.py");
    let python = python();

    let stdout = run_to_end(
        Command::new(&python)
            .arg(&script)
            .arg(server.base_url())
            .args(["--token", "demo-admin", "--tag", "payments", "--strict"])
            // A call only the token allows, with a body the layer validates.
            .args(["--call", "POST", "/api/orders", NEW_ORDER])
            .env("PYTHONDONTWRITEBYTECODE", "1"),
        SCRIPT_TIMEOUT,
    )
    .await;
    assert!(
        stdout.contains("\"ok\": true"),
        "unexpected output:\n{stdout}"
    );
    println!("{stdout}");
    let summary: Value = serde_json::from_str(&stdout).expect("a JSON summary");
    // Discovery is scoped to the caller: with the admin token, every operation is listed.
    assert_eq!(summary["tools"], operations(), "{stdout}");
    let invoked = summary["invoked"].as_array().expect("invoked");
    assert!(
        invoked.iter().any(|call| call["tool"] == "POST /api/orders"
            && call["keys"]
                .as_array()
                .is_some_and(|keys| keys.contains(&"id".into()))),
        "{stdout}"
    );
    server
        .shutdown()
        .await
        .expect("the bookstore stops cleanly");
}
