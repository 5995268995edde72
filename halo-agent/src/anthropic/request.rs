//! The body of a request to the Messages API: the model and its settings, the system
//! prompt, the conversation as the API takes it, the tools, and the ask for a stream.

use halo_protocol::{Message, ToolDefinition};
use serde_json::{Map, Value, json};

use crate::endpoint::insert_temperature;
use crate::{ChatRequest, Error, ModelSettings, Result};

/// The most tokens of an answer when nothing sets it: the API requires a figure.
const DEFAULT_MAX_TOKENS: u32 = 4096;

/// Why these settings cannot be sent, if they cannot.
pub(super) fn check_settings(settings: &ModelSettings) -> std::result::Result<(), String> {
    if let Some(temperature) = settings.temperature
        && !(0.0..=1.0).contains(&temperature)
    {
        return Err(format!(
            "the temperature {temperature} is outside the Messages API's range, 0 to 1"
        ));
    }
    if settings.max_tokens == Some(0) {
        return Err("max_tokens must be at least 1".to_owned());
    }
    Ok(())
}

/// The body of `request`, `defaults` filling in the settings it leaves out: the model and
/// its settings, the system prompt, the conversation, the tools, and the ask for a stream.
///
/// # Errors
/// [`Error::is_input`] for settings the API cannot take.
pub(super) fn body(defaults: &ModelSettings, request: &ChatRequest) -> Result<Vec<u8>> {
    let settings = defaults.overridden_by(&request.settings);
    check_settings(&settings).map_err(Error::input)?;
    let (system, messages) = wire_messages(&request.messages, &request.failed_calls);
    let mut body = Map::new();
    body.insert("model".into(), json!(settings.model.unwrap_or_default()));
    body.insert(
        "max_tokens".into(),
        json!(settings.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS)),
    );
    if let Some(system) = system {
        body.insert("system".into(), Value::String(system));
    }
    body.insert("messages".into(), Value::Array(messages));
    if !request.tools.is_empty() {
        body.insert(
            "tools".into(),
            request
                .tools
                .iter()
                .map(ToolDefinition::anthropic_tool)
                .collect(),
        );
    }
    insert_temperature(&mut body, settings.temperature);
    body.insert("stream".into(), json!(true));
    serde_json::to_vec(&Value::Object(body))
        .map_err(|e| Error::input(format!("the request cannot be written: {e}")))
}

/// The conversation as the Messages API takes it: the system messages joined as its
/// `system`, and the others as `user` and `assistant` messages of content blocks, each run
/// of one role as one message. Tool calls are `tool_use` blocks, whose `input` is the
/// arguments when they are a JSON object and `{}` otherwise (the model then reads in the
/// result that they were not); tool results are `tool_result` blocks of a user message,
/// with `is_error` for the `failed` calls. Empty texts are left out (the API refuses them),
/// and a message that only had one is too. A message of one text is sent as a string.
fn wire_messages(messages: &[Message], failed: &[String]) -> (Option<String>, Vec<Value>) {
    let mut system: Vec<&str> = Vec::new();
    let mut turns: Vec<(&'static str, Vec<Value>)> = Vec::new();
    for message in messages {
        let (role, blocks) = match message {
            Message::System { content } => {
                if !content.is_empty() {
                    system.push(content);
                }
                continue;
            }
            Message::User { content } => ("user", text_block(content).into_iter().collect()),
            Message::Assistant {
                content,
                tool_calls,
            } => {
                let mut blocks: Vec<Value> = content
                    .as_deref()
                    .and_then(text_block)
                    .into_iter()
                    .collect();
                blocks.extend(tool_calls.iter().map(|call| {
                    let input = match serde_json::from_str::<Value>(&call.arguments) {
                        Ok(Value::Object(input)) => input,
                        _ => Map::new(),
                    };
                    json!({"type": "tool_use", "id": call.id, "name": call.name, "input": input})
                }));
                ("assistant", blocks)
            }
            Message::Tool {
                tool_call_id,
                content,
            } => {
                let mut block = json!({"type": "tool_result", "tool_use_id": tool_call_id,
                                       "content": content});
                if failed.contains(tool_call_id) {
                    block["is_error"] = Value::Bool(true);
                }
                ("user", vec![block])
            }
            // A kind of message this crate does not know yet: not sent.
            _ => continue,
        };
        if blocks.is_empty() {
            continue;
        }
        match turns.last_mut() {
            Some((last, kept)) if *last == role => kept.extend(blocks),
            _ => turns.push((role, blocks)),
        }
    }
    let system = (!system.is_empty()).then(|| system.join("\n\n"));
    let messages = turns
        .into_iter()
        .map(|(role, mut blocks)| {
            let content = match blocks.as_mut_slice() {
                [only] if only["type"] == "text" => only["text"].take(),
                _ => Value::Array(blocks),
            };
            json!({"role": role, "content": content})
        })
        .collect();
    (system, messages)
}

/// A text block, unless the text is empty.
fn text_block(text: &str) -> Option<Value> {
    (!text.is_empty()).then(|| json!({"type": "text", "text": text}))
}

#[cfg(test)]
mod tests {
    use halo_protocol::ToolCall;

    use super::*;

    #[test]
    fn the_conversation_on_the_wire() {
        let messages = [
            Message::system("Be brief."),
            Message::user("Dune?"),
            Message::tool_calls(
                Some("Looking.".into()),
                vec![
                    ToolCall::new("toolu_1", "search", r#"{"q":"dune"}"#),
                    ToolCall::new("toolu_2", "stock", "{not json"),
                ],
            ),
            Message::tool("toolu_1", r#"{"id":1}"#),
            Message::tool("toolu_2", "the arguments are not valid JSON"),
            Message::user("And Emma?"),
            Message::system("Answer in French."),
            Message::assistant(""),
            Message::user(""),
            Message::user("Quickly."),
        ];
        let (system, wire) = wire_messages(&messages, &["toolu_2".to_owned()]);
        assert_eq!(system.as_deref(), Some("Be brief.\n\nAnswer in French."));
        assert_eq!(
            wire,
            [
                json!({"role": "user", "content": "Dune?"}),
                json!({"role": "assistant", "content": [
                    {"type": "text", "text": "Looking."},
                    {"type": "tool_use", "id": "toolu_1", "name": "search", "input": {"q": "dune"}},
                    {"type": "tool_use", "id": "toolu_2", "name": "stock", "input": {}},
                ]}),
                json!({"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "toolu_1", "content": "{\"id\":1}"},
                    {"type": "tool_result", "tool_use_id": "toolu_2",
                     "content": "the arguments are not valid JSON", "is_error": true},
                    {"type": "text", "text": "And Emma?"},
                    {"type": "text", "text": "Quickly."},
                ]}),
            ]
        );
    }

    #[test]
    fn the_body_carries_settings_and_tools() {
        let defaults = ModelSettings::new().model("claude-test");
        let tools = halo_protocol::tool_definitions(&[(
            halo_protocol::ToolEntry::new("/ping", "GET", "ping", "Ping."),
            halo_protocol::ToolSchema::new(halo_protocol::Call::new("GET", "/ping")),
        )]);
        let request = ChatRequest::new(vec![Message::user("hi")], tools)
            .with_settings(ModelSettings::new().temperature(0.2));
        let body: Value =
            serde_json::from_slice(&super::body(&defaults, &request).unwrap()).unwrap();
        assert_eq!(body["model"], "claude-test");
        assert_eq!(body["max_tokens"], DEFAULT_MAX_TOKENS);
        assert_eq!(body["temperature"], json!(0.2));
        assert_eq!(body["stream"], true);
        assert_eq!(body.get("system"), None);
        assert_eq!(body["tools"][0]["name"], "ping");
        assert_eq!(body["tools"][0]["description"], "Ping.");
        assert_eq!(body["tools"][0]["input_schema"]["type"], "object");
        let hot = ChatRequest::new(vec![Message::user("hi")], vec![])
            .with_settings(ModelSettings::new().temperature(1.5));
        let refused = super::body(&defaults, &hot).unwrap_err();
        assert!(refused.is_input(), "{refused}");
        let none = ChatRequest::new(vec![Message::user("hi")], vec![])
            .with_settings(ModelSettings::new().max_tokens(0).model("other"));
        assert!(super::body(&defaults, &none).unwrap_err().is_input());
        let other = ChatRequest::new(vec![Message::user("hi")], vec![])
            .with_settings(ModelSettings::new().max_tokens(10).model("other"));
        let body: Value = serde_json::from_slice(&super::body(&defaults, &other).unwrap()).unwrap();
        assert_eq!(
            (body["model"].as_str(), body["max_tokens"].as_u64()),
            (Some("other"), Some(10))
        );
        assert_eq!(body.get("tools"), None);
    }
}
