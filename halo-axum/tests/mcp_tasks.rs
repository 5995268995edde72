//! MCP Tasks (`io.modelcontextprotocol/tasks`, SEP-2663) on `/mcp`, over real HTTP on
//! loopback with rmcp's client declaring the extension: a call held for approval answers
//! with a task that an approver's decision over HTTP completes (the call run once) or fails;
//! `tasks/cancel` withdraws it as `DELETE` of the approval does; a streamed call still
//! running after the grace is a task whose status is its last step and whose result is the
//! call's, and `tasks/cancel` cancels it through the layer. Every task is its caller's: any
//! other caller is told it does not exist, as an unknown id is.

use crate::common;

use std::time::Duration;

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use common::gate::{Drops, Gate, Runs};
use halo_axum::mcp::{McpService, TaskLimits};
use halo_axum::{
    ApprovalLimits, ApprovalQueue, HaloLayer, Principal, Progress, StaticAuthenticator, halo,
};
use halo_tests::{BearerScheme, TestServer, spawn};
use reqwest::header::{HeaderMap, HeaderValue};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CancelTaskParams, ClientCapabilities, ClientConfig,
    CreateTaskResult, DetailedTask, GetTaskParams, Implementation, ProtocolVersion, TaskPayload,
    TaskStatus,
};
use rmcp::service::RunningService;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ClientHandler, ClientLifecycleMode, ClientServiceExt as _, RoleClient};
use serde_json::{Value, json};
use utoipa::OpenApi;
use utoipa_axum::{router::OpenApiRouter, routes};

/// What the handlers share: the refunds' runs, where a summary waits, and its drops.
#[derive(Clone, Default)]
struct App {
    runs: Runs,
    gate: Gate,
    drops: Drops,
}

/// A refund's body.
#[derive(serde::Deserialize, utoipa::ToSchema)]
struct Refund {
    amount: u32,
}

/// Refund a payment: every call waits for approval.
#[halo(approval = "required")]
#[utoipa::path(post, path = "/refunds/{id}", tags = ["payments", "write"],
    params(("id" = String, Path)), request_body = Refund, responses((status = 200, body = Value)),
    security(("bearer" = [])))]
async fn refund(
    State(app): State<App>,
    Path(id): Path<String>,
    Json(refund): Json<Refund>,
) -> Json<Value> {
    Json(json!({"refund": id, "amount": refund.amount, "run": app.runs.add()}))
}

/// Summarize the ledger, step by step.
#[halo(stream = true)]
#[utoipa::path(post, path = "/summaries", tags = ["payments", "read"],
    responses((status = 200, body = Value)), security(("bearer" = [])))]
async fn summarize(State(app): State<App>, progress: Progress) -> Json<Value> {
    let running = app.drops.running();
    progress.step(1, Some(2), "reading the ledger");
    app.gate.pass().await;
    progress.step(2, Some(2), "adding up");
    running.finished();
    Json(json!({"total": 42}))
}

#[derive(OpenApi)]
#[openapi(info(title = "Payments", version = "1.0.0"), modifiers(&BearerScheme))]
struct Doc;

/// Bob and Eve call; Carol decides approvals.
const BOB: &str = "bob-token";
const EVE: &str = "eve-token";
const CAROL: &str = "carol-token";

/// The payments app with `/mcp`, streamed calls becoming tasks after 200 ms, at most two per
/// caller.
async fn payments() -> (TestServer, App) {
    let app = App::default();
    let (router, api) = OpenApiRouter::with_openapi(Doc::openapi())
        .routes(routes!(refund))
        .routes(routes!(summarize))
        .split_for_parts();
    let router = router.with_state(app.clone());
    let auth = StaticAuthenticator::new()
        .bearer(BOB, Principal::new("bob"))
        .bearer(EVE, Principal::new("eve"))
        .bearer(CAROL, Principal::new("carol").with_scopes(["approve"]));
    let halo = HaloLayer::builder(api)
        .authenticator(auth)
        .approver(ApprovalQueue::new("approve"))
        .approval_limits(ApprovalLimits::default().expire_after(Duration::from_secs(30)))
        .build()
        .expect("valid metadata");
    let limits = TaskLimits::default()
        .grace(Duration::from_millis(200))
        .per_caller(2);
    let mcp = McpService::builder(&halo, router.clone())
        .task_limits(limits)
        .build();
    let server = spawn(router.layer(halo).nest_service("/mcp", mcp)).await;
    (server, app)
}

/// A client that declares the Tasks extension (or not).
#[derive(Clone)]
struct Client {
    tasks: bool,
}

impl ClientHandler for Client {
    fn get_info(&self) -> ClientConfig {
        let capabilities = match self.tasks {
            true => ClientCapabilities::builder().enable_tasks().build(),
            false => ClientCapabilities::default(),
        };
        ClientConfig::new(capabilities, Implementation::new("tasks-test", "1.0.0"))
    }
}

type Session = RunningService<RoleClient, Client>;

/// An rmcp client of `/mcp` at `server`, as the holder of `token`.
async fn connect(server: &TestServer, token: &str, tasks: bool) -> Session {
    let mut headers = HeaderMap::new();
    let bearer = HeaderValue::from_str(&format!("Bearer {token}")).unwrap();
    headers.insert(reqwest::header::AUTHORIZATION, bearer);
    let http = reqwest::Client::builder()
        .default_headers(headers)
        .build()
        .unwrap();
    let config = StreamableHttpClientTransportConfig::with_uri(server.url("/mcp"));
    let transport = StreamableHttpClientTransport::with_client(http, config);
    let modern = ClientLifecycleMode::Discover {
        preferred_versions: vec![ProtocolVersion::V_2026_07_28],
    };
    Client { tasks }
        .serve_with_lifecycle(transport, modern)
        .await
        .expect("an MCP 2026-07-28 session over HTTP")
}

/// Calls `name` once, without following anything: the response as it came.
async fn call_once(session: &Session, name: &str, args: Value) -> CallToolResponse {
    let Value::Object(args) = args else {
        panic!("arguments are an object")
    };
    let params = CallToolRequestParams::new(name.to_owned()).with_arguments(args);
    session
        .peer()
        .call_tool_once(params)
        .await
        .unwrap_or_else(|e| panic!("calling {name}: {e}"))
}

/// The task a call answered with.
fn created(response: CallToolResponse) -> CreateTaskResult {
    match response {
        CallToolResponse::Task(task) => task,
        other => panic!("not a task: {other:?}"),
    }
}

async fn get(session: &Session, task_id: &str) -> Result<DetailedTask, rmcp::ServiceError> {
    let params = GetTaskParams::new(task_id.to_owned());
    session.peer().get_task(params).await.map(|got| got.task)
}

async fn cancel(session: &Session, task_id: &str) -> Result<(), rmcp::ServiceError> {
    let params = CancelTaskParams::new(task_id.to_owned());
    session.peer().cancel_task(params).await
}

/// `tasks/get` until the task is no longer `working`, for ten seconds at most.
async fn settled(session: &Session, task_id: &str) -> DetailedTask {
    for _ in 0..200 {
        let task = get(session, task_id).await.expect("the task");
        if task.status() != TaskStatus::Working {
            return task;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("task {task_id} stayed working");
}

/// The JSON-RPC error of a failed request: its code and message.
fn rpc_error(error: rmcp::ServiceError) -> (i32, String) {
    match error {
        rmcp::ServiceError::McpError(error) => (error.code.0, error.message.into_owned()),
        other => panic!("not a JSON-RPC error: {other}"),
    }
}

/// Carol decides approval `id` over HTTP.
async fn carol_decides(server: &TestServer, id: &str, action: &str, body: Value) -> StatusCode {
    let url = server.url(&format!("/.well-known/halo/approvals/{id}/{action}"));
    let answer = reqwest::Client::new()
        .post(url)
        .bearer_auth(CAROL)
        .json(&body)
        .send()
        .await
        .expect("an answer");
    answer.status()
}

/// Approval `id` as Bob reads it over HTTP.
async fn bobs_approval(server: &TestServer, id: &str) -> Value {
    let url = server.url(&format!("/.well-known/halo/approvals/{id}"));
    let request = reqwest::Client::new().get(url).bearer_auth(BOB);
    halo_tests::json::fetch(request).await
}

fn refund_args() -> Value {
    json!({"id": "ch_1", "amount": 20})
}

/// Bob's refund, held: his session and its task.
async fn held_refund(server: &TestServer) -> (Session, CreateTaskResult) {
    let bob = connect(server, BOB, true).await;
    let task = created(call_once(&bob, "refund", refund_args()).await);
    (bob, task)
}

/// The approval a held call's task names.
fn approval_of(task: &CreateTaskResult) -> String {
    let id = task.task.task_id.strip_prefix("approval-");
    id.expect("an approval's task").to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_held_call_is_a_task_that_completes_once_approved_and_runs_once() {
    let (server, app) = payments().await;
    let (bob, task) = held_refund(&server).await;
    assert_eq!(task.task.status, TaskStatus::Working);
    assert!(task.task.poll_interval_ms.is_some_and(|ms| ms > 0));
    assert!(task.task.ttl_ms.is_some_and(|ms| ms >= 30_000));
    let id = approval_of(&task);
    let message = task.task.status_message.clone().expect("a message");
    assert!(
        message.contains(&format!("waiting for approval {id} of refund")),
        "{message}"
    );
    assert!(
        message.contains(&format!("/.well-known/halo/approvals/{id}")),
        "{message}"
    );
    let read = get(&bob, &task.task.task_id).await.expect("the task");
    assert_eq!(read.status(), TaskStatus::Working);
    assert_eq!(app.runs.count(), 0);

    let decided = carol_decides(&server, &id, "approve", json!({"reason": "fine"})).await;
    assert_eq!(decided, StatusCode::OK);
    let done = settled(&bob, &task.task.task_id).await;
    let TaskPayload::Completed { result } = &done.payload else {
        panic!("not completed: {done:?}")
    };
    assert_eq!(result["isError"], false, "{result:?}");
    assert_eq!(
        result["structuredContent"],
        json!({"refund": "ch_1", "amount": 20, "run": 1})
    );
    // Read again, it is the same result: the call ran once.
    let again = get(&bob, &task.task.task_id).await.expect("the task");
    assert_eq!(again, done);
    assert_eq!(app.runs.count(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_denied_held_call_is_a_failed_task_saying_why() {
    let (server, app) = payments().await;
    let (bob, task) = held_refund(&server).await;
    let id = approval_of(&task);
    let decided = carol_decides(&server, &id, "deny", json!({"reason": "disputed"})).await;
    assert_eq!(decided, StatusCode::OK);
    let failed = settled(&bob, &task.task.task_id).await;
    let TaskPayload::Failed { error } = &failed.payload else {
        panic!("not failed: {failed:?}")
    };
    assert_eq!(error["code"], halo_protocol::NOT_RUN);
    assert_eq!(
        error["message"],
        format!("approval {id} was denied by carol: disputed; the call did not run")
    );
    assert_eq!(error["data"]["status"], 403);
    assert_eq!(app.runs.count(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_a_held_task_withdraws_its_approval() {
    let (server, app) = payments().await;
    let (bob, task) = held_refund(&server).await;
    let id = approval_of(&task);
    cancel(&bob, &task.task.task_id).await.expect("cancelled");
    // Withdrawn, as `DELETE` of the approval does it: by Bob, and nobody can approve it now.
    let approval = bobs_approval(&server, &id).await;
    assert_eq!(approval["state"], "cancelled", "{approval}");
    assert_eq!(approval["decided_by"], "bob", "{approval}");
    let read = get(&bob, &task.task.task_id).await.expect("the task");
    assert_eq!(read.status(), TaskStatus::Cancelled);
    let late = carol_decides(&server, &id, "approve", json!({})).await;
    assert_eq!(late, StatusCode::CONFLICT);
    // A second cancel is refused: the task is over.
    let (code, message) = rpc_error(cancel(&bob, &task.task.task_id).await.unwrap_err());
    assert_eq!(code, -32602);
    assert!(message.contains("it is cancelled"), "{message}");
    assert_eq!(app.runs.count(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_callers_task_is_not_found_as_an_unknown_one_is() {
    let (server, app) = payments().await;
    let (_bob, task) = held_refund(&server).await;
    let id = approval_of(&task);
    let task_id = task.task.task_id;
    let eve = connect(&server, EVE, true).await;
    let carol = connect(&server, CAROL, true).await;
    let unknown = rpc_error(get(&eve, "approval-0000").await.unwrap_err());
    assert_eq!(unknown.0, -32602);
    for (session, who) in [(&eve, "eve"), (&carol, "carol, an approver")] {
        let (code, message) = rpc_error(get(session, &task_id).await.unwrap_err());
        assert_eq!(code, -32602, "{who}");
        assert_eq!(
            message,
            unknown.1.replace("approval-0000", &task_id),
            "{who}"
        );
        let refused = rpc_error(cancel(session, &task_id).await.unwrap_err());
        assert_eq!(refused, (code, message), "{who}");
    }
    // Bob's approval is untouched.
    assert_eq!(bobs_approval(&server, &id).await["state"], "pending");
    for nothing in [
        "",
        "approval-",
        "approval-../x",
        "1b4e28ba-2fa1-11d2-883f-0016d3cca427",
    ] {
        let (code, _) = rpc_error(get(&eve, nothing).await.unwrap_err());
        assert_eq!(code, -32602, "{nothing:?}");
    }
    assert_eq!(app.runs.count(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_without_tasks_still_waits_for_the_decision() {
    let (server, app) = payments().await;
    let bob = connect(&server, BOB, false).await;
    let waiting = tokio::spawn(async move { call_once(&bob, "refund", refund_args()).await });
    let pending = async || {
        let approvals = reqwest::Client::new().get(server.url("/.well-known/halo/approvals"));
        let listed = halo_tests::json::fetch(approvals.bearer_auth(CAROL)).await;
        listed["approvals"][0]["id"].as_str().map(str::to_owned)
    };
    let mut id = None;
    for _ in 0..200 {
        id = pending().await;
        if id.is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let id = id.expect("the call is held for approval");
    assert_eq!(
        carol_decides(&server, &id, "approve", json!({})).await,
        StatusCode::OK
    );
    let CallToolResponse::Complete(result) = waiting.await.expect("the call ends") else {
        panic!("not a result")
    };
    assert_eq!(result.is_error, Some(false), "{result:?}");
    assert_eq!(app.runs.count(), 1);
    // Nor can it read tasks: it did not declare the extension.
    let bob = connect(&server, BOB, false).await;
    let (code, _) = rpc_error(get(&bob, &format!("approval-{id}")).await.unwrap_err());
    assert_eq!(code, -32021);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_streamed_call_is_a_task_with_its_steps_and_result() {
    let (server, app) = payments().await;
    let bob = connect(&server, BOB, true).await;
    let task = created(call_once(&bob, "summarize", json!({})).await);
    let task_id = task.task.task_id.clone();
    assert_eq!(task.task.status, TaskStatus::Working);
    app.gate.arrivals(1).await;
    let read = get(&bob, &task_id).await.expect("the task");
    assert_eq!(read.status(), TaskStatus::Working);
    assert_eq!(
        read.task.status_message.as_deref(),
        Some("step 1 of 2: reading the ledger")
    );
    // Nobody else reads or cancels it.
    let eve = connect(&server, EVE, true).await;
    assert_eq!(rpc_error(get(&eve, &task_id).await.unwrap_err()).0, -32602);
    assert_eq!(
        rpc_error(cancel(&eve, &task_id).await.unwrap_err()).0,
        -32602
    );

    app.gate.let_through(1);
    let done = settled(&bob, &task_id).await;
    let TaskPayload::Completed { result } = &done.payload else {
        panic!("not completed: {done:?}")
    };
    assert_eq!(result["structuredContent"], json!({"total": 42}));
    assert_eq!(result["isError"], false);
    assert_eq!(app.drops.count(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_a_streamed_task_cancels_its_call() {
    let (server, app) = payments().await;
    let bob = connect(&server, BOB, true).await;
    let task = created(call_once(&bob, "summarize", json!({})).await);
    app.gate.arrivals(1).await;
    cancel(&bob, &task.task.task_id).await.expect("cancelled");
    let over = settled(&bob, &task.task.task_id).await;
    assert_eq!(over.status(), TaskStatus::Cancelled, "{over:?}");
    // The handler was dropped before it finished.
    app.drops.wait(1).await;
    let (code, message) = rpc_error(cancel(&bob, &task.task.task_id).await.unwrap_err());
    assert_eq!(code, -32602);
    assert!(message.contains("it is cancelled"), "{message}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streamed_calls_within_the_grace_or_over_the_cap_are_answered_as_before() {
    let (server, app) = payments().await;
    let bob = connect(&server, BOB, true).await;
    // Done within the grace: the result itself.
    app.gate.let_through(1);
    let CallToolResponse::Complete(result) = call_once(&bob, "summarize", json!({})).await else {
        panic!("not a result")
    };
    assert_eq!(result.structured_content, Some(json!({"total": 42})));
    // Two tasks at most per caller: a third call waits for its result.
    let first = created(call_once(&bob, "summarize", json!({})).await);
    let second = created(call_once(&bob, "summarize", json!({})).await);
    app.gate.arrivals(3).await;
    let third = tokio::spawn(async move { call_once(&bob, "summarize", json!({})).await });
    app.gate.arrivals(4).await;
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert!(!third.is_finished(), "the third call waits");
    app.gate.let_through(3);
    let CallToolResponse::Complete(result) = third.await.expect("the call ends") else {
        panic!("not a result")
    };
    assert_eq!(result.structured_content, Some(json!({"total": 42})));
    assert_ne!(first.task.task_id, second.task.task_id);
}

/// One JSON-RPC request to `/mcp` over plain HTTP, as a 2026-07-28 client that declared the
/// Tasks extension: the body of the answer.
async fn raw(server: &TestServer, method: &str, params: Value) -> Value {
    let mut params = params;
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {
            "extensions": {"io.modelcontextprotocol/tasks": {}}
        },
        "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"}
    });
    let mut request = reqwest::Client::new()
        .post(server.url("/mcp"))
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", method)
        .bearer_auth(BOB);
    // The 2026-07-28 transport names the task a request is about in a header too.
    if let Some(task) = params["taskId"].as_str() {
        request = request.header("mcp-name", task);
    }
    let response = request
        .json(&json!({"jsonrpc": "2.0", "id": 9, "method": method, "params": params}))
        .send()
        .await
        .expect("an answer");
    let text = response.text().await.expect("a body");
    serde_json::from_str(&text).unwrap_or_else(|_| panic!("not JSON: {text}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_task_requests_are_json_rpc_errors() {
    let (server, _app) = payments().await;
    for (method, params) in [
        ("tasks/get", json!({})),
        ("tasks/get", json!({"taskId": 7})),
        ("tasks/cancel", json!({"taskId": null})),
        ("tasks/get", json!({"taskId": "approval-nothing"})),
        ("tasks/cancel", json!({"taskId": "x".repeat(10_000)})),
        (
            "tasks/update",
            json!({"taskId": "approval-nothing", "inputResponses": {}}),
        ),
    ] {
        let answer = raw(&server, method, params.clone()).await;
        assert_eq!(
            answer["error"]["code"], -32602,
            "{method} {params}: {answer}"
        );
        assert!(answer.get("result").is_none(), "{answer}");
    }
}
