//! [`AnthropicProvider`]: Anthropic's Messages API, streamed, on reqwest.

mod event;
mod transport;

use std::collections::VecDeque;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use futures_util::stream::{self, BoxStream};
use futures_util::{StreamExt as _, TryStreamExt as _};
use halo_protocol::{Message, RetrySchedule, ToolDefinition};
use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderMap, HeaderValue};
use serde_json::{Map, Value, json};

use self::event::{Assembly, Frames, Sse, Step};
use self::transport::Transport;
use crate::endpoint::{shown_url, transport_error};
use crate::{ChatEvent, ChatRequest, ChatStream, Error, LlmProvider, ModelSettings, Result};

/// The base URL used when none is set: Anthropic's.
pub const ANTHROPIC_BASE_URL: &str = "https://api.anthropic.com";

/// The version of the Messages API asked for (`anthropic-version`).
const API_VERSION: &str = "2023-06-01";

/// Where the Messages API is, after the base URL.
const MESSAGES_PATH: &str = "/v1/messages";

/// The most tokens of an answer when nothing sets it: the API requires a figure.
const DEFAULT_MAX_TOKENS: u32 = 4096;

/// The largest event of an answer by default, in bytes.
const MAX_EVENT: usize = 1 << 20;

/// The largest answer by default, in bytes, its framing included.
const MAX_RESPONSE: usize = 64 << 20;

/// The longest wait for a body's end after `message_stop`.
const DRAIN_TIME: Duration = Duration::from_millis(50);

/// The most bytes read after `message_stop`.
const DRAIN_BYTES: usize = 64 * 1024;

/// A Claude model behind Anthropic's Messages API (`POST /v1/messages`), or a server that
/// speaks it.
///
/// Answers are streamed (`stream: true`): text as it is written, tool calls (`tool_use`
/// blocks) put together from their `input_json_delta` pieces, the tokens used, and why the
/// model stopped, all given as the same [`ChatEvent`]s and [`Completion`](crate::Completion)
/// as [`OpenAiProvider`](crate::OpenAiProvider)'s. The conversation is sent as the API wants
/// it: system messages as the top-level `system`, tool calls as `tool_use` blocks, tool
/// results as a user message of `tool_result` blocks (`is_error` for the calls the request
/// lists in [`failed_calls`](ChatRequest::failed_calls)), and consecutive messages of one
/// role as one.
///
/// - Finish reasons are chat completions' words: `end_turn` and `stop_sequence` are `stop`,
///   `max_tokens` is `length`, `tool_use` is `tool_calls`, `refusal` is `content_filter`.
/// - Usage counts as prompt tokens all the input, read from the prompt cache or written to
///   it included.
/// - [`ModelSettings`]: `model`, `temperature` (`0` to `1` here: outside it a request is
///   refused before it is sent) and `max_tokens`, which the API requires: 4,096 when neither
///   the builder nor the request sets it.
/// - `429` and `5xx` answers (`529`, overloaded, among them), timeouts and failed
///   connections are retried with exponential backoff and jitter, honouring `Retry-After`;
///   other errors come back at once with the API's message (`type: message`). An `error`
///   event within the answer ends it with an error, as does an answer that stops before
///   `message_stop`, an event that is not JSON, and an event or an answer past its bound
///   ([`max_event_bytes`](AnthropicProviderBuilder::max_event_bytes),
///   [`max_response_bytes`](AnthropicProviderBuilder::max_response_bytes)).
///
/// The API key goes to the base URL's host only, in `x-api-key` (redirects are not
/// followed), with `anthropic-version: 2023-06-01`. It never shows in `Debug` output or in
/// error messages (an endpoint that echoes it has it redacted), and nothing is read from
/// the environment: without [`api_key`](AnthropicProviderBuilder::api_key) no `x-api-key`
/// header is sent.
///
/// ```
/// use halo_agent::{Agent, AnthropicProvider, ModelSettings};
///
/// let provider = AnthropicProvider::builder()
///     .api_key("sk-ant-test-not-a-real-key")
///     .model("claude-sonnet-4-5")
///     .max_tokens(2048)
///     .build()
///     .unwrap();
/// assert_eq!(provider.base_url(), "https://api.anthropic.com");
/// assert_eq!(provider.model(), "claude-sonnet-4-5");
/// assert!(!format!("{provider:?}").contains("sk-ant"));
///
/// let agent = Agent::builder(provider)
///     .system_prompt("You answer questions about the bookstore's catalogue.")
///     .model(ModelSettings::new().temperature(0.2))
///     .build();
/// # let _ = agent;
/// ```
#[derive(Clone)]
pub struct AnthropicProvider {
    inner: Arc<Inner>,
}

struct Inner {
    transport: Transport,
    base_url: String,
    api_key: Option<String>,
    settings: ModelSettings,
    idle_timeout: Option<Duration>,
    max_event: usize,
    max_response: usize,
}

/// Builds an [`AnthropicProvider`].
#[must_use]
pub struct AnthropicProviderBuilder {
    base_url: String,
    api_key: Option<String>,
    settings: ModelSettings,
    timeout: Option<Duration>,
    idle_timeout: Option<Duration>,
    connect_timeout: Duration,
    /// When and how often to try again: halo-protocol's schedule, as halo-client's retries.
    retry: RetrySchedule,
    max_event: usize,
    max_response: usize,
}

impl AnthropicProvider {
    /// A builder: Anthropic's base URL, no API key, no model (one must be set), 4,096
    /// tokens an answer, 4 attempts, 60 s for the answer to start and 60 s of silence at
    /// most within it, events of 1 MiB and answers of 64 MiB at most.
    pub fn builder() -> AnthropicProviderBuilder {
        AnthropicProviderBuilder {
            base_url: ANTHROPIC_BASE_URL.to_owned(),
            api_key: None,
            settings: ModelSettings::new(),
            timeout: Some(Duration::from_secs(60)),
            idle_timeout: Some(Duration::from_secs(60)),
            connect_timeout: Duration::from_secs(10),
            retry: RetrySchedule::new()
                .with_max_attempts(4)
                .with_min_delay(Duration::from_millis(200))
                .with_max_delay(Duration::from_secs(10))
                .with_max_elapsed(Duration::from_secs(30)),
            max_event: MAX_EVENT,
            max_response: MAX_RESPONSE,
        }
    }

    /// The API's base URL, without a trailing slash.
    #[must_use]
    pub fn base_url(&self) -> &str {
        &self.inner.base_url
    }

    /// The model asked for when a request names none.
    #[must_use]
    pub fn model(&self) -> &str {
        self.inner.settings.model.as_deref().unwrap_or_default()
    }
}

impl AnthropicProviderBuilder {
    /// The API's base URL, up to `/v1/messages` (`https://api.anthropic.com` by default).
    pub fn base_url(mut self, url: impl Into<String>) -> Self {
        self.base_url = url.into();
        self
    }

    /// The API key, sent as `x-api-key` (none by default).
    pub fn api_key(mut self, key: impl Into<String>) -> Self {
        self.api_key = Some(key.into()).filter(|key| !key.is_empty());
        self
    }

    /// The model, as the API names it (`claude-sonnet-4-5`, ...; required).
    pub fn model(mut self, model: impl Into<String>) -> Self {
        self.settings.model = Some(model.into());
        self
    }

    /// The sampling temperature, `0` to `1`, unless a request sets one.
    pub fn temperature(mut self, temperature: f32) -> Self {
        self.settings.temperature = Some(temperature);
        self
    }

    /// The most tokens of an answer, unless a request sets it (4,096 by default).
    pub fn max_tokens(mut self, max_tokens: u32) -> Self {
        self.settings.max_tokens = Some(max_tokens);
        self
    }

    /// The longest wait for an answer to start, per attempt (60 s by default); `None` for
    /// no limit.
    pub fn timeout(mut self, timeout: Option<Duration>) -> Self {
        self.timeout = timeout;
        self
    }

    /// The longest silence within a streamed answer (60 s by default); `None` for no limit.
    /// The API sends `ping` events while the model thinks.
    pub fn idle_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.idle_timeout = timeout;
        self
    }

    /// The time to establish a connection (10 s by default).
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// How many attempts a request gets in all, the first included (4 by default, at least
    /// 1). Only `429`, `5xx`, timeouts and failed connections are tried again.
    pub fn max_attempts(mut self, attempts: u32) -> Self {
        self.retry = self.retry.with_max_attempts(attempts);
        self
    }

    /// The first retry's delay bound (200 ms by default); later ones double, up to 10 s.
    pub fn min_retry_delay(mut self, delay: Duration) -> Self {
        self.retry = self.retry.with_min_delay(delay);
        self
    }

    /// The most time spent waiting between attempts, all delays together (30 s by
    /// default).
    pub fn max_retry_elapsed(mut self, elapsed: Duration) -> Self {
        self.retry = self.retry.with_max_elapsed(elapsed);
        self
    }

    /// The largest event of an answer, its name and data, in bytes (1 MiB by default, at
    /// least 1 KiB); a larger one ends the answer with an error.
    pub fn max_event_bytes(mut self, bytes: usize) -> Self {
        self.max_event = bytes.max(1024);
        self
    }

    /// The largest answer, in bytes as they arrive (64 MiB by default, at least 1 KiB); a
    /// larger one ends with an error.
    pub fn max_response_bytes(mut self, bytes: usize) -> Self {
        self.max_response = bytes.max(1024);
        self
    }

    /// The provider.
    ///
    /// # Errors
    /// [`Error::is_builder`] when no model is set, the base URL is not an absolute `http`
    /// or `https` URL, the API key cannot be sent in a header, the temperature is not
    /// within `0..=1`, `max_tokens` is 0, or the HTTP client cannot be made.
    pub fn build(self) -> Result<AnthropicProvider> {
        if self.settings.model.as_deref().is_none_or(str::is_empty) {
            return Err(Error::builder("no model: name the one the API should use"));
        }
        check_settings(&self.settings).map_err(Error::builder)?;
        let base_url = self.base_url.trim().trim_end_matches('/').to_owned();
        let parsed = reqwest::Url::parse(&base_url)
            .map_err(|e| Error::builder(format!("the base URL is not a URL: {e}")))?;
        if !matches!(parsed.scheme(), "http" | "https") || parsed.host_str().is_none() {
            return Err(Error::builder(
                "the base URL must be an absolute http or https URL",
            ));
        }
        let url = reqwest::Url::parse(&format!("{base_url}{MESSAGES_PATH}"))
            .map_err(|e| Error::builder(format!("the base URL is not a URL: {e}")))?;
        let mut headers = HeaderMap::new();
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        headers.insert(ACCEPT, HeaderValue::from_static("text/event-stream"));
        headers.insert("anthropic-version", HeaderValue::from_static(API_VERSION));
        if let Some(key) = &self.api_key {
            let mut value = HeaderValue::try_from(key.as_str())
                .map_err(|_| Error::builder("the API key has characters a header cannot carry"))?;
            value.set_sensitive(true);
            headers.insert("x-api-key", value);
        }
        // No redirects: the key is a header of its own, which reqwest would carry to
        // another host.
        let http = reqwest::Client::builder()
            .connect_timeout(self.connect_timeout)
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| Error::builder(format!("the HTTP client: {}", e.without_url())))?;
        let transport = Transport {
            http,
            endpoint: shown_url(&url),
            url,
            headers,
            retry: self.retry,
            timeout: self.timeout,
        };
        Ok(AnthropicProvider {
            inner: Arc::new(Inner {
                transport,
                base_url,
                api_key: self.api_key,
                settings: self.settings,
                idle_timeout: self.idle_timeout,
                max_event: self.max_event,
                max_response: self.max_response,
            }),
        })
    }
}

/// Why these settings cannot be sent, if they cannot.
fn check_settings(settings: &ModelSettings) -> std::result::Result<(), String> {
    if let Some(temperature) = settings.temperature
        && !(0.0..=1.0).contains(&temperature)
    {
        return Err(format!(
            "the temperature {temperature} is outside the Messages API's range, 0 to 1"
        ));
    }
    if settings.max_tokens == Some(0) {
        return Err("max_tokens must be at least 1".to_owned());
    }
    Ok(())
}

impl LlmProvider for AnthropicProvider {
    fn chat(&self, request: ChatRequest) -> ChatStream {
        let inner = Arc::clone(&self.inner);
        stream::once(async move { inner.open(request).await })
            .flat_map(|opened| match opened {
                Ok(events) => events,
                Err(error) => stream::once(async { Err(error) }).boxed(),
            })
            .boxed()
    }
}

impl Inner {
    /// Sends a request (retried by the transport until its answer starts) and streams the
    /// answer's events.
    async fn open(self: Arc<Self>, request: ChatRequest) -> Result<ChatStream> {
        let key = self.api_key.as_deref();
        let body = self.body(&request)?;
        let response = self
            .transport
            .send(&body)
            .await
            .map_err(|e| e.scrubbed(key))?;
        if let Some(kind) = response.headers().get(CONTENT_TYPE)
            && !kind
                .as_bytes()
                .to_ascii_lowercase()
                .starts_with(b"text/event-stream")
        {
            let kind = String::from_utf8_lossy(kind.as_bytes()).into_owned();
            return Err(
                Error::decode(format!("the answer is {kind}, not an event stream")).scrubbed(key),
            );
        }
        let reading = Reading {
            body: response.bytes_stream().map_err(transport_error).boxed(),
            frames: Frames::new(self.max_event),
            assembly: Assembly::default(),
            events: VecDeque::new(),
            broken: None,
            received: 0,
            inner: self,
        };
        Ok(stream::unfold(Some(reading), |reading| async move {
            let mut reading = reading?;
            match reading.next().await {
                Ok(event @ ChatEvent::Text(_)) => Some((Ok(event), Some(reading))),
                Ok(done) => Some((Ok(done), None)),
                Err(error) => {
                    let error = error.scrubbed(reading.inner.api_key.as_deref());
                    Some((Err(error), None))
                }
            }
        })
        .boxed())
    }

    /// The request body: the model and its settings, the system prompt, the conversation,
    /// the tools, and the ask for a stream.
    ///
    /// # Errors
    /// [`Error::is_input`] for settings the API cannot take.
    fn body(&self, request: &ChatRequest) -> Result<Vec<u8>> {
        let settings = self.settings.overridden_by(&request.settings);
        check_settings(&settings).map_err(Error::input)?;
        let (system, messages) = wire_messages(&request.messages, &request.failed_calls);
        let mut body = Map::new();
        body.insert("model".into(), json!(settings.model.unwrap_or_default()));
        body.insert(
            "max_tokens".into(),
            json!(settings.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS)),
        );
        if let Some(system) = system {
            body.insert("system".into(), Value::String(system));
        }
        body.insert("messages".into(), Value::Array(messages));
        if !request.tools.is_empty() {
            body.insert(
                "tools".into(),
                request
                    .tools
                    .iter()
                    .map(ToolDefinition::anthropic_tool)
                    .collect(),
            );
        }
        if let Some(temperature) = settings.temperature {
            // Through its shortest text, so that 0.2 is sent as 0.2.
            if let Ok(number) = temperature.to_string().parse::<f64>() {
                body.insert("temperature".into(), json!(number));
            }
        }
        body.insert("stream".into(), json!(true));
        serde_json::to_vec(&Value::Object(body))
            .map_err(|e| Error::input(format!("the request cannot be written: {e}")))
    }
}

/// An answer being read: its bytes (in chunks of type `B`), framed into events, put
/// together into a turn.
struct Reading<B> {
    inner: Arc<Inner>,
    body: BoxStream<'static, Result<B>>,
    frames: Frames,
    assembly: Assembly,
    /// Events framed, not yet handed on.
    events: VecDeque<Sse>,
    /// The framing's error, once the events before it are handed on.
    broken: Option<Error>,
    /// The bytes read so far.
    received: usize,
}

impl<B: AsRef<[u8]>> Reading<B> {
    /// Reads what follows `message_stop`, which is only the body's end, for a moment: a
    /// body read to its end lets its connection serve the next turn (without a new TLS
    /// handshake). A server slow to end it is not waited for.
    async fn drain(&mut self) {
        let mut extra = 0_usize;
        let rest = async {
            while let Some(Ok(chunk)) = self.body.next().await {
                extra += chunk.as_ref().len();
                if extra > DRAIN_BYTES {
                    break;
                }
            }
        };
        let _ = tokio::time::timeout(DRAIN_TIME, rest).await;
    }

    /// The next event of the answer: a piece of text, or the whole turn.
    async fn next(&mut self) -> Result<ChatEvent> {
        loop {
            while let Some(sse) = self.events.pop_front() {
                match self.assembly.add(event::parse(&sse)?)? {
                    Step::Nothing => {}
                    Step::Text(text) => return Ok(ChatEvent::Text(text)),
                    Step::Done(done) => {
                        self.drain().await;
                        return Ok(ChatEvent::Done(done));
                    }
                }
            }
            if let Some(error) = self.broken.take() {
                return Err(error);
            }
            let next = match self.inner.idle_timeout {
                Some(limit) => tokio::time::timeout(limit, self.body.next())
                    .await
                    .map_err(|_| {
                        Error::timeout(format!(
                            "the model sent nothing for {} ms",
                            limit.as_millis()
                        ))
                        .at(&self.inner.transport.endpoint)
                    })?,
                None => self.body.next().await,
            };
            let Some(chunk) = next.transpose()? else {
                return Err(Error::request(
                    "the answer ended before message_stop: it was cut short",
                ));
            };
            let chunk = chunk.as_ref();
            self.received = self.received.saturating_add(chunk.len());
            if self.received > self.inner.max_response {
                return Err(Error::decode(format!(
                    "the answer is longer than {} bytes",
                    self.inner.max_response
                )));
            }
            if let Err(error) = self.frames.push(chunk, &mut self.events) {
                self.broken = Some(error);
            }
        }
    }
}

/// The conversation as the Messages API takes it: the system messages joined as its
/// `system`, and the others as `user` and `assistant` messages of content blocks, each run
/// of one role as one message. Tool calls are `tool_use` blocks, whose `input` is the
/// arguments when they are a JSON object and `{}` otherwise (the model then reads in the
/// result that they were not); tool results are `tool_result` blocks of a user message,
/// with `is_error` for the `failed` calls. Empty texts are left out (the API refuses them),
/// and a message that only had one is too. A message of one text is sent as a string.
fn wire_messages(messages: &[Message], failed: &[String]) -> (Option<String>, Vec<Value>) {
    let mut system: Vec<&str> = Vec::new();
    let mut turns: Vec<(&'static str, Vec<Value>)> = Vec::new();
    for message in messages {
        let (role, blocks) = match message {
            Message::System { content } => {
                if !content.is_empty() {
                    system.push(content);
                }
                continue;
            }
            Message::User { content } => ("user", text_block(content).into_iter().collect()),
            Message::Assistant {
                content,
                tool_calls,
            } => {
                let mut blocks: Vec<Value> = content
                    .as_deref()
                    .and_then(text_block)
                    .into_iter()
                    .collect();
                blocks.extend(tool_calls.iter().map(|call| {
                    let input = match serde_json::from_str::<Value>(&call.arguments) {
                        Ok(Value::Object(input)) => input,
                        _ => Map::new(),
                    };
                    json!({"type": "tool_use", "id": call.id, "name": call.name, "input": input})
                }));
                ("assistant", blocks)
            }
            Message::Tool {
                tool_call_id,
                content,
            } => {
                let mut block = json!({"type": "tool_result", "tool_use_id": tool_call_id,
                                       "content": content});
                if failed.contains(tool_call_id) {
                    block["is_error"] = Value::Bool(true);
                }
                ("user", vec![block])
            }
            // A kind of message this crate does not know yet: not sent.
            _ => continue,
        };
        if blocks.is_empty() {
            continue;
        }
        match turns.last_mut() {
            Some((last, kept)) if *last == role => kept.extend(blocks),
            _ => turns.push((role, blocks)),
        }
    }
    let system = (!system.is_empty()).then(|| system.join("\n\n"));
    let messages = turns
        .into_iter()
        .map(|(role, mut blocks)| {
            let content = match blocks.as_mut_slice() {
                [only] if only["type"] == "text" => only["text"].take(),
                _ => Value::Array(blocks),
            };
            json!({"role": role, "content": content})
        })
        .collect();
    (system, messages)
}

/// A text block, unless the text is empty.
fn text_block(text: &str) -> Option<Value> {
    (!text.is_empty()).then(|| json!({"type": "text", "text": text}))
}

impl fmt::Debug for AnthropicProvider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AnthropicProvider")
            .field("base_url", &self.inner.base_url)
            .field("model", &self.inner.settings.model)
            .field(
                "api_key",
                &self.inner.api_key.as_ref().map(|_| "[redacted]"),
            )
            .finish_non_exhaustive()
    }
}

impl fmt::Debug for AnthropicProviderBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AnthropicProviderBuilder")
            .field("base_url", &self.base_url)
            .field("model", &self.settings.model)
            .field("api_key", &self.api_key.as_ref().map(|_| "[redacted]"))
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use halo_protocol::ToolCall;

    use super::*;

    fn provider() -> AnthropicProvider {
        AnthropicProvider::builder()
            .model("claude-test")
            .base_url("http://127.0.0.1:9/")
            .build()
            .unwrap()
    }

    #[test]
    fn the_conversation_on_the_wire() {
        let messages = [
            Message::system("Be brief."),
            Message::user("Dune?"),
            Message::tool_calls(
                Some("Looking.".into()),
                vec![
                    ToolCall::new("toolu_1", "search", r#"{"q":"dune"}"#),
                    ToolCall::new("toolu_2", "stock", "{not json"),
                ],
            ),
            Message::tool("toolu_1", r#"{"id":1}"#),
            Message::tool("toolu_2", "the arguments are not valid JSON"),
            Message::user("And Emma?"),
            Message::system("Answer in French."),
            Message::assistant(""),
            Message::user(""),
            Message::user("Quickly."),
        ];
        let (system, wire) = wire_messages(&messages, &["toolu_2".to_owned()]);
        assert_eq!(system.as_deref(), Some("Be brief.\n\nAnswer in French."));
        assert_eq!(
            wire,
            [
                json!({"role": "user", "content": "Dune?"}),
                json!({"role": "assistant", "content": [
                    {"type": "text", "text": "Looking."},
                    {"type": "tool_use", "id": "toolu_1", "name": "search", "input": {"q": "dune"}},
                    {"type": "tool_use", "id": "toolu_2", "name": "stock", "input": {}},
                ]}),
                json!({"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "toolu_1", "content": "{\"id\":1}"},
                    {"type": "tool_result", "tool_use_id": "toolu_2",
                     "content": "the arguments are not valid JSON", "is_error": true},
                    {"type": "text", "text": "And Emma?"},
                    {"type": "text", "text": "Quickly."},
                ]}),
            ]
        );
    }

    #[test]
    fn the_body_carries_settings_and_tools() {
        let provider = provider();
        let tools = halo_protocol::tool_definitions(&[(
            halo_protocol::ToolEntry::new("/ping", "GET", "ping", "Ping."),
            halo_protocol::ToolSchema::new(halo_protocol::Call::new("GET", "/ping")),
        )]);
        let request = ChatRequest::new(vec![Message::user("hi")], tools)
            .with_settings(ModelSettings::new().temperature(0.2));
        let body: Value = serde_json::from_slice(&provider.inner.body(&request).unwrap()).unwrap();
        assert_eq!(body["model"], "claude-test");
        assert_eq!(body["max_tokens"], DEFAULT_MAX_TOKENS);
        assert_eq!(body["temperature"], json!(0.2));
        assert_eq!(body["stream"], true);
        assert_eq!(body.get("system"), None);
        assert_eq!(body["tools"][0]["name"], "ping");
        assert_eq!(body["tools"][0]["description"], "Ping.");
        assert_eq!(body["tools"][0]["input_schema"]["type"], "object");
        let hot = ChatRequest::new(vec![Message::user("hi")], vec![])
            .with_settings(ModelSettings::new().temperature(1.5));
        let refused = provider.inner.body(&hot).unwrap_err();
        assert!(refused.is_input(), "{refused}");
        let none = ChatRequest::new(vec![Message::user("hi")], vec![])
            .with_settings(ModelSettings::new().max_tokens(0).model("other"));
        assert!(provider.inner.body(&none).unwrap_err().is_input());
        let other = ChatRequest::new(vec![Message::user("hi")], vec![])
            .with_settings(ModelSettings::new().max_tokens(10).model("other"));
        let body: Value = serde_json::from_slice(&provider.inner.body(&other).unwrap()).unwrap();
        assert_eq!(
            (body["model"].as_str(), body["max_tokens"].as_u64()),
            (Some("other"), Some(10))
        );
        assert_eq!(body.get("tools"), None);
    }

    #[test]
    fn builder_checks() {
        let no_model = AnthropicProvider::builder().build().unwrap_err();
        assert!(no_model.is_builder(), "{no_model}");
        let builder = || AnthropicProvider::builder().model("m");
        assert!(
            builder()
                .base_url("ftp://x")
                .build()
                .unwrap_err()
                .is_builder()
        );
        assert!(
            builder()
                .base_url("not a url")
                .build()
                .unwrap_err()
                .is_builder()
        );
        assert!(
            builder()
                .temperature(-0.1)
                .build()
                .unwrap_err()
                .is_builder()
        );
        assert!(builder().max_tokens(0).build().unwrap_err().is_builder());
        let bad_key = builder().api_key("a\nb").build().unwrap_err();
        assert!(bad_key.is_builder());
        assert!(!bad_key.to_string().contains("a\nb"));
        let provider = provider();
        assert_eq!(provider.base_url(), "http://127.0.0.1:9");
        assert_eq!(provider.model(), "claude-test");
        let named = builder()
            .base_url("http://someone:pw@127.0.0.1:9/proxy/")
            .api_key("sk-ant-secret")
            .build()
            .unwrap();
        assert_eq!(
            named.inner.transport.endpoint,
            "http://127.0.0.1:9/proxy/v1/messages"
        );
        let headers = &named.inner.transport.headers;
        assert_eq!(headers["anthropic-version"], API_VERSION);
        assert!(headers["x-api-key"].is_sensitive());
        let shown = format!("{named:?} {:?}", builder().api_key("sk-ant-secret"));
        assert!(!shown.contains("sk-ant-secret"), "{shown}");
    }
}
