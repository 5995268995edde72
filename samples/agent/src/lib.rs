//! A sample LLM agent over the sample bookstore: it discovers the bookstore's read-only tools
//! over HALO and lets a model behind any OpenAI-compatible endpoint answer a question with
//! them.
//!
//! The pieces, all from `halo_client::agent`:
//!
//! - a [`Client`] with the bookstore's URL and a bearer token (the model never sees it);
//! - [`RemoteTools::discover`] with the tag `read`, so the model is offered only the tools
//!   that change nothing (searching, book details, stock levels), whatever the token may do;
//! - an [`OpenAiProvider`] for the model, and an [`Agent`] with instructions;
//! - [`Agent::run_stream`], whose events print the answer as it is written and each tool
//!   call as it happens.
//!
//! ```no_run
//! use clap::Parser as _;
//!
//! # async fn run() {
//! let settings = bookstore_agent::Settings::parse_from([
//!     "bookstore-agent",
//!     "--llm-base-url", "http://127.0.0.1:11434/v1",
//!     "--model", "qwen2.5:7b",
//!     "Is Dune in stock?",
//! ]);
//! let code = bookstore_agent::run(settings).await;
//! # let _ = code;
//! # }
//! ```

use std::io::Write as _;
use std::process::ExitCode;

use clap::Parser;
use futures_util::StreamExt as _;
use halo_client::agent::{Agent, OpenAiProvider, RemoteTools};
use halo_client::protocol::AgentEvent;
use halo_client::{Client, Credential};

/// What the model is told about its job.
pub const SYSTEM_PROMPT: &str = "You are the shopping assistant of a bookstore. Answer the \
customer's question with the bookstore's tools: search the catalogue first, then look up \
details or stock as needed. Never guess a price or a stock level; say so when a tool cannot \
tell. Answer in two or three sentences.";

/// The question asked when none is given.
pub const DEFAULT_TASK: &str = "Which books by Ursula K. Le Guin do you have, and how many copies \
of each are in stock?";

/// Asks an LLM agent a question about the sample bookstore.
#[derive(Debug, Clone, Parser)]
#[command(name = "bookstore-agent", version, about)]
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
}

/// Runs the agent: the answer on standard output as it is written, tool calls on standard
/// error. Exit 0 with an answer, 1 when the run fails, 2 when something is not configured or
/// the bookstore cannot be reached.
pub async fn run(settings: Settings) -> ExitCode {
    let (Some(base_url), Some(model)) = (&settings.llm_base_url, &settings.model) else {
        eprintln!(
            "bookstore-agent: no model is configured. Set HALO_LLM_BASE_URL (e.g. \
             http://127.0.0.1:11434/v1 for Ollama, https://api.openai.com/v1 for OpenAI) and \
             HALO_LLM_MODEL, and HALO_LLM_API_KEY if the endpoint needs one (or --llm-base-url, \
             --model, --llm-api-key)."
        );
        return ExitCode::from(2);
    };
    let mut provider = OpenAiProvider::builder().base_url(base_url).model(model);
    if let Some(key) = &settings.llm_api_key {
        provider = provider.api_key(key);
    }
    let provider = match provider.build() {
        Ok(provider) => provider,
        Err(error) => {
            eprintln!("bookstore-agent: {error}");
            return ExitCode::from(2);
        }
    };
    let client = Client::builder(&settings.bookstore)
        .credential(Credential::bearer(settings.token.as_str()))
        .build();
    // Only the tools tagged `read`: the assistant may search and check stock, never order
    // or pay, whatever the token allows.
    let tools = match client {
        Ok(client) => RemoteTools::discover(&client, &["read"]).await,
        Err(error) => Err(error),
    };
    let tools = match tools {
        Ok(tools) => tools,
        Err(error) => {
            eprintln!("bookstore-agent: cannot discover the bookstore: {error}");
            return ExitCode::from(2);
        }
    };
    let agent = Agent::builder(provider)
        .name("bookstore-agent")
        .system_prompt(SYSTEM_PROMPT)
        .max_turns(8)
        .build();

    let mut events = agent.run_stream(tools, settings.task);
    let mut stdout = std::io::stdout();
    while let Some(event) = events.next().await {
        match event {
            AgentEvent::LlmChunk(chunk) => {
                let _ = write!(stdout, "{}", chunk.content);
                let _ = stdout.flush();
            }
            AgentEvent::ToolStart(call) => eprintln!("[calling {} {}]", call.tool, call.arguments),
            AgentEvent::ToolEnd(end) if end.is_error => {
                eprintln!("[{} failed: {}]", end.tool, end.content);
            }
            AgentEvent::AgentEnd(end) => {
                let _ = writeln!(stdout);
                eprintln!("[{} turns, {} tokens]", end.turns, end.usage.total_tokens);
                return ExitCode::SUCCESS;
            }
            AgentEvent::AgentError(failure) => {
                let _ = writeln!(stdout);
                eprintln!("bookstore-agent: {}", failure.detail);
                return ExitCode::from(1);
            }
            _ => {}
        }
    }
    ExitCode::from(1)
}
