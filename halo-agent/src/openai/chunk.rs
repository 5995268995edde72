//! The chunks of a streamed answer (`chat.completion.chunk`), read leniently and put together
//! into a turn.

use halo_protocol::{ToolCall, Usage};
use serde::Deserialize;
use serde_json::Value;

use crate::endpoint::shorten;
use crate::{Completion, Error, Result};

/// One `chat.completion.chunk`, read leniently: servers differ in what they leave out.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(super) struct Chunk {
    choices: Vec<Choice>,
    usage: Option<WireUsage>,
    /// An error reported inside the stream.
    error: Option<Value>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Choice {
    index: u32,
    delta: Option<Delta>,
    finish_reason: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Delta {
    content: Option<String>,
    tool_calls: Option<Vec<CallDelta>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct CallDelta {
    index: Option<u32>,
    id: Option<String>,
    function: Option<FunctionDelta>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct FunctionDelta {
    name: Option<String>,
    arguments: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct WireUsage {
    prompt_tokens: u64,
    completion_tokens: u64,
    total_tokens: Option<u64>,
}

/// A turn put together from its chunks.
#[derive(Debug, Default)]
pub(super) struct Assembly {
    content: Option<String>,
    /// The calls by the index the model gave them.
    calls: Vec<(Option<u32>, ToolCall)>,
    usage: Option<Usage>,
    finish_reason: Option<String>,
}

impl Assembly {
    /// Adds a chunk; gives back its text, if it has some.
    pub(super) fn add(&mut self, chunk: Chunk) -> Result<Option<String>> {
        if let Some(error) = chunk.error {
            let message = error
                .get("message")
                .and_then(Value::as_str)
                .map_or_else(|| error.to_string(), str::to_owned);
            return Err(Error::request(format!(
                "the model reported an error mid-answer: {}",
                shorten(&message)
            )));
        }
        if let Some(usage) = chunk.usage {
            let mut counted = Usage::new(usage.prompt_tokens, usage.completion_tokens);
            if let Some(total) = usage.total_tokens {
                counted.total_tokens = total;
            }
            self.usage = Some(counted);
        }
        let mut text: Option<String> = None;
        // Only the first choice: nothing here asks for more.
        for choice in chunk.choices.into_iter().filter(|c| c.index == 0) {
            if let Some(reason) = choice.finish_reason {
                self.finish_reason = Some(reason);
            }
            let Some(delta) = choice.delta else { continue };
            if let Some(piece) = delta.content.filter(|piece| !piece.is_empty()) {
                self.content
                    .get_or_insert_with(String::new)
                    .push_str(&piece);
                text.get_or_insert_with(String::new).push_str(&piece);
            }
            for call in delta.tool_calls.into_iter().flatten() {
                self.add_call(call);
            }
        }
        Ok(text)
    }

    /// Adds a piece of a tool call: to the call with its index, or (from a server that
    /// gives none) a new call when it has an id, else the last one.
    fn add_call(&mut self, delta: CallDelta) {
        let id = delta.id.filter(|id| !id.is_empty());
        let position = match delta.index {
            Some(index) => self.calls.iter().position(|(i, _)| *i == Some(index)),
            None => match &id {
                Some(id) => self.calls.iter().position(|(_, call)| call.id == *id),
                None => self.calls.len().checked_sub(1),
            },
        };
        let position = position.unwrap_or_else(|| {
            self.calls.push((delta.index, ToolCall::new("", "", "")));
            self.calls.len() - 1
        });
        let call = &mut self.calls[position].1;
        if let Some(id) = id {
            call.id = id;
        }
        if let Some(function) = delta.function {
            if let Some(name) = function.name.filter(|name| !name.is_empty()) {
                // Some servers repeat the whole name in every piece; others stream it.
                if call.name != name {
                    call.name.push_str(&name);
                }
            }
            if let Some(arguments) = function.arguments {
                call.arguments.push_str(&arguments);
            }
        }
    }

    pub(super) fn finish(self) -> Completion {
        let mut completion = Completion {
            content: self.content,
            tool_calls: self.calls.into_iter().map(|(_, call)| call).collect(),
            usage: self.usage,
            finish_reason: self.finish_reason,
        };
        completion.tool_calls.retain(|call| {
            !(call.name.is_empty() && call.arguments.is_empty() && call.id.is_empty())
        });
        completion
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn chunk(value: Value) -> Chunk {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn tool_calls_are_assembled_from_pieces() {
        let mut assembly = Assembly::default();
        let pieces = [
            json!({"choices": [{"index": 0, "delta": {"role": "assistant", "content": null,
                "tool_calls": [{"index": 0, "id": "call_a", "type": "function",
                                "function": {"name": "search_books", "arguments": ""}}]}}]}),
            json!({"choices": [{"index": 0, "delta": {"tool_calls": [
                {"index": 0, "function": {"arguments": "{\"q\":"}},
                {"index": 1, "id": "call_b", "function": {"name": "get_stock", "arguments": "{\"sku\""}}]}}]}),
            json!({"choices": [{"index": 0, "delta": {"tool_calls": [
                {"index": 1, "function": {"arguments": ":\"978\"}"}},
                {"index": 0, "function": {"arguments": "\"dune\"}"}}]}}]}),
            json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}),
            json!({"choices": [], "usage": {"prompt_tokens": 30, "completion_tokens": 12, "total_tokens": 42}}),
        ];
        for piece in pieces {
            assert_eq!(assembly.add(chunk(piece)).unwrap(), None);
        }
        let done = assembly.finish();
        assert_eq!(
            done.tool_calls,
            [
                ToolCall::new("call_a", "search_books", r#"{"q":"dune"}"#),
                ToolCall::new("call_b", "get_stock", r#"{"sku":"978"}"#),
            ]
        );
        assert_eq!(done.usage, Some(Usage::new(30, 12)));
        assert_eq!(done.finish_reason.as_deref(), Some("tool_calls"));
        assert_eq!(done.content, None);
    }

    #[test]
    fn text_and_lenient_chunks() {
        let mut assembly = Assembly::default();
        let text = assembly
            .add(chunk(json!({"choices": [{"delta": {"content": "Du"}}]})))
            .unwrap();
        assert_eq!(text.as_deref(), Some("Du"));
        assembly
            .add(chunk(json!({"id": "x", "choices": [{"index": 0, "delta": {"content": "ne"}, "finish_reason": "weird_new_reason"}]})))
            .unwrap();
        // A server without indexes: a new id starts a new call, pieces without one continue it.
        assembly
            .add(chunk(json!({"choices": [{"delta": {"tool_calls": [{"id": "c1", "function": {"name": "a", "arguments": "{"}}]}}]})))
            .unwrap();
        assembly
            .add(chunk(
                json!({"choices": [{"delta": {"tool_calls": [{"function": {"arguments": "}"}}]}}]}),
            ))
            .unwrap();
        let done = assembly.finish();
        assert_eq!(done.content.as_deref(), Some("Dune"));
        assert_eq!(done.tool_calls, [ToolCall::new("c1", "a", "{}")]);
        let mut failing = Assembly::default();
        let error = failing
            .add(chunk(json!({"error": {"message": "overloaded"}})))
            .unwrap_err();
        assert!(error.to_string().contains("overloaded"));
    }
}
