//! Agents: the conversation an agent holds with its model, the request that starts a hosted
//! agent, and the events of an agent run streamed over Server-Sent Events.

use std::ops::{Add, AddAssign};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// One message of a conversation with a model.
///
/// Serialised with its `role` as the tag, as chat-completion APIs write it:
/// `{"role": "user", "content": "..."}`. An assistant message may carry the tool calls the
/// model asked for; a tool message answers one of them by its id.
///
/// ```
/// use halo_protocol::Message;
/// use serde_json::json;
///
/// let message: Message = serde_json::from_value(json!({"role": "user", "content": "Hi"})).unwrap();
/// assert_eq!(message, Message::user("Hi"));
/// assert_eq!(message.role(), "user");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "lowercase")]
#[non_exhaustive]
pub enum Message {
    /// Instructions for the model, from whoever runs the agent.
    System {
        /// The instructions.
        content: String,
    },
    /// What the user says.
    User {
        /// The text.
        content: String,
    },
    /// What the model answered: text, tool calls, or both.
    Assistant {
        /// The text, if any.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        content: Option<String>,
        /// The tools the model asked to call, in its order.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<ToolCall>,
    },
    /// A tool call's result, for the model.
    Tool {
        /// The id of the call it answers.
        tool_call_id: String,
        /// The result as the model reads it.
        content: String,
    },
}

impl Message {
    /// A system message.
    #[must_use]
    pub fn system(content: impl Into<String>) -> Self {
        Self::System {
            content: content.into(),
        }
    }

    /// A user message.
    #[must_use]
    pub fn user(content: impl Into<String>) -> Self {
        Self::User {
            content: content.into(),
        }
    }

    /// An assistant message with text and no tool calls.
    #[must_use]
    pub fn assistant(content: impl Into<String>) -> Self {
        Self::Assistant {
            content: Some(content.into()),
            tool_calls: Vec::new(),
        }
    }

    /// An assistant message asking for tool calls (with any text the model wrote too).
    #[must_use]
    pub fn tool_calls(content: Option<String>, tool_calls: Vec<ToolCall>) -> Self {
        Self::Assistant {
            content,
            tool_calls,
        }
    }

    /// The result of the tool call `tool_call_id`.
    #[must_use]
    pub fn tool(tool_call_id: impl Into<String>, content: impl Into<String>) -> Self {
        Self::Tool {
            tool_call_id: tool_call_id.into(),
            content: content.into(),
        }
    }

    /// `system`, `user`, `assistant` or `tool`.
    #[must_use]
    pub fn role(&self) -> &'static str {
        match self {
            Self::System { .. } => "system",
            Self::User { .. } => "user",
            Self::Assistant { .. } => "assistant",
            Self::Tool { .. } => "tool",
        }
    }
}

/// A tool call a model asked for: which tool, and its arguments as the model wrote them
/// (JSON text, which may be invalid).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ToolCall {
    /// The id the model gave the call; its result is sent back under it.
    pub id: String,
    /// The tool's name.
    pub name: String,
    /// The arguments, as JSON text.
    #[serde(default)]
    pub arguments: String,
}

impl ToolCall {
    /// A call of `name` with `arguments` (JSON text).
    #[must_use]
    pub fn new(
        id: impl Into<String>,
        name: impl Into<String>,
        arguments: impl Into<String>,
    ) -> Self {
        Self {
            id: id.into(),
            name: name.into(),
            arguments: arguments.into(),
        }
    }
}

/// Tokens a model used.
///
/// ```
/// use halo_protocol::Usage;
///
/// let mut total = Usage::new(10, 5);
/// total += Usage::new(20, 1);
/// assert_eq!((total.prompt_tokens, total.completion_tokens, total.total_tokens), (30, 6, 36));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Usage {
    /// Tokens read (the prompt).
    #[serde(default)]
    pub prompt_tokens: u64,
    /// Tokens written (the completion).
    #[serde(default)]
    pub completion_tokens: u64,
    /// Both.
    #[serde(default)]
    pub total_tokens: u64,
}

impl Usage {
    /// Usage of `prompt` and `completion` tokens.
    #[must_use]
    pub fn new(prompt: u64, completion: u64) -> Self {
        Self {
            prompt_tokens: prompt,
            completion_tokens: completion,
            total_tokens: prompt.saturating_add(completion),
        }
    }
}

impl Add for Usage {
    type Output = Self;

    fn add(self, other: Self) -> Self {
        Self {
            prompt_tokens: self.prompt_tokens.saturating_add(other.prompt_tokens),
            completion_tokens: self
                .completion_tokens
                .saturating_add(other.completion_tokens),
            total_tokens: self.total_tokens.saturating_add(other.total_tokens),
        }
    }
}

impl AddAssign for Usage {
    fn add_assign(&mut self, other: Self) {
        *self = *self + other;
    }
}

/// What an agent is asked: a text, or a conversation so far.
///
/// On the wire it is either a JSON string or an array of [`Message`]s.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
#[non_exhaustive]
pub enum AgentInput {
    /// One user message.
    Text(String),
    /// A conversation; its last message is usually the user's.
    Messages(Vec<Message>),
}

impl AgentInput {
    /// The input as messages.
    #[must_use]
    pub fn into_messages(self) -> Vec<Message> {
        match self {
            Self::Text(text) => vec![Message::user(text)],
            Self::Messages(messages) => messages,
        }
    }
}

impl From<&str> for AgentInput {
    fn from(text: &str) -> Self {
        Self::Text(text.to_owned())
    }
}

impl From<String> for AgentInput {
    fn from(text: String) -> Self {
        Self::Text(text)
    }
}

impl From<Vec<Message>> for AgentInput {
    fn from(messages: Vec<Message>) -> Self {
        Self::Messages(messages)
    }
}

/// The body of `POST /agents/{name}/run`: what the agent is asked, and context for it.
///
/// ```
/// use halo_protocol::{AgentInput, AgentRequest};
/// use serde_json::json;
///
/// let request: AgentRequest = serde_json::from_value(json!({
///     "input": "Is Dune in stock?",
///     "context": {"customer": "ada@example.com"}
/// })).unwrap();
/// assert_eq!(request.input, AgentInput::Text("Is Dune in stock?".into()));
/// assert_eq!(request.context["customer"], "ada@example.com");
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct AgentRequest {
    /// The task or the conversation.
    pub input: AgentInput,
    /// Facts the caller gives the agent (shown to the model as data).
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub context: Map<String, Value>,
}

impl AgentRequest {
    /// A request with `input` and no context.
    #[must_use]
    pub fn new(input: impl Into<AgentInput>) -> Self {
        Self {
            input: input.into(),
            context: Map::new(),
        }
    }

    /// The same request with context.
    #[must_use]
    pub fn with_context(mut self, context: Map<String, Value>) -> Self {
        self.context = context;
        self
    }
}

/// One event of an agent run streamed over Server-Sent Events.
///
/// Each is one SSE event whose `event:` field is [`name`](Self::name) and whose `data:` is
/// this value as JSON, `{"type": "llm_chunk", "data": {...}}`: the envelope of tool streams
/// ([`ToolEvent`](crate::ToolEvent)). A run sends `agent_start`, then per turn `llm_chunk`s
/// (text as it is written) and `llm_end`, then a `tool_start` and a `tool_end` per tool
/// call, and ends with `agent_end` or `agent_error`, which are terminal. The agent's system
/// prompt is never among them.
///
/// ```
/// use halo_protocol::AgentEvent;
/// use serde_json::json;
///
/// let event: AgentEvent = serde_json::from_value(json!({
///     "type": "llm_chunk", "data": {"turn": 1, "content": "Dune is"}
/// })).unwrap();
/// assert_eq!(event.name(), "llm_chunk");
/// assert!(!event.is_terminal());
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", content = "data", rename_all = "snake_case")]
#[non_exhaustive]
pub enum AgentEvent {
    /// The run has started.
    AgentStart(AgentStart),
    /// Text the model wrote, as it arrives.
    LlmChunk(LlmChunk),
    /// The model finished a turn.
    LlmEnd(LlmEnd),
    /// A tool call starts.
    ToolStart(ToolCallStart),
    /// A tool call ended; its content went back to the model.
    ToolEnd(ToolCallEnd),
    /// The run ended with an answer; terminal.
    AgentEnd(AgentEnd),
    /// The run failed; terminal.
    AgentError(AgentFailure),
}

impl AgentEvent {
    /// The SSE event name: `agent_start`, `llm_chunk`, `llm_end`, `tool_start`, `tool_end`,
    /// `agent_end` or `agent_error`.
    #[must_use]
    pub fn name(&self) -> &'static str {
        match self {
            Self::AgentStart(_) => "agent_start",
            Self::LlmChunk(_) => "llm_chunk",
            Self::LlmEnd(_) => "llm_end",
            Self::ToolStart(_) => "tool_start",
            Self::ToolEnd(_) => "tool_end",
            Self::AgentEnd(_) => "agent_end",
            Self::AgentError(_) => "agent_error",
        }
    }

    /// Whether the run ends with this event.
    #[must_use]
    pub fn is_terminal(&self) -> bool {
        matches!(self, Self::AgentEnd(_) | Self::AgentError(_))
    }
}

/// The data of `agent_start`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct AgentStart {
    /// The run's id; a hosted agent's run is resumed with it in `Halo-Call-Id`.
    pub run_id: String,
    /// The agent's name, for a named agent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
}

impl AgentStart {
    /// The start of run `run_id`.
    #[must_use]
    pub fn new(run_id: impl Into<String>, agent: Option<String>) -> Self {
        Self {
            run_id: run_id.into(),
            agent,
        }
    }
}

/// The data of `llm_chunk`: a piece of the model's text.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct LlmChunk {
    /// The turn (from 1).
    pub turn: u32,
    /// The text.
    pub content: String,
}

impl LlmChunk {
    /// A piece of turn `turn`'s text.
    #[must_use]
    pub fn new(turn: u32, content: impl Into<String>) -> Self {
        Self {
            turn,
            content: content.into(),
        }
    }
}

/// The data of `llm_end`: what the model answered in one turn.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct LlmEnd {
    /// The turn (from 1).
    pub turn: u32,
    /// The whole text of the turn (empty when it only called tools).
    #[serde(default)]
    pub content: String,
    /// The tool calls it asked for.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    /// The tokens of the turn, when the model reported them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
    /// Why the model stopped (`stop`, `tool_calls`, `length`, ...), when it said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finish_reason: Option<String>,
}

impl LlmEnd {
    /// The end of turn `turn` with its text.
    #[must_use]
    pub fn new(turn: u32, content: impl Into<String>) -> Self {
        Self {
            turn,
            content: content.into(),
            tool_calls: Vec::new(),
            usage: None,
            finish_reason: None,
        }
    }
}

/// The data of an agent's `tool_start`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ToolCallStart {
    /// The id of the model's tool call.
    pub call_id: String,
    /// The tool's name.
    pub tool: String,
    /// The arguments: the JSON the model wrote, or its text when it is not JSON.
    pub arguments: Value,
}

impl ToolCallStart {
    /// The start of call `call_id` of `tool`.
    #[must_use]
    pub fn new(call_id: impl Into<String>, tool: impl Into<String>, arguments: Value) -> Self {
        Self {
            call_id: call_id.into(),
            tool: tool.into(),
            arguments,
        }
    }
}

/// The data of an agent's `tool_end`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ToolCallEnd {
    /// The id of the model's tool call.
    pub call_id: String,
    /// The tool's name.
    pub tool: String,
    /// The result the model was given: JSON, or text as a string; for a failed call, the
    /// problem details.
    pub content: Value,
    /// Whether the call failed (an error status, invalid arguments, an unknown tool).
    #[serde(default)]
    pub is_error: bool,
}

impl ToolCallEnd {
    /// The end of call `call_id` of `tool`.
    #[must_use]
    pub fn new(
        call_id: impl Into<String>,
        tool: impl Into<String>,
        content: Value,
        is_error: bool,
    ) -> Self {
        Self {
            call_id: call_id.into(),
            tool: tool.into(),
            content,
            is_error,
        }
    }
}

/// The data of `agent_end`: the answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct AgentEnd {
    /// The final text.
    pub content: String,
    /// How many times the model was asked.
    pub turns: u32,
    /// The tokens of every turn together.
    #[serde(default)]
    pub usage: Usage,
}

impl AgentEnd {
    /// An answer after `turns` turns.
    #[must_use]
    pub fn new(content: impl Into<String>, turns: u32, usage: Usage) -> Self {
        Self {
            content: content.into(),
            turns,
            usage,
        }
    }
}

/// Why an agent run failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum FailureCode {
    /// The model still asked for tools after the most turns allowed.
    MaxTurns,
    /// The run's deadline passed.
    Deadline,
    /// The model could not be reached or answered with an error.
    Llm,
    /// The tools could not be listed.
    Tools,
    /// The input was refused.
    Input,
    /// The run was stopped (its client went away).
    Cancelled,
    /// Something else (a code this version does not know).
    #[serde(other)]
    Other,
}

impl FailureCode {
    /// The code as it is written on the wire (`max_turns`, `deadline`, ...).
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::MaxTurns => "max_turns",
            Self::Deadline => "deadline",
            Self::Llm => "llm",
            Self::Tools => "tools",
            Self::Input => "input",
            Self::Cancelled => "cancelled",
            Self::Other => "other",
        }
    }
}

/// The data of `agent_error`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct AgentFailure {
    /// Why, as a stable code.
    pub code: FailureCode,
    /// What happened, for people.
    pub detail: String,
    /// How many turns ran.
    #[serde(default)]
    pub turns: u32,
    /// The tokens used until then.
    #[serde(default)]
    pub usage: Usage,
}

impl AgentFailure {
    /// A failure with `code` and `detail`, before any turn.
    #[must_use]
    pub fn new(code: FailureCode, detail: impl Into<String>) -> Self {
        Self {
            code,
            detail: detail.into(),
            turns: 0,
            usage: Usage::default(),
        }
    }

    /// The same failure after `turns` turns that used `usage`.
    #[must_use]
    pub fn after(mut self, turns: u32, usage: Usage) -> Self {
        self.turns = turns;
        self.usage = usage;
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn messages_use_the_chat_wire_format() {
        let call = ToolCall::new("call_1", "search_books", r#"{"q":"dune"}"#);
        let messages = vec![
            Message::system("Be brief."),
            Message::user("Dune?"),
            Message::tool_calls(None, vec![call]),
            Message::tool("call_1", "[]"),
            Message::assistant("Not found."),
        ];
        let json = serde_json::to_value(&messages).unwrap();
        assert_eq!(
            json,
            json!([
                {"role": "system", "content": "Be brief."},
                {"role": "user", "content": "Dune?"},
                {"role": "assistant", "tool_calls": [
                    {"id": "call_1", "name": "search_books", "arguments": "{\"q\":\"dune\"}"}
                ]},
                {"role": "tool", "tool_call_id": "call_1", "content": "[]"},
                {"role": "assistant", "content": "Not found."}
            ])
        );
        let back: Vec<Message> = serde_json::from_value(json).unwrap();
        assert_eq!(back, messages);
        assert!(
            serde_json::from_value::<Message>(json!({"role": "wizard", "content": "x"})).is_err()
        );
    }

    #[test]
    fn input_is_text_or_messages() {
        let text: AgentRequest = serde_json::from_value(json!({"input": "hi"})).unwrap();
        assert_eq!(text.input.into_messages(), [Message::user("hi")]);
        let chat: AgentRequest = serde_json::from_value(json!({
            "input": [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}]
        }))
        .unwrap();
        assert_eq!(
            chat.input.into_messages(),
            [Message::user("a"), Message::assistant("b")]
        );
        assert!(serde_json::from_value::<AgentRequest>(json!({"input": 7})).is_err());
        assert!(serde_json::from_value::<AgentRequest>(json!({})).is_err());
    }

    #[test]
    fn events_round_trip() {
        let events = [
            AgentEvent::AgentStart(AgentStart::new("r-1", Some("helper".into()))),
            AgentEvent::LlmChunk(LlmChunk::new(1, "Du")),
            AgentEvent::LlmEnd(LlmEnd::new(1, "Dune")),
            AgentEvent::ToolStart(ToolCallStart::new("c1", "get_book", json!({"id": 1}))),
            AgentEvent::ToolEnd(ToolCallEnd::new("c1", "get_book", json!({"id": 1}), false)),
            AgentEvent::AgentEnd(AgentEnd::new("done", 2, Usage::new(3, 4))),
            AgentEvent::AgentError(
                AgentFailure::new(FailureCode::MaxTurns, "too many").after(3, Usage::new(1, 1)),
            ),
        ];
        for event in events {
            let json = serde_json::to_value(&event).unwrap();
            assert_eq!(json["type"], event.name());
            assert_eq!(serde_json::from_value::<AgentEvent>(json).unwrap(), event);
        }
        let unknown: AgentFailure =
            serde_json::from_value(json!({"code": "quota", "detail": "x"})).unwrap();
        assert_eq!(unknown.code, FailureCode::Other);
        assert_eq!(
            serde_json::to_value(FailureCode::MaxTurns).unwrap(),
            FailureCode::MaxTurns.as_str()
        );
    }
}
