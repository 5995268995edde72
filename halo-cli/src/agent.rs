//! `halo agent`: an LLM agent that does a task with an API's tools, printed as it happens.

use std::process::ExitCode;

use futures_util::StreamExt as _;
use halo_agent::AnthropicProvider;
use halo_client::Client;
use halo_client::agent::{
    Agent, LlmProvider, OpenAiProvider, RemoteTools, ToolSet as _, listed_tokens,
};
use halo_client::protocol::{AgentEvent, ToolCallEnd};
use serde_json::Value;

use crate::cli::{ModelArgs, Provider};
use crate::failure::Failure;
use crate::output::{self, print_err, print_out};

/// What `halo agent` was asked.
#[derive(Debug)]
pub(crate) struct Options {
    pub(crate) task: String,
    pub(crate) llm_base_url: Option<String>,
    /// The model's API and name.
    pub(crate) model: ModelArgs,
    pub(crate) llm_api_key: Option<String>,
    pub(crate) tags: Vec<String>,
    pub(crate) system: Option<String>,
    pub(crate) max_turns: u32,
    /// The most the tools may cost the model before it searches them; `None`: list them
    /// all.
    pub(crate) tool_budget: Option<usize>,
}

/// The instructions given to the model when `--system` gives none.
const SYSTEM: &str = "You complete the user's task with the tools of one HTTP API. Use the \
tools to find facts instead of guessing, and read each tool's description to choose it. When \
a tool answers with an error, read it and correct the call. When you are given search_tools, \
search first for the tools the task needs, then call them. Answer briefly, in the user's \
language.";

/// The longest tool-call arguments shown on one line.
const SHOWN_ARGUMENTS: usize = 160;

/// Runs the agent on the API `client` talks to: the answer on standard output as the model
/// writes it, each tool call on standard error as it starts and ends (or with `json`, every
/// event as a line of JSON on standard output). Exit 0 with an answer, 1 when the run fails
/// (`agent_error`).
pub(crate) async fn run(
    client: &Client,
    options: Options,
    json: bool,
) -> Result<ExitCode, Failure> {
    let provider = provider(&options)?;
    let tags: Vec<&str> = options.tags.iter().map(String::as_str).collect();
    let tools = RemoteTools::discover(client, &tags).await?;
    if tools.definitions().is_empty() && !json {
        print_err(&format!(
            "halo: {} offers no tools{}; the model answers without any\n",
            client.base_url(),
            if tags.is_empty() {
                " to these credentials".to_owned()
            } else {
                format!(" tagged {}", tags.join(", "))
            }
        ));
    }
    let tokens = listed_tokens(tools.definitions());
    let mut agent = Agent::builder(provider)
        .system_prompt(options.system.as_deref().unwrap_or(SYSTEM))
        .max_turns(options.max_turns);
    match options.tool_budget {
        Some(budget) => {
            if tokens > budget && !json {
                print_err(&format!(
                    "halo: the {} tools cost about {tokens} tokens, more than the budget of \
                     {budget}: the model searches them (--all-tools lists them all)\n",
                    tools.definitions().len()
                ));
            }
            agent = agent.tool_budget(budget);
        }
        None => agent = agent.all_tools(),
    }
    let agent = agent.build();
    let mut events = agent.run_stream(tools, options.task);
    let mut code = ExitCode::SUCCESS;
    // Whether the last text printed ended a line.
    let mut at_line_start = true;
    while let Some(event) = events.next().await {
        if matches!(event, AgentEvent::AgentError(_)) {
            code = ExitCode::from(1);
        }
        if json {
            let mut line = serde_json::to_string(&event).unwrap_or_default();
            line.push('\n');
            print_out(&line);
            continue;
        }
        match &event {
            AgentEvent::LlmChunk(chunk) => {
                let text = output::block(&chunk.content);
                at_line_start = text.ends_with('\n');
                print_out(&text);
            }
            AgentEvent::ToolStart(call) => {
                end_line(&mut at_line_start);
                let arguments = match &call.arguments {
                    Value::String(raw) => output::line(raw),
                    other => output::compact(other),
                };
                print_err(&format!(
                    "-> {} {}\n",
                    output::line(&call.tool),
                    output::truncate(&arguments, SHOWN_ARGUMENTS)
                ));
            }
            AgentEvent::ToolEnd(end) => print_err(&format!("<- {}\n", ended(end))),
            AgentEvent::AgentEnd(end) => {
                end_line(&mut at_line_start);
                print_err(&format!(
                    "({} turn{}, {} tokens)\n",
                    end.turns,
                    if end.turns == 1 { "" } else { "s" },
                    end.usage.total_tokens
                ));
            }
            AgentEvent::AgentError(failure) => {
                end_line(&mut at_line_start);
                print_err(&format!(
                    "halo: the agent failed ({}): {}\n",
                    failure.code.as_str(),
                    output::line(&failure.detail)
                ));
            }
            _ => {}
        }
    }
    Ok(code)
}

/// The model the options name, through the API they name.
fn provider(options: &Options) -> Result<Box<dyn LlmProvider>, Failure> {
    let built = match options.model.provider {
        Provider::OpenAi => {
            let (Some(base_url), Some(model)) = (&options.llm_base_url, &options.model.name) else {
                return Err(Failure::Other(
                    "no model is configured: give --llm-base-url URL (or HALO_LLM_BASE_URL) for \
                     an OpenAI-compatible endpoint, e.g. http://127.0.0.1:11434/v1 for Ollama, \
                     and --model NAME (or HALO_LLM_MODEL); add --llm-api-key (or \
                     HALO_LLM_API_KEY) if the endpoint needs one; --provider anthropic for \
                     Anthropic's Messages API"
                        .to_owned(),
                ));
            };
            let mut provider = OpenAiProvider::builder().base_url(base_url).model(model);
            if let Some(key) = &options.llm_api_key {
                provider = provider.api_key(key);
            }
            provider
                .build()
                .map(|p| Box::new(p) as Box<dyn LlmProvider>)
        }
        Provider::Anthropic => {
            let Some(model) = &options.model.name else {
                return Err(Failure::Other(
                    "no model is configured: give --model NAME (or HALO_LLM_MODEL), e.g. \
                     claude-sonnet-4-5, and the API key in ANTHROPIC_API_KEY (or \
                     --llm-api-key, HALO_LLM_API_KEY); --llm-base-url for a server other than \
                     https://api.anthropic.com"
                        .to_owned(),
                ));
            };
            let mut provider = AnthropicProvider::builder().model(model);
            if let Some(base_url) = &options.llm_base_url {
                provider = provider.base_url(base_url);
            }
            let key = options
                .llm_api_key
                .clone()
                .or_else(|| std::env::var("ANTHROPIC_API_KEY").ok())
                .filter(|key| !key.is_empty());
            if let Some(key) = key {
                provider = provider.api_key(key);
            }
            provider
                .build()
                .map(|p| Box::new(p) as Box<dyn LlmProvider>)
        }
    };
    built.map_err(|e| Failure::Other(e.to_string()))
}

/// How a tool call ended, on one line: `get_book: ok`, or `get_book: error 422 Unprocessable
/// Content ... (/id: "one" is not of type "integer")`.
fn ended(end: &ToolCallEnd) -> String {
    let tool = output::line(&end.tool);
    if !end.is_error {
        return format!("{tool}: ok");
    }
    let text = |key: &str| {
        end.content
            .get(key)
            .and_then(Value::as_str)
            .map(output::line)
    };
    let mut parts = Vec::new();
    if let Some(status) = end.content.get("status").and_then(Value::as_u64) {
        parts.push(status.to_string());
    }
    parts.extend(text("title"));
    parts.extend(text("detail"));
    let errors = end.content.get("errors").and_then(Value::as_array);
    for error in errors.into_iter().flatten() {
        let field = |key: &str| error.get(key).and_then(Value::as_str).map(output::line);
        if let (Some(pointer), Some(message)) = (field("pointer"), field("message")) {
            parts.push(format!("({pointer}: {message})"));
        }
    }
    if let Value::String(message) = &end.content {
        parts.push(output::line(message));
    }
    format!(
        "{tool}: error {}",
        output::truncate(&parts.join(" "), SHOWN_ARGUMENTS)
    )
}

/// Ends the answer's line before something else is printed.
fn end_line(at_line_start: &mut bool) {
    if !*at_line_start {
        print_out("\n");
        *at_line_start = true;
    }
}
