//! [`AnthropicProvider`]: Anthropic's Messages API, streamed, on reqwest.

mod event;
mod reading;
mod request;
mod sse;
mod transport;

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use futures_util::{StreamExt as _, TryStreamExt as _};
use halo_protocol::RetrySchedule;
use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderMap, HeaderValue};

use self::reading::{Bounds, Reading};
use self::request::check_settings;
use self::transport::Transport;
use crate::endpoint::{base_url, chat_stream, default_retry, shown_url, transport_error};
use crate::{ChatRequest, ChatStream, Error, LlmProvider, ModelSettings, Result};

/// The base URL used when none is set: Anthropic's.
pub const ANTHROPIC_BASE_URL: &str = "https://api.anthropic.com";

/// The version of the Messages API asked for (`anthropic-version`).
const API_VERSION: &str = "2023-06-01";

/// Where the Messages API is, after the base URL.
const MESSAGES_PATH: &str = "/v1/messages";

/// The largest event of an answer by default, in bytes.
const MAX_EVENT: usize = 1 << 20;

/// The largest answer by default, in bytes, its framing included.
const MAX_RESPONSE: usize = 64 << 20;

/// A Claude model behind Anthropic's Messages API (`POST /v1/messages`), or a server that
/// speaks it.
///
/// Answers are streamed (`stream: true`): text as it is written, tool calls (`tool_use`
/// blocks) put together from their `input_json_delta` pieces, the tokens used, and why the
/// model stopped, all given as the same [`ChatEvent`](crate::ChatEvent)s and [`Completion`](crate::Completion)
/// as [`OpenAiProvider`](crate::OpenAiProvider)'s. The conversation is sent as the API wants
/// it: system messages as the top-level `system`, tool calls as `tool_use` blocks, tool
/// results as a user message of `tool_result` blocks (`is_error` for the calls the request
/// lists in [`failed_calls`](crate::ChatRequest::failed_calls)), and consecutive messages of one
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
    bounds: Bounds,
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
            retry: default_retry(),
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
        let (base_url, _) = base_url(&self.base_url)?;
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
                bounds: Bounds {
                    idle_timeout: self.idle_timeout,
                    max_event: self.max_event,
                    max_response: self.max_response,
                },
            }),
        })
    }
}

impl LlmProvider for AnthropicProvider {
    fn chat(&self, request: ChatRequest) -> ChatStream {
        let inner = Arc::clone(&self.inner);
        chat_stream(async move { inner.open(request).await })
    }
}

impl Inner {
    /// Sends a request (retried by the transport until its answer starts) and streams the
    /// answer's events.
    async fn open(self: Arc<Self>, request: ChatRequest) -> Result<ChatStream> {
        let key = self.api_key.as_deref();
        let body = request::body(&self.settings, &request)?;
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
        Ok(Reading::stream(
            response.bytes_stream().map_err(transport_error).boxed(),
            self.bounds,
            self.transport.endpoint.clone(),
            self.api_key.clone(),
        ))
    }
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
    use super::*;

    fn provider() -> AnthropicProvider {
        AnthropicProvider::builder()
            .model("claude-test")
            .base_url("http://127.0.0.1:9/")
            .build()
            .unwrap()
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
