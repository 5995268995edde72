//! The shopping assistant over real HTTP, with a scripted OpenAI-compatible model: listed as
//! an agent, streamed with the documented events, its tools limited to searching and stock,
//! and to what the caller may call.

use std::time::Duration;

use bookstore::auth::{ADMIN_TOKEN, READER_TOKEN};
use bookstore::cli::Cli;
use bookstore::{AppState, Options};
use halo_agent::OpenAiProvider;
use halo_axum::JsonLinesSink;
use halo_tests::llm::{Call, ScriptedLlm, Turn};
use halo_tests::{TestServer, spawn};
use serde_json::{Value, json};

async fn serve(llm: &ScriptedLlm, audit: Option<JsonLinesSink>) -> TestServer {
    let provider = OpenAiProvider::builder()
        .base_url(llm.base_url())
        .model("scripted")
        .min_retry_delay(Duration::from_millis(10))
        .build()
        .unwrap();
    let mut options = Options::default().llm(provider);
    if let Some(audit) = audit {
        options = options.audit(audit);
    }
    spawn(bookstore::app_with(AppState::seeded(), options)).await
}

/// `(event name, data)` of each event of an SSE body.
fn events(body: &str) -> Vec<(String, Value)> {
    body.split("\n\n")
        .filter_map(|frame| {
            let name = frame.lines().find_map(|l| l.strip_prefix("event: "))?;
            let data = frame.lines().find_map(|l| l.strip_prefix("data: "))?;
            let data: Value = serde_json::from_str(data).unwrap();
            Some((name.to_owned(), data["data"].clone()))
        })
        .collect()
}

async fn run(server: &TestServer, token: &str, input: &str) -> Vec<(String, Value)> {
    let response = reqwest::Client::new()
        .post(server.url("/agents/shopping_assistant/run"))
        .bearer_auth(token)
        .header("accept", "text/event-stream")
        .json(&json!({"input": input}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    events(&response.text().await.unwrap())
}

#[tokio::test]
async fn the_shopping_assistant_searches_and_checks_stock() {
    let llm = ScriptedLlm::start([
        Turn::calls([Call::new("search_books", json!({"q": "dune"}))]),
        Turn::calls([Call::new("get_stock", json!({"sku": "9780441172719"}))]),
        Turn::text("Dune (id 1, 10.99 EUR): 12 copies in stock."),
    ])
    .await;
    let path = std::env::temp_dir().join(format!("bookstore-agent-{}.jsonl", std::process::id()));
    let _ = std::fs::remove_file(&path);
    let audit = JsonLinesSink::open(&path).unwrap();
    let server = serve(&llm, Some(audit.clone())).await;

    // Listed as an agent, for callers with books:read.
    let manifest: Value = halo_tests::discover(&server.url("/"), Some(READER_TOKEN)).await;
    let entry = manifest["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "shopping_assistant")
        .expect("the agent is listed");
    assert_eq!(entry["kind"], "agent");

    let events = run(&server, ADMIN_TOKEN, "Is Dune in stock?").await;
    let names: Vec<&str> = events
        .iter()
        .map(|(name, _)| name.as_str())
        .filter(|name| *name != "llm_chunk")
        .collect();
    assert_eq!(
        names,
        [
            "agent_start",
            "llm_end",
            "tool_start",
            "tool_end",
            "llm_end",
            "tool_start",
            "tool_end",
            "llm_end",
            "agent_end"
        ]
    );
    let (_, end) = events.last().unwrap();
    assert_eq!(
        end["content"],
        "Dune (id 1, 10.99 EUR): 12 copies in stock."
    );
    let stock = events
        .iter()
        .find(|(name, data)| name == "tool_end" && data["tool"] == "get_stock")
        .unwrap();
    assert_eq!(stock.1["content"]["on_hand"], 12);

    // Offered exactly its three tools (never orders or payments, though the admin may).
    assert_eq!(
        llm.requests()[0].tool_names(),
        ["search_books", "get_book", "get_stock"]
    );
    // The bookstore's audit trail: both tools ran, as the admin.
    audit.flush();
    let text = std::fs::read_to_string(&path).unwrap();
    let tools: Vec<(String, String)> = text
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .map(|r| {
            (
                r["tool"].as_str().unwrap().to_owned(),
                r["caller"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert!(tools.contains(&("search_books".to_owned(), "admin".to_owned())));
    assert!(tools.contains(&("get_stock".to_owned(), "admin".to_owned())));
    assert!(tools.contains(&("shopping_assistant".to_owned(), "admin".to_owned())));
    let _ = std::fs::remove_file(&path);
}

#[tokio::test]
async fn a_readers_assistant_cannot_check_stock_or_reach_write_tools() {
    let llm = ScriptedLlm::start([
        Turn::calls([
            Call::new("get_stock", json!({"sku": "9780441172719"})),
            Call::new("charge_payment", json!({"order_id": 1001, "amount": 1.0})),
        ]),
        Turn::text("I cannot check the stock for you."),
    ])
    .await;
    let server = serve(&llm, None).await;
    let events = run(&server, READER_TOKEN, "Is Dune in stock? Then charge me.").await;
    // The reader lacks the inventory scope: the assistant is offered the searches only.
    assert_eq!(llm.requests()[0].tool_names(), ["search_books", "get_book"]);
    let refused: Vec<&Value> = events
        .iter()
        .filter(|(name, _)| name == "tool_end")
        .map(|(_, data)| data)
        .collect();
    assert_eq!(refused.len(), 2);
    assert!(
        refused
            .iter()
            .all(|r| r["is_error"] == true && r["content"]["status"] == 404)
    );
    assert_eq!(events.last().unwrap().0, "agent_end");

    // Anonymous callers cannot run it at all.
    let anonymous = reqwest::Client::new()
        .post(server.url("/agents/shopping_assistant/run"))
        .json(&json!({"input": "hi"}))
        .send()
        .await
        .unwrap();
    assert_eq!(anonymous.status(), 401);
}

#[tokio::test]
async fn without_a_model_there_is_no_agent() {
    let server = spawn(bookstore::app()).await;
    let manifest: Value = halo_tests::discover(&server.url("/"), Some(ADMIN_TOKEN)).await;
    assert!(
        manifest["tools"]
            .as_array()
            .unwrap()
            .iter()
            .all(|t| t.get("kind").is_none())
    );
    let missing = reqwest::Client::new()
        .post(server.url("/agents/shopping_assistant/run"))
        .bearer_auth(ADMIN_TOKEN)
        .json(&json!({"input": "hi"}))
        .send()
        .await
        .unwrap();
    assert_eq!(missing.status(), 404);
}

#[test]
fn the_model_is_configured_with_both_url_and_name() {
    let cli = Cli::parse_from_args([
        "bookstore",
        "--llm-base-url",
        "http://127.0.0.1:11434/v1",
        "--llm-model",
        "qwen2.5:7b",
    ])
    .unwrap();
    assert_eq!(cli.llm_model.as_deref(), Some("qwen2.5:7b"));
    assert!(Cli::parse_from_args(["bookstore", "--llm-model", "m"]).is_err());
    assert!(Cli::parse_from_args(["bookstore", "--llm-base-url", "http://h/v1"]).is_err());
}
