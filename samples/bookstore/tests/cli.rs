//! The `bookstore` binary's arguments.

use crate::support;

use bookstore::cli::{Cli, DEFAULT_ADDR};

#[test]
fn addr_is_parsed() {
    let cli = Cli::parse_from_args(["bookstore", "--addr", "0.0.0.0:8080"]).unwrap();
    assert_eq!(cli.addr, "0.0.0.0:8080");
    let cli = Cli::parse_from_args(["bookstore", "--addr=[::1]:0"]).unwrap();
    assert_eq!(cli.addr, "[::1]:0");
    let cli = Cli::parse_from_args(["bookstore", "--addr", "localhost:3000"]).unwrap();
    assert_eq!(cli.addr, "localhost:3000");
}

#[test]
fn addr_defaults_to_halo_addr_or_localhost_3000() {
    let cli = Cli::parse_from_args(["bookstore"]).unwrap();
    let expected = std::env::var("HALO_ADDR").unwrap_or_else(|_| DEFAULT_ADDR.to_owned());
    assert_eq!(cli.addr, expected);
}

#[test]
fn bad_addresses_and_arguments_are_errors() {
    for bad in ["3000", ":3000", "127.0.0.1:http", "127.0.0.1:70000"] {
        let error = Cli::parse_from_args(["bookstore", "--addr", bad]).unwrap_err();
        assert_eq!(
            error.kind(),
            clap::error::ErrorKind::ValueValidation,
            "{bad}"
        );
    }
    let error = Cli::parse_from_args(["bookstore", "--port", "1"]).unwrap_err();
    assert_eq!(error.kind(), clap::error::ErrorKind::UnknownArgument);
}

#[test]
fn main_binary_reports_bad_addresses() {
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_bookstore"))
        .args(["--addr", "256.0.0.1:1"])
        .output()
        .expect("run bookstore");
    assert!(!output.status.success());
    assert!(String::from_utf8_lossy(&output.stderr).contains("cannot listen on 256.0.0.1:1"));
}

/// Runs the real binary on a free port, discovers it, and stops it with SIGTERM.
#[cfg(unix)]
#[tokio::test]
async fn main_binary_serves_and_shuts_down_gracefully() {
    use support::{spawn_bookstore, stdout_lines, terminate};

    let mut child = spawn_bookstore(&[], &[]);
    // Read the first two lines, and keep draining stdout so that the server never writes to a
    // closed pipe.
    let lines_rx = stdout_lines(&mut child);
    let lines = tokio::task::spawn_blocking(move || {
        (0..2)
            .map(|_| lines_rx.recv_timeout(std::time::Duration::from_secs(30)))
            .collect::<Result<Vec<String>, _>>()
    })
    .await
    .unwrap()
    .expect("the first two lines of stdout");
    let base = lines[0]
        .strip_prefix("bookstore listening on ")
        .expect("first line names the address")
        .to_owned();
    assert!(
        lines[1].contains(&format!(
            "curl -X OPTIONS {base}/ -H 'Accept: application/llm+json'"
        )),
        "{lines:?}"
    );

    let response = reqwest::Client::new()
        .request(reqwest::Method::OPTIONS, format!("{base}/"))
        .header("accept", "application/llm+json")
        .send()
        .await
        .expect("discover");
    assert_eq!(response.status(), reqwest::StatusCode::OK);

    let status = terminate(child).await;
    assert!(status.success(), "graceful shutdown exits 0, got {status}");
}

#[test]
fn audit_names_a_file() {
    let cli = Cli::parse_from_args(["bookstore", "--audit", "trail.jsonl"]).unwrap();
    assert_eq!(
        cli.audit.as_deref(),
        Some(std::path::Path::new("trail.jsonl"))
    );
    if std::env::var_os("HALO_AUDIT").is_none() {
        assert_eq!(Cli::parse_from_args(["bookstore"]).unwrap().audit, None);
    }
}

#[test]
fn the_weather_upstream_is_an_http_url() {
    let cli = Cli::parse_from_args(["bookstore"]).unwrap();
    if std::env::var_os("HALO_WEATHER_UPSTREAM").is_none() {
        assert_eq!(cli.weather_upstream, None);
    }
    let cli = Cli::parse_from_args([
        "bookstore",
        "--weather-upstream",
        "http://127.0.0.1:8080/weather",
    ])
    .unwrap();
    assert_eq!(
        cli.weather_upstream.map(String::from).as_deref(),
        Some("http://127.0.0.1:8080/weather")
    );
    for bad in ["weather", "ftp://h/w", "/weather", "http://"] {
        let error = Cli::parse_from_args(["bookstore", "--weather-upstream", bad]).unwrap_err();
        assert_eq!(
            error.kind(),
            clap::error::ErrorKind::ValueValidation,
            "{bad}"
        );
    }
}

#[test]
fn an_approval_webhook_needs_its_secret_from_the_environment() {
    let hook = "http://127.0.0.1:9/hook";
    let cli = Cli::parse_from_args(["bookstore", "--approval-webhook", hook]).unwrap();
    for missing in [None, Some("")] {
        let error = cli.approval_webhook(missing).unwrap_err();
        assert!(error.contains("HALO_APPROVAL_WEBHOOK_SECRET"), "{error}");
    }
    let error = cli.approval_webhook(Some("short")).unwrap_err();
    assert!(error.contains("16 bytes"), "{error}");
    let secret = "a-secret-of-sixteen-bytes-or-more";
    assert!(cli.approval_webhook(Some(secret)).unwrap().is_some());
    // Signed bodies go over TLS, or stay on this machine.
    let far = [
        "bookstore",
        "--approval-webhook",
        "http://hooks.example.com/h",
    ];
    let error = Cli::parse_from_args(far)
        .unwrap()
        .approval_webhook(Some(secret))
        .unwrap_err();
    assert!(error.contains("https"), "{error}");
    if std::env::var_os("HALO_APPROVAL_WEBHOOK").is_none() {
        let cli = Cli::parse_from_args(["bookstore"]).unwrap();
        assert!(cli.approval_webhook(Some(secret)).unwrap().is_none());
    }
}

#[test]
fn main_binary_refuses_an_approval_webhook_without_its_secret() {
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_bookstore"))
        .args(["--addr", "127.0.0.1:0"])
        .args(["--approval-webhook", "http://127.0.0.1:9/hook"])
        .env_remove("HALO_APPROVAL_WEBHOOK_SECRET")
        .output()
        .expect("run bookstore");
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr
            .contains("--approval-webhook needs the hook's secret in HALO_APPROVAL_WEBHOOK_SECRET"),
        "{stderr}"
    );
    assert!(output.stdout.is_empty(), "it never started");
}
