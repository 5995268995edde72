//! Progressive disclosure in the agent loop, against a scripted OpenAI-compatible server
//! (real HTTP): a set of 400 tools reaches the model as `search_tools` and `call_tool`, the
//! model searches, calls what it found, and the tools found join its list; a small set is
//! listed as it is.

use crate::common;

use std::sync::{Arc, Mutex};

use common::{InMemory, InMemoryTools};
use futures_util::StreamExt as _;
use halo_agent::Agent;
use halo_agent::protocol::{
    AgentEvent, Call, DEFAULT_TOOL_BUDGET, InputField, Location, ToolDefinition, ToolEntry,
    ToolOutput, ToolSchema, tool_definitions,
};
use halo_tests::generated::RESOURCES as THINGS;
use halo_tests::llm::{self, ScriptedLlm, Turn};
use serde_json::{Map, Value, json};

const VERBS: [&str; 10] = [
    "list", "get", "create", "update", "delete", "cancel", "archive", "restore", "export", "count",
];

/// `verb_thing` for every verb and thing (400 tools), each taking an `id` and a `reason`;
/// records every call it gets.
struct Operations {
    definitions: Vec<ToolDefinition>,
    calls: Mutex<Vec<(String, Map<String, Value>)>>,
}

impl Operations {
    fn new(things: &[&str]) -> Arc<InMemory<Self>> {
        let mut tools = Vec::new();
        for thing in things {
            for verb in VERBS {
                let url = format!("/{thing}s/{{id}}/{verb}");
                let mut schema = ToolSchema::new(Call::new("POST", &url));
                schema.input.insert(
                    "id".into(),
                    InputField::new(
                        json!({"type": "integer", "description": format!("The {thing}'s id")}),
                    )
                    .located(Location::Path)
                    .required(true),
                );
                schema.input.insert(
                    "reason".into(),
                    InputField::new(
                        json!({"type": "string", "description": "Why, in a few words"}),
                    ),
                );
                let entry = ToolEntry::new(
                    &url,
                    "POST",
                    format!("{verb}_{thing}"),
                    format!("{} a {thing} of the store", capitalised(verb)),
                );
                tools.push((entry, schema));
            }
        }
        Arc::new(InMemory(Self {
            definitions: tool_definitions(&tools),
            calls: Mutex::new(Vec::new()),
        }))
    }

    fn tokens(&self) -> usize {
        self.definitions
            .iter()
            .map(ToolDefinition::estimated_tokens)
            .sum()
    }

    fn calls(&self) -> Vec<(String, Map<String, Value>)> {
        self.calls.lock().unwrap().clone()
    }
}

fn capitalised(word: &str) -> String {
    let mut chars = word.chars();
    chars
        .next()
        .map(|first| first.to_uppercase().chain(chars).collect())
        .unwrap_or_default()
}

impl InMemoryTools for Operations {
    fn definitions(&self) -> &[ToolDefinition] {
        &self.definitions
    }

    async fn answer(&self, name: &str, arguments: Map<String, Value>) -> ToolOutput {
        self.calls
            .lock()
            .unwrap()
            .push((name.to_owned(), arguments.clone()));
        ToolOutput::from_response(200, json!({"done": name, "id": arguments.get("id")}))
    }
}

fn agent(llm: &ScriptedLlm) -> Agent {
    let provider = common::quick_to_retry(llm);
    Agent::builder(provider).max_turns(6).build()
}

/// The bytes of the `tools` a request offered.
fn tools_bytes(request: &llm::Recorded) -> usize {
    request.body["tools"].to_string().len()
}

#[tokio::test]
async fn four_hundred_tools_reach_the_model_as_search_then_call() {
    let operations = Operations::new(&THINGS);
    assert_eq!(operations.definitions.len(), 400);
    assert!(operations.tokens() > DEFAULT_TOOL_BUDGET * 5);
    let llm = ScriptedLlm::start([
        Turn::calls([llm::Call::new(
            "search_tools",
            json!({"query": "cancel a shipment", "limit": 3}),
        )]),
        Turn::calls([llm::Call::new(
            "call_tool",
            json!({"name": "cancel_shipment", "arguments": {"id": 7, "reason": "late"}}),
        )]),
        // Found, the tool is in the list: the model calls it by name.
        Turn::calls([llm::Call::new("cancel_shipment", json!({"id": 8}))]),
        Turn::text("Shipments 7 and 8 are cancelled."),
    ])
    .await;
    let events: Vec<AgentEvent> = agent(&llm)
        .run_stream(Arc::clone(&operations), "Cancel shipments 7 and 8.")
        .collect()
        .await;
    let Some(AgentEvent::AgentEnd(end)) = events.last() else {
        panic!("{events:#?}");
    };
    assert_eq!(end.content, "Shipments 7 and 8 are cancelled.");
    assert_eq!(end.turns, 4);

    // The tool really ran, twice, with the model's arguments.
    let calls = operations.calls();
    assert_eq!(calls.len(), 2, "{calls:?}");
    assert_eq!(calls[0].0, "cancel_shipment");
    assert_eq!(
        Value::Object(calls[0].1.clone()),
        json!({"id": 7, "reason": "late"})
    );
    assert_eq!(Value::Object(calls[1].1.clone()), json!({"id": 8}));

    let requests = llm.requests();
    assert_eq!(requests.len(), 4);
    // The first request offers the two meta-tools alone.
    assert_eq!(requests[0].tool_names(), ["search_tools", "call_tool"]);
    let all: Vec<Value> = operations
        .definitions
        .iter()
        .map(ToolDefinition::openai_function)
        .collect();
    let all_bytes = Value::Array(all).to_string().len();
    let first = tools_bytes(&requests[0]);
    assert!(first < 1_500, "{first} bytes");
    assert!(first * 50 < all_bytes, "{first} of {all_bytes} bytes");
    // The search's answer: the best match first, with what it takes.
    let answer: Value = serde_json::from_str(
        requests[1].messages().last().unwrap()["content"]
            .as_str()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(answer["tools"][0]["name"], "cancel_shipment", "{answer}");
    assert_eq!(answer["tools"][0]["inputSchema"]["required"], json!(["id"]));
    assert_eq!(answer["tools"].as_array().unwrap().len(), 3);
    // From then on the tools found are listed too.
    let second = requests[1].tool_names();
    assert_eq!(second.len(), 5, "{second:?}");
    assert_eq!(
        second[..3],
        ["search_tools", "call_tool", "cancel_shipment"]
    );
    assert_eq!(requests[3].tool_names(), second);
    assert!(tools_bytes(&requests[1]) < DEFAULT_TOOL_BUDGET * 4);

    // Events show the tool that ran, not call_tool.
    assert_eq!(
        common::tool_starts(&events),
        [
            (
                "search_tools".to_owned(),
                json!({"query": "cancel a shipment", "limit": 3})
            ),
            (
                "cancel_shipment".to_owned(),
                json!({"id": 7, "reason": "late"})
            ),
            ("cancel_shipment".to_owned(), json!({"id": 8})),
        ]
    );
    let ends: Vec<(&str, bool)> = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::ToolEnd(end) => Some((end.tool.as_str(), end.is_error)),
            _ => None,
        })
        .collect();
    assert_eq!(
        ends,
        [
            ("search_tools", false),
            ("cancel_shipment", false),
            ("cancel_shipment", false)
        ]
    );
}

#[tokio::test]
async fn mistakes_with_the_meta_tools_are_answered_not_failed() {
    let operations = Operations::new(&THINGS);
    let llm = ScriptedLlm::start([
        Turn::calls([
            llm::Call::new("search_tools", json!({"limit": 2})),
            llm::Call::raw("call_tool", "{name: cancel"),
            llm::Call::new(
                "call_tool",
                json!({"name": "cancel_shipments", "arguments": {}}),
            ),
            llm::Call::new("ship_everything", json!({})),
        ]),
        Turn::text("Sorry."),
    ])
    .await;
    let answer = agent(&llm)
        .run(&operations, "Cancel shipment 7.")
        .await
        .unwrap();
    assert_eq!(answer.content(), "Sorry.");
    assert!(operations.calls().is_empty());
    let requests = llm.requests();
    let results: Vec<Value> = requests[1].messages()[2..]
        .iter()
        .map(|m| serde_json::from_str(m["content"].as_str().unwrap()).unwrap())
        .collect();
    let statuses: Vec<u64> = results
        .iter()
        .map(|r| r["status"].as_u64().unwrap())
        .collect();
    assert_eq!(statuses, [400, 400, 404, 404], "{results:#?}");
    let detail = results[2]["detail"].as_str().unwrap();
    assert!(detail.contains("cancel_shipment"), "{detail}");
    // Nothing was found, so the list did not grow.
    assert_eq!(requests[1].tool_names(), ["search_tools", "call_tool"]);
}

#[tokio::test]
async fn below_the_budget_or_with_all_tools_the_list_is_unchanged() {
    let few = Operations::new(&THINGS[..1]);
    assert!(few.tokens() < DEFAULT_TOOL_BUDGET);
    let names: Vec<&str> = few.definitions.iter().map(|d| d.name.as_str()).collect();
    let llm = ScriptedLlm::start([
        Turn::calls([llm::Call::new("cancel_shipment", json!({"id": 7}))]),
        Turn::text("Done."),
    ])
    .await;
    agent(&llm).run(&few, "Cancel shipment 7.").await.unwrap();
    assert_eq!(few.calls().len(), 1);
    let requests = llm.requests();
    assert_eq!(requests[0].tool_names(), names);
    assert_eq!(requests[1].tool_names(), names);
    let expected: Vec<Value> = few
        .definitions
        .iter()
        .map(ToolDefinition::openai_function)
        .collect();
    assert_eq!(requests[0].body["tools"], Value::Array(expected));

    // all_tools lists every one of the 400, whatever they cost.
    let many = Operations::new(&THINGS);
    llm.push([Turn::text("Done.")]);
    let provider = common::scripted(&llm).build().unwrap();
    Agent::builder(provider)
        .all_tools()
        .build()
        .run(&many, "Anything.")
        .await
        .unwrap();
    assert_eq!(llm.requests()[2].tool_names().len(), 400);
}
