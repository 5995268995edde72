//! `halo gateway check`, `explain`, `schema` and `run`, as a user runs them.

use std::io::{BufRead as _, BufReader};
use std::process::{Command, Stdio};

fn halo(args: &[&str]) -> (i32, String, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_halo"))
        .args(args)
        .output()
        .unwrap();
    (
        output.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// A configuration with GitHub's document behind an address nothing needs to answer on.
fn github_config(dir: &tempfile::TempDir, extra: &str) -> String {
    let github = halo_tests::corpus::Document::GitHub;
    std::fs::write(dir.path().join("github.json"), github.text()).unwrap();
    let path = dir.path().join("gateway.yaml");
    std::fs::write(
        &path,
        format!(
            "listen: 127.0.0.1:0\nupstreams:\n  github: {{ openapi: github.json, base_url: \"http://127.0.0.1:9\" }}\n{extra}"
        ),
    )
    .unwrap();
    path.to_string_lossy().into_owned()
}

#[test]
fn check_reports_each_upstream_and_exits_by_whether_it_built() {
    let dir = tempfile::tempdir().unwrap();
    let config = github_config(
        &dir,
        "policies:\n  - match: { tools: \"*enterprise*\" }\n    set: { exclude: true }\n",
    );
    let (code, out, err) = halo(&["gateway", "check", &config]);
    assert_eq!(code, 0, "{out}{err}");
    let first = out.lines().next().unwrap();
    assert!(first.starts_with("github: "), "{out}");
    assert!(out.contains("left out GET /enterprises/"), "{out}");
    assert!(out.contains("by policies[0]"), "{out}");
    assert!(out.lines().last().unwrap().starts_with("ok: "), "{out}");

    let bad = dir.path().join("bad.yaml");
    std::fs::write(
        &bad,
        "upstreams:\n  github: { openapi: github.json, base_uri: x }\n",
    )
    .unwrap();
    let (code, _, err) = halo(&["gateway", "check", bad.to_str().unwrap()]);
    assert_eq!(code, 1);
    assert!(err.contains("base_uri"), "{err}");

    let missing = dir.path().join("missing.yaml");
    std::fs::write(&missing, "upstreams:\n  gone: { openapi: nowhere.json }\n").unwrap();
    let (code, _, err) = halo(&["gateway", "check", missing.to_str().unwrap()]);
    assert_eq!(code, 1);
    assert!(
        err.contains("upstream `gone`") && err.contains("nowhere.json"),
        "{err}"
    );
}

#[test]
fn explain_names_the_rule_behind_each_field() {
    let dir = tempfile::tempdir().unwrap();
    let config = github_config(
        &dir,
        "policies:\n  - set: { timeout: 5s }\n  - match: { methods: [POST] }\n    set: { rate: 10/minute }\n",
    );
    let (code, out, err) = halo(&["gateway", "explain", &config, "issues_create"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.starts_with("github_issues_create (POST /repos/{owner}/{repo}/issues"),
        "{out}"
    );
    assert!(
        out.contains("10/minute") && out.contains("policies[1] (methods=POST)"),
        "{out}"
    );
    assert!(
        out.contains("5000ms") && out.contains("policies[0] (every tool)"),
        "{out}"
    );
    let (code, _, err) = halo(&["gateway", "explain", &config, "no_such_tool"]);
    assert_eq!(code, 1);
    assert!(err.contains("no_such_tool"), "{err}");
}

#[test]
fn schema_is_json_schema_of_the_file() {
    let (code, out, _) = halo(&["gateway", "schema"]);
    assert_eq!(code, 0);
    let schema: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(schema["additionalProperties"], false);
    assert!(schema["properties"].get("policies").is_some());
}

#[test]
fn run_says_where_it_listens_and_serves_discovery() {
    let dir = tempfile::tempdir().unwrap();
    let config = github_config(&dir, "");
    let mut child = Command::new(env!("CARGO_BIN_EXE_halo"))
        .args(["gateway", "run", &config])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let url = line
        .trim()
        .strip_prefix("listening on ")
        .unwrap_or_else(|| panic!("{line}"))
        .to_owned();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let manifest: serde_json::Value = runtime.block_on(async {
        reqwest::Client::new()
            .request(reqwest::Method::OPTIONS, format!("{url}/"))
            .header("accept", "application/llm+json")
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap()
    });
    child.kill().unwrap();
    let _ = child.wait();
    assert_eq!(manifest["tools"].as_array().unwrap().len(), 771);
}

/// `halo gateway pin` accepts what a `pinned` MCP server lists (its tools are left out before,
/// served after); without a pinned upstream there is nothing to pin (exit 1).
#[test]
fn pin_accepts_a_pinned_servers_tools() {
    let dir = tempfile::tempdir().unwrap();
    let command: Vec<serde_json::Value> = halo_tests::mcp_servers::McpServer::Everything
        .stdio_command()
        .into_iter()
        .map(serde_json::Value::String)
        .collect();
    let path = dir.path().join("gateway.yaml");
    std::fs::write(
        &path,
        format!(
            "listen: 127.0.0.1:0\npins: pins.json\nupstreams:\n  everything: {{ stdio: {}, pinned: true }}\n",
            serde_json::Value::Array(command)
        ),
    )
    .unwrap();
    let config = path.to_string_lossy().into_owned();
    let (code, out, _) = halo(&["gateway", "check", &config]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("tool `echo` was left out: it is new"), "{out}");

    let (code, out, err) = halo(&["gateway", "pin", &config]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.starts_with("everything: 0 pinned as before, new: "),
        "{out}"
    );
    assert!(out.contains("echo"), "{out}");
    assert!(dir.path().join("pins.json").is_file());
    let (code, out, _) = halo(&["gateway", "check", "--tools", &config]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("everything: everything_echo"), "{out}");
    let (_, again, _) = halo(&["gateway", "pin", &config]);
    // Pinned again, nothing changed.
    assert!(again.ends_with(" pinned as before\n"), "{again}");
    assert!(
        !again.contains("new:") && !again.contains("changed:"),
        "{again}"
    );

    let unpinned = github_config(&dir, "");
    let (code, _, err) = halo(&["gateway", "pin", &unpinned]);
    assert_eq!(code, 1);
    assert!(err.contains("nothing to pin"), "{err}");
}
