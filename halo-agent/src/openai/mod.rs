//! [`OpenAiProvider`]: any OpenAI-compatible chat-completions endpoint, streamed, on
//! async-openai.

mod chunk;
mod transport;

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use async_openai::config::OpenAIConfig;
use async_openai::error::OpenAIError;
use futures_util::StreamExt as _;
use futures_util::stream;
use halo_protocol::{Message, RetrySchedule, ToolDefinition};
use reqwest::header::HeaderValue;
use serde_json::{Map, Value, json};

use self::chunk::{Assembly, Chunk};
use self::transport::{TimedOut, Transport};
use crate::endpoint::{
    base_url, chat_stream, default_retry, insert_temperature, shorten, shown_url, silence,
    transport_error,
};
use crate::{ChatEvent, ChatRequest, ChatStream, Error, LlmProvider, ModelSettings, Result};

/// The base URL used when none is set: OpenAI's.
pub const OPENAI_BASE_URL: &str = "https://api.openai.com/v1";

/// Where async-openai sends a chat completion, after the base URL.
const CHAT_PATH: &str = "/chat/completions";

/// A model behind an OpenAI-compatible chat-completions endpoint: OpenAI itself, vLLM,
/// llama.cpp's server, Ollama (`http://127.0.0.1:11434/v1`), and others.
///
/// Answers are streamed (`chat.completion.chunk` events): text as it is written, tool calls
/// assembled from their pieces (several per turn), and the tokens used, which it asks for
/// with `stream_options.include_usage`. `429` and `5xx` answers, timeouts and failed
/// connections are retried with exponential backoff and jitter, honouring `Retry-After`
/// (never a `429` that says the quota is spent); other errors come back at once with the
/// endpoint's message.
///
/// The API key goes to the endpoint's host only, in `Authorization: Bearer`. It never shows
/// in `Debug` output or in error messages (an endpoint that echoes it has it redacted), and
/// nothing is read from the environment: without [`api_key`](OpenAiProviderBuilder::api_key)
/// no `Authorization` header is sent.
///
/// ```
/// use halo_agent::OpenAiProvider;
///
/// let provider = OpenAiProvider::builder()
///     .base_url("http://127.0.0.1:8000/v1")
///     .api_key("sk-test-not-a-real-key")
///     .model("qwen2.5-7b-instruct")
///     .build()
///     .unwrap();
/// assert!(!format!("{provider:?}").contains("sk-test"));
/// ```
#[derive(Clone)]
pub struct OpenAiProvider {
    inner: Arc<Inner>,
}

struct Inner {
    client: async_openai::Client<OpenAIConfig>,
    base_url: String,
    /// The chat-completions URL as errors name it ([`shown_url`]).
    endpoint: String,
    api_key: Option<String>,
    settings: ModelSettings,
    idle_timeout: Option<Duration>,
}

/// Builds an [`OpenAiProvider`].
#[must_use]
pub struct OpenAiProviderBuilder {
    base_url: String,
    api_key: Option<String>,
    settings: ModelSettings,
    timeout: Option<Duration>,
    idle_timeout: Option<Duration>,
    connect_timeout: Duration,
    /// When and how often to try again: halo-protocol's schedule, as halo-client's retries.
    retry: RetrySchedule,
}

impl OpenAiProvider {
    /// A builder: OpenAI's base URL, no API key, no model (one must be set), 4 attempts,
    /// 60 s for the answer to start and 60 s of silence at most within it.
    pub fn builder() -> OpenAiProviderBuilder {
        OpenAiProviderBuilder {
            base_url: OPENAI_BASE_URL.to_owned(),
            api_key: None,
            settings: ModelSettings::new(),
            timeout: Some(Duration::from_secs(60)),
            idle_timeout: Some(Duration::from_secs(60)),
            connect_timeout: Duration::from_secs(10),
            retry: default_retry(),
        }
    }

    /// The endpoint's base URL, without a trailing slash.
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

impl OpenAiProviderBuilder {
    /// The endpoint's base URL, up to `/chat/completions` (`https://api.openai.com/v1` by
    /// default).
    pub fn base_url(mut self, url: impl Into<String>) -> Self {
        self.base_url = url.into();
        self
    }

    /// The API key, sent as `Authorization: Bearer` (none by default).
    pub fn api_key(mut self, key: impl Into<String>) -> Self {
        self.api_key = Some(key.into()).filter(|key| !key.is_empty());
        self
    }

    /// The model, as the endpoint names it (required).
    pub fn model(mut self, model: impl Into<String>) -> Self {
        self.settings.model = Some(model.into());
        self
    }

    /// The sampling temperature, unless a request sets one.
    pub fn temperature(mut self, temperature: f32) -> Self {
        self.settings.temperature = Some(temperature);
        self
    }

    /// The most tokens of an answer, unless a request sets it.
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

    /// The provider.
    ///
    /// # Errors
    /// [`Error::is_builder`] when no model is set, the base URL is not an absolute `http`
    /// or `https` URL, the API key cannot be sent in a header, or the HTTP client cannot be
    /// made.
    pub fn build(self) -> Result<OpenAiProvider> {
        if self.settings.model.as_deref().is_none_or(str::is_empty) {
            return Err(Error::builder(
                "no model: name the one the endpoint should use",
            ));
        }
        let (base_url, parsed) = base_url(&self.base_url)?;
        if let Some(key) = &self.api_key
            && HeaderValue::try_from(format!("Bearer {key}")).is_err()
        {
            return Err(Error::builder(
                "the API key has characters a header cannot carry",
            ));
        }
        let http = reqwest::Client::builder()
            .connect_timeout(self.connect_timeout)
            .build()
            .map_err(|e| Error::builder(format!("the HTTP client: {}", e.without_url())))?;
        // Every field set, so that nothing comes from the environment (OPENAI_API_KEY would
        // otherwise go to whatever host the base URL names).
        let config = OpenAIConfig::new()
            .with_api_base(&base_url)
            .with_api_key(self.api_key.clone().unwrap_or_default())
            .with_org_id("")
            .with_project_id("");
        let transport = Transport::new(
            http.clone(),
            self.retry,
            self.timeout,
            self.api_key.is_some(),
        );
        let client = async_openai::Client::build(http, config).with_http_service(transport);
        // What async-openai asks: the base URL as given, then the path.
        let endpoint = reqwest::Url::parse(&format!("{base_url}{CHAT_PATH}"))
            .map_or_else(|_| shown_url(&parsed), |url| shown_url(&url));
        Ok(OpenAiProvider {
            inner: Arc::new(Inner {
                client,
                endpoint,
                base_url,
                api_key: self.api_key,
                settings: self.settings,
                idle_timeout: self.idle_timeout,
            }),
        })
    }
}

impl LlmProvider for OpenAiProvider {
    fn chat(&self, request: ChatRequest) -> ChatStream {
        let inner = Arc::clone(&self.inner);
        chat_stream(async move { inner.open(request).await })
    }
}

impl Inner {
    /// Sends a request (retried by the transport until its answer starts) and streams the
    /// answer's events.
    async fn open(self: Arc<Self>, request: ChatRequest) -> Result<ChatStream> {
        let body = self.body(&request);
        let chunks = self
            .client
            .chat()
            .create_stream_byot::<Value, Chunk>(body)
            .await
            .map_err(|e| self.error(e))?;
        let state = Some((chunks, Assembly::default()));
        Ok(stream::unfold(state, move |state| {
            let inner = Arc::clone(&self);
            async move {
                let (mut chunks, mut assembly) = state?;
                loop {
                    let next = match inner.idle_timeout {
                        Some(limit) => match tokio::time::timeout(limit, chunks.next()).await {
                            Ok(next) => next,
                            Err(_) => {
                                let error = silence(limit, &inner.endpoint)
                                    .scrubbed(inner.api_key.as_deref());
                                return Some((Err(error), None));
                            }
                        },
                        None => chunks.next().await,
                    };
                    match next {
                        None => {
                            return Some((Ok(ChatEvent::Done(assembly.finish())), None));
                        }
                        Some(Err(error)) => return Some((Err(inner.error(error)), None)),
                        Some(Ok(chunk)) => match assembly.add(chunk) {
                            Err(error) => {
                                return Some((Err(error.scrubbed(inner.api_key.as_deref())), None));
                            }
                            Ok(Some(text)) => {
                                return Some((Ok(ChatEvent::Text(text)), Some((chunks, assembly))));
                            }
                            Ok(None) => {}
                        },
                    }
                }
            }
        })
        .boxed())
    }

    /// The request body: the conversation, the tools, the settings, and the ask for usage.
    fn body(&self, request: &ChatRequest) -> Value {
        let settings = self.settings.overridden_by(&request.settings);
        let mut body = Map::new();
        body.insert("model".into(), json!(settings.model.unwrap_or_default()));
        body.insert(
            "messages".into(),
            Value::Array(request.messages.iter().map(wire_message).collect()),
        );
        if !request.tools.is_empty() {
            body.insert(
                "tools".into(),
                Value::Array(
                    request
                        .tools
                        .iter()
                        .map(ToolDefinition::openai_function)
                        .collect(),
                ),
            );
        }
        insert_temperature(&mut body, settings.temperature);
        if let Some(max_tokens) = settings.max_tokens {
            body.insert("max_tokens".into(), json!(max_tokens));
        }
        body.insert("stream".into(), json!(true));
        body.insert("stream_options".into(), json!({"include_usage": true}));
        Value::Object(body)
    }

    /// An async-openai error as this crate's, without the API key.
    fn error(&self, error: OpenAIError) -> Error {
        let error = match error {
            OpenAIError::ApiError(response) => Error::answered(
                response.status_code,
                shorten(&response.api_error.to_string()),
            ),
            OpenAIError::Reqwest(error) => transport_error(error),
            OpenAIError::JSONDeserialize(error, _) => Error::decode(format!(
                "a chunk is not what an OpenAI-compatible endpoint sends: {error}"
            )),
            OpenAIError::StreamError(error) => Error::request(shorten(&error.to_string())),
            OpenAIError::Boxed(error) => match error.downcast::<TimedOut>() {
                Ok(timed_out) => Error::timeout(timed_out.to_string()),
                Err(other) => Error::request(shorten(&other.to_string())),
            },
            OpenAIError::InvalidArgument(message) => Error::builder(message),
            other => Error::request(shorten(&other.to_string())),
        };
        // Not reached, or not in time: which endpoint is what the reader needs to know.
        let error = if error.is_connect() || error.is_timeout() {
            error.at(&self.endpoint)
        } else {
            error
        };
        error.scrubbed(self.api_key.as_deref())
    }
}

/// A message in the chat-completions wire format.
fn wire_message(message: &Message) -> Value {
    match message {
        Message::Assistant {
            content,
            tool_calls,
        } if !tool_calls.is_empty() => {
            let calls: Vec<Value> = tool_calls
                .iter()
                .map(|call| {
                    json!({"id": call.id, "type": "function",
                           "function": {"name": call.name, "arguments": call.arguments}})
                })
                .collect();
            json!({"role": "assistant", "content": content, "tool_calls": calls})
        }
        other => serde_json::to_value(other).unwrap_or(Value::Null),
    }
}

impl fmt::Debug for OpenAiProvider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OpenAiProvider")
            .field("base_url", &self.inner.base_url)
            .field("model", &self.inner.settings.model)
            .field(
                "api_key",
                &self.inner.api_key.as_ref().map(|_| "[redacted]"),
            )
            .finish_non_exhaustive()
    }
}

impl fmt::Debug for OpenAiProviderBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OpenAiProviderBuilder")
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

    #[test]
    fn messages_on_the_wire() {
        let call = ToolCall::new("c1", "get_book", r#"{"id":1}"#);
        assert_eq!(
            wire_message(&Message::tool_calls(None, vec![call])),
            json!({"role": "assistant", "content": null, "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "get_book", "arguments": "{\"id\":1}"}}
            ]})
        );
        assert_eq!(
            wire_message(&Message::tool("c1", "ok")),
            json!({"role": "tool", "tool_call_id": "c1", "content": "ok"})
        );
    }

    #[test]
    fn builder_checks() {
        let no_model = OpenAiProvider::builder().build().unwrap_err();
        assert!(no_model.is_builder(), "{no_model}");
        let bad_url = OpenAiProvider::builder()
            .model("m")
            .base_url("ftp://x")
            .build()
            .unwrap_err();
        assert!(bad_url.is_builder());
        let bad_key = OpenAiProvider::builder()
            .model("m")
            .api_key("a\nb")
            .build()
            .unwrap_err();
        assert!(bad_key.is_builder());
        assert!(!bad_key.to_string().contains("a\nb"));
        let provider = OpenAiProvider::builder()
            .model("m")
            .base_url("http://h:1/v1/")
            .build()
            .unwrap();
        assert_eq!(provider.base_url(), "http://h:1/v1");
        assert_eq!(provider.model(), "m");
    }

    #[test]
    fn errors_name_the_endpoint_without_what_may_carry_secrets() {
        let provider = OpenAiProvider::builder()
            .model("m")
            .base_url("http://someone:pw@127.0.0.1:9/v1/")
            .build()
            .unwrap();
        assert_eq!(
            provider.inner.endpoint,
            "http://127.0.0.1:9/v1/chat/completions"
        );
    }
}
