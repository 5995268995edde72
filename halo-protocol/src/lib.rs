//! Wire types and pure functions of the HALO protocol, as implemented by halo-rs.
//!
//! HALO (HTTP API Language for Operations) lets an HTTP API describe itself to LLM agents:
//! an `OPTIONS` request with `Accept: application/llm+json` answers with a [`Manifest`] at `/`
//! and with an array of [`ToolSchema`]s on any described path.
//!
//! This crate holds only data and pure functions. It does no I/O and depends on no async
//! runtime, web framework or HTTP client, so servers (`halo-axum`), clients and tools share one
//! definition of the wire format.
//!
//! - [`Manifest`], [`ToolEntry`]: the discovery document.
//! - [`ToolSchema`] and its parts: the per-operation schema, every HALO 0.3.1 field plus the
//!   extensions of this project (`in` on inputs, `idempotency_key`, `stream`).
//! - [`Metadata`]: the `x-halo-*` OpenAPI extensions that carry LLM-native fields.
//! - [`accepts_halo`] / [`accepts`]: `Accept` negotiation.
//! - [`TagFilter`]: the `?tags=` filter.
//! - [`Problem`]: `application/problem+json` bodies (RFC 9457).
//! - [`ToolEvent`]: the events of a call streamed over Server-Sent Events; [`EventMessage`],
//!   [`ClientMessage`] and [`Refusal`]: the same events over WebSocket (extension);
//!   [`SseDecoder`]: an event stream's bytes read into events, however they are split.
//! - [`Message`], [`AgentRequest`], [`AgentEvent`]: an agent's conversation with its model,
//!   the request that starts a hosted agent, and the events of its run.
//! - [`is_self_contained`]: whether a schema's `$ref`s all resolve inside it;
//!   [`standalone`]: one of a tool's schemas with the definitions it shares with the others.
//! - [`tool_definitions`]: tools as LLM APIs and MCP see them (name, description, input
//!   schema, hints), and [`place_arguments`]: a call's arguments back into a request.
//!   With feature `mcp`, definitions and outputs convert into `rmcp`'s `Tool` and
//!   `CallToolResult` (`From` impls), and [`tool_progress`](ToolEvent::ToolProgress) data
//!   into MCP progress notifications (`mcp_progress`).
//! - [`ToolIndex`]: tool search (BM25 over names, texts, tags, paths and parameters), and
//!   [`ToolCatalog`] with the `search_tools` / `call_tool` definitions: progressive
//!   disclosure for every channel when an API's tools cost more than a token budget
//!   ([`estimate_tokens`]).
//! - [`Rfc3339`] and [`parse_timestamp`]: RFC 3339 timestamps, written and read back.
//! - [`RetrySchedule`]: the delays between a request's attempts (exponential backoff with
//!   full jitter, `Retry-After` as a floor), shared by halo-client and halo-agent.
//! - [`lint`]: rules on the quality of an API's descriptions (`why`, tags, input
//!   descriptions, examples, `undo`, `sunset`), checked over discovered tools.
//!
//! ```
//! use halo_protocol::{accepts_halo, TagFilter};
//!
//! assert!(accepts_halo("application/llm+json, application/json;q=0.5"));
//! assert!(!accepts_halo("*/*"));
//!
//! let filter = TagFilter::from_query(Some("tags=books,payments"));
//! assert!(filter.matches(["payments", "write"]));
//! assert!(!filter.matches(["weather"]));
//! ```

mod agent;
mod brief;
#[cfg(feature = "mcp")]
mod confirm;
mod date;
mod definition;
mod disclosure;
mod duration;
mod events;
#[cfg(feature = "mcp")]
mod held_task;
mod limit;
mod link;
pub mod lint;
mod manifest;
#[cfg(feature = "mcp")]
mod mcp;
mod meta;
mod metadata;
mod methods;
mod names;
mod negotiate;
mod personal;
mod place;
mod pointer;
mod problem;
mod query;
mod rate;
mod refs;
mod retry;
mod schema;
mod search;
mod shared_defs;
mod sse;
#[cfg(feature = "mcp")]
mod streamed_task;
mod style;
mod tags;
mod tokens;
mod truncate;
mod websocket;

pub use agent::{
    AgentEnd, AgentEvent, AgentFailure, AgentInput, AgentRequest, AgentStart, FailureCode,
    LlmChunk, LlmEnd, Message, ToolCall, ToolCallEnd, ToolCallStart, Usage,
};
pub use brief::{brief_schema, brief_text};
#[cfg(feature = "mcp")]
pub use confirm::{Asking, Confirmation, HeldCall, confirmed_approval};
pub use date::{Rfc3339, check_date, parse_timestamp};
pub use definition::{
    MCP_RESULT_MEDIA_TYPE, ToolDefinition, ToolHints, ToolOutput, entry_schema, input_schema,
    tool_definitions, tool_description, tool_names,
};
pub use disclosure::{
    CALL_TOOL, CallRequest, DEFAULT_TOOL_BUDGET, SEARCH_ANSWER_TOKENS, SEARCH_TOOLS,
    SEARCH_TOOLS_LIMIT, SMALL_OUTPUT_TOKENS, SearchRequest, ToolCatalog, call_tool_definition,
    listed_tokens, search_answer, search_tools_definition,
};
pub use duration::parse_duration;
pub use events::{
    APPROVALS_PATH, CALL_ID_HEADER, CALLS_PATH, EVENT_STREAM, ToolEnd, ToolEvent, ToolStart,
    is_call_id,
};
#[cfg(feature = "mcp")]
pub use held_task::{
    APPROVAL_POLL_MS, HeldStage, NOT_RUN, TaskTimes, approval_task_id, cancellable,
    malformed_task_request, not_run, task_approval, task_not_found, task_over,
};
pub use limit::{Dimension, Limit, LimitParseError};
pub use link::link_target;
pub use manifest::{Manifest, ToolEntry, ToolKind};
#[cfg(feature = "mcp")]
pub use mcp::{ToolListing, mcp_cache_hints, mcp_page, mcp_progress, search_tools_result};
pub use meta::{CLOSE_NAMES, search_tools_reply, unknown_tool};
pub use metadata::{CALLERS_EXTENSION, EXCLUDE_EXTENSION, LocalizedText, Metadata, MetadataError};
pub use methods::{is_idempotent_method, is_safe_method};
pub use names::{MAX_TOOL_NAME, UniqueNames, tool_name};
pub use negotiate::{Form, accepts, accepts_halo, essence, is_json, negotiate_language};
pub use personal::depends_on_caller;
pub use place::{
    Payload, PlaceError, Placement, implied_location, place_arguments, template_variables,
    whole_body_entry,
};
pub use pointer::{escape_token, unescape_token};
pub use problem::{FieldError, Problem};
pub use query::{InvalidLimit, SearchQuery};
pub use rate::{Period, Rate, RateParseError};
pub use refs::{is_data_keyword, is_self_contained};
pub use retry::{RetryDelays, RetrySchedule};
pub use schema::{
    Approval, Auth, AuthType, Backoff, Call, Circuit, CircuitError, Effects, Example, InputField,
    Lifecycle, Limits, Location, Next, Observe, Resilience, Status, Stream, ToolSchema, Trust,
};
pub use search::{DEFAULT_SEARCH_LIMIT, MAX_SEARCH_LIMIT, SearchHit, ToolIndex};
pub use shared_defs::standalone;
pub use sse::{SseDecoder, SseError, SseEvent};
#[cfg(feature = "mcp")]
pub use streamed_task::{STREAMED_FIRST_MESSAGE, STREAMED_POLL_MS, TaskLimits, TaskSteps};
pub use tags::TagFilter;
pub use tokens::estimate_tokens;
pub use truncate::truncate;
pub use websocket::{
    CLOSE_NORMAL, CLOSE_POLICY, CLOSE_TOO_BIG, CLOSE_UNSUPPORTED, ClientMessage, EventMessage,
    METHOD_HEADER, REFUSAL_HEADERS, Refusal, WEBSOCKET_PROTOCOL, close_code, close_status,
    event_message,
};

/// The HALO media type, `application/llm+json`.
pub const MEDIA_TYPE: &str = "application/llm+json";

/// The media type of problem details bodies (RFC 9457), `application/problem+json`.
pub const PROBLEM_MEDIA_TYPE: &str = "application/problem+json";

/// The HALO protocol version this crate implements (with the extensions documented in
/// `halo-spec.md`).
pub const PROTOCOL_VERSION: &str = "0.3.1";

/// The README's examples, compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
