//! What the agent-loop tests share: a provider of a scripted OpenAI-compatible server, a
//! scripted Anthropic Messages server ([`anthropic`]), tools kept in memory, what the
//! events of a run say, and the turn both providers give of the same scripted answer.

pub(crate) mod anthropic;

use std::future::Future;
use std::ops::Deref;
use std::time::Duration;

use futures_util::future::{BoxFuture, FutureExt as _};
use halo_agent::protocol::{AgentEvent, ToolDefinition, ToolOutput, Usage};
use halo_agent::{Completion, OpenAiProvider, OpenAiProviderBuilder, ToolSet};
use halo_tests::llm::ScriptedLlm;
use serde_json::{Map, Value};

/// A provider of `llm`'s endpoint asking for the model `scripted`, settings to add.
pub(crate) fn scripted(llm: &ScriptedLlm) -> OpenAiProviderBuilder {
    OpenAiProvider::builder()
        .base_url(llm.base_url())
        .model("scripted")
}

/// A provider of `llm`'s endpoint that retries a failed request after 10 ms, not seconds.
pub(crate) fn quick_to_retry(llm: &ScriptedLlm) -> OpenAiProvider {
    scripted(llm)
        .min_retry_delay(Duration::from_millis(10))
        .build()
        .unwrap()
}

/// Asserts the turn a provider gives of a scripted text answer, "Dune is in stock." with 21
/// input and 7 output tokens: its `texts` (several pieces) and what it is `done` with (the
/// text, no tool calls, the tokens, `stop`).
pub(crate) fn assert_dune_in_stock(texts: &[String], done: &Completion) {
    assert!(texts.len() > 2, "several pieces: {texts:?}");
    assert_eq!(texts.concat(), "Dune is in stock.");
    assert_eq!(done.content.as_deref(), Some("Dune is in stock."));
    assert!(done.tool_calls.is_empty());
    assert_eq!(done.usage, Some(Usage::new(21, 7)));
    assert_eq!(done.finish_reason.as_deref(), Some("stop"));
}

/// A test's tools, kept in memory: what they are and how one answers. [`InMemory`] makes
/// them a [`ToolSet`].
pub(crate) trait InMemoryTools: Send + Sync {
    /// The tools, as the model sees them.
    fn definitions(&self) -> &[ToolDefinition];

    /// What the tool `name` answers to `arguments`.
    fn answer(
        &self,
        name: &str,
        arguments: Map<String, Value>,
    ) -> impl Future<Output = ToolOutput> + Send;
}

/// Tools kept in memory as the [`ToolSet`] an agent calls; they stay at hand through
/// `Deref`, for the test to read what its tools saw.
pub(crate) struct InMemory<T>(pub(crate) T);

impl<T: InMemoryTools> ToolSet for InMemory<T> {
    fn definitions(&self) -> &[ToolDefinition] {
        self.0.definitions()
    }

    fn call<'a>(
        &'a self,
        name: &'a str,
        arguments: Map<String, Value>,
    ) -> BoxFuture<'a, ToolOutput> {
        self.0.answer(name, arguments).boxed()
    }
}

impl<T> Deref for InMemory<T> {
    type Target = T;

    fn deref(&self) -> &T {
        &self.0
    }
}

/// The tool and the arguments of every `tool_start` event, in order.
pub(crate) fn tool_starts(events: &[AgentEvent]) -> Vec<(String, Value)> {
    events
        .iter()
        .filter_map(|event| match event {
            AgentEvent::ToolStart(call) => Some((call.tool.clone(), call.arguments.clone())),
            _ => None,
        })
        .collect()
}
