//! A sample rig agent over the sample bookstore: halo-client discovers the bookstore's
//! read-only tools over HALO and gives them to a [rig](https://docs.rs/rig-agent) agent as
//! `DynamicTool`s, and a model behind any OpenAI-compatible endpoint answers a question with
//! them.
//!
//! The pieces:
//!
//! - a halo-client [`Client`] with the bookstore's URL and a bearer token (the model never
//!   sees it: each tool call goes through the client, which applies it);
//! - [`RigTools`] with the tag `read`, so the model is offered only the tools that change
//!   nothing, whatever the token may do; above `--tool-budget` tokens of definitions the
//!   model gets `search_tools` and `call_tool` instead;
//! - rig's OpenAI provider (Chat Completions) at the endpoint's URL, and a rig agent with
//!   instructions and those tools (`AgentBuilder::dynamic_tools`).
//!
//! ```no_run
//! use clap::Parser as _;
//!
//! # async fn run() {
//! let settings = bookstore_rig_agent::Settings::parse_from([
//!     "bookstore-rig-agent",
//!     "--llm-base-url", "http://127.0.0.1:11434/v1",
//!     "--model", "qwen2.5:7b",
//!     "Is Dune in stock?",
//! ]);
//! let code = bookstore_rig_agent::run(settings).await;
//! # let _ = code;
//! # }
//! ```

use std::process::ExitCode;

use clap::Parser;
use halo_client::rig::{Offer, RigTools};
use halo_client::{Client, Credential};
use rig_agent::AgentBuilder;
use rig_core::providers::openai::OpenAIConfig;

/// What the model is told about its job.
pub const SYSTEM_PROMPT: &str = "You are the shopping assistant of a bookstore. Answer the \
customer's question with the bookstore's tools: search the catalogue first, then look up \
details or stock as needed. Never guess a price or a stock level; say so when a tool cannot \
tell. Answer in two or three sentences.";

/// The question asked when none is given.
pub const DEFAULT_TASK: &str = "Which books by Ursula K. Le Guin do you have, and how many copies \
of each are in stock?";

/// Asks a rig agent a question about the sample bookstore.
#[derive(Debug, Clone, Parser)]
#[command(name = "bookstore-rig-agent", version, about)]
pub struct Settings {
    /// The question.
    #[arg(default_value = DEFAULT_TASK)]
    pub task: String,
    /// The bookstore's base URL.
    #[arg(long, env = "BOOKSTORE_URL", default_value = "http://127.0.0.1:3000")]
    pub bookstore: String,
    /// The bearer token sent to the bookstore (`demo-admin` can read stock levels).
    #[arg(
        long,
        env = "BOOKSTORE_TOKEN",
        default_value = "demo-admin",
        hide_env_values = true
    )]
    pub token: String,
    /// The model endpoint's base URL, up to `/chat/completions`.
    #[arg(long, env = "HALO_LLM_BASE_URL", value_name = "URL")]
    pub llm_base_url: Option<String>,
    /// The model, as the endpoint names it.
    #[arg(long, env = "HALO_LLM_MODEL", value_name = "NAME")]
    pub model: Option<String>,
    /// The endpoint's API key, if it needs one.
    #[arg(
        long,
        env = "HALO_LLM_API_KEY",
        value_name = "KEY",
        hide_env_values = true
    )]
    pub llm_api_key: Option<String>,
    /// The most estimated tokens of tool definitions given to the model up front; above it,
    /// the model gets `search_tools` and `call_tool`.
    #[arg(long, value_name = "TOKENS", default_value_t = halo_client::protocol::DEFAULT_TOOL_BUDGET)]
    pub tool_budget: usize,
    /// The most model turns (tool rounds) before the agent gives up.
    #[arg(long, value_name = "TURNS", default_value_t = 8)]
    pub max_turns: usize,
}

/// Runs the agent: the answer on standard output, what the model was offered on standard
/// error. Exit 0 with an answer, 1 when the run fails, 2 when something is not configured or
/// the bookstore cannot be reached.
pub async fn run(settings: Settings) -> ExitCode {
    let (Some(base_url), Some(model)) = (&settings.llm_base_url, &settings.model) else {
        eprintln!(
            "bookstore-rig-agent: no model is configured. Set HALO_LLM_BASE_URL (e.g. \
             http://127.0.0.1:11434/v1 for Ollama, https://api.openai.com/v1 for OpenAI) and \
             HALO_LLM_MODEL, and HALO_LLM_API_KEY if the endpoint needs one (or --llm-base-url, \
             --model, --llm-api-key)."
        );
        return ExitCode::from(2);
    };
    let client = Client::builder(&settings.bookstore)
        .credential(Credential::bearer(settings.token.as_str()))
        .build();
    // Only the tools tagged `read`: the assistant may search and check stock, never order
    // or pay, whatever the token allows.
    let tools = match client {
        Ok(client) => {
            RigTools::builder(&client)
                .tags(["read"])
                .tool_budget(settings.tool_budget)
                .discover()
                .await
        }
        Err(error) => Err(error),
    };
    let tools = match tools {
        Ok(tools) => tools,
        Err(error) => {
            eprintln!("bookstore-rig-agent: cannot discover the bookstore: {error}");
            return ExitCode::from(2);
        }
    };
    match tools.offer() {
        Offer::SearchAndCall => eprintln!(
            "[{} tools, about {} tokens: offered as search_tools and call_tool]",
            tools.definitions().len(),
            tools.listed_tokens()
        ),
        _ => eprintln!(
            "[{} tools, about {} tokens]",
            tools.definitions().len(),
            tools.listed_tokens()
        ),
    }

    let key = settings.llm_api_key.clone().unwrap_or_default();
    let model = OpenAIConfig::new(key)
        .with_base_url(base_url)
        .client()
        .chat(model);
    let agent = AgentBuilder::new(model)
        .name("bookstore-rig-agent")
        .preamble(SYSTEM_PROMPT)
        .dynamic_tools(tools.tools())
        .build();
    match agent
        .prompt(settings.task)
        .max_turns(settings.max_turns)
        .await
    {
        Ok(response) => {
            println!("{}", response.output());
            ExitCode::SUCCESS
        }
        Err(error) => {
            eprintln!("bookstore-rig-agent: {error}");
            ExitCode::from(1)
        }
    }
}
