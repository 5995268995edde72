//! `OpenAiProvider` against a scripted OpenAI-compatible server over real HTTP: streamed
//! text, tool calls assembled from pieces, usage, retries, errors and the API key.

use std::time::Duration;

use futures_util::StreamExt as _;
use halo_agent::protocol::{
    Call, Message, ToolCall, ToolDefinition, ToolEntry, ToolSchema, Usage, tool_definitions,
};
use halo_agent::{ChatEvent, ChatRequest, Completion, LlmProvider, ModelSettings, OpenAiProvider};
use halo_tests::llm::{self, ScriptedLlm, Turn};
use serde_json::json;

use crate::common::assert_dune_in_stock;

const KEY: &str = "sk-test-0123456789abcdef";

fn provider(llm: &ScriptedLlm) -> OpenAiProvider {
    OpenAiProvider::builder()
        .base_url(llm.base_url())
        .api_key(KEY)
        .model("scripted-model")
        .min_retry_delay(Duration::from_millis(20))
        .build()
        .unwrap()
}

fn tools() -> Vec<ToolDefinition> {
    let tool = |name: &str, url: &str| {
        (
            ToolEntry::new(url, "GET", name, format!("{name}.")),
            ToolSchema::new(Call::new("GET", url)),
        )
    };
    tool_definitions(&[
        tool("search_books", "/api/books"),
        tool("get_stock", "/api/stock"),
    ])
}

/// Every event of one streamed answer; the last one must be `Done`.
async fn collect(
    provider: &OpenAiProvider,
    request: ChatRequest,
) -> halo_agent::Result<(Vec<String>, Completion)> {
    let mut stream = provider.chat(request);
    let mut texts = Vec::new();
    while let Some(event) = stream.next().await {
        match event? {
            ChatEvent::Text(text) => texts.push(text),
            ChatEvent::Done(done) => {
                assert!(stream.next().await.is_none(), "Done is the last event");
                return Ok((texts, done));
            }
            other => panic!("unexpected {other:?}"),
        }
    }
    panic!("the stream ended without Done")
}

/// [`collect`] the answer to a lone "hi", offering no tools.
async fn say_hi(provider: &OpenAiProvider) -> halo_agent::Result<(Vec<String>, Completion)> {
    collect(
        provider,
        ChatRequest::new(vec![Message::user("hi")], vec![]),
    )
    .await
}

#[tokio::test]
async fn text_streams_in_pieces_and_usage_is_reported() {
    let llm = ScriptedLlm::start([Turn::text("Dune is in stock.").usage(21, 7)]).await;
    let request = ChatRequest::new(vec![Message::user("Dune?")], tools())
        .with_settings(ModelSettings::new().temperature(0.2).max_tokens(300));
    let (texts, done) = collect(&provider(&llm), request).await.unwrap();
    assert_dune_in_stock(&texts, &done);

    let requests = llm.requests();
    assert_eq!(requests.len(), 1);
    let body = &requests[0].body;
    assert_eq!(body["model"], "scripted-model");
    assert_eq!(body["stream"], true);
    assert_eq!(body["stream_options"], json!({"include_usage": true}));
    assert_eq!(body["temperature"], json!(0.2));
    assert_eq!(body["max_tokens"], 300);
    assert_eq!(requests[0].tool_names(), ["search_books", "get_stock"]);
    assert_eq!(body["tools"][0]["type"], "function");
    assert_eq!(body["tools"][0]["function"]["parameters"]["type"], "object");
    assert_eq!(
        requests[0].messages(),
        [json!({"role": "user", "content": "Dune?"})]
    );
    assert_eq!(
        requests[0].authorization(),
        Some(format!("Bearer {KEY}").as_str())
    );
}

#[tokio::test]
async fn parallel_tool_calls_are_assembled_from_their_pieces() {
    let llm = ScriptedLlm::start([Turn::text_and_calls(
        "Let me look.",
        [
            llm::Call::new("search_books", json!({"max_price": 20, "q": "Dune"})),
            llm::Call::new("get_stock", json!({"sku": "9780441172719"})),
        ],
    )])
    .await;
    let request = ChatRequest::new(vec![Message::user("Dune?")], tools());
    let (texts, done) = collect(&provider(&llm), request).await.unwrap();
    assert_eq!(texts.concat(), "Let me look.");
    assert_eq!(
        done.tool_calls,
        [
            ToolCall::new(
                "call_0_search_books",
                "search_books",
                r#"{"max_price":20,"q":"Dune"}"#
            ),
            ToolCall::new(
                "call_1_get_stock",
                "get_stock",
                r#"{"sku":"9780441172719"}"#
            ),
        ]
    );
    assert_eq!(done.finish_reason.as_deref(), Some("tool_calls"));
    assert_eq!(done.usage, Some(Usage::new(10, 5)));
}

#[tokio::test]
async fn a_500_is_retried_and_a_400_is_not() {
    let llm = ScriptedLlm::start([Turn::status(500), Turn::text("ok")]).await;
    let provider = provider(&llm);
    let (_, done) = say_hi(&provider).await.unwrap();
    assert_eq!(done.content.as_deref(), Some("ok"));
    assert_eq!(llm.requests().len(), 2, "one failure, one retry");

    llm.push([Turn::status_with(
        400,
        json!({"error": {"message": "messages must not be empty", "type": "invalid_request_error",
                         "param": "messages", "code": null}}),
    )]);
    let error = say_hi(&provider).await.unwrap_err();
    assert!(error.is_status() && error.is_llm(), "{error:?}");
    assert_eq!(error.status().map(|s| s.as_u16()), Some(400));
    assert!(
        error.to_string().contains("messages must not be empty"),
        "{error}"
    );
    assert_eq!(llm.requests().len(), 3, "a 400 is not retried");
}

#[tokio::test]
async fn a_429_honours_retry_after_until_attempts_run_out() {
    let limited = json!({"error": {"message": "Rate limit reached", "type": "requests",
                                    "param": null, "code": "rate_limit_exceeded"}});
    let llm = ScriptedLlm::start([
        Turn::status_with(429, limited.clone()),
        Turn::status_with(429, limited.clone()),
        Turn::status_with(429, limited),
    ])
    .await;
    let provider = OpenAiProvider::builder()
        .base_url(llm.base_url())
        .model("m")
        .max_attempts(3)
        .min_retry_delay(Duration::from_millis(10))
        .build()
        .unwrap();
    let error = say_hi(&provider).await.unwrap_err();
    assert_eq!(error.status().map(|s| s.as_u16()), Some(429), "{error}");
    assert!(error.to_string().contains("Rate limit reached"));
    assert_eq!(llm.requests().len(), 3);
    // Without an API key, no Authorization header at all.
    assert!(llm.requests().iter().all(|r| r.authorization().is_none()));
}

#[tokio::test]
async fn a_spent_quota_is_not_retried() {
    let llm = ScriptedLlm::start([Turn::status_with(
        429,
        json!({"error": {"message": "You exceeded your current quota", "type": "insufficient_quota",
                         "param": null, "code": "insufficient_quota"}}),
    )])
    .await;
    let error = say_hi(&provider(&llm)).await.unwrap_err();
    assert_eq!(error.status().map(|s| s.as_u16()), Some(429));
    assert!(error.to_string().contains("quota"), "{error}");
    assert_eq!(llm.requests().len(), 1);
}

#[tokio::test]
async fn the_api_key_never_shows_in_errors_or_debug() {
    let llm = ScriptedLlm::start([Turn::status_with(
        401,
        json!({"error": {"message": format!("Incorrect API key provided: {KEY}."),
                         "type": "invalid_request_error", "param": null, "code": "invalid_api_key"}}),
    )])
    .await;
    let provider = provider(&llm);
    let error = say_hi(&provider).await.unwrap_err();
    let shown = format!("{error} {error:?} {provider:?}");
    assert!(!shown.contains(KEY), "{shown}");
    assert!(
        shown.contains("Incorrect API key provided: [redacted]"),
        "{shown}"
    );
    assert_eq!(error.status().map(|s| s.as_u16()), Some(401));
}

#[tokio::test]
async fn silence_and_unreachable_endpoints_are_clear_errors() {
    let llm = ScriptedLlm::start([Turn::hang()]).await;
    let provider = OpenAiProvider::builder()
        .base_url(llm.base_url())
        .model("m")
        .idle_timeout(Some(Duration::from_millis(200)))
        .build()
        .unwrap();
    let error = say_hi(&provider).await.unwrap_err();
    assert!(error.is_timeout(), "{error:?}");

    // A port nothing listens on.
    let port = halo_tests::closed_port();
    let provider = OpenAiProvider::builder()
        .base_url(format!("http://127.0.0.1:{port}/v1"))
        .model("m")
        .max_attempts(2)
        .min_retry_delay(Duration::from_millis(10))
        .build()
        .unwrap();
    let error = say_hi(&provider).await.unwrap_err();
    assert!(error.is_connect(), "{error:?}");
}
