//! The agent loop against a scripted OpenAI-compatible server (real HTTP) and tools in
//! memory: concurrent tool calls, results in order, corrective turns, limits, events.

use crate::common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use common::{InMemory, InMemoryTools};
use futures_util::StreamExt as _;
use halo_agent::Agent;
use halo_agent::protocol::{
    AgentEvent, Call, FailureCode, InputField, Location, Message, ToolDefinition, ToolEntry,
    ToolOutput, ToolSchema, Usage, tool_definitions,
};
use halo_tests::llm::{self, ScriptedLlm, Turn};
use serde_json::{Map, Value, json};
use tokio::sync::{Barrier, watch};

const PROMPT: &str = "You are the bookstore's assistant. SECRET-PROMPT-MARKER";

/// Two tools, `lookup` (answers `{"id", "title"}`, or a 404 problem for id 0) and `stock`;
/// both wait for each other at a barrier when `together` is set, so that they only finish
/// when they run at the same time.
struct Shelf {
    definitions: Vec<ToolDefinition>,
    calls: AtomicUsize,
    together: Option<Barrier>,
}

impl Shelf {
    fn new(together: bool) -> Arc<InMemory<Self>> {
        let tool = |name: &str, url: &str| {
            let mut schema = ToolSchema::new(Call::new("GET", url));
            schema.input.insert(
                "id".into(),
                InputField::new(json!({"type": "integer"}))
                    .located(Location::Query)
                    .required(true),
            );
            (
                ToolEntry::new(url, "GET", name, format!("{name} a book")),
                schema,
            )
        };
        Arc::new(InMemory(Self {
            definitions: tool_definitions(&[tool("lookup", "/books"), tool("stock", "/stock")]),
            calls: AtomicUsize::new(0),
            together: together.then(|| Barrier::new(2)),
        }))
    }
}

impl InMemoryTools for Shelf {
    fn definitions(&self) -> &[ToolDefinition] {
        &self.definitions
    }

    async fn answer(&self, name: &str, arguments: Map<String, Value>) -> ToolOutput {
        self.calls.fetch_add(1, Ordering::SeqCst);
        if let Some(barrier) = &self.together
            && tokio::time::timeout(Duration::from_secs(5), barrier.wait())
                .await
                .is_err()
        {
            return ToolOutput::failure("ran alone");
        }
        let id = arguments.get("id").and_then(Value::as_u64).unwrap_or(0);
        if id == 0 {
            return ToolOutput::from_response(
                404,
                json!({"type": "about:blank", "title": "Not Found", "status": 404,
                       "detail": "no book has id 0"}),
            );
        }
        match name {
            "lookup" => ToolOutput::from_response(200, json!({"id": id, "title": "Dune"})),
            _ => ToolOutput::from_response(200, json!({"id": id, "on_hand": 12})),
        }
    }
}

fn agent(llm: &ScriptedLlm) -> Agent {
    let provider = common::quick_to_retry(llm);
    Agent::builder(provider)
        .name("shelf_helper")
        .system_prompt(PROMPT)
        .max_turns(4)
        .build()
}

#[tokio::test]
async fn tools_called_together_run_concurrently_and_answer_in_order() {
    let llm = ScriptedLlm::start([
        Turn::calls([
            llm::Call::new("lookup", json!({"id": 1})),
            llm::Call::new("stock", json!({"id": 1})),
        ])
        .usage(100, 20),
        Turn::text("Dune: 12 copies.").usage(150, 10),
    ])
    .await;
    let shelf = Shelf::new(true);
    let answer = agent(&llm)
        .run(&shelf, "How many copies of book 1?")
        .await
        .unwrap();
    assert_eq!(answer.content(), "Dune: 12 copies.");
    assert_eq!(answer.turns(), 2);
    assert_eq!(answer.usage(), Usage::new(250, 30));
    assert_eq!(shelf.calls.load(Ordering::SeqCst), 2);

    let requests = llm.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(
        requests[0].messages()[0],
        json!({"role": "system", "content": PROMPT})
    );
    let second = requests[1].messages();
    assert_eq!(second.len(), 5, "{second:#?}");
    assert_eq!(second[2]["role"], "assistant");
    assert_eq!(second[2]["tool_calls"][1]["function"]["name"], "stock");
    assert_eq!(
        second[3],
        json!({"role": "tool", "tool_call_id": "call_0_lookup", "content": r#"{"id":1,"title":"Dune"}"#})
    );
    assert_eq!(
        second[4],
        json!({"role": "tool", "tool_call_id": "call_1_stock", "content": r#"{"id":1,"on_hand":12}"#})
    );
    // The conversation comes back without the system prompt, ready to continue.
    assert_eq!(answer.messages().len(), 5);
    assert_eq!(
        answer.messages()[0],
        Message::user("How many copies of book 1?")
    );
    assert_eq!(answer.messages()[4], Message::assistant("Dune: 12 copies."));
}

#[tokio::test]
async fn bad_arguments_and_unknown_tools_are_answered_so_the_model_corrects_itself() {
    let llm = ScriptedLlm::start([
        Turn::calls([
            llm::Call::raw("lookup", "{id: one"),
            llm::Call::new("find_book", json!({"id": 1})),
            llm::Call::new("lookup", json!({"id": 0})),
        ]),
        Turn::calls([llm::Call::new("lookup", json!({"id": 1}))]),
        Turn::text("It is Dune."),
    ])
    .await;
    let shelf = Shelf::new(false);
    let answer = agent(&llm).run(&shelf, "What is book 1?").await.unwrap();
    assert_eq!(answer.content(), "It is Dune.");
    assert_eq!(answer.turns(), 3);
    // Neither the bad JSON nor the unknown tool reached a tool; id 0 did (and got a 404).
    assert_eq!(shelf.calls.load(Ordering::SeqCst), 2);

    let requests = llm.requests();
    let corrective = requests[1].messages();
    let results: Vec<Value> = corrective[3..]
        .iter()
        .map(|m| serde_json::from_str(m["content"].as_str().unwrap()).unwrap())
        .collect();
    assert_eq!(results[0]["status"], 400);
    assert!(
        results[0]["detail"]
            .as_str()
            .unwrap()
            .contains("not valid JSON"),
        "{results:#?}"
    );
    assert_eq!(results[1]["status"], 404);
    assert!(
        results[1]["detail"]
            .as_str()
            .unwrap()
            .contains("no tool named `find_book`; the tools are: lookup, stock")
    );
    assert_eq!(results[2]["detail"], "no book has id 0");
}

#[tokio::test]
async fn max_turns_stops_a_looping_model_with_agent_error() {
    let looping = || Turn::calls([llm::Call::new("lookup", json!({"id": 1}))]);
    let llm = ScriptedLlm::start([looping(), looping(), looping(), looping(), looping()]).await;
    let shelf = Shelf::new(false);
    let agent = agent(&llm);
    let error = agent.run(&shelf, "Loop").await.unwrap_err();
    assert!(error.is_max_turns(), "{error:?}");
    assert_eq!(error.turns(), 4);
    assert_eq!(error.usage(), Usage::new(40, 20));
    assert!(error.to_string().contains("after 4 turns"), "{error}");
    assert_eq!(llm.requests().len(), 4);

    llm.push([looping(), looping(), looping(), looping()]);
    let events: Vec<AgentEvent> = agent.run_stream(Arc::clone(&shelf), "Loop").collect().await;
    let Some(AgentEvent::AgentError(failure)) = events.last() else {
        panic!("{events:#?}");
    };
    assert_eq!(failure.code, FailureCode::MaxTurns);
    assert_eq!(failure.turns, 4);
    assert_eq!(
        events.iter().filter(|e| e.name() == "tool_end").count(),
        4,
        "one call per turn"
    );
}

#[tokio::test]
async fn run_stream_sends_the_documented_events_in_order() {
    let llm = ScriptedLlm::start([
        Turn::text_and_calls(
            "Checking.",
            [
                llm::Call::new("lookup", json!({"id": 1})),
                llm::Call::new("stock", json!({"id": 1})),
            ],
        ),
        Turn::text("Dune has 12 copies."),
    ])
    .await;
    let events: Vec<AgentEvent> = agent(&llm)
        .run_stream(Shelf::new(true), "Book 1?")
        .collect()
        .await;
    let names: Vec<&str> = events.iter().map(AgentEvent::name).collect();
    // Text pieces are many; fold runs of llm_chunk into one for the comparison.
    let mut folded: Vec<&str> = Vec::new();
    for name in &names {
        if folded.last() != Some(name) || *name != "llm_chunk" {
            folded.push(name);
        }
    }
    assert_eq!(
        folded,
        [
            "agent_start",
            "llm_chunk",
            "llm_end",
            "tool_start",
            "tool_start",
            "tool_end",
            "tool_end",
            "llm_chunk",
            "llm_end",
            "agent_end"
        ],
        "{names:?}"
    );
    let AgentEvent::AgentStart(start) = &events[0] else {
        unreachable!()
    };
    assert_eq!(start.agent.as_deref(), Some("shelf_helper"));
    assert!(start.run_id.starts_with("r-"));
    let text: String = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::LlmChunk(chunk) if chunk.turn == 2 => Some(chunk.content.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(text, "Dune has 12 copies.");
    assert_eq!(
        common::tool_starts(&events),
        [
            ("lookup".to_owned(), json!({"id": 1})),
            ("stock".to_owned(), json!({"id": 1}))
        ]
    );
    let ends: Vec<(&str, &Value, bool)> = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::ToolEnd(end) => Some((end.call_id.as_str(), &end.content, end.is_error)),
            _ => None,
        })
        .collect();
    assert!(ends.contains(&("call_1_stock", &json!({"id": 1, "on_hand": 12}), false)));
    let AgentEvent::LlmEnd(first) = &events[names.iter().position(|n| *n == "llm_end").unwrap()]
    else {
        unreachable!()
    };
    assert_eq!(first.turn, 1);
    assert_eq!(first.content, "Checking.");
    assert_eq!(first.tool_calls.len(), 2);
    assert_eq!(first.usage, Some(Usage::new(10, 5)));
    let Some(AgentEvent::AgentEnd(end)) = events.last() else {
        unreachable!()
    };
    assert_eq!(
        (end.content.as_str(), end.turns),
        ("Dune has 12 copies.", 2)
    );
    assert_eq!(end.usage, Usage::new(20, 10));
    // The system prompt is sent to the model, never in an event.
    let shown = serde_json::to_string(&events).unwrap();
    assert!(!shown.contains("SECRET-PROMPT-MARKER"));
    assert!(llm.transcript().contains("SECRET-PROMPT-MARKER"));
}

#[tokio::test]
async fn a_deadline_and_a_failing_model_end_the_run_clearly() {
    let llm = ScriptedLlm::start([Turn::hang()]).await;
    let provider = common::scripted(&llm).build().unwrap();
    let agent = Agent::builder(provider)
        .timeout(Duration::from_millis(300))
        .build();
    let error = agent.run(&Shelf::new(false), "hi").await.unwrap_err();
    assert!(error.is_deadline(), "{error:?}");
    assert_eq!(error.turns(), 1);

    llm.push([Turn::status_with(
        403,
        json!({"error": {"message": "model not allowed", "type": "permission", "param": null, "code": null}}),
    )]);
    let mut stream = agent.run_stream(Shelf::new(false), "hi");
    let mut events = Vec::new();
    while let Some(event) = stream.next().await {
        // The error an `agent_error` describes is kept by the time the event is yielded.
        let failed = matches!(event, AgentEvent::AgentError(_));
        assert_eq!(stream.error().is_some(), failed, "{event:?}");
        events.push(event);
    }
    let Some(AgentEvent::AgentError(failure)) = events.last() else {
        panic!("{events:#?}")
    };
    assert_eq!(failure.code, FailureCode::Llm);
    assert!(failure.detail.contains("403") && failure.detail.contains("model not allowed"));
    let error = stream.error().expect("the run's error");
    assert_eq!(error.status().map(|s| s.as_u16()), Some(403));
    assert_eq!(error.to_string(), failure.detail);

    let empty = agent
        .run(&Shelf::new(false), Vec::<Message>::new())
        .await
        .unwrap_err();
    assert!(empty.is_input());
}

#[tokio::test]
async fn dropping_the_stream_stops_the_run() {
    let llm =
        ScriptedLlm::start([Turn::text("a long answer, slowly").every(Duration::from_millis(50))])
            .await;
    let mut events = agent(&llm).run_stream(Shelf::new(false), "hi");
    assert_eq!(events.next().await.unwrap().name(), "agent_start");
    assert_eq!(events.next().await.unwrap().name(), "llm_chunk");
    drop(events);
    // Nothing runs on: the run leaves the model's answer mid-stream, having made the one
    // request, and no other follows.
    tokio::time::timeout(Duration::from_secs(5), llm.cut_short())
        .await
        .expect("the run leaves the model's answer once its stream is dropped");
    assert_eq!(llm.requests().len(), 1);
}

/// A tool that records how many of its calls ran at once. A call stays until the turn has
/// been as busy as it may be since the call started (`busiest` calls running, or every one of
/// the turn's `calls` started), so that calls the agent would let overlap do overlap.
struct Gauge {
    definitions: Vec<ToolDefinition>,
    calls: usize,
    busiest: usize,
    started: AtomicUsize,
    busy: watch::Sender<Busy>,
    most: AtomicUsize,
}

/// How busy a [`Gauge`] is: its calls running now, and how many times `busiest` of them ran
/// at once.
#[derive(Debug, Default)]
struct Busy {
    running: usize,
    peaks: usize,
}

impl Gauge {
    fn new(calls: usize, busiest: usize) -> InMemory<Self> {
        let schema = ToolSchema::new(Call::new("GET", "/gauge"));
        let entry = ToolEntry::new("/gauge", "GET", "gauge", "");
        InMemory(Self {
            definitions: tool_definitions(&[(entry, schema)]),
            calls,
            busiest,
            started: AtomicUsize::new(0),
            busy: watch::Sender::default(),
            most: AtomicUsize::new(0),
        })
    }

    /// Counts a call in, and gives how many peaks there were before it.
    fn enter(&self) -> usize {
        self.started.fetch_add(1, Ordering::SeqCst);
        let mut peaks_before = 0;
        self.busy.send_modify(|busy| {
            peaks_before = busy.peaks;
            busy.running += 1;
            if busy.running >= self.busiest {
                busy.peaks += 1;
            }
            self.most.fetch_max(busy.running, Ordering::SeqCst);
        });
        peaks_before
    }

    /// Waits until the turn has been as busy as it may be since the call came in (there were
    /// `peaks_before` peaks then): whether it was within 5 s (when not, the agent ran fewer
    /// calls at once than it could).
    async fn busiest_moment(&self, peaks_before: usize) -> bool {
        let mut busy = self.busy.subscribe();
        let busiest = busy.wait_for(|busy| {
            busy.peaks > peaks_before || self.started.load(Ordering::SeqCst) == self.calls
        });
        tokio::time::timeout(Duration::from_secs(5), busiest)
            .await
            .is_ok()
    }
}

impl InMemoryTools for Gauge {
    fn definitions(&self) -> &[ToolDefinition] {
        &self.definitions
    }

    async fn answer(&self, _name: &str, arguments: Map<String, Value>) -> ToolOutput {
        let peaks_before = self.enter();
        // Let the agent start whatever else it would run at once before this call may end.
        tokio::task::yield_now().await;
        let came = self.busiest_moment(peaks_before).await;
        self.busy.send_modify(|busy| busy.running -= 1);
        if came {
            ToolOutput::from_response(200, json!({"n": arguments.get("n")}))
        } else {
            ToolOutput::failure("fewer calls ran at once than allowed")
        }
    }
}

#[tokio::test]
async fn a_turn_runs_at_most_max_concurrent_tools_calls_at_once_and_answers_in_order() {
    const CALLS: u64 = 7;
    let llm = ScriptedLlm::start([
        Turn::calls((0..CALLS).map(|n| llm::Call::new("gauge", json!({"n": n})))),
        Turn::text("done"),
    ])
    .await;
    let gauge = Gauge::new(CALLS as usize, 3);
    let provider = common::scripted(&llm).build().unwrap();
    let answer = Agent::builder(provider)
        .max_concurrent_tools(3)
        .build()
        .run(&gauge, "count")
        .await
        .unwrap();
    assert_eq!(answer.content(), "done");
    assert_eq!(
        gauge.most.load(Ordering::SeqCst),
        3,
        "three at once, never more"
    );
    let results: Vec<&Message> = answer.messages()[2..].iter().take(CALLS as usize).collect();
    for (n, message) in results.iter().enumerate() {
        let wire = serde_json::to_value(message).unwrap();
        assert_eq!(
            wire["content"],
            format!(r#"{{"n":{n}}}"#),
            "in the order asked"
        );
    }
}
