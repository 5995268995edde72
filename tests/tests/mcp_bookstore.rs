//! The bookstore's `/mcp` over real HTTP on loopback: rmcp's streamable HTTP client and the
//! official MCP Python SDK list and call its tools, each caller seeing what its credentials
//! allow, every call going through the HALO layer. A refund, which waits for approval, is
//! confirmed by the administrator's client when it can be asked.

use std::time::Duration;

use halo_client::agent::OpenAiProvider;
use halo_tests::llm::{self, ScriptedLlm, Turn};
use halo_tests::mcp::call;
use halo_tests::mcp::{assert_chapter_progress, next_notes, paid_charge};
use halo_tests::{interop_script, python, run_to_end, spawn};
use reqwest::header::{AUTHORIZATION, HeaderMap, HeaderValue};
use rmcp::model::{
    CallToolRequestParams, ClientCapabilities, ClientConfig, ElicitRequestParams, ElicitResult,
    ElicitationAction, ErrorData, Implementation, ProgressNotificationParam, ProtocolVersion, Tool,
};
use rmcp::service::{
    ClientLifecycleMode, ClientServiceExt as _, NotificationContext, RequestContext, RunningService,
};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ClientHandler, RoleClient, ServiceExt as _};
use serde_json::{Value, json};
use tokio::process::Command;
use tokio::sync::mpsc;

/// A Python start, an SDK import and a few calls; a hang fails the run instead.
const SCRIPT_TIMEOUT: Duration = Duration::from_secs(120);

/// An rmcp client of the bookstore's `/mcp`, with a bearer token when given.
async fn client(url: String, bearer: Option<&str>) -> RunningService<RoleClient, ()> {
    client_with((), url, bearer).await
}

/// An rmcp client whose notifications `handler` receives.
async fn client_with<H: ClientHandler>(
    handler: H,
    url: String,
    bearer: Option<&str>,
) -> RunningService<RoleClient, H> {
    let mut headers = HeaderMap::new();
    if let Some(token) = bearer {
        let value = HeaderValue::from_str(&format!("Bearer {token}")).expect("a header value");
        headers.insert(AUTHORIZATION, value);
    }
    let http = reqwest::Client::builder()
        .default_headers(headers)
        .build()
        .expect("a reqwest client");
    let config = StreamableHttpClientTransportConfig::with_uri(url);
    handler
        .serve(StreamableHttpClientTransport::with_client(http, config))
        .await
        .expect("an MCP session with the bookstore")
}

fn names(tools: &[Tool]) -> Vec<&str> {
    tools.iter().map(|tool| tool.name.as_ref()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reader_sees_no_write_tools_and_an_admin_writes() {
    let server = spawn(bookstore::app()).await;
    let url = server.url("/mcp");

    let reader = client(url.clone(), Some("demo-reader")).await;
    let tools = reader.list_all_tools().await.expect("tools/list");
    let listed = names(&tools);
    assert!(listed.contains(&"get_book"), "{listed:?}");
    for write in [
        "create_book",
        "delete_book",
        "create_order",
        "charge_payment",
    ] {
        assert!(
            !listed.contains(&write),
            "a reader sees {write}: {listed:?}"
        );
    }
    let book = call(&reader, "get_book", json!({"id": 1})).await;
    assert_eq!(book.is_error, Some(false));
    assert_eq!(book.structured_content.as_ref().unwrap()["title"], "Dune");
    let invalid = call(&reader, "get_book", json!({"id": "abc"})).await;
    assert_eq!(invalid.is_error, Some(true));
    let problem = invalid.structured_content.as_ref().expect("the problem");
    assert_eq!(
        problem["status"], 400,
        "a path value, as axum's Path answers"
    );
    assert_eq!(problem["errors"][0]["pointer"], "/id");
    // Calling a write tool by name does not get around discovery.
    assert!(
        reader
            .call_tool(
                CallToolRequestParams::new("delete_book")
                    .with_arguments(json!({"id": 1}).as_object().cloned().unwrap_or_default())
            )
            .await
            .is_err()
    );

    // The admin's tools cost more than the default budget of 4,000 tokens: it finds them.
    let admin = client(url, Some("demo-admin")).await;
    let tools = admin.list_all_tools().await.expect("tools/list");
    assert_eq!(names(&tools), ["search_tools", "call_tool"]);
    let found = call(
        &admin,
        "search_tools",
        json!({"query": "place an order for books"}),
    )
    .await;
    let answer = found.structured_content.as_ref().expect("structured");
    assert!(
        answer["tools"]
            .as_array()
            .unwrap()
            .iter()
            .any(|tool| tool["name"] == "create_order"),
        "{answer}"
    );
    let order = call(
        &admin,
        "create_order",
        json!({"customer_email": "ada@example.com", "items": [{"book_id": 1, "quantity": 2}]}),
    )
    .await;
    assert_eq!(order.is_error, Some(false), "{order:?}");
    let id = order.structured_content.as_ref().expect("the order")["id"].clone();
    let read = call(&admin, "get_order", json!({ "id": id })).await;
    assert_eq!(read.structured_content.as_ref().unwrap()["id"], id);
}

/// A client that keeps the progress notifications it gets.
#[derive(Clone)]
struct Progressing(mpsc::UnboundedSender<ProgressNotificationParam>);

impl ClientHandler for Progressing {
    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let _ = self.0.send(params);
    }

    fn get_info(&self) -> ClientConfig {
        ClientConfig::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_streaming_tool_reports_its_steps_as_progress() {
    let server = spawn(bookstore::app()).await;
    let (sender, mut notes) = mpsc::unbounded_channel();
    let reader = client_with(Progressing(sender), server.url("/mcp"), Some("demo-reader")).await;

    // rmcp's client sends a progress token with every request; the steps come before the
    // result, on the answer's event stream.
    let done = call(&reader, "summarize_book", json!({"id": 1, "chapters": 3})).await;
    assert_eq!(done.is_error, Some(false), "{done:?}");
    let summary = done.structured_content.as_ref().expect("structured");
    assert_eq!(summary["chapters"].as_array().map(Vec::len), Some(3));
    assert_chapter_progress(&next_notes(&mut notes, 3).await, 3);

    // A tool that does not stream answers without progress.
    let book = call(&reader, "get_book", json!({"id": 1})).await;
    assert_eq!(book.is_error, Some(false));
    assert!(notes.try_recv().is_err(), "no progress for get_book");
    let missing = call(&reader, "summarize_book", json!({"id": 999})).await;
    assert_eq!(missing.structured_content.as_ref().unwrap()["status"], 404);
    reader.cancel().await.expect("the session ends");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hosted_agent_reports_its_tool_calls_and_turns_as_progress() {
    let llm = ScriptedLlm::start([
        Turn::calls([llm::Call::new("search_books", json!({"q": "dune"}))]),
        Turn::text("Dune, id 1, 10.99 EUR."),
    ])
    .await;
    let provider = OpenAiProvider::builder()
        .base_url(llm.base_url())
        .model("scripted")
        .build()
        .expect("a provider");
    let options = bookstore::Options::default().llm(provider);
    let server = spawn(bookstore::app_with(bookstore::AppState::seeded(), options)).await;
    let (sender, mut notes) = mpsc::unbounded_channel();
    let reader = client_with(Progressing(sender), server.url("/mcp"), Some("demo-reader")).await;

    let answer = call(
        &reader,
        "shopping_assistant",
        json!({"input": "Is Dune sold here?"}),
    )
    .await;
    assert_eq!(answer.is_error, Some(false), "{answer:?}");
    let end = answer.structured_content.as_ref().expect("structured");
    assert_eq!(end["content"], "Dune, id 1, 10.99 EUR.");
    assert_eq!(end["turns"], 2);
    let mut steps: Vec<_> = next_notes(&mut notes, 4)
        .await
        .into_iter()
        .map(|note| (note.progress, note.message.unwrap_or_default()))
        .collect();
    // rmcp's client hands notifications to its handler concurrently: their order is
    // `progress`'s.
    steps.sort_by(|a, b| a.0.total_cmp(&b.0));
    assert_eq!(
        steps,
        [
            (1.0, "the model finished turn 1".to_owned()),
            (2.0, "calling search_books".to_owned()),
            (3.0, "search_books answered".to_owned()),
            (4.0, "the model finished turn 2".to_owned()),
        ]
    );
    reader.cancel().await.expect("the session ends");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_python_sdk_lists_and_calls_over_streamable_http() {
    let server = spawn(bookstore::app()).await;
    let script = interop_script("mcp_client.py");
    let python = python();
    let mut run = Command::new(&python);
    run.arg(&script)
        .args(["http", &server.url("/mcp"), "--bearer", "demo-reader"])
        .args(["--call", "get_book", r#"{"id": 1}"#])
        .args(["--call", "search_books", r#"{"q": "dune"}"#])
        .args(["--fail", "get_book", r#"{"id": "abc"}"#])
        .env("PYTHONDONTWRITEBYTECODE", "1");
    let stdout = run_to_end(&mut run, SCRIPT_TIMEOUT).await;
    let summary: Value = serde_json::from_str(&stdout).expect("a JSON summary");
    let tools: Vec<&str> = summary["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|tool| tool["name"].as_str())
        .collect();
    assert!(tools.contains(&"get_book"), "{tools:?}");
    assert!(!tools.contains(&"create_book"), "{tools:?}");
    let calls = summary["calls"].as_array().expect("calls");
    assert_eq!(calls[0]["structured"]["title"], "Dune");
    assert_eq!(calls[1]["isError"], false);
    assert_eq!(calls[2]["isError"], true);
    assert_eq!(calls[2]["structured"]["status"], 400);
}

/// A client that declares form elicitation and accepts every confirmation.
#[derive(Clone)]
struct Accepting;

impl ClientHandler for Accepting {
    async fn create_elicitation(
        &self,
        _request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        Ok(ElicitResult::new(ElicitationAction::Accept))
    }

    fn get_info(&self) -> ClientConfig {
        let capabilities = ClientCapabilities::builder().enable_elicitation().build();
        ClientConfig::new(capabilities, Implementation::new("accepting", "1.0.0"))
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_administrator_confirms_a_refund_in_its_mcp_client() {
    let server = spawn(bookstore::app()).await;
    let charge = paid_charge(&server.base_url()).await;
    let mut headers = HeaderMap::new();
    headers.insert(AUTHORIZATION, HeaderValue::from_static("Bearer demo-admin"));
    let http = reqwest::Client::builder()
        .default_headers(headers)
        .build()
        .expect("a reqwest client");
    let config = StreamableHttpClientTransportConfig::with_uri(server.url("/mcp"));
    // `/mcp` keeps no sessions: it asks with an `input_required` result (MCP 2026-07-28).
    let modern = ClientLifecycleMode::Discover {
        preferred_versions: vec![ProtocolVersion::V_2026_07_28],
    };
    let admin = Accepting
        .serve_with_lifecycle(
            StreamableHttpClientTransport::with_client(http, config),
            modern,
        )
        .await
        .expect("an MCP 2026-07-28 session with the bookstore");

    let args = json!({"id": charge, "reason": "customer returned the book"});
    let refunded = call(&admin, "refund_payment", args).await;
    assert_eq!(refunded.is_error, Some(false), "{refunded:?}");
    let refund = refunded.structured_content.expect("the refund");
    assert_eq!(refund["charge_id"], charge.as_str());
    assert_eq!(refund["reason"], "customer returned the book");
    admin.cancel().await.expect("the session ends");
}
