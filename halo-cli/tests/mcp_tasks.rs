//! MCP Tasks (`io.modelcontextprotocol/tasks`) through `halo mcp` over stdio, driven by
//! rmcp's client declaring the extension against the bookstore on loopback: a refund held for
//! approval answers with a task that the administrator's decision over HTTP completes (the
//! refund made once) or fails; `tasks/cancel` withdraws it; a task id this `halo mcp` did
//! not give, or an unknown or malformed one, is a JSON-RPC error.

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
use rmcp::{ClientHandler, ClientLifecycleMode, ClientServiceExt as _, RoleClient};
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
    let args = ["--bearer", "demo-admin", "mcp", &server.base_url()];
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
