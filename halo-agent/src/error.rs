//! The one error type of halo-agent.

use std::fmt;

use halo_protocol::{FailureCode, Usage};
use http::StatusCode;

/// A `Result` with [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Why a model call or an agent run failed.
///
/// Inspect it with the predicates (`is_status`, `is_max_turns`, ...) and accessors; the kinds
/// themselves are private so they can grow. No message ever contains the provider's API key:
/// a server that echoes it back has it replaced.
///
/// ```
/// # async fn run(agent: halo_agent::Agent, tools: impl halo_agent::ToolSet) {
/// match agent.run(&tools, "Is Dune in stock?").await {
///     Ok(answer) => println!("{}", answer.content()),
///     Err(error) if error.is_max_turns() => eprintln!("gave up after {} turns", error.turns()),
///     Err(error) if error.status().is_some_and(|s| s.as_u16() == 401) => {
///         eprintln!("the model's endpoint refused the API key")
///     }
///     Err(error) => eprintln!("{error}"),
/// }
/// # }
/// ```
pub struct Error {
    inner: Box<Inner>,
}

struct Inner {
    kind: Kind,
    message: Option<String>,
    /// The model's endpoint, as errors name it (no user, password, query or fragment).
    endpoint: Option<String>,
    source: Option<BoxError>,
    turns: u32,
    usage: Usage,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Builder,
    Connect,
    Timeout,
    Request,
    Status(StatusCode),
    Decode,
    MaxTurns,
    Deadline,
    Tools,
    Input,
}

impl Error {
    fn new(kind: Kind, message: Option<String>) -> Self {
        Self {
            inner: Box::new(Inner {
                kind,
                message,
                endpoint: None,
                source: None,
                turns: 0,
                usage: Usage::default(),
            }),
        }
    }

    /// A setting that cannot work (a missing model, an invalid URL or key).
    #[cfg_attr(not(any(feature = "openai", feature = "anthropic")), allow(dead_code))]
    pub(crate) fn builder(message: impl Into<String>) -> Self {
        Self::new(Kind::Builder, Some(message.into()))
    }

    /// The model's endpoint could not be reached.
    #[cfg_attr(not(any(feature = "openai", feature = "anthropic")), allow(dead_code))]
    pub(crate) fn connect(message: impl Into<String>) -> Self {
        Self::new(Kind::Connect, Some(message.into()))
    }

    /// The model's endpoint did not answer, or fell silent, in time.
    #[cfg_attr(not(any(feature = "openai", feature = "anthropic")), allow(dead_code))]
    pub(crate) fn timeout(message: impl Into<String>) -> Self {
        Self::new(Kind::Timeout, Some(message.into()))
    }

    /// The exchange with the model's endpoint broke off.
    pub(crate) fn request(message: impl Into<String>) -> Self {
        Self::new(Kind::Request, Some(message.into()))
    }

    /// The model's endpoint answered with an error status and this message.
    pub(crate) fn answered(status: StatusCode, message: impl Into<String>) -> Self {
        Self::new(Kind::Status(status), Some(message.into()))
    }

    /// The model's answer could not be read.
    pub(crate) fn decode(message: impl Into<String>) -> Self {
        Self::new(Kind::Decode, Some(message.into()))
    }

    pub(crate) fn max_turns(max: u32) -> Self {
        Self::new(
            Kind::MaxTurns,
            Some(format!(
                "the model still asked for tools after {max} turns (max_turns); no answer"
            )),
        )
    }

    pub(crate) fn deadline(limit: std::time::Duration) -> Self {
        Self::new(
            Kind::Deadline,
            Some(format!(
                "the run did not finish within its deadline of {} ms",
                limit.as_millis()
            )),
        )
    }

    /// The tools could not be listed or prepared. For [`ToolSet`](crate::ToolSet)
    /// implementations that discover tools before a run.
    #[must_use]
    pub fn tools(message: impl Into<String>) -> Self {
        Self::new(Kind::Tools, Some(message.into()))
    }

    /// The input was refused (an empty conversation, a role the caller may not send).
    #[must_use]
    pub fn input(message: impl Into<String>) -> Self {
        Self::new(Kind::Input, Some(message.into()))
    }

    /// A failure of a provider that is not this crate's (a custom [`LlmProvider`]): `status`
    /// when the model's endpoint answered with one, and a message that must hold no secret.
    ///
    /// [`LlmProvider`]: crate::LlmProvider
    #[must_use]
    pub fn provider(status: Option<StatusCode>, message: impl Into<String>) -> Self {
        match status {
            Some(status) => Self::answered(status, message),
            None => Self::request(message),
        }
    }

    #[cfg_attr(not(any(feature = "openai", feature = "anthropic")), allow(dead_code))]
    pub(crate) fn with_source(mut self, source: impl Into<BoxError>) -> Self {
        self.inner.source = Some(source.into());
        self
    }

    /// The same error, naming the model's endpoint it concerns: `endpoint` must be shown
    /// as it may be (scheme, host, port and path, nothing that can carry a secret).
    #[cfg_attr(not(any(feature = "openai", feature = "anthropic")), allow(dead_code))]
    pub(crate) fn at(mut self, endpoint: impl Into<String>) -> Self {
        self.inner.endpoint = Some(endpoint.into());
        self
    }

    /// The same error, after `turns` turns that used `usage`.
    pub(crate) fn after(mut self, turns: u32, usage: Usage) -> Self {
        self.inner.turns = turns;
        self.inner.usage = usage;
        self
    }

    /// The same error with `secret` replaced wherever the message or the endpoint shows it.
    #[cfg_attr(not(any(feature = "openai", feature = "anthropic")), allow(dead_code))]
    pub(crate) fn scrubbed(mut self, secret: Option<&str>) -> Self {
        let Some(secret) = secret.filter(|s| s.len() >= 4) else {
            return self;
        };
        let Inner {
            message, endpoint, ..
        } = &mut *self.inner;
        for text in [message, endpoint].into_iter().flatten() {
            if text.contains(secret) {
                *text = text.replace(secret, "[redacted]");
            }
        }
        self
    }

    /// Whether a setting cannot work (no model, an invalid URL or API key).
    #[must_use]
    pub fn is_builder(&self) -> bool {
        self.inner.kind == Kind::Builder
    }

    /// Whether the model's endpoint could not be reached.
    #[must_use]
    pub fn is_connect(&self) -> bool {
        self.inner.kind == Kind::Connect
    }

    /// Whether the model's endpoint did not answer, or fell silent mid-answer, in time.
    #[must_use]
    pub fn is_timeout(&self) -> bool {
        self.inner.kind == Kind::Timeout
    }

    /// Whether the model's endpoint answered with an error status (after retries, for
    /// `429` and `5xx`).
    #[must_use]
    pub fn is_status(&self) -> bool {
        matches!(self.inner.kind, Kind::Status(_))
    }

    /// Whether the model's answer could not be read.
    #[must_use]
    pub fn is_decode(&self) -> bool {
        self.inner.kind == Kind::Decode
    }

    /// Whether anything went wrong with the model: connecting, its status, reading it.
    #[must_use]
    pub fn is_llm(&self) -> bool {
        matches!(
            self.inner.kind,
            Kind::Connect | Kind::Timeout | Kind::Request | Kind::Status(_) | Kind::Decode
        )
    }

    /// Whether the run stopped at its `max_turns` with the model still asking for tools.
    #[must_use]
    pub fn is_max_turns(&self) -> bool {
        self.inner.kind == Kind::MaxTurns
    }

    /// Whether the run's deadline passed.
    #[must_use]
    pub fn is_deadline(&self) -> bool {
        self.inner.kind == Kind::Deadline
    }

    /// Whether the tools could not be listed.
    #[must_use]
    pub fn is_tools(&self) -> bool {
        self.inner.kind == Kind::Tools
    }

    /// Whether the input was refused.
    #[must_use]
    pub fn is_input(&self) -> bool {
        self.inner.kind == Kind::Input
    }

    /// The model's endpoint, when the error is about reaching it ([`is_connect`] and
    /// [`is_timeout`] errors of [`OpenAiProvider`] and [`AnthropicProvider`], and an
    /// `AnthropicProvider`'s `404`): its scheme, host, port and path, never a user,
    /// password, query or fragment. The message names it too.
    ///
    /// [`is_connect`]: Self::is_connect
    /// [`is_timeout`]: Self::is_timeout
    /// [`OpenAiProvider`]: crate::OpenAiProvider
    /// [`AnthropicProvider`]: crate::AnthropicProvider
    #[must_use]
    pub fn endpoint(&self) -> Option<&str> {
        self.inner.endpoint.as_deref()
    }

    /// The status the model's endpoint answered with, for [`is_status`](Self::is_status)
    /// errors.
    #[must_use]
    pub fn status(&self) -> Option<StatusCode> {
        match self.inner.kind {
            Kind::Status(status) => Some(status),
            _ => None,
        }
    }

    /// How many turns the run had when it failed (0 outside a run).
    #[must_use]
    pub fn turns(&self) -> u32 {
        self.inner.turns
    }

    /// The tokens the run had used when it failed.
    #[must_use]
    pub fn usage(&self) -> Usage {
        self.inner.usage
    }

    /// The code an `agent_error` event carries for this error.
    #[must_use]
    pub fn code(&self) -> FailureCode {
        match self.inner.kind {
            Kind::MaxTurns => FailureCode::MaxTurns,
            Kind::Deadline => FailureCode::Deadline,
            Kind::Tools => FailureCode::Tools,
            Kind::Input | Kind::Builder => FailureCode::Input,
            Kind::Connect | Kind::Timeout | Kind::Request | Kind::Status(_) | Kind::Decode => {
                FailureCode::Llm
            }
        }
    }
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut debug = f.debug_struct("halo_agent::Error");
        debug.field("kind", &self.inner.kind);
        if let Some(message) = &self.inner.message {
            debug.field("message", message);
        }
        if let Some(endpoint) = &self.inner.endpoint {
            debug.field("endpoint", endpoint);
        }
        if self.inner.turns > 0 {
            debug.field("turns", &self.inner.turns);
        }
        if let Some(source) = &self.inner.source {
            debug.field("source", source);
        }
        debug.finish()
    }
}

impl Error {
    /// What went wrong, in a few words that name no endpoint and quote neither the model
    /// nor the transport (`could not connect to the model`): for someone who may not learn
    /// where the model is, such as the remote caller of an agent a server hosts. The
    /// [`Display`](fmt::Display) form starts with the same words.
    #[must_use]
    pub fn summary(&self) -> &'static str {
        match self.inner.kind {
            Kind::Builder => "invalid agent configuration",
            Kind::Connect => "could not connect to the model",
            Kind::Timeout => "the model timed out",
            Kind::Request => "the model request failed",
            Kind::Status(_) => "the model answered with an error",
            Kind::Decode => "could not read the model's answer",
            Kind::MaxTurns => "too many turns",
            Kind::Deadline => "deadline passed",
            Kind::Tools => "the tools are unavailable",
            Kind::Input => "invalid input",
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let what = self.summary();
        match (&self.inner.endpoint, self.inner.kind) {
            (None, _) => f.write_str(what)?,
            (Some(endpoint), Kind::Connect) => {
                write!(f, "could not connect to the model at {endpoint}")?;
            }
            (Some(endpoint), Kind::Timeout) => write!(f, "the model at {endpoint} timed out")?,
            (Some(endpoint), _) => write!(f, "{what} ({endpoint})")?,
        }
        if let Kind::Status(status) = self.inner.kind {
            write!(f, ": {status}")?;
        }
        if let Some(message) = &self.inner.message {
            write!(f, ": {message}")?;
        }
        Ok(())
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.inner.source.as_deref().map(|source| source as _)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_scrubbed_and_kinds_answer_their_predicates() {
        let error = Error::answered(StatusCode::UNAUTHORIZED, "bad key sk-secret-123")
            .scrubbed(Some("sk-secret-123"));
        assert!(error.is_status() && error.is_llm());
        assert_eq!(error.status(), Some(StatusCode::UNAUTHORIZED));
        let shown = format!("{error} {error:?}");
        assert!(!shown.contains("sk-secret-123"), "{shown}");
        assert!(shown.contains("[redacted]"));
        let max = Error::max_turns(3).after(3, Usage::new(5, 5));
        assert!(max.is_max_turns() && !max.is_llm());
        assert_eq!((max.turns(), max.usage().total_tokens), (3, 10));
        assert_eq!(max.code(), FailureCode::MaxTurns);
        assert_eq!(Error::timeout("x").code(), FailureCode::Llm);
    }

    #[test]
    fn an_unreachable_model_is_named_without_the_key() {
        let endpoint = "http://127.0.0.1:9/sk-secret-123/chat/completions";
        let error = Error::connect("error sending request")
            .at(endpoint)
            .scrubbed(Some("sk-secret-123"));
        assert_eq!(
            error.to_string(),
            "could not connect to the model at http://127.0.0.1:9/[redacted]/chat/completions: \
             error sending request"
        );
        assert_eq!(
            error.endpoint(),
            Some("http://127.0.0.1:9/[redacted]/chat/completions")
        );
        assert!(!format!("{error:?}").contains("sk-secret"), "{error:?}");
        let late = Error::timeout("no answer in 10 ms").at("http://m/v1/chat/completions");
        assert_eq!(
            late.to_string(),
            "the model at http://m/v1/chat/completions timed out: no answer in 10 ms"
        );
        let cut = Error::request("reset").at("http://m/v1/chat/completions");
        assert_eq!(
            cut.to_string(),
            "the model request failed (http://m/v1/chat/completions): reset"
        );
        assert_eq!(Error::connect("refused").endpoint(), None);
        assert_eq!(
            Error::connect("refused").to_string(),
            "could not connect to the model: refused"
        );
    }
}
