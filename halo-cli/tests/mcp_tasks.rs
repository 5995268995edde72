//! MCP Tasks (`io.modelcontextprotocol/tasks`) through `halo mcp` over stdio, driven by
//! rmcp's client declaring the extension against the bookstore on loopback: a refund held for
//! approval answers with a task that the administrator's decision over HTTP completes (the
//! refund made once) or fails; `tasks/cancel` withdraws it; a task id this `halo mcp` did
//! not give, or an unknown or malformed one, is a JSON-RPC error. A summary of many chapters
//! (a streamed call) outlasting `--task-grace` is a task showing its steps, then its result
//! (past 16 at once, a call is answered as before);
//! `tasks/cancel` cancels it on the bookstore; a short one is answered directly.

use crate::common;

use halo_client::{ApprovalState, Client as Api, Credential};
use halo_tests::mcp::paid_charge;
use halo_tests::{TestServer, spawn};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CancelTaskParams, ClientCapabilities, ClientConfig,
    CreateTaskResult, DetailedTask, GetTaskParams, Implementation, ProtocolVersion, TaskPayload,
    TaskStatus,
};
use rmcp::service::RunningService;
use rmcp::{ClientHandler, ClientLifecycleMode, ClientServiceExt as _, RoleClient, ServiceError};
use serde_json::{Value, json};

/// A client that declares the Tasks extension.
#[derive(Clone)]
struct Tasking;

impl ClientHandler for Tasking {
    fn get_info(&self) -> ClientConfig {
        let capabilities = ClientCapabilities::builder().enable_tasks().build();
        ClientConfig::new(capabilities, Implementation::new("tasks-test", "1.0.0"))
    }
}

type Session = RunningService<RoleClient, Tasking>;

/// `halo mcp` of the bookstore at `server` as its administrator, with a client declaring the
/// Tasks extension over MCP 2026-07-28.
async fn connect(server: &TestServer) -> Session {
    connect_with(server, &[]).await
}

/// As [`connect`], with more options of `halo mcp`.
async fn connect_with(server: &TestServer, options: &[&str]) -> Session {
    let url = server.base_url();
    let mut args = vec!["--bearer", "demo-admin", "mcp", &url];
    args.extend_from_slice(options);
    let modern = ClientLifecycleMode::Discover {
        preferred_versions: vec![ProtocolVersion::V_2026_07_28],
    };
    Tasking
        .serve_with_lifecycle(common::halo_mcp(&args), modern)
        .await
        .expect("an MCP 2026-07-28 session with halo mcp")
}

/// The administrator, over HTTP.
fn admin(server: &TestServer) -> Api {
    Api::builder(server.base_url())
        .credential(Credential::bearer("demo-admin"))
        .build()
        .expect("a client")
}

/// A refund of a fresh charge, held: its task.
async fn held_refund(server: &TestServer, session: &Session) -> CreateTaskResult {
    let charge = paid_charge(&server.base_url()).await;
    let args = json!({"id": charge, "reason": "customer returned the book"});
    let Value::Object(args) = args else {
        unreachable!("an object")
    };
    let params = CallToolRequestParams::new("refund_payment").with_arguments(args);
    match session.peer().call_tool_once(params).await.expect("called") {
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

/// The JSON-RPC error code of a failed request.
fn code(error: rmcp::ServiceError) -> i32 {
    match error {
        rmcp::ServiceError::McpError(error) => error.code.0,
        other => panic!("not a JSON-RPC error: {other}"),
    }
}

fn approval_of(task: &CreateTaskResult) -> &str {
    task.task
        .task_id
        .strip_prefix("approval-")
        .expect("an approval's task")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn held_refunds_are_tasks_completed_failed_or_withdrawn_through_halo_mcp() {
    let server = spawn(bookstore::app()).await;
    let session = connect(&server).await;
    let api = admin(&server);

    // Approved over HTTP: completed, with the refund, made once.
    let task = held_refund(&server, &session).await;
    assert_eq!(task.task.status, TaskStatus::Working);
    let id = approval_of(&task).to_owned();
    let message = task.task.status_message.clone().unwrap_or_default();
    assert!(
        message.contains(&format!("/.well-known/halo/approvals/{id}")),
        "{message}"
    );
    let working = get(&session, &task.task.task_id).await.expect("the task");
    assert_eq!(working.status(), TaskStatus::Working);
    api.approve(&id).await.expect("approved");
    let done = get(&session, &task.task.task_id).await.expect("the task");
    let TaskPayload::Completed { result } = &done.payload else {
        panic!("not completed: {done:?}")
    };
    assert_eq!(result["isError"], false, "{result:?}");
    assert_eq!(result["structuredContent"]["id"], "re_1");

    // Denied: failed, saying by whom and why.
    let task = held_refund(&server, &session).await;
    let id = approval_of(&task).to_owned();
    api.deny(&id, Some("disputed")).await.expect("denied");
    let failed = get(&session, &task.task.task_id).await.expect("the task");
    let TaskPayload::Failed { error } = &failed.payload else {
        panic!("not failed: {failed:?}")
    };
    assert_eq!(error["code"], halo_client::protocol::NOT_RUN);
    assert_eq!(error["data"]["status"], 403);
    let said = error["message"].as_str().unwrap_or_default();
    assert!(
        said.contains("was denied by") && said.contains("disputed"),
        "{said}"
    );

    // Withdrawn by tasks/cancel: the approval says so over HTTP; a second cancel is refused.
    let task = held_refund(&server, &session).await;
    let id = approval_of(&task).to_owned();
    cancel(&session, &task.task.task_id)
        .await
        .expect("withdrawn");
    assert_eq!(
        api.approval(&id).await.expect("the approval").state,
        ApprovalState::Cancelled
    );
    let read = get(&session, &task.task.task_id).await.expect("the task");
    assert_eq!(read.status(), TaskStatus::Cancelled);
    assert_eq!(
        code(cancel(&session, &task.task.task_id).await.unwrap_err()),
        -32602
    );
    session.cancel().await.expect("the session ends");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_this_halo_mcp_did_not_give_is_not_found() {
    let server = spawn(bookstore::app()).await;
    let session = connect(&server).await;
    let task = held_refund(&server, &session).await;
    let id = approval_of(&task).to_owned();
    // Another `halo mcp`, with the same credentials: not its task.
    let other = connect(&server).await;
    assert_eq!(
        code(get(&other, &task.task.task_id).await.unwrap_err()),
        -32602
    );
    assert_eq!(
        code(cancel(&other, &task.task.task_id).await.unwrap_err()),
        -32602
    );
    let pending = admin(&server).approval(&id).await.expect("the approval");
    assert_eq!(pending.state, ApprovalState::Pending);
    for unknown in ["", "approval-", "approval-../x", "approval-nothing", "7"] {
        assert_eq!(
            code(get(&session, unknown).await.unwrap_err()),
            -32602,
            "{unknown:?}"
        );
    }
    other.cancel().await.expect("the session ends");
    session.cancel().await.expect("the session ends");
}

/// A summary of `chapters` chapters of book 1 (the bookstore takes 40 ms a chapter).
async fn summarize(session: &Session, chapters: u32) -> CallToolResponse {
    let Value::Object(args) = json!({"id": 1, "chapters": chapters}) else {
        unreachable!("an object")
    };
    let params = CallToolRequestParams::new("summarize_book").with_arguments(args);
    session.peer().call_tool_once(params).await.expect("called")
}

/// `halo mcp` of the bookstore making a task of every streamed call (`--task-grace 0`).
async fn at_once(server: &TestServer) -> Session {
    connect_with(server, &["--task-grace", "0"]).await
}

/// A summary of all 20 chapters (800 ms) through [`at_once`]: the session, and the task.
async fn long_summary(server: &TestServer) -> (Session, CreateTaskResult) {
    let session = at_once(server).await;
    match summarize(&session, 20).await {
        CallToolResponse::Task(task) => (session, task),
        other => panic!("not a task: {other:?}"),
    }
}

/// Reads task `task_id` until `done` says it is as awaited: the task then.
async fn until(
    session: &Session,
    task_id: &str,
    done: impl Fn(&DetailedTask) -> bool,
) -> DetailedTask {
    for _ in 0..500 {
        let task = get(session, task_id).await.expect("the task");
        if done(&task) {
            return task;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    panic!("task {task_id} never got there")
}

fn stepping(task: &DetailedTask) -> bool {
    task.status() == TaskStatus::Working
        && task
            .task
            .status_message
            .as_deref()
            .is_some_and(|message| message.starts_with("step "))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_streamed_call_is_a_task_with_its_steps_then_its_result() {
    let server = spawn(bookstore::app()).await;
    let (session, task) = long_summary(&server).await;
    let task_id = task.task.task_id.clone();
    assert_eq!(task.task.status, TaskStatus::Working);
    assert_eq!(task.task.poll_interval_ms, Some(1_000));
    assert_eq!(task.task.ttl_ms, Some(60 * 60 * 1000));
    let working = until(&session, &task_id, stepping).await;
    let message = working.task.status_message.unwrap_or_default();
    assert!(message.contains(" of 20: "), "{message}");

    // Another `halo mcp` with the same credentials does not know it.
    let other = at_once(&server).await;
    assert_eq!(code(get(&other, &task_id).await.unwrap_err()), -32602);
    assert_eq!(code(cancel(&other, &task_id).await.unwrap_err()), -32602);
    other.cancel().await.expect("the session ends");

    let done = until(&session, &task_id, |task| task.status().is_terminal()).await;
    let TaskPayload::Completed { result } = &done.payload else {
        panic!("not completed: {done:?}")
    };
    assert_eq!(result["isError"], false, "{result:?}");
    assert_eq!(result["structuredContent"]["book_id"], 1);
    let chapters = result["structuredContent"]["chapters"]
        .as_array()
        .expect("chapters");
    assert_eq!(chapters.len(), 20);
    // Over: it cannot be cancelled.
    let refused = cancel(&session, &task_id).await.unwrap_err();
    assert_eq!(code(refused), -32602);
    session.cancel().await.expect("the session ends");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_a_streamed_task_cancels_its_call_on_the_api() {
    let server = spawn(bookstore::app()).await;
    let (session, task) = long_summary(&server).await;
    let task_id = task.task.task_id.clone();
    until(&session, &task_id, stepping).await;
    cancel(&session, &task_id).await.expect("cancelled");
    // `cancelled` only once the bookstore ended the call's stream with its `409`.
    let over = until(&session, &task_id, |task| task.status().is_terminal()).await;
    assert_eq!(over.status(), TaskStatus::Cancelled, "{over:?}");
    let ServiceError::McpError(refused) = cancel(&session, &task_id).await.unwrap_err() else {
        panic!("not a JSON-RPC error")
    };
    assert_eq!(refused.code.0, -32602);
    assert!(refused.message.contains("it is cancelled"), "{refused:?}");
    session.cancel().await.expect("the session ends");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_streamed_call_within_the_grace_is_answered_with_its_result() {
    let server = spawn(bookstore::app()).await;
    // The default grace: 2 seconds, for a call of 40 ms.
    let session = connect(&server).await;
    let CallToolResponse::Complete(result) = summarize(&session, 1).await else {
        panic!("not a result")
    };
    assert_eq!(result.is_error, Some(false), "{result:?}");
    let summary = result.structured_content.expect("the summary");
    assert_eq!(summary["chapters"].as_array().map(Vec::len), Some(1));
    for unknown in [
        "1b4e28ba-2fa1-11d2-883f-0016d3cca427",
        "step",
        "approval-1b4e",
    ] {
        assert_eq!(
            code(cancel(&session, unknown).await.unwrap_err()),
            -32602,
            "{unknown:?}"
        );
    }
    session.cancel().await.expect("the session ends");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_its_bound_of_tasks_a_streamed_call_is_answered_as_before() {
    let server = spawn(bookstore::app()).await;
    let session = at_once(&server).await;
    // The one client is one caller, who keeps at most 16 tasks.
    let mut tasks = Vec::new();
    for _ in 0..16 {
        match summarize(&session, 20).await {
            CallToolResponse::Task(task) => tasks.push(task.task.task_id),
            other => panic!("not a task: {other:?}"),
        }
    }
    let CallToolResponse::Complete(result) = summarize(&session, 2).await else {
        panic!("the seventeenth is not answered with its result")
    };
    assert_eq!(result.is_error, Some(false), "{result:?}");
    let summary = result.structured_content.expect("the summary");
    assert_eq!(summary["chapters"].as_array().map(Vec::len), Some(2));
    // The sixteen are still there, and end.
    for task_id in &tasks {
        let done = until(&session, task_id, |task| task.status().is_terminal()).await;
        assert_eq!(done.status(), TaskStatus::Completed, "{done:?}");
    }
    session.cancel().await.expect("the session ends");
}
