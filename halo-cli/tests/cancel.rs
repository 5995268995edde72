//! Cancelling calls from the command line, against a halo-axum server on loopback: Ctrl-C
//! (SIGINT) on `halo stream` cancels the call on the server and exits 130; `halo mcp`
//! forwards an MCP client's `notifications/cancelled` (rmcp's client) to the server, for a
//! plain call and for a streamed one. Each time the handler is dropped: a guard says so.
#![cfg(unix)]

use crate::common;

use std::io::{BufRead as _, BufReader, Read as _};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Json;
use axum::extract::State;
use halo_axum::{AuditRecord, AuditSink, HaloLayer, Outcome, Progress, halo};
use halo_tests::TestServer;
use halo_tests::held::Held;
use rmcp::ServiceExt as _;
use rmcp::model::{CallToolRequest, CallToolRequestParams, ClientRequest};
use rmcp::service::PeerRequestOptions;
use serde_json::{Value, json};
use tokio::sync::Notify;
use utoipa_axum::{router::OpenApiRouter, routes};

/// How long the test waits for a handler to arrive or be dropped.
const PATIENCE: Duration = Duration::from_secs(20);

/// What the server tells the test: that a handler arrived, that one was dropped unfinished,
/// and the cancel requests it audited (the proof that a cancel reached it, rather than a
/// dropped connection).
#[derive(Clone, Default)]
struct Signals {
    held: Held,
    cancels: Arc<Mutex<Vec<AuditRecord>>>,
    cancelled: Arc<Notify>,
}

impl AuditSink for Signals {
    fn record(&self, record: AuditRecord) {
        if record.method == "DELETE" && record.outcome == Outcome::Cancelled {
            self.cancels.lock().unwrap().push(record);
            self.cancelled.notify_one();
        }
    }
}

impl Signals {
    /// Waits for a cancel request of `tool`'s call to reach the server.
    async fn cancel_of(&self, tool: &str) {
        tokio::time::timeout(PATIENCE, self.cancelled.notified())
            .await
            .expect("a cancel request reaches the server");
        let cancels = self.cancels.lock().unwrap();
        assert_eq!(
            cancels.last().map(|record| record.tool.as_str()),
            Some(tool)
        );
    }
}

/// Run a job that only a cancel ends.
#[halo(stream = true)]
#[utoipa::path(post, path = "/jobs", responses((status = 200, body = Object)))]
async fn job(State(signals): State<Signals>, progress: Progress) -> Json<Value> {
    progress.step(1, None, "started");
    signals.held.until_cancelled().await;
    Json(json!({"done": true}))
}

/// Build a report that only a cancel ends.
#[utoipa::path(get, path = "/reports", responses((status = 200, body = Object)))]
async fn report(State(signals): State<Signals>) -> Json<Value> {
    signals.held.until_cancelled().await;
    Json(json!({}))
}

async fn spawn(signals: &Signals) -> TestServer {
    let (router, api) = OpenApiRouter::new()
        .routes(routes!(job))
        .routes(routes!(report))
        .split_for_parts();
    let layer = HaloLayer::builder(api)
        .audit(signals.clone())
        .build()
        .expect("a layer");
    halo_tests::spawn(router.with_state(signals.clone()).layer(layer)).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_c_cancels_a_stream_on_the_server_and_exits_130() {
    let signals = Signals::default();
    let server = spawn(&signals).await;
    let mut child = Command::new(env!("CARGO_BIN_EXE_halo"))
        .args(["stream", &server.base_url(), "/jobs", "-X", "post"])
        .env_remove("HALO_BEARER")
        .env_remove("HALO_API_KEY")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start halo stream");
    let mut stdout = BufReader::new(child.stdout.take().expect("stdout"));
    // Its first line is printed once it listens for Ctrl-C.
    let (stdout, first) = tokio::task::spawn_blocking(move || {
        let mut line = String::new();
        stdout.read_line(&mut line).expect("a line");
        (stdout, line)
    })
    .await
    .unwrap();
    assert!(first.contains("tool_start job"), "{first:?}");
    signals.held.arrival(PATIENCE).await;

    let interrupt = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .expect("kill -INT");
    assert!(interrupt.success());
    let (rest, stderr, status) = tokio::task::spawn_blocking(move || {
        let (mut rest, mut stderr) = (String::new(), String::new());
        let mut stdout = stdout;
        stdout.read_to_string(&mut rest).expect("stdout");
        child
            .stderr
            .take()
            .expect("stderr")
            .read_to_string(&mut stderr)
            .expect("stderr");
        (rest, stderr, child.wait().expect("halo exits"))
    })
    .await
    .unwrap();
    signals.cancel_of("job").await;
    signals.held.drop_seen(PATIENCE).await;
    assert_eq!(status.code(), Some(130), "{rest}\n{stderr}");
    assert!(rest.contains("tool_error 409"), "{rest}");
    assert!(rest.contains("the call was cancelled"), "{rest}");
    assert!(stderr.contains("cancelled"), "{stderr}");
}

/// `halo mcp` for the server, with an rmcp client connected.
async fn connect(server: &TestServer) -> rmcp::service::RunningService<rmcp::RoleClient, ()> {
    ().serve(common::halo_mcp(&["mcp", &server.base_url()]))
        .await
        .expect("an MCP session")
}

/// Calls `tool` through `client`, and cancels the request once its handler runs.
async fn call_and_cancel(
    client: &rmcp::service::RunningService<rmcp::RoleClient, ()>,
    signals: &Signals,
    tool: &str,
) {
    let params = CallToolRequestParams::new(tool.to_owned()).with_arguments(Default::default());
    let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
    let handle = client
        .peer()
        .send_cancellable_request(request, PeerRequestOptions::no_options())
        .await
        .expect("tools/call sent");
    signals.held.arrival(PATIENCE).await;
    handle
        .cancel(Some("the user gave up".to_owned()))
        .await
        .expect("notifications/cancelled sent");
    signals.cancel_of(tool).await;
    signals.held.drop_seen(PATIENCE).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn halo_mcp_forwards_a_cancelled_plain_call_to_the_server() {
    let signals = Signals::default();
    let server = spawn(&signals).await;
    let client = connect(&server).await;
    // The report runs on the server without a stream: only the forwarded cancel drops it.
    call_and_cancel(&client, &signals, "report").await;
    client.cancel().await.expect("the session ends");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn halo_mcp_forwards_a_cancelled_streamed_call_to_the_server() {
    let signals = Signals::default();
    let server = spawn(&signals).await;
    let client = connect(&server).await;
    // rmcp's client sends a progress token, so the job is streamed; the server keeps it
    // running when its client leaves (the default), so only the cancel drops it.
    call_and_cancel(&client, &signals, "job").await;
    client.cancel().await.expect("the session ends");
}
