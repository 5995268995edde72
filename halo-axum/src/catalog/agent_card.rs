//! `GET /.well-known/agent-card.json`: an A2A agent card for the agents the API hosts.
//!
//! A2A (protocol 0.3) lets a client learn what an agent can do from a card at this
//! well-known path. The card must say who the agent is (`name`, `description`, `version`),
//! where and how to reach it (`url`, with `preferredTransport` naming the protocol spoken
//! there; JSON-RPC when absent), what it supports (`capabilities`), which media types its
//! messages take and give (`defaultInputModes`, `defaultOutputModes`), and what it does, as
//! `skills` (each with `id`, `name`, `description` and `tags`).
//!
//! Here the card stands for the API, and each hosted agent the caller may see (an operation
//! with `"kind": "agent"`) is one skill: its id is the agent's tool name, its name the title,
//! its description the operation's description (and `why`), its tags the operation's tags,
//! and its examples the string inputs of its worked examples. Hosted agents are run over
//! HALO, not A2A's JSON-RPC: `POST /agents/{name}/run` with `{"input": ...}`, answered as
//! JSON or, with `Accept: text/event-stream`, as a resumable stream (so
//! `capabilities.streaming` is true). Claiming JSON-RPC would send A2A clients to an
//! endpoint that does not speak it, so the card names `HALO` as its transport at `url` (the
//! API's base, where `OPTIONS /` lists the tools) and declares HALO as a *required*
//! extension whose parameters give each skill's run URL: a client that does not know HALO
//! learns it cannot use the agents as A2A peers, and one that does knows where they run.
//!
//! The card is scoped like discovery: a caller sees only the agents it may run, and a caller
//! who may run none gets the application's answer, as if the layer served no card.

use halo_protocol::MEDIA_TYPE as HALO;
use serde_json::{Map, Value, json};

use super::{LLMS_TXT_PATH, Site, one_line};
use crate::registry::{Registry, Tool};

/// The media type of the card.
pub(super) const CONTENT_TYPE: &str = "application/json";

/// The A2A protocol version the card follows.
const PROTOCOL_VERSION: &str = "0.3.0";

/// The transport named at the card's `url`: HALO over HTTP.
const TRANSPORT: &str = "HALO";

/// The URI of the HALO extension: the protocol as this project implements it.
const HALO_EXTENSION: &str = "https://github.com/halo-rs/halo-rs/blob/main/halo-spec.md";

/// The card of the hosted agents `visible` keeps, serialised; `None` when it keeps none.
pub(super) fn render(
    site: &Site,
    registry: &Registry,
    visible: &dyn Fn(&Tool) -> bool,
) -> Option<Vec<u8>> {
    let agents: Vec<&Tool> = registry
        .tools()
        .filter(|tool| tool.is_agent() && visible(tool))
        .collect();
    if agents.is_empty() {
        return None;
    }
    let api = site.href("/");
    let mut runs = Map::new();
    for agent in &agents {
        let entry = agent.entry();
        let url = if entry.url.starts_with('/') {
            site.href(&entry.url)
        } else {
            entry.url.clone()
        };
        runs.insert(
            entry.name.clone(),
            json!({"method": entry.method, "url": url}),
        );
    }
    let description = if site.description.is_empty() {
        format!("The agents hosted by {}.", site.name())
    } else {
        site.description.clone()
    };
    let version = if site.version.is_empty() {
        "unversioned"
    } else {
        site.version.as_str()
    };
    let mut card = json!({
        "protocolVersion": PROTOCOL_VERSION,
        "name": site.name(),
        "description": description,
        "url": api,
        "preferredTransport": TRANSPORT,
        "version": version,
    });
    if let Some(docs) = site
        .docs
        .clone()
        .or_else(|| site.llms_txt.then(|| site.href(LLMS_TXT_PATH)))
    {
        card["documentationUrl"] = Value::String(docs);
    }
    card["capabilities"] = json!({
        "streaming": true,
        "pushNotifications": false,
        "stateTransitionHistory": false,
        "extensions": [{
            "uri": HALO_EXTENSION,
            "description": format!(
                "These agents run over HALO, not A2A JSON-RPC: POST {{\"input\": \"the task\"}} \
                 (or the conversation as [{{\"role\", \"content\"}}], and an optional \
                 \"context\" object) to the skill's run URL; the answer is JSON \
                 ({{\"content\", \"turns\", \"usage\"}}), or with Accept: text/event-stream a \
                 stream of events. OPTIONS on the run URL with Accept: {HALO} describes it."
            ),
            "required": true,
            "params": {"manifest": api, "mediaType": HALO, "run": runs},
        }],
    });
    card["defaultInputModes"] = json!(["text/plain", "application/json"]);
    card["defaultOutputModes"] = json!(["text/plain", "application/json"]);
    card["skills"] = agents.iter().map(|agent| skill(agent)).collect();
    serde_json::to_vec(&card).ok()
}

/// A hosted agent as a skill.
fn skill(agent: &Tool) -> Value {
    let entry = agent.entry();
    let schema = agent.schema();
    let mut description = if schema.description.trim().is_empty() {
        entry.description.clone()
    } else {
        schema.description.trim().to_owned()
    };
    if let Some(why) = schema
        .why
        .as_deref()
        .map(str::trim)
        .filter(|w| !w.is_empty())
    {
        if !description.is_empty() {
            description.push_str("\n\n");
        }
        description.push_str("When to use: ");
        description.push_str(why);
    }
    let examples: Vec<String> = schema
        .examples
        .iter()
        .filter_map(|example| example.input.get("input")?.as_str().map(one_line))
        .filter(|text| !text.is_empty())
        .collect();
    let mut skill = json!({
        "id": entry.name,
        "name": entry.title.as_deref().unwrap_or(&entry.name),
        "description": description,
        "tags": entry.tags,
    });
    if !examples.is_empty() {
        skill["examples"] = json!(examples);
    }
    skill
}
