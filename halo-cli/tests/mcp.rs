//! `halo mcp` over stdio, driven by real MCP clients: rmcp's (Rust) and the official Python
//! SDK's, against the bookstore served on loopback; tool-list changes announced when a
//! server's manifest changes. A refund, which waits for approval, is confirmed by a client
//! that can be asked (an `input_required` result for rmcp, `elicitation/create` for the
//! Python SDK) and waited for by one that cannot until the administrator approves it.

use crate::common;

use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use axum::Json;
use axum::http::header::{CONTENT_TYPE, ETAG, IF_NONE_MATCH};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use halo_tests::mcp::{
    Confirming, assert_chapter_progress, call, call_through, next_notes, paid_charge, search, text,
};
use halo_tests::{FastApiServer, TestServer, interop_script, python, run_to_end, spawn};
use rmcp::model::{
    CallToolRequestParams, ClientConfig, ElicitationAction, ProgressNotificationParam, Tool,
};
use rmcp::service::{NotificationContext, RunningService};
use rmcp::{ClientHandler, RoleClient, ServiceExt as _};
use serde_json::{Value, json};
use tokio::process::Command;
use tokio::sync::mpsc;

/// A Python start, an SDK import and a few calls; a hang fails the run instead.
const SCRIPT_TIMEOUT: Duration = Duration::from_secs(120);

/// What the server told the client besides answers.
#[derive(Debug)]
enum Note {
    /// `notifications/tools/list_changed`.
    ListChanged,
    /// `notifications/progress`.
    Progress(ProgressNotificationParam),
}

/// An MCP client that reports the server's notifications.
#[derive(Clone)]
struct Listener(mpsc::UnboundedSender<Note>);

impl ClientHandler for Listener {
    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        let _ = self.0.send(Note::ListChanged);
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let _ = self.0.send(Note::Progress(params));
    }

    fn get_info(&self) -> ClientConfig {
        ClientConfig::default()
    }
}

/// `halo ARGS...` as an MCP server on a child process, with an rmcp client connected.
async fn connect(
    args: &[&str],
) -> (
    RunningService<RoleClient, Listener>,
    mpsc::UnboundedReceiver<Note>,
) {
    let (sender, changes) = mpsc::unbounded_channel();
    let client = Listener(sender)
        .serve(common::halo_mcp(args))
        .await
        .expect("an MCP session with halo mcp");
    (client, changes)
}

fn tool<'a>(tools: &'a [Tool], name: &str) -> &'a Tool {
    tools
        .iter()
        .find(|tool| tool.name == name)
        .unwrap_or_else(|| panic!("no tool {name} in {:?}", names(tools)))
}

fn names(tools: &[Tool]) -> Vec<&str> {
    tools.iter().map(|tool| tool.name.as_ref()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reader_lists_and_calls_bookstore_tools() {
    let server = spawn(bookstore::app()).await;
    let (client, _) = connect(&["--bearer", "demo-reader", "mcp", &server.base_url()]).await;

    let tools = client.list_all_tools().await.expect("tools/list");
    let get_book = tool(&tools, "get_book");
    let annotations = get_book.annotations.as_ref().expect("annotations");
    assert_eq!(annotations.read_only_hint, Some(true));
    assert_eq!(annotations.idempotent_hint, Some(true));
    let description = get_book.description.as_deref().unwrap_or_default();
    assert!(
        description.contains("\n\n"),
        "why, then description: {description}"
    );
    assert_eq!(get_book.input_schema["required"], json!(["id"]));
    assert!(get_book.output_schema.is_some());
    assert!(
        !names(&tools).contains(&"create_book"),
        "a reader does not see writes: {:?}",
        names(&tools)
    );

    let found = call(&client, "get_book", json!({"id": 1})).await;
    assert_eq!(found.is_error, Some(false));
    assert_eq!(
        found.structured_content.as_ref().expect("structured")["title"],
        "Dune"
    );
    assert!(text(&found).contains("\"Dune\""));

    // The server's validation answers 400 for a path value, as axum's `Path` would; the model
    // gets the problem, not a protocol error.
    let invalid = call(&client, "get_book", json!({"id": "abc"})).await;
    assert_eq!(invalid.is_error, Some(true));
    let problem = invalid.structured_content.as_ref().expect("the problem");
    assert_eq!(problem["status"], 400);
    assert_eq!(problem["errors"][0]["pointer"], "/id");
    let problem_text: Value = serde_json::from_str(&text(&invalid)).expect("problem JSON");
    assert_eq!(&problem_text, problem);

    let missing = call(&client, "get_book", json!({"id": 999})).await;
    assert_eq!(missing.is_error, Some(true));
    assert_eq!(missing.structured_content.as_ref().unwrap()["status"], 404);

    // Arguments that cannot make a request: never sent, a 400 problem worded as `/mcp` and
    // agents word it.
    let unplaced = call(&client, "get_book", json!({})).await;
    assert_eq!(unplaced.is_error, Some(true));
    let problem = unplaced.structured_content.as_ref().expect("a problem");
    assert_eq!(problem["status"], 400, "{problem}");
    assert_eq!(
        problem["detail"],
        "invalid arguments: missing path parameter `id`"
    );

    // A tool that does not exist is a protocol error.
    let unknown = client
        .call_tool(CallToolRequestParams::new("no_such_tool"))
        .await
        .expect_err("an unknown tool");
    assert!(unknown.to_string().contains("no_such_tool"), "{unknown}");

    client.cancel().await.expect("the session ends");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_carry_hints_and_credentials() {
    let server = spawn(bookstore::app()).await;
    let (client, _) = connect(&[
        "--bearer",
        "demo-admin",
        "mcp",
        &server.base_url(),
        "--tags",
        "books",
    ])
    .await;
    let tools = client.list_all_tools().await.expect("tools/list");
    assert!(
        names(&tools).iter().all(|name| name.contains("book")),
        "{:?}",
        names(&tools)
    );
    let hints = |name: &str| tool(&tools, name).annotations.clone().expect("annotations");
    let delete = hints("delete_book");
    assert_eq!(delete.read_only_hint, Some(false));
    assert_eq!(delete.destructive_hint, Some(true), "reversible = false");
    assert_eq!(delete.idempotent_hint, Some(true));
    let create = hints("create_book");
    assert_eq!(create.destructive_hint, Some(false), "reversible = true");
    assert_eq!(create.idempotent_hint, Some(false));

    // The admin's token goes with the call: the book is created.
    let created = call(
        &client,
        "create_book",
        json!({"title": "The Dispossessed", "author": "Ursula K. Le Guin",
               "isbn": "9780061054884", "price": 9.99, "published_year": 1974, "pages": 387}),
    )
    .await;
    assert_eq!(created.is_error, Some(false), "{}", text(&created));
    let id = created.structured_content.as_ref().expect("the new book")["id"].clone();
    let read = call(&client, "get_book", json!({ "id": id })).await;
    assert_eq!(
        read.structured_content.as_ref().unwrap()["title"],
        "The Dispossessed"
    );
    // A 204 without a body is still a result the model can read.
    let deleted = call(&client, "delete_book", json!({ "id": id })).await;
    assert_eq!(deleted.is_error, Some(false));
    assert_eq!(text(&deleted), "status 204, no content");
    client.cancel().await.expect("the session ends");
}

#[test]
fn nothing_but_mcp_reaches_stdout() {
    // A port nothing listens on any more: startup fails, on stderr only.
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("a free loopback port");
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_halo"))
        .args(["--json", "mcp", &format!("http://{closed}")])
        .env_remove("HALO_BEARER")
        .stdin(Stdio::null())
        .output()
        .expect("run halo");
    assert_eq!(output.status.code(), Some(2));
    assert!(output.stdout.is_empty(), "{:?}", output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.starts_with("halo: "), "{stderr}");
}

/// A HALO server whose tools change on demand: `ping`, then `ping` and `pong`. It counts the
/// discovery requests it answered with `304`.
#[derive(Clone, Default)]
struct Changing {
    version: Arc<AtomicUsize>,
    not_modified: Arc<AtomicUsize>,
}

impl Changing {
    fn etag(&self) -> String {
        format!("\"v{}\"", self.version.load(Ordering::SeqCst))
    }

    fn answer(&self, headers: &HeaderMap, body: Value) -> Response {
        let etag = self.etag();
        if headers.get(IF_NONE_MATCH).and_then(|v| v.to_str().ok()) == Some(etag.as_str()) {
            self.not_modified.fetch_add(1, Ordering::SeqCst);
            return (StatusCode::NOT_MODIFIED, [(ETAG, etag)]).into_response();
        }
        (
            [
                (CONTENT_TYPE, "application/llm+json".to_owned()),
                (ETAG, etag),
            ],
            body.to_string(),
        )
            .into_response()
    }

    async fn start(&self) -> TestServer {
        let manifest = {
            let this = self.clone();
            move |headers: HeaderMap| async move {
                let mut tools = vec![json!({"url": "/ping", "method": "GET", "name": "ping",
                                            "description": "Ping", "tags": ["read"]})];
                if this.version.load(Ordering::SeqCst) > 0 {
                    tools.push(json!({"url": "/pong", "method": "GET", "name": "pong",
                                      "description": "Pong", "tags": ["read"]}));
                }
                this.answer(
                    &headers,
                    json!({"api": "Changing", "version": "1", "tools": tools}),
                )
            }
        };
        let schema = |name: &'static str| {
            let this = self.clone();
            move |headers: HeaderMap| async move {
                let url = format!("/{name}");
                this.answer(
                    &headers,
                    json!([{"description": name, "call": {"method": "GET", "url": url}}]),
                )
            }
        };
        let app = axum::Router::new()
            .route("/", axum::routing::options(manifest))
            .route(
                "/ping",
                get(|| async { Json(json!({"pong": true})) }).options(schema("ping")),
            )
            .route(
                "/pong",
                get(|| async { Json(json!({"ping": true})) }).options(schema("pong")),
            );
        spawn(app).await
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_streaming_tool_reports_its_steps_as_progress() {
    let server = spawn(bookstore::app()).await;
    let (client, mut notes) =
        connect(&["--bearer", "demo-reader", "mcp", &server.base_url()]).await;

    // rmcp's client sends a progress token with every request.
    let done = call(&client, "summarize_book", json!({"id": 1, "chapters": 3})).await;
    assert_eq!(done.is_error, Some(false), "{}", text(&done));
    let summary = done.structured_content.as_ref().expect("structured");
    assert_eq!(summary["chapters"].as_array().map(Vec::len), Some(3));

    let steps = next_notes(&mut notes, 3)
        .await
        .into_iter()
        .filter_map(|note| match note {
            Note::Progress(progress) => Some(progress),
            Note::ListChanged => None,
        })
        .collect::<Vec<_>>();
    assert_chapter_progress(&steps, 3);

    // A tool that does not stream answers without progress.
    let found = call(&client, "get_book", json!({"id": 1})).await;
    assert_eq!(found.is_error, Some(false));
    assert!(notes.try_recv().is_err(), "no progress for get_book");

    // The stream's error ends the call as an error result with the problem.
    let missing = call(&client, "summarize_book", json!({"id": 999})).await;
    assert_eq!(missing.is_error, Some(true));
    assert_eq!(missing.structured_content.as_ref().unwrap()["status"], 404);
    client.cancel().await.expect("the session ends");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_changed_manifest_is_announced() {
    let changing = Changing::default();
    let server = changing.start().await;
    let (client, mut changes) = connect(&["mcp", &server.base_url(), "--poll", "0.1"]).await;
    let tools = client.list_all_tools().await.expect("tools/list");
    assert_eq!(names(&tools), ["ping"]);

    // Unchanged, the manifest is revalidated with its entity tag, and nothing is announced.
    halo_tests::wait::eventually("conditional polls", Duration::from_secs(10), || async {
        changing.not_modified.load(Ordering::SeqCst) >= 2
    })
    .await;
    assert!(changes.try_recv().is_err(), "announced without a change");

    changing.version.store(1, Ordering::SeqCst);
    tokio::time::timeout(Duration::from_secs(10), changes.recv())
        .await
        .expect("the change is announced")
        .expect("the listener is alive");
    let tools = client.list_all_tools().await.expect("tools/list");
    assert_eq!(names(&tools), ["ping", "pong"]);
    let pong = call(&client, "pong", json!({})).await;
    assert_eq!(pong.structured_content, Some(json!({"ping": true})));
    client.cancel().await.expect("the session ends");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_python_sdk_lists_and_calls_through_halo_mcp() {
    let server = spawn(bookstore::app()).await;
    let summary = python_sdk_over_halo_mcp(
        &[
            "--call",
            "get_book",
            r#"{"id": 1}"#,
            "--call",
            "search_books",
            r#"{"q": "dune"}"#,
            "--fail",
            "get_book",
            r#"{"id": "abc"}"#,
        ],
        &["--bearer", "demo-reader", "mcp", &server.base_url()],
    )
    .await;
    assert_eq!(summary["ok"], true);
    let tools = summary["tools"].as_array().expect("tools");
    assert!(tools.iter().any(|t| t["name"] == "get_book"
        && t["annotations"]["readOnlyHint"] == true
        && t["output"] == true));
    let calls = summary["calls"].as_array().expect("calls");
    assert_eq!(calls[0]["structured"]["title"], "Dune");
    assert_eq!(calls[2]["isError"], true);
    assert_eq!(calls[2]["structured"]["errors"][0]["pointer"], "/id");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn halo_mcp_bridges_a_halo_fastapi_server() {
    // The Python reference implementation serves the API; MCP clients reach it through us.
    let server = tokio::task::spawn_blocking(FastApiServer::start)
        .await
        .expect("the server starts");
    let base = server.base_url();
    let named = |tools: &[Tool], stem: &str| -> String {
        names(tools)
            .into_iter()
            .find(|name| name.starts_with(stem))
            .unwrap_or_else(|| panic!("no {stem}* tool in {:?}", names(tools)))
            .to_owned()
    };

    let (anonymous, _) = connect(&["mcp", &base]).await;
    let tools = anonymous.list_all_tools().await.expect("tools/list");
    assert_eq!(tools.len(), 4, "{:?}", names(&tools));
    let (get_note, create_note) = (named(&tools, "get_note"), named(&tools, "create_note"));
    let hints = |name: &str| tool(&tools, name).annotations.clone().expect("annotations");
    assert_eq!(hints(&get_note).read_only_hint, Some(true));
    assert_eq!(hints(&create_note).read_only_hint, Some(false));
    // The input schema is rebuilt from halo-fastapi's description of the path parameter.
    let input = &tool(&tools, &get_note).input_schema;
    assert_eq!(input["required"], json!(["note_id"]), "{input:?}");

    let found = call(&anonymous, &get_note, json!({"note_id": 1})).await;
    assert_eq!(found.is_error, Some(false), "{}", text(&found));
    assert_eq!(found.structured_content.as_ref().unwrap()["title"], "first");
    // FastAPI's own error body comes back as the error result, for the model to read.
    let refused = call(&anonymous, &create_note, json!({"title": "t", "body": "b"})).await;
    assert_eq!(refused.is_error, Some(true));
    assert!(
        text(&refused).contains("valid bearer token"),
        "{}",
        text(&refused)
    );
    anonymous.cancel().await.expect("the session ends");

    let (writer, _) = connect(&["--bearer", FastApiServer::TOKEN, "mcp", &base]).await;
    let created = call(
        &writer,
        &create_note,
        json!({"title": "from MCP", "body": "b"}),
    )
    .await;
    assert_eq!(created.is_error, Some(false), "{}", text(&created));
    let id = created.structured_content.as_ref().unwrap()["id"].clone();
    let read = call(&writer, &get_note, json!({ "note_id": id })).await;
    assert_eq!(
        read.structured_content.as_ref().unwrap()["title"],
        "from MCP"
    );
    writer.cancel().await.expect("the session ends");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn above_the_budget_the_python_sdk_finds_tools_and_calls_them_by_name() {
    let server = spawn(bookstore::app()).await;
    let base = server.base_url();

    // Our own client first: two tools listed, a search, a call of a tool never listed.
    let reader = [
        "--bearer",
        "demo-reader",
        "mcp",
        "--tool-budget",
        "200",
        &base,
    ];
    let (client, _) = connect(&reader).await;
    let listed = client.list_tools(None).await.expect("tools/list");
    assert_eq!(names(&listed.tools), ["search_tools", "call_tool"]);
    // The bookstore's discovery is private (it has an authenticator), with a max-age.
    assert_eq!(listed.cache_scope, Some(rmcp::model::CacheScope::Private));
    assert!(listed.ttl_ms.is_some_and(|ttl| ttl > 0), "{listed:?}");
    let found = search(&client, "look up one book by its id").await;
    let answer = found.structured_content.clone().expect("structured");
    assert_eq!(answer["tools"][0]["name"], "get_book", "{answer}");
    let through = call_through(&client, "get_book", json!({"id": 1})).await;
    assert_eq!(
        through.structured_content.as_ref().unwrap()["title"],
        "Dune"
    );
    let writes = search(&client, "create a new book").await;
    assert!(
        !text(&writes).contains("\"create_book\""),
        "a reader never finds writes: {}",
        text(&writes)
    );
    client.cancel().await.expect("the session ends");

    // The official Python SDK.
    let summary = python_sdk_over_halo_mcp(
        &[
            "--find",
            "look up one book by its id",
            "get_book",
            r#"{"id": 1}"#,
        ],
        &reader,
    )
    .await;
    assert_eq!(summary["ok"], true, "{summary}");
    assert_eq!(summary["found"][0]["structured"]["title"], "Dune");

    // Against the Python reference server, which does not search: halo mcp ranks itself.
    let fastapi = tokio::task::spawn_blocking(FastApiServer::start)
        .await
        .expect("the server starts");
    let (client, _) = connect(&["mcp", "--tool-budget", "50", &fastapi.base_url()]).await;
    let listed = client.list_all_tools().await.expect("tools/list");
    assert_eq!(names(&listed), ["search_tools", "call_tool"]);
    let found = search(&client, "read one note").await;
    let answer = found.structured_content.clone().expect("structured");
    let name = answer["tools"][0]["name"]
        .as_str()
        .expect("a tool")
        .to_owned();
    assert!(name.starts_with("get_note"), "{answer}");
    let read = call(&client, &name, json!({"note_id": 1})).await;
    assert_eq!(read.is_error, Some(false), "{}", text(&read));
    assert_eq!(read.structured_content.as_ref().unwrap()["title"], "first");
    client.cancel().await.expect("the session ends");

    let summary = python_sdk_over_halo_mcp(
        &["--find", "read one note", &name, r#"{"note_id": 1}"#],
        &["mcp", "--tool-budget", "50", &fastapi.base_url()],
    )
    .await;
    assert_eq!(summary["ok"], true, "{summary}");
    assert_eq!(summary["found"][0]["structured"]["title"], "first");
}

/// The official Python MCP SDK (`mcp_client.py`, doing what `script` asks) over `halo` started
/// with `halo` as its arguments, on stdio: the script's JSON summary.
async fn python_sdk_over_halo_mcp(script: &[&str], halo: &[&str]) -> Value {
    let mut run = Command::new(python());
    run.arg(interop_script("mcp_client.py"))
        .arg("stdio")
        .args(script)
        .arg("--")
        .arg(env!("CARGO_BIN_EXE_halo"))
        .args(halo)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .env_remove("HALO_BEARER");
    let stdout = run_to_end(&mut run, SCRIPT_TIMEOUT).await;
    serde_json::from_str(&stdout).expect("a JSON summary")
}

fn refund_of(charge: &str) -> Value {
    json!({"id": charge, "reason": "customer returned the book"})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_confirms_refunds_through_halo_mcp() {
    let server = spawn(bookstore::app()).await;
    let charge = paid_charge(&server.base_url()).await;
    let args = ["--bearer", "demo-admin", "mcp", &server.base_url()];
    // MCP 2026-07-28 forbids requests from the server: the confirmation comes as an
    // `input_required` result, and the retry approves the refund, which runs once.
    let (accept, reason) = (ElicitationAction::Accept, Some("the book came back"));
    let (client, mut questions) =
        Confirming::connect(common::halo_mcp(&args), accept, reason).await;

    let refunded = call(&client, "refund_payment", refund_of(&charge)).await;
    assert_eq!(refunded.is_error, Some(false), "{refunded:?}");
    let refund = refunded.structured_content.expect("the refund");
    assert_eq!(refund["charge_id"], charge.as_str());
    assert_eq!(refund["id"], "re_1");
    let question = questions.try_recv().expect("the client was asked");
    assert!(question.contains("the tool refund_payment?"), "{question}");
    assert!(
        question.contains(&format!("POST /api/payments/{charge}/refund")),
        "{question}"
    );
    // Refunded once: a second refund of the charge is its own call, refused by the handler.
    let again = call(&client, "refund_payment", refund_of(&charge)).await;
    assert_eq!(again.is_error, Some(true), "{again:?}");
    assert_eq!(again.structured_content.expect("a problem")["status"], 409);
    client.cancel().await.expect("the session ends");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_elicitation_halo_mcp_waits_for_the_decision() {
    let server = spawn(bookstore::app()).await;
    let charge = paid_charge(&server.base_url()).await;
    let (client, mut notes) = connect(&["--bearer", "demo-admin", "mcp", &server.base_url()]).await;

    let waiting = tokio::spawn(async move {
        let result = call(&client, "refund_payment", refund_of(&charge)).await;
        (client, result)
    });
    // The progress notification names the approval; the administrator approves it over HTTP.
    let note = tokio::time::timeout(Duration::from_secs(10), notes.recv())
        .await
        .expect("a progress notification")
        .expect("the listener is alive");
    let Note::Progress(note) = note else {
        panic!("not progress: {note:?}")
    };
    let message = note.message.unwrap_or_default();
    let id = message
        .strip_prefix("waiting for approval ")
        .and_then(|rest| rest.split_once(" of refund_payment"))
        .map(|(id, _)| id.to_owned())
        .unwrap_or_else(|| panic!("not a wait for approval: {message}"));
    let admin = halo_client::Client::builder(server.base_url())
        .credential(halo_client::Credential::bearer("demo-admin"))
        .build()
        .expect("a client");
    let approved = admin.approve(&id).await.expect("approved");
    assert_eq!(approved.state, halo_client::ApprovalState::Approved);
    let (client, refunded) = waiting.await.expect("the call ends");
    assert_eq!(refunded.is_error, Some(false), "{refunded:?}");
    assert_eq!(
        refunded.structured_content.expect("the refund")["id"],
        "re_1"
    );
    client.cancel().await.expect("the session ends");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_python_sdk_confirms_a_refund_through_halo_mcp() {
    let server = spawn(bookstore::app()).await;
    let charge = paid_charge(&server.base_url()).await;
    let refund = refund_of(&charge).to_string();
    let summary = python_sdk_over_halo_mcp(
        &["--confirm", "refund_payment", &refund],
        &["--bearer", "demo-admin", "mcp", &server.base_url()],
    )
    .await;
    assert_eq!(summary["ok"], true, "{summary}");
    // MCP 2025-11-25: the confirmation is an `elicitation/create` request; accepted, the
    // refund runs and its answer is the result.
    let confirmed = &summary["confirmed"][0];
    assert!(
        confirmed["asked"]
            .as_str()
            .is_some_and(|asked| asked.contains("the tool refund_payment?")),
        "{confirmed}"
    );
    assert_eq!(confirmed["structured"]["charge_id"], charge.as_str());
    assert_eq!(
        confirmed["structured"]["reason"],
        "customer returned the book"
    );
}
