//! rig tools over HALO APIs (feature `rig`): a discovered API as [rig](https://docs.rs/rig-core)
//! `DynamicTool`s, for a rig agent (`rig_agent::AgentBuilder::dynamic_tools`).
//!
//! [`RigTools`] is one API seen through a [`Client`](crate::Client): its tools (all of them,
//! or those with some tags), each a rig [`DynamicTool`](rig_core::tool::DynamicTool) with the
//! name, description (`why`, then `description`) and parameters that
//! [`export_tools`](crate::export_tools) gives any LLM API. A call goes through
//! [`Client::call`](crate::Client::call): arguments placed where the schema says, the
//! credentials of the API's host, retries only where repeating is safe (with one
//! idempotency key for all the attempts of a call), a held call waiting for its approval.
//!
//! When the tools cost a model more than the [tool budget](RigToolsBuilder::tool_budget)
//! (4,000 estimated tokens by default, as halo-agent's), the model is given two tools
//! instead: `search_tools`, which searches the API's tools in process (tags, paths, `why`,
//! parameters) and answers the best ones with their input schemas, and `call_tool`, which
//! calls one by name ([`Offer::SearchAndCall`]).
//!
//! What a call answers is what the model reads: the JSON (or text) of a success; a failure
//! is a rig tool error ([`ToolExecutionError`](rig_core::tool::ToolExecutionError)) whose
//! model output is the problem details of a `4xx` or `5xx` (or of arguments that cannot be
//! placed, or of a tool that does not exist), with its HTTP status and a kind (`invalid_args`
//! for a `400` or `422`, `permission_denied` for a `401` or `403`, a refusal for a denied
//! approval, `not_found`, `rate_limited`, `timeout`, `network`, `provider` for a `5xx`). The
//! failed call's [`Error`](crate::Error) stays its source. No credential is ever in what the
//! model reads nor in the error's message: credentials stay in the client, which applies them
//! per host.
//!
//! ```no_run
//! use halo_client::rig::RigTools;
//! use halo_client::{Client, Credential};
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let client = Client::builder("http://127.0.0.1:3000")
//!     .credential(Credential::bearer("demo-reader"))
//!     .build()?;
//! let tools = RigTools::builder(&client)
//!     .tags(["read"])
//!     .tool_budget(2_000)
//!     .discover()
//!     .await?;
//! println!("{} tools, offered as {:?}", tools.definitions().len(), tools.offer());
//!
//! // For a rig agent: `AgentBuilder::new(model).dynamic_tools(tools.tools())`.
//! // Or called as rig calls them:
//! for tool in tools.tools() {
//!     if tool.name().as_str() == "search_books" {
//!         let found = tool.execute(serde_json::json!({"q": "Dune"})).await;
//!         println!("{found:?}");
//!     }
//! }
//! # Ok(()) }
//! ```

mod builder;
mod meta;
mod outcome;
mod tools;

pub use self::builder::RigToolsBuilder;
pub use self::tools::{Offer, RigTools};
