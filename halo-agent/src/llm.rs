//! [`LlmProvider`]: what the agent loop needs from a model.

use std::sync::Arc;

use futures_util::stream::BoxStream;
use halo_protocol::{Message, ToolCall, ToolDefinition, Usage};

use crate::Result;

/// A chat model that streams its answers.
///
/// One method: send a conversation and the tools the model may call, get a stream of
/// [`ChatEvent`]s back: any number of [`ChatEvent::Text`] pieces as the model writes, then
/// exactly one [`ChatEvent::Done`] with the whole turn (its text, the tool calls assembled
/// from the streamed pieces, and the tokens used). An error ends the stream.
///
/// [`OpenAiProvider`](crate::OpenAiProvider) talks to any OpenAI-compatible endpoint and
/// [`AnthropicProvider`](crate::AnthropicProvider) to Anthropic's Messages API; implement
/// this trait for anything else (a test double, another API). Its `Debug` output must not
/// show a secret.
///
/// ```
/// use futures_util::stream::{self, StreamExt as _};
/// use halo_agent::{ChatEvent, ChatRequest, ChatStream, Completion, LlmProvider};
///
/// /// Always answers "hello", in two pieces.
/// #[derive(Debug)]
/// struct Hello;
///
/// impl LlmProvider for Hello {
///     fn chat(&self, _request: ChatRequest) -> ChatStream {
///         stream::iter([
///             Ok(ChatEvent::Text("hel".into())),
///             Ok(ChatEvent::Text("lo".into())),
///             Ok(ChatEvent::Done(Completion::text("hello"))),
///         ])
///         .boxed()
///     }
/// }
/// ```
pub trait LlmProvider: Send + Sync + std::fmt::Debug + 'static {
    /// Sends `request` and streams the model's answer.
    fn chat(&self, request: ChatRequest) -> ChatStream;
}

impl<P: LlmProvider + ?Sized> LlmProvider for Arc<P> {
    fn chat(&self, request: ChatRequest) -> ChatStream {
        (**self).chat(request)
    }
}

impl<P: LlmProvider + ?Sized> LlmProvider for Box<P> {
    fn chat(&self, request: ChatRequest) -> ChatStream {
        (**self).chat(request)
    }
}

/// The stream a [`LlmProvider`] answers with.
pub type ChatStream = BoxStream<'static, Result<ChatEvent>>;

/// One conversation turn to send to a model.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ChatRequest {
    /// The conversation, the system prompt first when there is one.
    pub messages: Vec<Message>,
    /// The tools the model may call.
    pub tools: Vec<ToolDefinition>,
    /// Settings over the provider's own.
    pub settings: ModelSettings,
    /// The ids of the tool calls in `messages` whose results are failures (a tool's error
    /// status, arguments the model got wrong, a tool that does not exist). An API that can
    /// mark a result so hears it (Anthropic's `is_error`); the others read it in the
    /// result's text alone, as chat completions do. The agent loop fills it in.
    pub failed_calls: Vec<String>,
}

impl ChatRequest {
    /// A request for `messages` with `tools` and the provider's settings.
    #[must_use]
    pub fn new(messages: Vec<Message>, tools: Vec<ToolDefinition>) -> Self {
        Self {
            messages,
            tools,
            settings: ModelSettings::new(),
            failed_calls: Vec::new(),
        }
    }

    /// The same request with `settings`.
    #[must_use]
    pub fn with_settings(mut self, settings: ModelSettings) -> Self {
        self.settings = settings;
        self
    }

    /// The same request with the results of these tool calls marked as failures
    /// ([`failed_calls`](Self::failed_calls)).
    #[must_use]
    pub fn with_failed_calls(mut self, ids: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.failed_calls = ids.into_iter().map(Into::into).collect();
        self
    }
}

/// What a model is asked to be: which model, how random, how long its answers may be.
/// Anything left unset is the provider's choice.
///
/// ```
/// use halo_agent::ModelSettings;
///
/// let settings = ModelSettings::new().model("gpt-4o-mini").temperature(0.2).max_tokens(800);
/// assert_eq!(settings.model.as_deref(), Some("gpt-4o-mini"));
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
#[must_use]
#[non_exhaustive]
pub struct ModelSettings {
    /// The model's name, as the endpoint knows it.
    pub model: Option<String>,
    /// The sampling temperature.
    pub temperature: Option<f32>,
    /// The most tokens one answer may have.
    pub max_tokens: Option<u32>,
}

impl ModelSettings {
    /// Nothing set.
    pub fn new() -> Self {
        Self::default()
    }

    /// The model's name, as the endpoint knows it.
    pub fn model(mut self, model: impl Into<String>) -> Self {
        self.model = Some(model.into());
        self
    }

    /// The sampling temperature (0 for the most predictable answers).
    pub fn temperature(mut self, temperature: f32) -> Self {
        self.temperature = Some(temperature);
        self
    }

    /// The most tokens one answer may have.
    pub fn max_tokens(mut self, max_tokens: u32) -> Self {
        self.max_tokens = Some(max_tokens);
        self
    }

    /// These settings, with `other`'s where it sets them.
    pub fn overridden_by(&self, other: &Self) -> Self {
        Self {
            model: other.model.clone().or_else(|| self.model.clone()),
            temperature: other.temperature.or(self.temperature),
            max_tokens: other.max_tokens.or(self.max_tokens),
        }
    }
}

/// One event of a model's streamed answer.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ChatEvent {
    /// A piece of text, as it arrives.
    Text(String),
    /// The turn is complete; always the last event.
    Done(Completion),
}

/// A model's whole answer to one turn.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct Completion {
    /// The text, if the model wrote any.
    pub content: Option<String>,
    /// The tool calls, in the model's order.
    pub tool_calls: Vec<ToolCall>,
    /// The tokens used, when the endpoint reported them.
    pub usage: Option<Usage>,
    /// Why the model stopped (`stop`, `tool_calls`, `length`, ...), when it said.
    pub finish_reason: Option<String>,
}

impl Completion {
    /// An answer of `text` alone.
    #[must_use]
    pub fn text(text: impl Into<String>) -> Self {
        Self {
            content: Some(text.into()),
            ..Self::default()
        }
    }

    /// An answer that calls `tool_calls`.
    #[must_use]
    pub fn calls(tool_calls: Vec<ToolCall>) -> Self {
        Self {
            tool_calls,
            ..Self::default()
        }
    }

    /// The same answer with `usage`.
    #[must_use]
    pub fn with_usage(mut self, usage: Usage) -> Self {
        self.usage = Some(usage);
        self
    }
}
