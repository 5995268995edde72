//! An LLM agent loop over tools, shared by halo-rs's client and server.
//!
//! - [`LlmProvider`]: a small trait for a chat model that streams its answers (text as it is
//!   written, then the whole turn with its tool calls and token usage);
//!   [`OpenAiProvider`] (feature `openai`, on by default) implements it for any
//!   OpenAI-compatible endpoint: OpenAI, vLLM, llama.cpp's server, Ollama;
//!   [`AnthropicProvider`] (feature `anthropic`, on by default) for Anthropic's Messages
//!   API.
//! - [`ToolSet`]: the tools an agent may call. halo-client's `RemoteTools` is one HALO API
//!   called over HTTP; halo-axum's hosted agents call their own API in process.
//! - [`Agent`]: the loop. The model is asked; the tools it chooses run (concurrently when it
//!   chooses several at once); their results, errors included, go back to it; until it
//!   answers, [`max_turns`](AgentBuilder::max_turns) is reached, or the
//!   [`timeout`](AgentBuilder::timeout) passes. [`Agent::run`] gives the [`Answer`],
//!   [`Agent::run_stream`] the run's events ([`AgentEvent`](protocol::AgentEvent)).
//!   Tools that cost the model more than a [budget](AgentBuilder::tool_budget) are
//!   disclosed progressively: the model searches them (`search_tools`) and calls the ones
//!   it finds (`call_tool`, or by name), so that an API of hundreds of tools fits a small
//!   model's context.
//!
//! ```no_run
//! use halo_agent::{Agent, ModelSettings, OpenAiProvider};
//! # async fn run(tools: impl halo_agent::ToolSet) -> halo_agent::Result<()> {
//!
//! let provider = OpenAiProvider::builder()
//!     .api_key(std::env::var("HALO_LLM_API_KEY").unwrap_or_default())
//!     .model("gpt-4o-mini")
//!     .build()?;
//! let agent = Agent::builder(provider)
//!     .system_prompt("You answer questions about the bookstore's catalogue.")
//!     .model(ModelSettings::new().temperature(0.0))
//!     .build();
//! let answer = agent.run(&tools, "Which books by Ursula K. Le Guin are in stock?").await?;
//! println!("{}", answer.content());
//! # Ok(()) }
//! ```

mod agent;
#[cfg(feature = "anthropic")]
mod anthropic;
#[cfg(any(feature = "openai", feature = "anthropic"))]
mod endpoint;
mod error;
mod llm;
#[cfg(feature = "openai")]
mod openai;
mod progressive;
mod tools;

pub use halo_protocol as protocol;

pub use crate::agent::{Agent, AgentBuilder, AgentStream, Answer};
#[cfg(feature = "anthropic")]
pub use crate::anthropic::{ANTHROPIC_BASE_URL, AnthropicProvider, AnthropicProviderBuilder};
pub use crate::error::{Error, Result};
pub use crate::llm::{ChatEvent, ChatRequest, ChatStream, Completion, LlmProvider, ModelSettings};
#[cfg(feature = "openai")]
pub use crate::openai::{OPENAI_BASE_URL, OpenAiProvider, OpenAiProviderBuilder};
pub use crate::tools::ToolSet;
pub use halo_protocol::listed_tokens;

/// The README's examples, compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
