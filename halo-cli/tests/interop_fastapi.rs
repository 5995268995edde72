//! The `halo` CLI against a server made HALO-compliant by the Python reference implementation
//! (`halo-fastapi` 0.3.0): discover, describe, and call with a path parameter and a token.
//!
//! Needs the interop virtualenv (`bash .ci/test` creates it) or `HALO_PYTHON`.

use std::process::{Command, Output};

use halo_tests::FastApiServer;
use serde_json::Value;

fn halo(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_halo"))
        .args(args)
        .output()
        .expect("the halo binary runs")
}

/// `halo call <base> /notes -X POST --data <data>`, then the `more` arguments.
fn post_note(base: &str, data: &str, more: &[&str]) -> Output {
    let mut args = vec!["call", base, "/notes", "-X", "POST", "--data", data];
    args.extend_from_slice(more);
    halo(&args)
}

fn json(output: &Output) -> Value {
    assert!(
        output.status.success(),
        "exit {:?}\nstdout: {}\nstderr: {}",
        output.status.code(),
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).expect("--json prints JSON")
}

#[test]
fn the_cli_discovers_describes_and_calls_halo_fastapi() {
    let server = FastApiServer::start();
    let base = server.base_url();

    let manifest = json(&halo(&["discover", &base, "--json"]));
    assert_eq!(manifest["api"], "Notes");
    assert_eq!(manifest["tools"].as_array().unwrap().len(), 4);
    let table = halo(&["discover", &base]);
    assert!(String::from_utf8_lossy(&table.stdout).contains("create_note"));

    let create = json(&halo(&[
        "describe", &base, "/notes", "--method", "POST", "--json",
    ]));
    let create = if create.is_array() {
        create[0].clone()
    } else {
        create
    };
    assert_eq!(create["call"]["method"], "POST");

    let note = json(&halo(&[
        "call",
        &base,
        "/notes/{note_id}",
        "-X",
        "GET",
        "--data",
        r#"{"note_id": 1}"#,
        "--json",
    ]));
    assert_eq!(note["title"], "first", "{note}");
    let concrete = json(&halo(&["call", &base, "/notes/1", "-X", "GET", "--json"]));
    assert_eq!(concrete["id"], 1, "{concrete}");

    let denied = post_note(&base, r#"{"title": "x"}"#, &[]);
    assert_eq!(denied.status.code(), Some(1), "a 401 exits 1");
    let created = json(&post_note(
        &base,
        r#"{"title": "from the cli"}"#,
        &["--bearer", FastApiServer::TOKEN, "--json"],
    ));
    assert_eq!(created["title"], "from the cli", "{created}");
}

#[test]
fn lint_reads_a_halo_fastapi_server() {
    let server = FastApiServer::start();
    let output = halo(&["--json", "lint", &server.base_url()]);
    // The sample leaves tags off two operations: errors, so exit 1 (never 2: it was linted).
    assert_eq!(output.status.code(), Some(1), "{output:?}");
    let report: Value = serde_json::from_slice(&output.stdout).expect("--json prints JSON");
    assert_eq!(report["tools_checked"], 4, "{report:#}");
    let found = |rule: &str, tool: &str| {
        report["findings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f["rule"] == rule && f["tool"] == tool)
    };
    assert!(found("missing-domain-tag", "get_note"), "{report:#}");
    assert!(
        found("missing-input-description", "create_note"),
        "{report:#}"
    );
    // Its `why` and example are read from halo-fastapi's schema as from ours.
    assert!(!found("missing-why", "create_note"), "{report:#}");
    assert!(!found("missing-example", "create_note"), "{report:#}");
}
