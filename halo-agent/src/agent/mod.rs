//! [`Agent`]: the loop that asks a model, calls the tools it chooses, and gives their results
//! back until it answers.

mod events;

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use futures_util::stream;
use futures_util::{FutureExt as _, StreamExt as _};
use halo_protocol::{
    AgentEnd, AgentEvent, AgentFailure, AgentInput, AgentStart, DEFAULT_TOOL_BUDGET, LlmChunk,
    LlmEnd, Message, ToolCall, ToolCallEnd, ToolCallStart, Usage,
};
use serde_json::{Map, Value};

pub use self::events::AgentStream;
use self::events::Emitter;
use crate::progressive::{Disclosure, Step};
use crate::{ChatEvent, ChatRequest, Error, LlmProvider, ModelSettings, Result, ToolSet};

/// An LLM agent: a model, instructions, and the loop that lets the model call tools.
///
/// A run sends the conversation and the tools' definitions to the model; when the model asks
/// for tool calls, they run (concurrently when it asks for several at once) and their results
/// go back to it, until it answers without calling a tool. A run stops with an error at
/// [`max_turns`](AgentBuilder::max_turns) turns, or when its
/// [`timeout`](AgentBuilder::timeout) passes.
///
/// Whatever a tool answers goes back to the model, errors included: a `4xx` problem body,
/// arguments that are not JSON, a tool that does not exist. The model reads what went wrong
/// and can try again. The model only ever sees the system prompt, the input and the tools'
/// results; credentials stay with the tools.
///
/// An API with hundreds of tools does not fit a small model's context: above a
/// [`tool_budget`](AgentBuilder::tool_budget) (4,000 estimated tokens of definitions by
/// default) the model is given two tools instead, `search_tools` and `call_tool`, and the
/// tools its searches find join its list for the rest of the run.
///
/// Cheap to clone: clones share the provider.
///
/// ```no_run
/// use halo_agent::{Agent, OpenAiProvider};
/// # async fn run(tools: impl halo_agent::ToolSet) -> halo_agent::Result<()> {
///
/// let provider = OpenAiProvider::builder()
///     .base_url("http://127.0.0.1:11434/v1") // Ollama, vLLM, llama.cpp, OpenAI, ...
///     .model("qwen2.5:7b")
///     .build()?;
/// let agent = Agent::builder(provider)
///     .system_prompt("You help the customers of a bookstore. Be brief.")
///     .max_turns(8)
///     .build();
/// let answer = agent.run(&tools, "Is Dune in stock?").await?;
/// println!("{} ({} turns, {} tokens)", answer.content(), answer.turns(), answer.usage().total_tokens);
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct Agent {
    inner: Arc<Settings>,
}

#[derive(Clone)]
struct Settings {
    provider: Arc<dyn LlmProvider>,
    name: Option<String>,
    system_prompt: Option<String>,
    max_turns: u32,
    timeout: Option<Duration>,
    model: ModelSettings,
    max_tool_output: usize,
    max_concurrent_tools: usize,
    /// `None`: every definition, whatever it costs.
    tool_budget: Option<usize>,
}

/// Builds an [`Agent`].
#[must_use]
pub struct AgentBuilder {
    settings: Settings,
}

/// What an agent answered.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Answer {
    content: String,
    turns: u32,
    usage: Usage,
    messages: Vec<Message>,
}

impl Answer {
    /// The final text (empty when the model answered with none).
    #[must_use]
    pub fn content(&self) -> &str {
        &self.content
    }

    /// The final text, taken out.
    #[must_use]
    pub fn into_content(self) -> String {
        self.content
    }

    /// How many times the model was asked.
    #[must_use]
    pub fn turns(&self) -> u32 {
        self.turns
    }

    /// The tokens every turn used, together.
    #[must_use]
    pub fn usage(&self) -> Usage {
        self.usage
    }

    /// The conversation without the system prompt: the input, each tool call and result, and
    /// the answer. Give it back as the input of the next run to continue the conversation.
    #[must_use]
    pub fn messages(&self) -> &[Message] {
        &self.messages
    }
}

/// The longest tool result given to the model by default, in bytes.
const MAX_TOOL_OUTPUT: usize = 32 * 1024;
/// The most tool calls of one turn that run at once, by default.
const MAX_CONCURRENT_TOOLS: usize = 8;

impl Agent {
    /// A builder for an agent on `provider`: no system prompt, 10 turns at most, no
    /// deadline, tools searched above [`DEFAULT_TOOL_BUDGET`] tokens.
    pub fn builder(provider: impl LlmProvider) -> AgentBuilder {
        AgentBuilder {
            settings: Settings {
                provider: Arc::new(provider),
                name: None,
                system_prompt: None,
                max_turns: 10,
                timeout: None,
                model: ModelSettings::new(),
                max_tool_output: MAX_TOOL_OUTPUT,
                max_concurrent_tools: MAX_CONCURRENT_TOOLS,
                tool_budget: Some(DEFAULT_TOOL_BUDGET),
            },
        }
    }

    /// The agent's name, when it has one.
    #[must_use]
    pub fn name(&self) -> Option<&str> {
        self.inner.name.as_deref()
    }

    /// The same agent with another system prompt (for another language, say).
    #[must_use]
    pub fn with_system_prompt(&self, prompt: impl Into<String>) -> Self {
        let mut settings = (*self.inner).clone();
        settings.system_prompt = Some(prompt.into());
        Self {
            inner: Arc::new(settings),
        }
    }

    /// Runs the agent on `input` (a task, or a conversation so far) with `tools`, until the
    /// model answers.
    ///
    /// # Errors
    /// [`Error::is_llm`] when the model cannot be reached or answers with an error (`429`
    /// and `5xx` are retried first, by the provider), [`Error::is_max_turns`] when the model
    /// still asks for tools after the most turns allowed, [`Error::is_deadline`] when the
    /// timeout passes, [`Error::is_input`] for an empty input. A tool's failure is not an
    /// error: the model reads it.
    pub async fn run<T>(&self, tools: &T, input: impl Into<AgentInput>) -> Result<Answer>
    where
        T: ToolSet + ?Sized,
    {
        self.execute(tools, input.into(), &Emitter::none()).await
    }

    /// Runs the agent as [`run`](Self::run) does, as a stream of the run's events: every
    /// piece of text as the model writes it, each tool call as it starts and ends, and a
    /// last `agent_end` with the answer or `agent_error` (the events of HALO's hosted
    /// agents, [`AgentEvent`]).
    ///
    /// The run happens as the stream is polled; dropping the stream stops it, tool calls in
    /// flight included.
    ///
    /// ```no_run
    /// use futures_util::StreamExt as _;
    /// use halo_agent::protocol::AgentEvent;
    /// # async fn run(agent: halo_agent::Agent, tools: impl halo_agent::ToolSet + 'static) {
    ///
    /// let mut events = agent.run_stream(tools, "Is Dune in stock?");
    /// while let Some(event) = events.next().await {
    ///     match event {
    ///         AgentEvent::LlmChunk(chunk) => print!("{}", chunk.content),
    ///         AgentEvent::ToolStart(call) => eprintln!("-> {} {}", call.tool, call.arguments),
    ///         AgentEvent::AgentError(failure) => eprintln!("failed: {}", failure.detail),
    ///         _ => {}
    ///     }
    /// }
    /// # }
    /// ```
    pub fn run_stream<T>(&self, tools: T, input: impl Into<AgentInput>) -> AgentStream
    where
        T: ToolSet + 'static,
    {
        let agent = self.clone();
        let input = input.into();
        AgentStream::new(move |emitter| {
            async move {
                // The outcome is in the events; the error is kept for `AgentStream::error`.
                agent.execute(&tools, input, &emitter).await.err()
            }
            .boxed()
        })
    }

    /// One run: `agent_start`, the turns, then `agent_end` or `agent_error`.
    async fn execute<T>(&self, tools: &T, input: AgentInput, emitter: &Emitter) -> Result<Answer>
    where
        T: ToolSet + ?Sized,
    {
        let run_id = format!("r-{}", uuid::Uuid::new_v4().simple());
        emitter.emit(|| AgentEvent::AgentStart(AgentStart::new(run_id, self.inner.name.clone())));
        let mut state = State::default();
        let outcome = match self.inner.timeout {
            Some(limit) => {
                tokio::time::timeout(limit, self.turns(tools, input, emitter, &mut state))
                    .await
                    .unwrap_or_else(|_| Err(Error::deadline(limit)))
            }
            None => self.turns(tools, input, emitter, &mut state).await,
        };
        match outcome {
            Ok(content) => {
                emitter.emit(|| {
                    AgentEvent::AgentEnd(AgentEnd::new(content.clone(), state.turns, state.usage))
                });
                Ok(Answer {
                    content,
                    turns: state.turns,
                    usage: state.usage,
                    messages: state.messages,
                })
            }
            Err(error) => {
                let error = error.after(state.turns, state.usage);
                emitter.emit(|| {
                    AgentEvent::AgentError(
                        AgentFailure::new(error.code(), error.to_string())
                            .after(state.turns, state.usage),
                    )
                });
                Err(error)
            }
        }
    }

    /// The turns of a run, until an answer (its text) or an error; `state` keeps the turns,
    /// usage and conversation so far.
    async fn turns<T>(
        &self,
        tools: &T,
        input: AgentInput,
        emitter: &Emitter,
        state: &mut State,
    ) -> Result<String>
    where
        T: ToolSet + ?Sized,
    {
        let settings = &*self.inner;
        state.messages = input.into_messages();
        if state.messages.is_empty() {
            return Err(Error::input("the input has no message"));
        }
        let mut disclosure = Disclosure::new(tools, settings.tool_budget);
        for turn in 1..=settings.max_turns {
            state.turns = turn;
            let mut messages = Vec::with_capacity(state.messages.len() + 1);
            if let Some(prompt) = &settings.system_prompt {
                messages.push(Message::system(prompt.clone()));
            }
            messages.extend(state.messages.iter().cloned());
            let request = ChatRequest::new(messages, disclosure.offered())
                .with_settings(settings.model.clone())
                .with_failed_calls(state.failed_calls.iter().cloned());
            let mut completion = None;
            let mut answer = settings.provider.chat(request);
            while let Some(event) = answer.next().await {
                match event? {
                    ChatEvent::Text(text) => {
                        emitter.emit(|| AgentEvent::LlmChunk(LlmChunk::new(turn, text)));
                    }
                    ChatEvent::Done(done) => {
                        completion = Some(done);
                        break;
                    }
                }
            }
            drop(answer);
            let mut completion = completion.ok_or_else(|| {
                Error::decode("the model's answer ended before the turn was complete")
            })?;
            if let Some(usage) = completion.usage {
                state.usage += usage;
            }
            // Every call needs an id its result can answer to.
            for (index, call) in completion.tool_calls.iter_mut().enumerate() {
                if call.id.is_empty() {
                    call.id = format!("call_{turn}_{index}");
                }
            }
            let content = completion.content.take().unwrap_or_default();
            emitter.emit(|| {
                let mut end = LlmEnd::new(turn, content.clone());
                end.tool_calls.clone_from(&completion.tool_calls);
                end.usage = completion.usage;
                end.finish_reason.clone_from(&completion.finish_reason);
                AgentEvent::LlmEnd(end)
            });
            if completion.tool_calls.is_empty() {
                state.messages.push(Message::assistant(content.clone()));
                return Ok(content);
            }
            let calls = completion.tool_calls;
            let text = (!content.is_empty()).then_some(content);
            state
                .messages
                .push(Message::tool_calls(text, calls.clone()));
            let pending: Vec<_> = calls
                .iter()
                .map(|call| self.call_tool(tools, &disclosure, call, emitter))
                .collect();
            let results: Vec<Called> = stream::iter(pending)
                .buffered(settings.max_concurrent_tools)
                .collect()
                .await;
            for (call, called) in calls.iter().zip(results) {
                // The tools searches found join the model's list, in the order it asked.
                disclosure.reveal(&called.found);
                if called.is_error {
                    state.failed_calls.push(call.id.clone());
                }
                state
                    .messages
                    .push(Message::tool(call.id.clone(), called.text));
            }
        }
        Err(Error::max_turns(settings.max_turns))
    }

    /// Calls one tool the model asked for and gives the text the model reads back, whether
    /// it is a failure, and the tools it found when it was a search. What the model got
    /// wrong (an unknown tool, arguments that are not a JSON object) is answered as a problem
    /// without a call; a search is answered in process; `call_tool` calls the tool it names,
    /// which the events show as called directly.
    async fn call_tool<T>(
        &self,
        tools: &T,
        disclosure: &Disclosure<'_>,
        call: &ToolCall,
        emitter: &Emitter,
    ) -> Called
    where
        T: ToolSet + ?Sized,
    {
        let parsed = parse_arguments(&call.arguments);
        let shown = match &parsed {
            Ok(arguments) => Value::Object(arguments.clone()),
            Err(_) => Value::String(call.arguments.clone()),
        };
        let (tool, output, found) = match disclosure.step(&call.name, parsed) {
            Step::Call { index, arguments } => {
                let name = disclosure.definitions()[index].name.as_str();
                emitter.emit(|| {
                    AgentEvent::ToolStart(ToolCallStart::new(
                        &call.id,
                        name,
                        Value::Object(arguments.clone()),
                    ))
                });
                (name, tools.call(name, arguments).await, Vec::new())
            }
            Step::Answer { output, found } => {
                emitter.emit(|| {
                    AgentEvent::ToolStart(ToolCallStart::new(&call.id, &call.name, shown))
                });
                (call.name.as_str(), output, found)
            }
        };
        emitter.emit(|| {
            let content = output
                .structured
                .clone()
                .unwrap_or_else(|| Value::String(output.text.clone()));
            AgentEvent::ToolEnd(ToolCallEnd::new(&call.id, tool, content, output.is_error))
        });
        Called {
            is_error: output.is_error,
            text: truncate(output.text, self.inner.max_tool_output),
            found,
        }
    }
}

/// How one tool call went, for the model.
struct Called {
    /// What the model reads.
    text: String,
    /// Whether the call failed.
    is_error: bool,
    /// The tools a search found.
    found: Vec<usize>,
}

/// A run's progress, kept outside the turns so that a deadline or an error still knows it.
#[derive(Debug, Default)]
struct State {
    turns: u32,
    usage: Usage,
    messages: Vec<Message>,
    /// The ids of this run's tool calls that failed.
    failed_calls: Vec<String>,
}

/// The arguments of a tool call as a JSON object; empty text is no arguments. Anything else
/// is what to tell the model (as the detail of a `400` problem).
fn parse_arguments(text: &str) -> Result<Map<String, Value>, String> {
    if text.trim().is_empty() {
        return Ok(Map::new());
    }
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(arguments)) => Ok(arguments),
        Ok(Value::Null) => Ok(Map::new()),
        Ok(other) => Err(format!(
            "the arguments must be a JSON object, not {}",
            match other {
                Value::Array(_) => "an array",
                Value::String(_) => "a string",
                Value::Number(_) => "a number",
                _ => "a boolean",
            }
        )),
        Err(error) => Err(format!(
            "the arguments are not valid JSON ({error}); send one JSON object that follows the tool's parameters"
        )),
    }
}

/// `text` cut to at most `limit` bytes (on a character boundary), saying so.
fn truncate(mut text: String, limit: usize) -> String {
    if text.len() <= limit {
        return text;
    }
    let total = text.len();
    let mut end = limit;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text.truncate(end);
    text.push_str(&format!("\n[truncated: {total} bytes in all]"));
    text
}

impl AgentBuilder {
    /// A name for the agent, shown in `agent_start`.
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.settings.name = Some(name.into());
        self
    }

    /// Instructions for the model, sent first in every turn. Never part of the events.
    pub fn system_prompt(mut self, prompt: impl Into<String>) -> Self {
        self.settings.system_prompt = Some(prompt.into());
        self
    }

    /// The most times the model is asked in one run (10 by default, at least 1). A model
    /// that still asks for tools then ends the run with an error.
    pub fn max_turns(mut self, turns: u32) -> Self {
        self.settings.max_turns = turns.max(1);
        self
    }

    /// The longest a run may take, tool calls included; none by default.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.settings.timeout = Some(timeout);
        self
    }

    /// Settings for the model (which one, temperature, answer length), over the provider's.
    pub fn model(mut self, settings: ModelSettings) -> Self {
        self.settings.model = settings;
        self
    }

    /// The longest tool result given to the model, in bytes (32 KiB by default); a longer
    /// one is cut, with a note saying so.
    pub fn max_tool_output(mut self, bytes: usize) -> Self {
        self.settings.max_tool_output = bytes.max(1);
        self
    }

    /// The most tokens the tools' definitions may cost the model, as it is given them (each
    /// one's name, title, description and input schema, estimated by
    /// [`ToolDefinition::estimated_tokens`](halo_protocol::ToolDefinition::estimated_tokens);
    /// function tools carry no output schema); [`DEFAULT_TOOL_BUDGET`] (4,000) by default.
    ///
    /// Tools that cost more are disclosed progressively: the model is given two tools,
    /// `search_tools` (answered in process, from a search index of the tools: the best
    /// matches with their descriptions and input schemas) and `call_tool` (calls a tool by
    /// name), and the tools its searches find join its list from the next turn on (at most
    /// 20, within the budget, the ones found longest ago leaving first). Any tool can be
    /// called by its name, listed or not. A search finds only the tools of the set (for
    /// halo-client's `RemoteTools` and hosted agents, those the credentials may see), and
    /// a call through `call_tool` shows in the events as a call of the tool it names.
    ///
    /// Tools that fit are listed as they are, every turn.
    ///
    /// ```
    /// # use futures_util::stream::{self, StreamExt as _};
    /// # use halo_agent::{ChatEvent, ChatRequest, ChatStream, Completion, LlmProvider};
    /// # #[derive(Debug)] struct Model;
    /// # impl LlmProvider for Model {
    /// #     fn chat(&self, _: ChatRequest) -> ChatStream {
    /// #         stream::iter([Ok(ChatEvent::Done(Completion::text("hi")))]).boxed()
    /// #     }
    /// # }
    /// use halo_agent::Agent;
    ///
    /// // A small local model: about 2,000 tokens of tools at most.
    /// let agent = Agent::builder(Model).tool_budget(2_000).build();
    /// # let _ = agent;
    /// ```
    pub fn tool_budget(mut self, tokens: usize) -> Self {
        self.settings.tool_budget = Some(tokens);
        self
    }

    /// Gives the model every tool's definition, whatever they cost: no
    /// [`tool_budget`](Self::tool_budget), no search.
    ///
    /// ```
    /// # use futures_util::stream::{self, StreamExt as _};
    /// # use halo_agent::{ChatEvent, ChatRequest, ChatStream, Completion, LlmProvider};
    /// # #[derive(Debug)] struct Model;
    /// # impl LlmProvider for Model {
    /// #     fn chat(&self, _: ChatRequest) -> ChatStream {
    /// #         stream::iter([Ok(ChatEvent::Done(Completion::text("hi")))]).boxed()
    /// #     }
    /// # }
    /// use halo_agent::Agent;
    ///
    /// // A model with a large context, and an API whose tools it should see at once.
    /// let agent = Agent::builder(Model).all_tools().build();
    /// assert!(format!("{agent:?}").contains("tool_budget: None"));
    /// ```
    pub fn all_tools(mut self) -> Self {
        self.settings.tool_budget = None;
        self
    }

    /// The most tool calls of one turn that run at the same time (8 by default, at least 1);
    /// the others wait for a place. Results go back to the model in the order it asked.
    pub fn max_concurrent_tools(mut self, calls: usize) -> Self {
        self.settings.max_concurrent_tools = calls.max(1);
        self
    }

    /// The agent.
    #[must_use]
    pub fn build(self) -> Agent {
        Agent {
            inner: Arc::new(self.settings),
        }
    }
}

impl fmt::Debug for Settings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Agent")
            .field("name", &self.name)
            .field("system_prompt", &self.system_prompt.as_ref().map(|_| ".."))
            .field("max_turns", &self.max_turns)
            .field("timeout", &self.timeout)
            .field("max_concurrent_tools", &self.max_concurrent_tools)
            .field("tool_budget", &self.tool_budget)
            .field("model", &self.model)
            .finish_non_exhaustive()
    }
}

impl fmt::Debug for Agent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.inner.fmt(f)
    }
}

impl fmt::Debug for AgentBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.settings.fmt(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments() {
        assert_eq!(parse_arguments("").unwrap(), Map::new());
        assert_eq!(parse_arguments("null").unwrap(), Map::new());
        assert_eq!(parse_arguments(r#"{"id": 1}"#).unwrap()["id"], 1);
        let bad = parse_arguments(r#"{"id": 1"#).unwrap_err();
        assert!(bad.contains("not valid JSON"), "{bad}");
        let array = parse_arguments("[1]").unwrap_err();
        assert!(array.contains("an array"), "{array}");
    }

    #[test]
    fn long_results_are_cut_on_a_character() {
        assert_eq!(truncate("short".into(), 10), "short");
        let cut = truncate("é".repeat(10), 5);
        assert!(cut.starts_with("éé\n[truncated: 20 bytes in all]"), "{cut}");
    }
}
