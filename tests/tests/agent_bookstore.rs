//! A client-side agent from end to end: halo-client's `RemoteTools` over the bookstore (real
//! HTTP, its HALO layer checking every call) and a scripted OpenAI-compatible model (real
//! HTTP, streamed chunks). The bookstore's audit trail proves which calls happened.

use std::path::PathBuf;
use std::time::Duration;

use bookstore::auth::{ADMIN_TOKEN, API_KEY, READER_TOKEN};
use bookstore::{AppState, Options};
use futures_util::StreamExt as _;
use halo_axum::JsonLinesSink;
use halo_client::agent::{Agent, OpenAiProvider, RemoteTools, ToolSet};
use halo_client::protocol::{AgentEvent, FailureCode};
use halo_client::{Client, Credential};
use halo_tests::llm::{Call, ScriptedLlm, Turn};
use halo_tests::{TestServer, spawn};
use serde_json::{Value, json};

const LLM_KEY: &str = "sk-llm-key-never-in-a-tool-call";

/// The bookstore with its audit trail in a fresh file.
async fn bookstore(name: &str) -> (TestServer, JsonLinesSink, PathBuf) {
    let path = std::env::temp_dir().join(format!("halo-agent-{name}-{}.jsonl", std::process::id()));
    let _ = std::fs::remove_file(&path);
    let sink = JsonLinesSink::open(&path).unwrap();
    let app = bookstore::app_with(AppState::seeded(), Options::default().audit(sink.clone()));
    (spawn(app).await, sink, path)
}

/// `(tool, outcome, status, caller)` of every audited call.
fn audited(sink: &JsonLinesSink, path: &PathBuf) -> Vec<(String, String, u64, String)> {
    sink.flush();
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).unwrap())
        .map(|r| {
            (
                r["tool"].as_str().unwrap_or_default().to_owned(),
                r["outcome"].as_str().unwrap_or_default().to_owned(),
                r["status"].as_u64().unwrap_or_default(),
                r["caller"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect()
}

fn agent(llm: &ScriptedLlm) -> Agent {
    let provider = OpenAiProvider::builder()
        .base_url(llm.base_url())
        .api_key(LLM_KEY)
        .model("scripted")
        .min_retry_delay(Duration::from_millis(10))
        .build()
        .unwrap();
    Agent::builder(provider)
        .system_prompt("You help the customers of a bookstore.")
        .max_turns(5)
        .build()
}

/// The names of the tools `tools` offers the model.
fn names(tools: &RemoteTools) -> Vec<&str> {
    tools
        .definitions()
        .iter()
        .map(|d| d.name.as_str())
        .collect()
}

fn client(server: &TestServer, credential: Credential) -> Client {
    Client::builder(server.base_url())
        .credential(credential)
        .build()
        .unwrap()
}

#[tokio::test]
async fn the_agent_answers_by_calling_the_bookstore() {
    let (server, sink, path) = bookstore("answers").await;
    let llm = ScriptedLlm::start([
        // The model's endpoint fails once; the provider tries again.
        Turn::status(500),
        Turn::calls([
            Call::new("search_books", json!({"q": "dune"})),
            Call::new("get_stock", json!({"sku": "9780441172719"})),
        ]),
        Turn::text("Dune by Frank Herbert: 12 copies in stock."),
    ])
    .await;
    let client = client(&server, Credential::bearer(ADMIN_TOKEN));
    let tools = RemoteTools::discover(&client, &["books", "inventory"])
        .await
        .unwrap();
    let names = names(&tools);
    assert!(
        names.contains(&"search_books") && names.contains(&"get_stock"),
        "{names:?}"
    );
    assert!(!names.contains(&"charge_payment"), "the tag filter holds");

    let answer = agent(&llm).run(&tools, "Is Dune in stock?").await.unwrap();
    assert_eq!(
        answer.content(),
        "Dune by Frank Herbert: 12 copies in stock."
    );
    assert_eq!(answer.turns(), 2);

    // The bookstore's own audit trail: both calls ran, as the admin.
    let mut calls = audited(&sink, &path);
    calls.sort();
    assert_eq!(
        calls,
        [
            ("get_stock".into(), "executed".into(), 200, "admin".into()),
            (
                "search_books".into(),
                "executed".into(),
                200,
                "admin".into()
            ),
        ]
    );
    // The model read the bookstore's real answers...
    let requests = llm.requests();
    assert_eq!(requests.len(), 3, "a 500, then two turns");
    let results: Vec<Value> = requests[2].messages()[3..]
        .iter()
        .map(|m| serde_json::from_str(m["content"].as_str().unwrap()).unwrap())
        .collect();
    assert_eq!(results[0]["items"][0]["author"], "Frank Herbert");
    assert_eq!(results[1]["on_hand"], 12);
    // ... and was offered the tools with their `why`.
    let search = requests[1].body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["function"]["name"] == "search_books")
        .unwrap();
    assert!(
        search["function"]["description"]
            .as_str()
            .unwrap()
            .starts_with("Use first to find a book")
    );
    // The bookstore's credentials never reach the model; the model's key never reaches
    // the bookstore's tools (it is only in the model requests' Authorization header).
    let transcript = llm.transcript();
    for secret in [ADMIN_TOKEN, READER_TOKEN, API_KEY] {
        assert!(
            !transcript.contains(secret),
            "{secret} was sent to the model"
        );
    }
    let bodies: String = requests.iter().map(|r| r.body.to_string()).collect();
    assert!(!bodies.contains(LLM_KEY));
}

#[tokio::test]
async fn a_refused_call_goes_back_to_the_model_which_corrects_itself() {
    let (server, sink, path) = bookstore("corrects").await;
    let llm = ScriptedLlm::start([
        Turn::calls([Call::new("get_book", json!({"id": "one"}))]),
        Turn::calls([Call::raw("get_book", "{\"id\": 1")]),
        Turn::calls([Call::new("get_book", json!({"id": 1}))]),
        Turn::text("Book 1 is Dune."),
    ])
    .await;
    let tools = RemoteTools::discover(&client(&server, Credential::bearer(READER_TOKEN)), &[])
        .await
        .unwrap();
    let events: Vec<AgentEvent> = agent(&llm)
        .run_stream(tools, "What is book 1?")
        .collect()
        .await;
    let Some(AgentEvent::AgentEnd(end)) = events.last() else {
        panic!("{events:#?}")
    };
    assert_eq!((end.content.as_str(), end.turns), ("Book 1 is Dune.", 4));

    let ends: Vec<(Value, bool)> = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::ToolEnd(end) => Some((end.content.clone(), end.is_error)),
            _ => None,
        })
        .collect();
    // The bookstore refused the first call with its problem details, naming the argument.
    let (refused, is_error) = &ends[0];
    assert!(is_error);
    let status = refused["status"].as_u64().unwrap();
    assert!((400..500).contains(&status), "{refused:#}");
    assert_eq!(refused["errors"][0]["pointer"], "/id", "{refused:#}");
    // Invalid JSON never reached the bookstore: the agent answered it.
    assert!(ends[1].1);
    assert!(
        ends[1].0["detail"]
            .as_str()
            .unwrap()
            .contains("not valid JSON")
    );
    assert!(!ends[2].1);
    assert_eq!(ends[2].0["title"], "Dune");

    // The model saw the problem as the tool's result.
    let second = llm.requests()[1].messages().to_vec();
    let result: Value = serde_json::from_str(second[3]["content"].as_str().unwrap()).unwrap();
    assert_eq!(result["errors"][0]["pointer"], "/id");

    let calls: Vec<(String, String)> = audited(&sink, &path)
        .into_iter()
        .map(|(tool, outcome, _, _)| (tool, outcome))
        .collect();
    assert_eq!(
        calls,
        [
            ("get_book".to_owned(), "invalid".to_owned()),
            ("get_book".to_owned(), "executed".to_owned()),
        ]
    );
}

#[tokio::test]
async fn a_reader_cannot_see_write_tools_and_max_turns_stops_a_loop() {
    let (server, _sink, _path) = bookstore("reader").await;
    let tools = RemoteTools::discover(&client(&server, Credential::bearer(READER_TOKEN)), &[])
        .await
        .unwrap();
    let names = names(&tools);
    assert!(names.contains(&"get_book"));
    for write in [
        "create_order",
        "charge_payment",
        "delete_book",
        "reserve_stock",
    ] {
        assert!(
            !names.contains(&write),
            "{write} is offered to a reader: {names:?}"
        );
    }

    let looping = || Turn::calls([Call::new("get_book", json!({"id": 1}))]);
    let llm = ScriptedLlm::start((0..5).map(|_| looping())).await;
    let agent = Agent::builder(
        OpenAiProvider::builder()
            .base_url(llm.base_url())
            .model("scripted")
            .build()
            .unwrap(),
    )
    .max_turns(3)
    .build();
    let events: Vec<AgentEvent> = agent.run_stream(tools, "Loop").collect().await;
    let Some(AgentEvent::AgentError(failure)) = events.last() else {
        panic!("{events:#?}")
    };
    assert_eq!(failure.code, FailureCode::MaxTurns);
    assert_eq!(failure.turns, 3);
    assert!(failure.detail.contains("3 turns"), "{}", failure.detail);
    assert_eq!(llm.requests().len(), 3);
}
