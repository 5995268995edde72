//! The command line: global options and subcommands (clap derive).

mod gateway;
mod lint;
mod stream;

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};
use halo_client::HeaderName;

pub(crate) use self::gateway::GatewayCommand;
use self::lint::rules_help;
pub(crate) use self::lint::{LintArgs, LintRule};
pub(crate) use self::stream::StreamArgs;

/// Discover, search, describe, call, stream, export and pin HALO APIs, serve them over MCP,
/// and let an LLM agent use them.
///
/// HALO APIs describe themselves to LLM agents: `OPTIONS /` with `Accept:
/// application/llm+json` lists their tools, and `OPTIONS` on a path returns the schema of
/// each operation there.
///
/// Exit status: 0 on success, 1 when the server answered 4xx or 5xx or does not describe
/// what was asked (or `diff` found a change, or a stream ended with `tool_error`, or `lint`
/// found an error, or a call's approval was denied, expired or withdrawn), 2 for usage,
/// network and other errors, 130 when Ctrl-C interrupted `call` or `stream`.
#[derive(Debug, Parser)]
#[command(name = "halo", version, propagate_version = true, max_term_width = 100)]
pub(crate) struct Cli {
    /// Options that apply to every command.
    #[command(flatten)]
    pub(crate) global: Global,
    /// What to do.
    #[command(subcommand)]
    pub(crate) command: Command,
}

/// Credentials, output and time limits.
#[derive(Debug, Args)]
#[command(next_help_heading = "Global options")]
pub(crate) struct Global {
    /// Send `Authorization: Bearer TOKEN` to the API's host (and to no other host).
    #[arg(
        long,
        global = true,
        value_name = "TOKEN",
        env = "HALO_BEARER",
        hide_env_values = true,
        conflicts_with = "api_key"
    )]
    pub(crate) bearer: Option<String>,
    /// Send an API key to the API's host (and to no other host), in `--api-key-header`, or
    /// else in the header the called operation's security scheme names.
    #[arg(
        long,
        global = true,
        value_name = "KEY",
        env = "HALO_API_KEY",
        hide_env_values = true
    )]
    pub(crate) api_key: Option<String>,
    /// The header that carries `--api-key`. Without it, a call sends the key in the header
    /// its schema's `auth` names (`{"type": "apikey", "header": "X-Token"}`), and discovery
    /// (which no schema describes) or a scheme that names none in `X-API-Key`: name it when
    /// the API shows its tools only to callers with a key in another header.
    #[arg(long, global = true, value_name = "HEADER", value_parser = header_name)]
    pub(crate) api_key_header: Option<HeaderName>,
    /// Get OAuth 2.0 access tokens for the API's host from this token endpoint (the client
    /// credentials grant; `https`, or `http` on loopback), as `--oauth-client-id` with
    /// `--oauth-client-secret`.
    #[arg(
        long,
        global = true,
        value_name = "URL",
        env = "HALO_OAUTH_TOKEN_URL",
        conflicts_with_all = ["bearer", "api_key", "oauth_issuer"]
    )]
    pub(crate) oauth_token_url: Option<String>,
    /// Get OAuth 2.0 access tokens for the API's host from this authorization server (its
    /// issuer identifier, written as it writes it; `https`, or `http` on loopback), as
    /// `--oauth-client-id` with `--oauth-client-secret`: instead of `--oauth-token-url`.
    ///
    /// Its token endpoint is read from its metadata (RFC 8414
    /// `/.well-known/oauth-authorization-server`, else OpenID Connect discovery), which must
    /// name this issuer. When the API refuses a token with a challenge naming its protected
    /// resource metadata (RFC 9728), a token is asked for the `resource` it names (RFC 8707),
    /// provided the document lists this issuer: the secret goes to no other server.
    #[arg(
        long,
        global = true,
        value_name = "URL",
        env = "HALO_OAUTH_ISSUER",
        conflicts_with_all = ["bearer", "api_key"]
    )]
    pub(crate) oauth_issuer: Option<String>,
    /// The resource to ask every token for (RFC 8707 `resource`: the API's identifier, such
    /// as `https://api.example.com`), with `--oauth-token-url` or `--oauth-issuer`. Without it,
    /// none is named, or with `--oauth-issuer` the one the API's metadata names.
    #[arg(long, global = true, value_name = "URL", env = "HALO_OAUTH_RESOURCE")]
    pub(crate) oauth_resource: Option<String>,
    /// The OAuth client's id, for `--oauth-token-url` or `--oauth-issuer`.
    #[arg(long, global = true, value_name = "ID", env = "HALO_OAUTH_CLIENT_ID")]
    pub(crate) oauth_client_id: Option<String>,
    /// The OAuth client's secret, for `--oauth-token-url` or `--oauth-issuer` (better from
    /// the environment).
    #[arg(
        long,
        global = true,
        value_name = "SECRET",
        env = "HALO_OAUTH_CLIENT_SECRET",
        hide_env_values = true
    )]
    pub(crate) oauth_client_secret: Option<String>,
    /// A scope to ask the token endpoint for (repeat for more).
    #[arg(long = "oauth-scope", global = true, value_name = "SCOPE")]
    pub(crate) oauth_scopes: Vec<String>,
    /// Credentials by host, from a JSON file.
    ///
    /// The file maps `host` or `host:port` to `{"type": "bearer", "value": ...}`, `{"type":
    /// "apikey", "header": ..., "value": ...}` (without `header`, as `--api-key` without
    /// `--api-key-header`), `{"type": "basic", "user": ..., "password": ...}` or `{"type":
    /// "oauth", "token_url": ..., "client_id": ..., "client_secret": ..., "scopes": [...]}`
    /// (`"issuer": ...` instead of `token_url`, as `--oauth-issuer`; an optional
    /// `"resource": ...`, as `--oauth-resource`); `${NAME}` in a value is read from the
    /// environment variable `NAME`. `--bearer`, `--api-key`, `--oauth-token-url` and
    /// `--oauth-issuer` replace the API host's entry.
    #[arg(long, global = true, value_name = "FILE")]
    pub(crate) credentials: Option<PathBuf>,
    /// Print JSON instead of readable text.
    #[arg(long, global = true)]
    pub(crate) json: bool,
    /// Give up on a request after this many seconds (30 by default); `stream` gives up on
    /// the answer's head after that long, and resumes a stream silent for that long.
    #[arg(long, global = true, value_name = "SECS", value_parser = seconds)]
    pub(crate) timeout: Option<f64>,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// List the API's tools (`OPTIONS /`).
    Discover {
        /// The API's base URL, e.g. `http://127.0.0.1:3000`.
        url: String,
        /// Only tools with any of these tags.
        #[arg(long, value_delimiter = ',', value_name = "TAG,...")]
        tags: Vec<String>,
    },
    /// Find the API's tools for a task, best first (`OPTIONS /?q=WORDS`).
    ///
    /// Prints one line per tool (name, method and path, description), best match first; with
    /// `--json`, an array of the manifest entries. A server that searches ranks the tools
    /// itself; with one that does not (it answers its whole manifest), `halo` ranks them
    /// (BM25 over names, descriptions, tags and paths). How many tools matched in all goes
    /// to standard error when more matched than are shown.
    Search {
        /// The API's base URL.
        url: String,
        /// What you want to do, in a few words.
        query: String,
        /// Only tools with any of these tags.
        #[arg(long, value_delimiter = ',', value_name = "TAG,...")]
        tags: Vec<String>,
        /// How many tools to show, 1 to 100.
        #[arg(long, value_name = "N", default_value = "20",
              value_parser = clap::value_parser!(u16).range(1..=100))]
        limit: u16,
    },
    /// Show the schema of the operations at a path (`OPTIONS PATH`).
    Describe {
        /// The API's base URL.
        url: String,
        /// A path template (`/api/books/{id}`) or a concrete path (`/api/books/1`).
        path: String,
        /// Only this method's operation (default: every method at the path).
        #[arg(long, short = 'X', value_name = "METHOD")]
        method: Option<String>,
    },
    /// Call an operation, placing each argument where its schema says.
    ///
    /// A call held for approval (`effects.approval`) prints `halo: approval ID pending (tool
    /// NAME)` on standard error, waits for the decision (`halo approve`, `halo deny`) without
    /// sending the call again, then prints its result; exit 1 when denied, expired or
    /// withdrawn (who and why on standard error). Ctrl-C while it waits withdraws the
    /// approval (`DELETE /.well-known/halo/approvals/{id}`), so the call never runs, and exits
    /// 130.
    Call(CallArgs),
    /// Call an operation and print its events as they arrive (Server-Sent Events, or a
    /// WebSocket with `--transport ws`).
    ///
    /// Asks for `text/event-stream` and prints one line per event: `tool_start`, each
    /// `tool_progress`, then the result of `tool_end` (or the problem of `tool_error`); with
    /// `--json`, one JSON object per line, `{"id": ..., "type": ..., "data": ...}`. A dropped
    /// connection is resumed where it stopped, without running the operation again. A server
    /// that does not stream prints its answer as a single `tool_end`.
    ///
    /// Ctrl-C cancels the call on the server (`DELETE /.well-known/halo/calls/{call_id}`),
    /// prints the stream's last events (its `tool_error`) for up to 5 seconds, and exits 130;
    /// a second Ctrl-C exits at once.
    ///
    /// Exit status: 0 when the stream ends with `tool_end` and a 2xx status, 1 on
    /// `tool_error` or a 4xx/5xx answer, 2 for usage and network errors, 130 when interrupted.
    Stream(StreamArgs),
    /// Print the tools as tool definitions for an LLM API (JSON), within its limits.
    ///
    /// OpenAI takes at most 128 functions, and every definition loaded up front costs the
    /// model tokens. Above 128 tools (or a `--budget` given), an OpenAI export fails (exit 2,
    /// saying how many tools there are) unless tools are chosen (`--tags`, `--q` with `--max`,
    /// `--max`) or deferred behind OpenAI's tool search (`--defer`: the Responses API's
    /// `tool_search` and namespaces, one per domain tag; gpt-5.4 and later). An Anthropic
    /// export above the budget (4,000 estimated tokens by default) is deferred by itself
    /// (`defer_loading` and the BM25 tool search tool). Notes on standard error say when
    /// tools were deferred, or cost more than the default budget.
    Export(ExportArgs),
    /// Record the API's tools and a hash of each schema, for review (JSON).
    Pin {
        /// The API's base URL.
        url: String,
        /// Only tools with any of these tags (recorded in the pin).
        #[arg(long, value_delimiter = ',', value_name = "TAG,...")]
        tags: Vec<String>,
        /// Write the pin to this file instead of standard output.
        #[arg(long, short, value_name = "FILE")]
        out: Option<PathBuf>,
    },
    /// Compare the API with a pin; exit 1 when a tool was added, removed or changed.
    Diff {
        /// The API's base URL.
        url: String,
        /// A pin written by `halo pin`.
        pin: PathBuf,
    },
    /// Ask an LLM agent to do a task with the API's tools; print its answer as it is written.
    ///
    /// The model is any OpenAI-compatible chat-completions endpoint (OpenAI, vLLM, llama.cpp's
    /// server, Ollama), or with `--provider anthropic` a Claude model through Anthropic's
    /// Messages API (or a server that speaks it). It gets the API's tools (those with `--tags`, as the credentials given
    /// here may see them) and calls them through `halo`, which keeps the credentials: the
    /// model never sees them. The answer goes to standard output as it is written; each tool
    /// call goes to standard error as it starts (`-> name {arguments}`) and ends (`<- name:
    /// ok`, or the error the model is shown). With `--json`, every event of the run is one
    /// JSON object per line on standard output.
    ///
    /// Exit status: 0 with an answer, 1 when the run fails (the model cannot be reached, too
    /// many turns), 2 for usage errors, a missing model or an unreachable API.
    Agent(AgentArgs),
    /// Serve the API's tools to MCP clients over stdio (Claude Desktop, MCP Inspector, ...).
    ///
    /// Each HALO tool becomes an MCP tool: its name, a description from `why` and
    /// `description`, an input schema rebuilt from its inputs, and hints (`readOnlyHint` for
    /// safe methods, `destructiveHint` for writes that cannot be undone, `idempotentHint`).
    /// Calls go through the API with the credentials given here; an error answer comes back
    /// as a tool result with `isError` and the problem details. The API is checked for
    /// changed tools every `--poll` seconds, and a change is announced to the client.
    /// Standard output carries MCP messages only; `halo` writes its own to standard error.
    ///
    /// When the tools would cost a model more than `--tool-budget` tokens (a large API),
    /// the client is given two tools instead: `search_tools` (the best matches for a few
    /// words, with their input schemas) and `call_tool` (a found tool by name); any tool
    /// can also be called by its own name. `--all-tools` lists every tool regardless.
    ///
    /// A client that declares the MCP Tasks extension (`io.modelcontextprotocol/tasks`) gets
    /// a task instead of waiting: for a call held for approval, and for a call of a
    /// streaming tool still running after `--task-grace` seconds (its status message the
    /// call's last progress step, `tasks/cancel` cancelling the call on the API).
    Mcp {
        /// The API's base URL.
        url: String,
        /// Only tools with any of these tags.
        #[arg(long, value_delimiter = ',', value_name = "TAG,...")]
        tags: Vec<String>,
        /// How often to check the API for changed tools, in seconds.
        #[arg(long, value_name = "SECS", default_value = "30", value_parser = seconds)]
        poll: f64,
        /// List every tool, whatever the list costs a model (no `search_tools`).
        #[arg(long, conflicts_with = "tool_budget")]
        all_tools: bool,
        /// Above this many (estimated) tokens of tool definitions, list only
        /// `search_tools` and `call_tool`; any tool can still be called by name.
        #[arg(long, value_name = "TOKENS", default_value_t = halo_client::protocol::DEFAULT_TOOL_BUDGET)]
        tool_budget: usize,
        /// List every tool's output schema (by default only small ones are listed).
        #[arg(long)]
        output_schemas: bool,
        /// For a client that declared the MCP Tasks extension: how long a call of a
        /// streaming tool runs before it answers with a task, in seconds (0: at once).
        #[arg(long, value_name = "SECS", default_value = "2", value_parser = grace_seconds)]
        task_grace: f64,
    },
    /// Check the quality of the API's descriptions (`why`, tags, input descriptions,
    /// examples, `undo`, `sunset`, ...), for CI.
    ///
    /// Fetches the manifest and every tool's schema and checks each tool against the rules
    /// below; with `--openapi FILE` instead of the URL, reads an OpenAPI 3.0 or 3.1 document
    /// (JSON) and checks every tool a halo-rs server built from it would serve, with no server
    /// running (`halo lint --openapi openapi.json -D warnings`). Prints the findings grouped
    /// by tool and a summary line, or with `--json` one
    /// JSON object (`tools_checked`, `errors`, `warnings`, `findings` with `rule`, `level`,
    /// `tool`, `method`, `url`, `param`, `pointer`, `message`, `hint`). What a plain app
    /// cannot say until HALO's metadata is added (a `why`, a `read` or `write` tag, a domain
    /// tag where utoipa wrote a module's name such as `admin`) is a warning, what is wrong
    /// an error. Levels are set like clippy's: `-D warnings` makes
    /// warnings fail, `--allow`/`--warn`/`--deny RULE` set one rule. Against a URL, only the
    /// tools the credentials may discover are checked: lint in CI with credentials that see
    /// every tool. What the descriptions cost a model is checked too: a
    /// schema over `--schema-budget` or a manifest over `--manifest-budget` (estimated
    /// tokens) is a warning naming its largest parts.
    ///
    /// Exit status: 0 when no finding is an error (warnings alone pass), 1 when one is, 2 for
    /// usage errors and when the API cannot be linted (network, an error answer to
    /// discovery; a document that cannot be read or compiled).
    #[command(after_long_help = rules_help())]
    Lint(LintArgs),
    /// One governed entry for APIs nobody here wrote: OpenAPI upstreams compiled into one
    /// HALO registry, served with discovery, `/mcp`, policies, limits, approvals and audit.
    #[command(subcommand)]
    Gateway(GatewayCommand),
    /// List the calls waiting for approval, oldest first (`GET /.well-known/halo/approvals`).
    ///
    /// For approvers (others get the server's `403`, exit 1). A table (id, tool, caller,
    /// call, expiry, arguments); with `--json`, an array of the approvals as the server shows
    /// them (`id`, `tool`, `state`, `call`, `caller`, `arguments`, `expires_at`, ...).
    Approvals {
        /// The API's base URL.
        url: String,
    },
    /// Approve a call waiting for approval: it runs now, as its caller; prints its answer.
    ///
    /// Exit status: 0 once approved (whatever the call answered), 1 when the server refuses
    /// (`403`, `404`, `409`: decided already or expired), 2 for usage and network errors.
    Approve {
        /// The API's base URL.
        url: String,
        /// The approval's id (from `halo approvals`, or what `halo call` printed).
        id: String,
    },
    /// Deny a call waiting for approval: it never runs, and its caller is told who denied it
    /// and why.
    ///
    /// Exit status: as `approve`.
    Deny {
        /// The API's base URL.
        url: String,
        /// The approval's id.
        id: String,
        /// Why, for the caller (the server keeps 1,000 characters).
        #[arg(long, value_name = "TEXT")]
        reason: Option<String>,
    },
}

/// The tools to export, and how (`export`).
#[derive(Debug, Args)]
pub(crate) struct ExportArgs {
    /// The API's base URL.
    pub(crate) url: String,
    /// The LLM API's format.
    #[arg(long, value_enum)]
    pub(crate) format: Format,
    /// Only tools with any of these tags.
    #[arg(long, value_delimiter = ',', value_name = "TAG,...")]
    pub(crate) tags: Vec<String>,
    /// Only the tools that best match these words, best first (ranked like `halo search`).
    #[arg(long = "q", visible_alias = "query", value_name = "WORDS")]
    pub(crate) query: Option<String>,
    /// At most this many tools: the best ones with `--q`, the first ones otherwise.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub(crate) max: Option<u32>,
    /// Defer the tools behind the LLM API's tool search: `auto` (Anthropic above the
    /// budget; OpenAI never), `always` (what `--defer` alone means) or `never`.
    #[arg(
        long,
        value_enum,
        value_name = "WHEN",
        default_value = "auto",
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = "always"
    )]
    pub(crate) defer: DeferWhen,
    /// OpenAI's strict mode: `"strict": true`, and parameter schemas rewritten as it
    /// requires (closed objects, every property required, optional ones nullable, only the
    /// keywords it supports).
    #[arg(long)]
    pub(crate) strict: bool,
    /// The most the definitions loaded up front may cost, in estimated tokens. Anthropic
    /// defers above it (4,000 by default); OpenAI fails above a budget given here, and
    /// without one only warns above 4,000.
    #[arg(long, value_name = "TOKENS")]
    pub(crate) budget: Option<usize>,
}

/// When `export` defers tools behind the LLM API's tool search.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum DeferWhen {
    /// Anthropic above the budget; OpenAI never (an export over its limits fails).
    Auto,
    /// Always.
    Always,
    /// Never.
    Never,
}

/// The task, and the model that does it (`agent`).
#[derive(Debug, Args)]
pub(crate) struct AgentArgs {
    /// The API's base URL.
    pub(crate) url: String,
    /// What to do, in words.
    pub(crate) task: String,
    /// The model endpoint's base URL, up to `/chat/completions` (e.g.
    /// `http://127.0.0.1:11434/v1`); with `--provider anthropic`, up to `/v1/messages`
    /// (`https://api.anthropic.com` when not given).
    #[arg(long, value_name = "URL", env = "HALO_LLM_BASE_URL")]
    pub(crate) llm_base_url: Option<String>,
    /// Which API serves the model, and the model's name.
    #[command(flatten)]
    pub(crate) model: ModelArgs,
    /// The endpoint's API key, sent to it alone. With `--provider anthropic`, the
    /// `ANTHROPIC_API_KEY` environment variable when neither this nor `HALO_LLM_API_KEY` is
    /// set.
    #[arg(
        long,
        value_name = "KEY",
        env = "HALO_LLM_API_KEY",
        hide_env_values = true
    )]
    pub(crate) llm_api_key: Option<String>,
    /// Only tools with any of these tags.
    #[arg(long, value_delimiter = ',', value_name = "TAG,...")]
    pub(crate) tags: Vec<String>,
    /// Instructions for the model instead of the built-in ones.
    #[arg(long, value_name = "TEXT")]
    pub(crate) system: Option<String>,
    /// The most times the model is asked before the run gives up.
    #[arg(long, value_name = "N", default_value = "10", value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub(crate) max_turns: u32,
    /// The most the tools' definitions may cost the model, in estimated tokens. Above it the
    /// model gets two tools instead: `search_tools`, to find the tools for its task, and
    /// `call_tool`, to call one; the tools it finds join its list.
    #[arg(long, value_name = "TOKENS", default_value_t = halo_client::protocol::DEFAULT_TOOL_BUDGET)]
    pub(crate) tool_budget: usize,
    /// Give the model every tool's definition, whatever they cost (no search).
    #[arg(long, conflicts_with = "tool_budget")]
    pub(crate) all_tools: bool,
}

/// The model of `agent`: the API that serves it, and its name.
#[derive(Debug, Args)]
pub(crate) struct ModelArgs {
    /// The model endpoint's API: `openai` (chat completions) or `anthropic` (Messages).
    #[arg(
        long,
        value_enum,
        value_name = "API",
        default_value_t = Provider::OpenAi,
        env = "HALO_LLM_PROVIDER"
    )]
    pub(crate) provider: Provider,
    /// The model, as the endpoint names it.
    #[arg(long = "model", value_name = "NAME", env = "HALO_LLM_MODEL")]
    pub(crate) name: Option<String>,
}

/// The APIs `agent` speaks to a model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum Provider {
    /// Any OpenAI-compatible chat-completions endpoint (OpenAI, vLLM, llama.cpp, Ollama).
    #[value(name = "openai")]
    OpenAi,
    /// Anthropic's Messages API (`POST /v1/messages`, `x-api-key`).
    Anthropic,
}

impl AgentArgs {
    /// The tool budget asked for: `None` with `--all-tools`.
    pub(crate) fn budget(&self) -> Option<usize> {
        (!self.all_tools).then_some(self.tool_budget)
    }
}

/// Which operation to call, and with what (`call` and `stream`).
#[derive(Debug, Args)]
pub(crate) struct CallArgs {
    /// The API's base URL.
    pub(crate) url: String,
    /// A path template (filled from the arguments) or a concrete path.
    pub(crate) path: String,
    /// The method (default: the only one the path describes).
    #[arg(long, short = 'X', value_name = "METHOD")]
    pub(crate) method: Option<String>,
    /// The arguments: a JSON object, `@FILE` to read it from a file, or `@-` for stdin.
    #[arg(long, short = 'd', value_name = "JSON|@FILE")]
    pub(crate) data: Option<String>,
}

/// Tool definition formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum Format {
    /// OpenAI function calling: `{"type": "function", "function": {...}}`.
    #[value(name = "openai")]
    OpenAi,
    /// Anthropic tool use: `{"name", "description", "input_schema"}`.
    Anthropic,
}

/// A positive, finite number of seconds.
fn seconds(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(secs) if secs.is_finite() && secs > 0.0 && secs < 1e9 => Ok(secs),
        _ => Err("expected a positive number of seconds".to_owned()),
    }
}

/// A number of seconds, zero or more.
fn grace_seconds(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(0.0) => Ok(0.0),
        Ok(_) => seconds(text),
        Err(_) => Err("expected a number of seconds, 0 or more".to_owned()),
    }
}

/// A valid HTTP header name.
fn header_name(text: &str) -> Result<HeaderName, String> {
    HeaderName::try_from(text).map_err(|_| "not a valid header name".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn the_command_line_is_well_formed() {
        Cli::command().debug_assert();
    }

    #[test]
    fn values_are_checked() {
        assert_eq!(seconds("2.5"), Ok(2.5));
        assert!(seconds("0").is_err());
        assert!(seconds("-1").is_err());
        assert!(seconds("inf").is_err());
        assert!(seconds("abc").is_err());
        assert!(header_name("X-Api-Key").is_ok());
        assert!(header_name("bad header").is_err());
        assert!(header_name("").is_err());
    }

    #[test]
    fn export_and_search_flags() {
        let export = |args: &[&str]| {
            let mut all = vec!["halo", "export", "http://h", "--format", "openai"];
            all.extend_from_slice(args);
            match Cli::try_parse_from(all).map(|cli| cli.command) {
                Ok(Command::Export(export)) => Ok(export),
                Ok(other) => panic!("{other:?}"),
                Err(error) => Err(error),
            }
        };
        let plain = export(&[]).unwrap();
        assert_eq!(plain.defer, DeferWhen::Auto);
        assert_eq!((plain.query, plain.max, plain.budget), (None, None, None));
        assert!(!plain.strict);
        let chosen =
            export(&["--defer", "--q", "open an issue", "--max", "5", "--strict"]).unwrap();
        assert_eq!(chosen.defer, DeferWhen::Always);
        assert_eq!(chosen.query.as_deref(), Some("open an issue"));
        assert_eq!(chosen.max, Some(5));
        assert!(chosen.strict);
        assert_eq!(export(&["--defer=never"]).unwrap().defer, DeferWhen::Never);
        assert_eq!(
            export(&["--query", "x", "--budget", "900"]).unwrap().budget,
            Some(900)
        );
        assert!(export(&["--max", "0"]).is_err());
        assert!(export(&["--defer=sometimes"]).is_err());

        let search = Cli::try_parse_from(["halo", "search", "http://h", "open an issue"]).unwrap();
        match search.command {
            Command::Search { query, limit, .. } => {
                assert_eq!((query.as_str(), limit), ("open an issue", 20));
            }
            other => panic!("{other:?}"),
        }
        assert!(Cli::try_parse_from(["halo", "search", "http://h", "x", "--limit", "0"]).is_err());

        let lint =
            Cli::try_parse_from(["halo", "lint", "http://h", "--schema-budget", "900"]).unwrap();
        match lint.command {
            Command::Lint(lint) => {
                assert_eq!((lint.schema_budget, lint.manifest_budget), (900, 8000));
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn tags_split_on_commas_and_flags_are_global() {
        let cli = Cli::try_parse_from([
            "halo", "discover", "http://h", "--tags", "a,b", "--json", "--bearer", "t",
        ])
        .unwrap();
        assert!(cli.global.json);
        assert_eq!(cli.global.bearer.as_deref(), Some("t"));
        match cli.command {
            Command::Discover { tags, .. } => assert_eq!(tags, ["a", "b"]),
            other => panic!("{other:?}"),
        }
        let stream = Cli::try_parse_from([
            "halo", "stream", "http://h", "/jobs", "-X", "post", "-d", "{}", "--json",
        ])
        .unwrap();
        assert!(stream.global.json);
        match stream.command {
            Command::Stream(stream) => {
                let call = stream.call;
                assert_eq!(call.path, "/jobs");
                assert_eq!(call.method.as_deref(), Some("post"));
                assert_eq!(call.data.as_deref(), Some("{}"));
            }
            other => panic!("{other:?}"),
        }
        let agent = Cli::try_parse_from([
            "halo",
            "agent",
            "http://h",
            "find dune",
            "--llm-base-url",
            "http://m/v1",
            "--model",
            "m",
            "--tags",
            "books,inventory",
            "--max-turns",
            "3",
        ])
        .unwrap();
        match agent.command {
            Command::Agent(agent) => {
                assert_eq!(agent.task, "find dune");
                assert_eq!(agent.tags, ["books", "inventory"]);
                assert_eq!(
                    (agent.model.name.as_deref(), agent.max_turns),
                    (Some("m"), 3)
                );
                assert_eq!(agent.model.provider, Provider::OpenAi, "the default");
                assert_eq!(
                    agent.budget(),
                    Some(halo_client::protocol::DEFAULT_TOOL_BUDGET)
                );
            }
            other => panic!("{other:?}"),
        }
        let budget = |flags: &[&str]| {
            let mut args = vec!["halo", "agent", "http://h", "t"];
            args.extend(flags);
            match Cli::try_parse_from(args).map(|cli| cli.command) {
                Ok(Command::Agent(agent)) => Ok(agent.budget()),
                Ok(other) => panic!("{other:?}"),
                Err(error) => Err(error.kind()),
            }
        };
        assert_eq!(budget(&["--tool-budget", "1500"]), Ok(Some(1500)));
        assert_eq!(budget(&["--all-tools"]), Ok(None));
        assert!(budget(&["--all-tools", "--tool-budget", "10"]).is_err());
        assert!(budget(&["--tool-budget", "lots"]).is_err());
        let provider = |flags: &[&str]| {
            let mut args = vec!["halo", "agent", "http://h", "t"];
            args.extend(flags);
            match Cli::try_parse_from(args).map(|cli| cli.command) {
                Ok(Command::Agent(agent)) => Ok((agent.model.provider, agent.model.name)),
                Ok(other) => panic!("{other:?}"),
                Err(error) => Err(error.kind()),
            }
        };
        assert_eq!(
            provider(&["--provider", "anthropic", "--model", "claude-x"]),
            Ok((Provider::Anthropic, Some("claude-x".to_owned())))
        );
        assert_eq!(
            provider(&["--provider", "openai"]).map(|(provider, _)| provider),
            Ok(Provider::OpenAi)
        );
        assert_eq!(
            provider(&["--provider", "gemini"]),
            Err(clap::error::ErrorKind::InvalidValue)
        );
        assert!(
            Cli::try_parse_from(["halo", "agent", "http://h", "t", "--max-turns", "0"]).is_err()
        );
        let both = Cli::try_parse_from([
            "halo",
            "--bearer",
            "t",
            "--api-key",
            "k",
            "discover",
            "http://h",
        ]);
        assert!(both.is_err());
    }
}
