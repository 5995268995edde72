//! Agents over HALO APIs (feature `agent`): an LLM that answers a task by calling an API's
//! tools.
//!
//! [`RemoteTools`] is one API seen through a [`Client`](crate::Client): its tools (all of
//! them, or those with some tags) as the model's function definitions, with `why` and
//! `description` to choose by, each call made by the client with its credentials, argument
//! placement and safe retries. [`Agent`] is the loop and [`OpenAiProvider`] the model behind
//! any OpenAI-compatible endpoint; both come from the `halo-agent` crate, which halo-axum's
//! hosted agents share.
//!
//! The model never sees a credential: they stay in the client, which applies them per host.
//! A tool's `4xx` answer (its problem details), arguments the model got wrong and a tool
//! that does not exist all go back to the model as the call's result, so it can correct
//! itself.
//!
//! An API of hundreds of tools fits a small model's context: when the tools cost more than
//! the agent's [`tool_budget`](AgentBuilder::tool_budget) (4,000 estimated tokens by
//! default), the model is given `search_tools` and `call_tool` instead; searches run in
//! process over `RemoteTools`' catalog (tags, paths, `why`, parameters), and the tools found
//! join the model's list for the rest of the run.
//!
//! ```no_run
//! use futures_util::StreamExt as _;
//! use halo_client::agent::{Agent, OpenAiProvider, RemoteTools};
//! use halo_client::protocol::AgentEvent;
//! use halo_client::{Client, Credential};
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let client = Client::builder("http://127.0.0.1:3000")
//!     .credential(Credential::bearer("demo-reader"))
//!     .build()?;
//! let tools = RemoteTools::discover(&client, &["books", "inventory"]).await?;
//! let provider = OpenAiProvider::builder()
//!     .base_url("http://127.0.0.1:11434/v1")
//!     .model("qwen2.5:7b")
//!     .build()?;
//! let agent = Agent::builder(provider)
//!     .system_prompt("You help the customers of a bookstore.")
//!     .build();
//!
//! let answer = agent.run(&tools, "Is Dune in stock?").await?;
//! println!("{}", answer.content());
//!
//! // Or as it happens:
//! let mut events = agent.run_stream(tools, "And Neuromancer?");
//! while let Some(event) = events.next().await {
//!     match event {
//!         AgentEvent::LlmChunk(chunk) => print!("{}", chunk.content),
//!         AgentEvent::ToolStart(call) => eprintln!("[{} {}]", call.tool, call.arguments),
//!         _ => {}
//!     }
//! }
//! # Ok(()) }
//! ```

mod remote;

pub use halo_agent::{
    Agent, AgentBuilder, AgentStream, Answer, ChatEvent, ChatRequest, ChatStream, Completion,
    Error, LlmProvider, ModelSettings, OPENAI_BASE_URL, OpenAiProvider, OpenAiProviderBuilder,
    Result, ToolSet, listed_tokens,
};

pub use self::remote::RemoteTools;
