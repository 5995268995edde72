//! `AnthropicProvider` against a scripted Messages API server over real HTTP: streamed text,
//! tool calls put together from `input_json_delta` pieces and run by the agent loop, what
//! the second request carries, retries, errors, bounds and the API key.

use std::time::{Duration, Instant};

use futures_util::StreamExt as _;
use halo_agent::protocol::{
    Call, Message, ToolCall, ToolDefinition, ToolEntry, ToolOutput, ToolSchema, Usage,
    tool_definitions,
};
use halo_agent::{
    Agent, AnthropicProvider, AnthropicProviderBuilder, ChatEvent, ChatRequest, Completion,
    LlmProvider, ModelSettings,
};
use serde_json::{Map, Value, json};
use tokio::sync::Mutex;

use crate::common::anthropic::{Reply, ScriptedAnthropic};
use crate::common::{InMemory, InMemoryTools, assert_dune_in_stock};

const KEY: &str = "sk-ant-test-0123456789abcdef";

fn builder(server: &ScriptedAnthropic) -> AnthropicProviderBuilder {
    AnthropicProvider::builder()
        .base_url(server.base_url())
        .api_key(KEY)
        .model("claude-scripted")
        .min_retry_delay(Duration::from_millis(10))
}

fn provider(server: &ScriptedAnthropic) -> AnthropicProvider {
    builder(server).build().unwrap()
}

/// Every event of one streamed answer: the pieces of text, then the turn or the error that
/// ended it.
async fn collect(
    provider: &AnthropicProvider,
    request: ChatRequest,
) -> (Vec<String>, halo_agent::Result<Completion>) {
    let mut stream = provider.chat(request);
    let mut texts = Vec::new();
    while let Some(event) = stream.next().await {
        match event {
            Ok(ChatEvent::Text(text)) => texts.push(text),
            Ok(ChatEvent::Done(done)) => {
                assert!(stream.next().await.is_none(), "Done is the last event");
                return (texts, Ok(done));
            }
            Ok(other) => panic!("unexpected {other:?}"),
            Err(error) => {
                assert!(stream.next().await.is_none(), "an error is the last event");
                return (texts, Err(error));
            }
        }
    }
    panic!("the stream ended without Done or an error")
}

/// [`collect`] the answer to a lone "hi", offering no tools.
async fn say_hi(provider: &AnthropicProvider) -> (Vec<String>, halo_agent::Result<Completion>) {
    collect(
        provider,
        ChatRequest::new(vec![Message::user("hi")], vec![]),
    )
    .await
}

/// A body of events written out, each `(name, data)` one event.
fn sse(events: &[(&str, &str)]) -> String {
    events
        .iter()
        .map(|(name, data)| format!("event: {name}\ndata: {data}\n\n"))
        .collect()
}

const START: (&str, &str) = (
    "message_start",
    r#"{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","content":[],"model":"m","usage":{"input_tokens":3,"output_tokens":1}}}"#,
);
const TEXT_BLOCK: (&str, &str) = (
    "content_block_start",
    r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#,
);

/// One tool, `lookup`, that finds a book by id (a `404` problem for id 0), and remembers
/// the arguments of every call.
struct Shelf {
    definitions: Vec<ToolDefinition>,
    seen: Mutex<Vec<Map<String, Value>>>,
}

impl Shelf {
    fn new() -> InMemory<Self> {
        let entry = ToolEntry::new("/books", "GET", "lookup", "Find a book by its id.");
        InMemory(Self {
            definitions: tool_definitions(&[(entry, ToolSchema::new(Call::new("GET", "/books")))]),
            seen: Mutex::new(Vec::new()),
        })
    }
}

impl InMemoryTools for Shelf {
    fn definitions(&self) -> &[ToolDefinition] {
        &self.definitions
    }

    async fn answer(&self, _name: &str, arguments: Map<String, Value>) -> ToolOutput {
        let id = arguments.get("id").and_then(Value::as_u64).unwrap_or(0);
        self.seen.lock().await.push(arguments);
        if id == 0 {
            return ToolOutput::from_response(
                404,
                json!({"type": "about:blank", "title": "Not Found", "status": 404,
                       "detail": "no book has id 0"}),
            );
        }
        ToolOutput::from_response(200, json!({"id": id, "title": "Dune", "in_stock": true}))
    }
}

#[tokio::test]
async fn text_streams_in_pieces_with_usage_and_the_headers() {
    let server = ScriptedAnthropic::start([Reply::text("Dune is in stock.").usage(21, 7)]).await;
    let request = ChatRequest::new(
        vec![Message::system("Be brief."), Message::user("Dune?")],
        Shelf::new().definitions().to_vec(),
    )
    .with_settings(ModelSettings::new().temperature(0.2).max_tokens(300));
    let (texts, done) = collect(&provider(&server), request).await;
    let done = done.unwrap();
    assert_dune_in_stock(&texts, &done);

    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    let sent = &requests[0];
    assert_eq!(sent.header("x-api-key"), Some(KEY));
    assert_eq!(sent.header("anthropic-version"), Some("2023-06-01"));
    assert_eq!(sent.header("content-type"), Some("application/json"));
    assert_eq!(sent.header("authorization"), None);
    assert_eq!(
        sent.body,
        json!({
            "model": "claude-scripted",
            "max_tokens": 300,
            "system": "Be brief.",
            "messages": [{"role": "user", "content": "Dune?"}],
            "tools": [{"name": "lookup", "description": "Find a book by its id.",
                       "input_schema": sent.body["tools"][0]["input_schema"].clone()}],
            "temperature": 0.2,
            "stream": true,
        })
    );
    assert_eq!(sent.body["tools"][0]["input_schema"]["type"], "object");
}

#[tokio::test]
async fn the_agent_runs_a_tool_then_answers_and_the_second_request_carries_both_blocks() {
    let arguments = json!({"id": 7, "why": "the customer asked whether Dune is in stock"});
    let call = Reply::calls(Some("Let me look."), [("lookup", arguments.clone())]).usage(30, 12);
    // The arguments come in many pieces.
    let pieces = call
        .events()
        .iter()
        .filter(|e| e.contains("input_json_delta"))
        .count();
    assert!(pieces > 5, "{pieces} pieces");
    let server =
        ScriptedAnthropic::start([call, Reply::text("Dune is in stock.").usage(60, 6)]).await;
    let tools = Shelf::new();
    let agent = Agent::builder(provider(&server))
        .system_prompt("You help a bookstore's customers.")
        .build();
    let answer = agent.run(&tools, "Is Dune in stock?").await.unwrap();
    assert_eq!(answer.content(), "Dune is in stock.");
    assert_eq!(answer.turns(), 2);
    assert_eq!(answer.usage(), Usage::new(90, 18));
    assert_eq!(
        *tools.seen.lock().await,
        [arguments.as_object().unwrap().clone()]
    );
    let call = ToolCall::new("toolu_1_lookup", "lookup", arguments.to_string());
    assert_eq!(
        answer.messages()[1],
        Message::tool_calls(Some("Let me look.".into()), vec![call])
    );

    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    for sent in &requests {
        assert_eq!(sent.header("x-api-key"), Some(KEY));
        assert_eq!(sent.header("anthropic-version"), Some("2023-06-01"));
        assert_eq!(sent.body["system"], "You help a bookstore's customers.");
        assert_eq!(sent.body["tools"][0]["name"], "lookup");
    }
    assert_eq!(
        requests[1].body["messages"],
        json!([
            {"role": "user", "content": "Is Dune in stock?"},
            {"role": "assistant", "content": [
                {"type": "text", "text": "Let me look."},
                {"type": "tool_use", "id": "toolu_1_lookup", "name": "lookup", "input": arguments},
            ]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1_lookup",
                 "content": json!({"id": 7, "title": "Dune", "in_stock": true}).to_string()},
            ]},
        ])
    );
}

#[tokio::test]
async fn failed_calls_and_arguments_that_are_not_json_are_marked_is_error() {
    let server = ScriptedAnthropic::start([
        Reply::raw_calls(
            None,
            [
                ("lookup".to_owned(), r#"{"id": 7,, "x"}"#.to_owned()),
                ("lookup".to_owned(), r#"{"id": 0}"#.to_owned()),
                ("lookup".to_owned(), r#"{"id": 3}"#.to_owned()),
            ],
        ),
        Reply::text("One of them is in stock."),
    ])
    .await;
    let tools = Shelf::new();
    let agent = Agent::builder(provider(&server)).build();
    let answer = agent.run(&tools, "Books 7, 0, 3?").await.unwrap();
    assert_eq!(answer.content(), "One of them is in stock.");
    // The bad arguments never reached the tool.
    assert_eq!(tools.seen.lock().await.len(), 2);
    let second = &server.requests()[1].body["messages"];
    let uses = second[1]["content"].as_array().unwrap();
    assert_eq!(
        uses[0]["input"],
        json!({}),
        "bad arguments are sent as {{}}"
    );
    assert_eq!(uses[1]["input"], json!({"id": 0}));
    let results = second[2]["content"].as_array().unwrap();
    assert_eq!(results.len(), 3);
    assert_eq!(results[0]["tool_use_id"], "toolu_0_lookup");
    assert_eq!(results[0]["is_error"], true);
    assert!(
        results[0]["content"]
            .as_str()
            .unwrap()
            .contains("not valid JSON"),
        "{results:?}"
    );
    assert_eq!(results[1]["is_error"], true);
    assert!(results[1]["content"].as_str().unwrap().contains("404"));
    assert_eq!(results[2].get("is_error"), None);
}

#[tokio::test]
async fn an_error_event_ends_the_answer_with_its_message() {
    let body = sse(&[
        START,
        TEXT_BLOCK,
        (
            "content_block_delta",
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hel"}}"#,
        ),
        (
            "error",
            r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
        ),
    ]);
    let server = ScriptedAnthropic::start([Reply::raw(&body)]).await;
    let (texts, error) = say_hi(&provider(&server)).await;
    let error = error.unwrap_err();
    assert_eq!(texts, ["Hel"]);
    assert!(
        error.is_llm() && !error.is_status() && !error.is_decode(),
        "{error:?}"
    );
    assert!(
        error
            .to_string()
            .contains("mid-answer: overloaded_error: Overloaded"),
        "{error}"
    );
    assert_eq!(server.requests().len(), 1, "an answer begun is not retried");
}

#[tokio::test]
async fn a_429_waits_for_retry_after_and_a_529_is_retried() {
    let server = ScriptedAnthropic::start([
        Reply::status(
            429,
            "rate_limit_error",
            "Number of requests has exceeded your rate limit",
        )
        .retry_after("1"),
        Reply::status(529, "overloaded_error", "Overloaded"),
        Reply::text("ok"),
    ])
    .await;
    let started = Instant::now();
    let (_, done) = say_hi(&provider(&server)).await;
    assert_eq!(done.unwrap().content.as_deref(), Some("ok"));
    assert!(
        started.elapsed() >= Duration::from_secs(1),
        "retry-after honoured: {:?}",
        started.elapsed()
    );
    assert_eq!(server.requests().len(), 3);
}

#[tokio::test]
async fn rate_limits_until_attempts_run_out_are_a_429_with_the_message() {
    let limited = || Reply::status(429, "rate_limit_error", "Rate limited. Slow down.");
    let server = ScriptedAnthropic::start([limited(), limited(), limited()]).await;
    let provider = AnthropicProvider::builder()
        .base_url(server.base_url())
        .model("m")
        .max_attempts(3)
        .min_retry_delay(Duration::from_millis(10))
        .build()
        .unwrap();
    let (_, error) = say_hi(&provider).await;
    let error = error.unwrap_err();
    assert_eq!(error.status().map(|s| s.as_u16()), Some(429), "{error}");
    assert!(
        error
            .to_string()
            .contains("rate_limit_error: Rate limited. Slow down."),
        "{error}"
    );
    assert_eq!(server.requests().len(), 3);
    // Without an API key, no x-api-key header at all.
    assert!(
        server
            .requests()
            .iter()
            .all(|r| r.header("x-api-key").is_none())
    );
}

#[tokio::test]
async fn a_401_is_not_retried_and_the_key_never_shows() {
    let server = ScriptedAnthropic::start([Reply::status(
        401,
        "authentication_error",
        &format!("invalid x-api-key: {KEY}"),
    )])
    .await;
    let provider = provider(&server);
    let (_, error) = say_hi(&provider).await;
    let error = error.unwrap_err();
    assert_eq!(error.status().map(|s| s.as_u16()), Some(401));
    let shown = format!("{error} {error:?} {provider:?}");
    assert!(!shown.contains(KEY), "{shown}");
    assert!(
        shown.contains("authentication_error: invalid x-api-key: [redacted]"),
        "{shown}"
    );
    assert_eq!(server.requests().len(), 1);

    server.push([
        Reply::status(403, "permission_error", "not allowed"),
        Reply::status(
            400,
            "invalid_request_error",
            "messages: at least one message is required",
        ),
    ]);
    let (_, forbidden) = say_hi(&provider).await;
    assert_eq!(
        forbidden.unwrap_err().status().map(|s| s.as_u16()),
        Some(403)
    );
    let (_, invalid) = say_hi(&provider).await;
    let invalid = invalid.unwrap_err();
    assert_eq!(invalid.status().map(|s| s.as_u16()), Some(400));
    assert!(
        invalid
            .to_string()
            .contains("invalid_request_error: messages: at least one message is required"),
        "{invalid}"
    );
    assert_eq!(server.requests().len(), 3, "4xx answers are not retried");
}

#[tokio::test]
async fn a_truncated_stream_is_an_error_not_an_answer() {
    let server = ScriptedAnthropic::start([
        Reply::text("Dune is in stock.").cut_after(5),
        Reply::text("Dune is in stock.").cut_after(0),
    ])
    .await;
    let provider = provider(&server);
    let (texts, error) = say_hi(&provider).await;
    let error = error.unwrap_err();
    assert_eq!(texts, ["Dune", " is "]);
    assert!(error.is_llm() && !error.is_decode(), "{error:?}");
    assert!(error.to_string().contains("message_stop"), "{error}");
    // Through the agent: the run fails rather than taking half an answer.
    let agent = Agent::builder(provider).build();
    let failed = agent.run(&Shelf::new(), "Dune?").await.unwrap_err();
    assert!(failed.is_llm(), "{failed:?}");
}

#[tokio::test]
async fn bad_json_and_what_is_not_an_event_stream_are_decode_errors() {
    let body = sse(&[
        START,
        TEXT_BLOCK,
        (
            "content_block_delta",
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"x""#,
        ),
    ]);
    let server = ScriptedAnthropic::start([Reply::raw(&body)]).await;
    let provider = provider(&server);
    let (texts, error) = say_hi(&provider).await;
    let error = error.unwrap_err();
    assert!(texts.is_empty());
    assert!(error.is_decode(), "{error:?}");
    assert!(error.to_string().contains("content_block_delta"), "{error}");

    // An OpenAI-style chunk has no `type`.
    server.push([Reply::raw("data: {\"choices\": []}\n\n")]);
    let (_, error) = say_hi(&provider).await;
    assert!(error.unwrap_err().is_decode());
}

#[tokio::test]
async fn events_and_answers_past_their_bounds_are_refused() {
    let big = format!(
        r#"{{"type":"content_block_delta","index":0,"delta":{{"type":"text_delta","text":"{}"}}}}"#,
        "x".repeat(4000)
    );
    let server = ScriptedAnthropic::start([
        Reply::raw(&sse(&[START, TEXT_BLOCK, ("content_block_delta", &big)])),
        Reply::text(&"word ".repeat(2000)),
    ])
    .await;
    let provider = builder(&server)
        .max_event_bytes(2048)
        .max_response_bytes(64 * 1024)
        .build()
        .unwrap();
    let (_, error) = say_hi(&provider).await;
    let error = error.unwrap_err();
    assert!(error.is_decode(), "{error:?}");
    assert!(
        error.to_string().contains("longer than 2048 bytes"),
        "{error}"
    );
    let (texts, error) = say_hi(&provider).await;
    let error = error.unwrap_err();
    assert!(
        error.to_string().contains("longer than 65536 bytes"),
        "{error}"
    );
    assert!(!texts.is_empty() && texts.concat().len() < 10_000);
}

#[tokio::test]
async fn silence_a_wrong_base_url_and_unreachable_endpoints_are_clear_errors() {
    let server = ScriptedAnthropic::start([
        Reply::hang(),
        Reply::text("slow").every(Duration::from_millis(400)),
    ])
    .await;
    let provider = builder(&server)
        .idle_timeout(Some(Duration::from_millis(200)))
        .build()
        .unwrap();
    let (_, error) = say_hi(&provider).await;
    assert!(error.unwrap_err().is_timeout());
    let (_, error) = say_hi(&provider).await;
    let error = error.unwrap_err();
    assert!(error.is_timeout(), "{error:?}");
    assert!(
        error.to_string().contains("sent nothing for 200 ms"),
        "{error}"
    );

    // `/v1` is part of the path, not of the base URL: a 404 names the URL asked.
    let doubled = builder(&server)
        .base_url(format!("{}/v1", server.base_url()))
        .build()
        .unwrap();
    let (_, error) = say_hi(&doubled).await;
    let error = error.unwrap_err();
    assert_eq!(error.status().map(|s| s.as_u16()), Some(404));
    assert_eq!(
        error.endpoint(),
        Some(format!("{}/v1/v1/messages", server.base_url()).as_str())
    );

    // A port nothing listens on.
    let port = halo_tests::closed_port();
    let provider = AnthropicProvider::builder()
        .base_url(format!("http://127.0.0.1:{port}"))
        .model("m")
        .max_attempts(2)
        .min_retry_delay(Duration::from_millis(10))
        .build()
        .unwrap();
    let (_, error) = say_hi(&provider).await;
    let error = error.unwrap_err();
    assert!(error.is_connect(), "{error:?}");
    assert_eq!(
        error.endpoint(),
        Some(format!("http://127.0.0.1:{port}/v1/messages").as_str())
    );
}
