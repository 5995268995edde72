//! What MCP clients should see of the bookstore, calling a tool through an MCP client
//! (`search_tools` too) and reading its result, and a client that answers confirmations.

use rmcp::model::{
    CallToolRequestParams, CallToolResult, ClientCapabilities, ClientConfig, ElicitRequestParams,
    ElicitResult, ElicitationAction, ElicitationCapability, ErrorData, Implementation,
    ProgressNotificationParam, ProtocolVersion, TASKS_EXTENSION_ID,
};
use rmcp::service::{ClientLifecycleMode, ClientServiceExt as _, RequestContext, RunningService};
use rmcp::transport::IntoTransport;
use rmcp::{ClientHandler, RoleClient};
use serde_json::{Value, json};
use tokio::sync::mpsc;

/// Asserts that `notes` are the progress of the bookstore's `summarize_book` over
/// `chapters` chapters: one notification per chapter, with the total and the handler's
/// message, in the order of their `progress` (rmcp's client hands notifications to its
/// handler concurrently, so they may be received in another).
///
/// # Panics
/// When they are not.
pub fn assert_chapter_progress(notes: &[ProgressNotificationParam], chapters: u32) {
    let mut seen: Vec<_> = notes
        .iter()
        .map(|note| (note.progress, note.total, note.message.clone()))
        .collect();
    seen.sort_by(|a, b| a.0.total_cmp(&b.0));
    let expected: Vec<_> = (1..=chapters)
        .map(|chapter| {
            (
                f64::from(chapter),
                Some(f64::from(chapters)),
                Some(format!("summarising chapter {chapter}")),
            )
        })
        .collect();
    assert_eq!(seen, expected);
}

/// The next `count` items of `notes`, waiting up to 5 s for them (an MCP client hands
/// notifications to its handler apart from answers, so the last ones may come just after
/// the call's result): fewer when they do not come.
pub async fn next_notes<T>(
    notes: &mut tokio::sync::mpsc::UnboundedReceiver<T>,
    count: usize,
) -> Vec<T> {
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(5);
    let mut seen = Vec::with_capacity(count);
    while seen.len() < count {
        match tokio::time::timeout_at(deadline, notes.recv()).await {
            Ok(Some(note)) => seen.push(note),
            Ok(None) | Err(_) => break,
        }
    }
    seen
}

/// Calls the tool `name` with `args` (a JSON object) through `client`.
///
/// # Panics
/// When `args` is not an object or the call fails (an error result is an answer, not a
/// failure).
pub async fn call<H: ClientHandler>(
    client: &RunningService<RoleClient, H>,
    name: &str,
    args: Value,
) -> CallToolResult {
    let Value::Object(args) = args else {
        panic!("arguments are an object")
    };
    client
        .call_tool(CallToolRequestParams::new(name.to_owned()).with_arguments(args))
        .await
        .unwrap_or_else(|e| panic!("calling {name}: {e}"))
}

/// Calls `search_tools` through `client` with `query`: the tools it found, as its result.
///
/// # Panics
/// When the call fails.
pub async fn search<H: ClientHandler>(
    client: &RunningService<RoleClient, H>,
    query: &str,
) -> CallToolResult {
    call(client, "search_tools", json!({"query": query})).await
}

/// Calls the tool `name` with `args` through `call_tool` (as a model calls a tool it found
/// with `search_tools`), through `client`.
///
/// # Panics
/// When the call fails.
pub async fn call_through<H: ClientHandler>(
    client: &RunningService<RoleClient, H>,
    name: &str,
    args: Value,
) -> CallToolResult {
    let through = json!({"name": name, "arguments": args});
    call(client, "call_tool", through).await
}

/// The text of a result's first content (empty when it has none): what a model reads.
///
/// # Panics
/// When the result does not serialise.
#[must_use]
pub fn text(result: &CallToolResult) -> String {
    let wire = serde_json::to_value(result).expect("a result serialises");
    wire["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// An MCP client that declares form elicitation and answers every confirmation with `action`
/// (and `reason`), telling the test what it was asked.
#[derive(Clone, Debug)]
pub struct Confirming {
    /// The answer to every confirmation.
    pub action: ElicitationAction,
    /// The reason the answer gives, if any.
    pub reason: Option<&'static str>,
    /// Where the message of each confirmation goes.
    pub asked: mpsc::UnboundedSender<String>,
}

impl ClientHandler for Confirming {
    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        if let ElicitRequestParams::FormElicitationParams { message, .. } = request {
            let _ = self.asked.send(message);
        }
        let mut answer = ElicitResult::new(self.action.clone());
        if let Some(reason) = self.reason {
            answer = answer.with_content(json!({ "reason": reason }));
        }
        Ok(answer)
    }

    fn get_info(&self) -> ClientConfig {
        // `ClientCapabilities::builder().enable_elicitation()`, which needs rmcp's `server`.
        let mut capabilities = ClientCapabilities::default();
        capabilities.elicitation = Some(ElicitationCapability::default());
        ClientConfig::new(capabilities, Implementation::new("confirming", "1.0.0"))
    }
}

impl Confirming {
    /// A client that answers every confirmation with `action` (and `reason`), over
    /// `transport`, speaking MCP 2026-07-28, whose results may ask for input (the only way a
    /// stateless server asks): the client, and the messages of the confirmations it is asked,
    /// as they come.
    ///
    /// # Panics
    /// When the session does not start.
    pub async fn connect<T, E, A>(
        transport: T,
        action: ElicitationAction,
        reason: Option<&'static str>,
    ) -> (
        RunningService<RoleClient, Self>,
        mpsc::UnboundedReceiver<String>,
    )
    where
        T: IntoTransport<RoleClient, E, A>,
        E: std::error::Error + Send + Sync + 'static,
    {
        let (asked, questions) = mpsc::unbounded_channel();
        let handler = Self {
            action,
            reason,
            asked,
        };
        let modern = ClientLifecycleMode::Discover {
            preferred_versions: vec![ProtocolVersion::V_2026_07_28],
        };
        let client = handler
            .serve_with_lifecycle(transport, modern)
            .await
            .expect("an MCP 2026-07-28 session");
        (client, questions)
    }
}

/// An MCP client that declares the Tasks extension (`io.modelcontextprotocol/tasks`): a
/// server may answer its calls with a task.
#[derive(Clone, Copy, Debug)]
pub struct Tasking;

impl ClientHandler for Tasking {
    fn get_info(&self) -> ClientConfig {
        // `ClientCapabilities::builder().enable_tasks()`, which needs rmcp's `server`.
        let mut capabilities = ClientCapabilities::default();
        capabilities
            .extensions
            .get_or_insert_with(Default::default)
            .insert(TASKS_EXTENSION_ID.to_owned(), serde_json::Map::new());
        ClientConfig::new(capabilities, Implementation::new("tasking", "1.0.0"))
    }
}

impl Tasking {
    /// A session over `transport`, speaking MCP 2026-07-28 (the Tasks extension's version).
    ///
    /// # Panics
    /// When the session does not start.
    pub async fn connect<T, E, A>(transport: T) -> RunningService<RoleClient, Self>
    where
        T: IntoTransport<RoleClient, E, A>,
        E: std::error::Error + Send + Sync + 'static,
    {
        let modern = ClientLifecycleMode::Discover {
            preferred_versions: vec![ProtocolVersion::V_2026_07_28],
        };
        Self.serve_with_lifecycle(transport, modern)
            .await
            .expect("an MCP 2026-07-28 session declaring tasks")
    }
}

/// A paid order of one Dune at the bookstore served at `base`, made and charged by its
/// administrator (`demo-admin`): the charge's id, for a refund to refund.
///
/// # Panics
/// When the bookstore does not take the order or the charge.
pub async fn paid_charge(base: &str) -> String {
    let http = reqwest::Client::new();
    let send = async |path: &str, body: Value| -> Value {
        let answer = http
            .post(format!("{base}{path}"))
            .bearer_auth("demo-admin")
            .json(&body)
            .send()
            .await
            .unwrap_or_else(|e| panic!("POST {path}: {e}"));
        assert!(
            answer.status().is_success(),
            "POST {path}: {}",
            answer.status()
        );
        answer.json().await.expect("a JSON answer")
    };
    let order = send("/api/orders", crate::bookstore::one_dune()).await;
    let charge = json!({"order_id": order["id"], "amount": order["total"],
                                    "currency": "EUR", "payment_method": "pm_card_visa"});
    let paid = send("/api/payments/charge", charge).await;
    paid["id"].as_str().expect("a charge id").to_owned()
}
