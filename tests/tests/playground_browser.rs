//! The bookstore's playground in a real browser: `tests/browser/playground.mjs` drives
//! Debian's Chromium headless through playwright-core against the bookstore on loopback. It
//! lists the tools without and with credentials, filters by a tag on the server, calls the
//! streaming `summarize_book` and sees its progress live and then its result, sees a `422`
//! problem with its pointer, input refused before sending, a header and a JSON array placed.
//! As the admin it sees a refund held for approval (`202`, and `approval_pending` in a stream),
//! lists it in the approvals panel, approves one (the call runs, its answer shown when checked
//! again), denies one whose arguments are markup (shown as text) with a reason, gets the `409`
//! of an approval decided meanwhile; as a reader the panel hides. It checks that no request
//! left the server. A screenshot goes to `target/playground.png`.
//! Behind a proxy that cuts the first event stream, `resume.mjs` sees the call resumed with
//! `Last-Event-ID` and `Halo-Call-Id`, every event once and in order.
//!
//! Needs Node.js (`HALO_NODE`, or `node` on `PATH`), Chromium (`HALO_CHROMIUM`, or
//! `/usr/bin/chromium`) and `tests/browser/node_modules` (`npm ci` there); `bash .ci/test`
//! provides all three.

use crate::sse;

use std::ffi::OsStr;
use std::path::PathBuf;
use std::time::Duration;

use halo_tests::{run_to_end, spawn, workspace_root};
use sse::{Cut, Proxy};
use tokio::process::Command;

/// A browser start and a dozen interactions; a hang fails the run instead.
const SCRIPT_TIMEOUT: Duration = Duration::from_secs(180);

/// Node.js: `HALO_NODE` when set, else `node` on `PATH`.
fn node() -> PathBuf {
    if let Some(path) = std::env::var_os("HALO_NODE").filter(|path| !path.is_empty()) {
        let path = PathBuf::from(path);
        assert!(
            path.is_file(),
            "HALO_NODE={} does not exist",
            path.display()
        );
        return path;
    }
    std::env::var_os("PATH")
        .iter()
        .flat_map(std::env::split_paths)
        .map(|dir| dir.join("node"))
        .find(|candidate| candidate.is_file())
        .unwrap_or_else(|| {
            panic!(
                "Node.js is not on PATH: install it (apt-get install nodejs npm) or set HALO_NODE \
                 to a node binary (20 or newer); `bash .ci/test` checks for it"
            )
        })
}

/// Chromium: `HALO_CHROMIUM` when set, else Debian's `/usr/bin/chromium`.
fn chromium() -> PathBuf {
    let path = std::env::var_os("HALO_CHROMIUM")
        .filter(|path| !path.is_empty())
        .map_or_else(|| PathBuf::from("/usr/bin/chromium"), PathBuf::from);
    assert!(
        path.is_file(),
        "Chromium is missing at {}: install it (apt-get install --no-install-recommends chromium, \
         which `bash .ci/test` does as root) or set HALO_CHROMIUM to a Chromium or Chrome binary",
        path.display()
    );
    path
}

/// `tests/browser`, with its npm dependencies installed.
fn browser_tests() -> PathBuf {
    let dir = workspace_root().join("tests").join("browser");
    let installed = dir
        .join("node_modules")
        .join("playwright-core")
        .join("package.json");
    assert!(
        installed.is_file(),
        "playwright-core is not installed in {}: run `npm ci` there (`bash .ci/test` does)",
        dir.display()
    );
    dir
}

/// Runs `script` (in `tests/browser`) on the playground at `playground`, with `env`; fails
/// with the script's output when it fails.
async fn run_script(script: &str, playground: String, env: &[(&str, &OsStr)]) {
    let (node, chromium, dir) = (node(), chromium(), browser_tests());
    let mut command = Command::new(&node);
    command
        .arg(script)
        .arg(playground)
        .current_dir(&dir)
        .env("HALO_CHROMIUM", &chromium);
    for (name, value) in env {
        command.env(name, value);
    }
    run_to_end(&mut command, SCRIPT_TIMEOUT).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_playground_lists_filters_and_streams_in_chromium() {
    let server = spawn(bookstore::app()).await;
    let screenshot = workspace_root().join("target").join("playground.png");
    let _ = std::fs::remove_file(&screenshot);
    run_script(
        "playground.mjs",
        server.url("/playground"),
        &[("PLAYGROUND_SCREENSHOT", screenshot.as_os_str())],
    )
    .await;
    let written = std::fs::metadata(&screenshot)
        .unwrap_or_else(|error| panic!("no screenshot at {}: {error}", screenshot.display()));
    assert!(written.len() > 0, "an empty screenshot");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cut_stream_is_resumed_in_chromium() {
    const CUT_AFTER: usize = 3;
    let server = spawn(bookstore::app()).await;
    let proxy = Proxy::start(server.addr()).await;
    // The first event stream through the proxy breaks after three events and a few bytes of
    // the fourth; the resumed one runs to the end.
    proxy.cut([Cut {
        events: CUT_AFTER,
        bytes: 7,
    }]);
    let cut_after = CUT_AFTER.to_string();
    run_script(
        "resume.mjs",
        format!("{}/playground/", proxy.base),
        &[("HALO_CUT_AFTER", OsStr::new(&cut_after))],
    )
    .await;
}

/// Markup the API under test puts in every text the playground shows; it must come out as
/// text. Each would set `window.pwned` if the page ran it.
const MARKUP: [&str; 6] = [
    r#"<img src=x onerror="window.pwned='api'">"#,
    r#"<script>window.pwned='description'</script>"#,
    r#"<b onmouseover="window.pwned='tag'">tag</b>"#,
    r#"<img src=x onerror="window.pwned='enum'">"#,
    r#"<img src=x onerror="window.pwned='progress'">"#,
    r#"<img src=x onerror="window.pwned='result'">"#,
];

/// An API whose every text is markup: its description, the tool's summary, `why`, tag,
/// parameter description and enum, its progress messages, its result and its problems.
fn hostile_api() -> axum::Router {
    use axum::Json;
    use axum::extract::Path as UrlPath;
    use axum::http::StatusCode;
    use axum::response::IntoResponse;
    use halo_axum::playground::Playground;
    use halo_axum::{HaloLayer, Progress};
    use serde_json::{Value, json};

    let api: utoipa::openapi::OpenApi = serde_json::from_value(json!({
        "openapi": "3.1.0",
        "info": {"title": MARKUP[0], "version": "1", "description": MARKUP[1]},
        "paths": {"/echo/{id}": {"post": {
            "operationId": "echo",
            "summary": MARKUP[1],
            "tags": [MARKUP[2], "read"],
            "x-halo-why": MARKUP[0],
            "parameters": [{"name": "id", "in": "path", "required": true,
                            "description": MARKUP[1], "schema": {"type": "string"}}],
            "requestBody": {"required": true, "content": {"application/json": {"schema": {
                "type": "object", "required": ["note"],
                "properties": {"note": {"type": "string", "enum": [MARKUP[3], "fail"]}}
            }}}},
            "responses": {"200": {"description": "the echo"}}
        }}}
    }))
    .expect("an OpenAPI document");

    async fn echo(
        UrlPath(id): UrlPath<String>,
        progress: Progress,
        Json(body): Json<Value>,
    ) -> axum::response::Response {
        progress.step(1, Some(1), MARKUP[4]);
        if body["note"] == "fail" {
            let problem = json!({"type": "about:blank", "title": MARKUP[0], "status": 422,
                "detail": MARKUP[5], "errors": [{"pointer": MARKUP[2], "message": MARKUP[1]}]});
            return (
                StatusCode::UNPROCESSABLE_ENTITY,
                [("content-type", "application/problem+json")],
                problem.to_string(),
            )
                .into_response();
        }
        Json(json!({"id": id, "note": body["note"], "html": MARKUP[5]})).into_response()
    }

    axum::Router::new()
        .route("/echo/{id}", axum::routing::post(echo))
        .layer(HaloLayer::from_openapi(api))
        .nest_service("/playground", Playground::new())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_playground_shows_markup_from_the_api_as_text() {
    let server = spawn(hostile_api()).await;
    let markup = serde_json::to_string(&MARKUP).expect("JSON");
    run_script(
        "hostile.mjs",
        server.url("/playground"),
        &[("HALO_MARKUP", OsStr::new(&markup))],
    )
    .await;
}
