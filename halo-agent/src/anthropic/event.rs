//! The events of a streamed Messages answer: each event read leniently (unknown kinds of
//! events, blocks and deltas are skipped) from its frame ([`Sse`]), and the turn put together
//! from them.

use std::collections::HashMap;

use halo_protocol::{ToolCall, Usage};
use serde::Deserialize;
use serde_json::Value;

use super::sse::Sse;
use crate::endpoint::shorten;
use crate::{Completion, Error, Result};

/// One event of the Messages stream, by its `type`.
#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(super) enum Event {
    MessageStart {
        #[serde(default)]
        message: Started,
    },
    ContentBlockStart {
        index: u32,
        content_block: Block,
    },
    ContentBlockDelta {
        index: u32,
        delta: Delta,
    },
    ContentBlockStop,
    MessageDelta {
        #[serde(default)]
        delta: Change,
        #[serde(default)]
        usage: Option<WireUsage>,
    },
    MessageStop,
    Ping,
    Error {
        #[serde(default)]
        error: Value,
    },
    /// A kind of event this crate does not know: skipped.
    #[serde(other)]
    Other,
}

/// The message as `message_start` gives it: only its usage matters here.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(super) struct Started {
    usage: Option<WireUsage>,
}

/// A content block as it starts.
#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(super) enum Block {
    Text {
        #[serde(default)]
        text: String,
    },
    ToolUse {
        id: String,
        name: String,
        #[serde(default)]
        input: Value,
    },
    /// Thinking, server tools, and whatever comes next: skipped.
    #[serde(other)]
    Other,
}

/// A piece of a content block.
#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(super) enum Delta {
    #[serde(rename = "text_delta")]
    Text { text: String },
    #[serde(rename = "input_json_delta")]
    InputJson { partial_json: String },
    /// Thinking, signatures, citations: skipped.
    #[serde(other)]
    Other,
}

/// What `message_delta` changes: why the model stopped.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(super) struct Change {
    stop_reason: Option<String>,
}

/// Tokens, as `message_start` and `message_delta` count them (the latter's counts are
/// totals so far, not increments).
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(super) struct WireUsage {
    input_tokens: Option<u64>,
    output_tokens: Option<u64>,
    cache_creation_input_tokens: Option<u64>,
    cache_read_input_tokens: Option<u64>,
}

/// An event read from its data, or a decode error naming it.
pub(super) fn parse(sse: &Sse) -> Result<Event> {
    serde_json::from_str(&sse.data).map_err(|e| {
        Error::decode(format!(
            "an event ({}) is not what the Messages API sends: {e}",
            shorten(if sse.name.is_empty() {
                "unnamed"
            } else {
                &sse.name
            })
        ))
    })
}

/// What one event gave.
#[derive(Debug, PartialEq)]
pub(super) enum Step {
    /// Nothing to hand on yet.
    Nothing,
    /// A piece of text.
    Text(String),
    /// The turn is over (`message_stop`).
    Done(Completion),
}

/// A content block being put together.
#[derive(Debug)]
enum Part {
    Text,
    Call {
        id: String,
        name: String,
        /// The arguments' pieces, joined.
        input: String,
        /// Whether any piece came (else the block's own `input` is the arguments).
        pieces: bool,
        /// The block's own `input`, as it started (`{}` when streamed).
        start: Value,
    },
    Other,
}

/// A turn put together from its events.
#[derive(Debug, Default)]
pub(super) struct Assembly {
    started: bool,
    content: Option<String>,
    /// The blocks in the order they started.
    blocks: Vec<Part>,
    /// Where each block is in `blocks`, by its index (a lookup in constant time, however
    /// many blocks an answer has).
    positions: HashMap<u32, usize>,
    usage: WireUsage,
    counted: bool,
    stop_reason: Option<String>,
}

impl Assembly {
    /// Adds an event.
    ///
    /// # Errors
    /// [`Error::is_decode`] for events out of order (content before `message_start`, a
    /// block started twice, a piece of arguments for a block that is not a tool call), and
    /// the model's own `error` event as a request error.
    pub(super) fn add(&mut self, event: Event) -> Result<Step> {
        match event {
            Event::Ping | Event::Other => {}
            Event::Error { error } => {
                let text = |key: &str| error.get(key).and_then(Value::as_str);
                let message = match (text("type"), text("message")) {
                    (Some(kind), Some(message)) => format!("{kind}: {message}"),
                    (None, Some(message)) => message.to_owned(),
                    _ => error.to_string(),
                };
                return Err(Error::request(format!(
                    "the model reported an error mid-answer: {}",
                    shorten(&message)
                )));
            }
            Event::MessageStart { message } => {
                if std::mem::replace(&mut self.started, true) {
                    return Err(Error::decode("the answer started twice (message_start)"));
                }
                if let Some(usage) = message.usage {
                    self.count(usage);
                }
            }
            _ if !self.started => {
                return Err(Error::decode("the answer did not start with message_start"));
            }
            Event::ContentBlockStart {
                index,
                content_block,
            } => {
                if self.positions.contains_key(&index) {
                    return Err(Error::decode(format!(
                        "the answer's block {index} started twice"
                    )));
                }
                let (part, text) = match content_block {
                    Block::Text { text } => (Part::Text, text),
                    Block::ToolUse { id, name, input } => (
                        Part::Call {
                            id,
                            name,
                            input: String::new(),
                            pieces: false,
                            start: input,
                        },
                        String::new(),
                    ),
                    Block::Other => (Part::Other, String::new()),
                };
                self.positions.insert(index, self.blocks.len());
                self.blocks.push(part);
                return Ok(self.text(text));
            }
            Event::ContentBlockDelta { index, delta } => {
                let part = match self.positions.get(&index) {
                    Some(&at) => self.blocks.get_mut(at),
                    None => None,
                };
                match (delta, part) {
                    (Delta::Text { text }, Some(Part::Text) | None) => {
                        return Ok(self.text(text));
                    }
                    (Delta::InputJson { partial_json }, Some(Part::Call { input, pieces, .. })) => {
                        input.push_str(&partial_json);
                        *pieces = true;
                    }
                    (Delta::Other, _) | (_, Some(Part::Other)) => {}
                    (Delta::Text { .. }, Some(Part::Call { .. })) => {
                        return Err(Error::decode(format!(
                            "the answer's block {index} is a tool call, not text"
                        )));
                    }
                    (Delta::InputJson { .. }, Some(Part::Text) | None) => {
                        return Err(Error::decode(format!(
                            "the answer's block {index} got a tool call's arguments but is not \
                             a tool call"
                        )));
                    }
                }
            }
            Event::ContentBlockStop => {}
            Event::MessageDelta { delta, usage } => {
                if let Some(reason) = delta.stop_reason {
                    self.stop_reason = Some(reason);
                }
                if let Some(usage) = usage {
                    self.count(usage);
                }
            }
            Event::MessageStop => return Ok(Step::Done(self.finish())),
        }
        Ok(Step::Nothing)
    }

    /// A piece of text, kept and handed on (unless empty).
    fn text(&mut self, text: String) -> Step {
        if text.is_empty() {
            return Step::Nothing;
        }
        self.content.get_or_insert_with(String::new).push_str(&text);
        Step::Text(text)
    }

    /// Counts the tokens a usage gives, over what came before.
    fn count(&mut self, usage: WireUsage) {
        self.counted = true;
        let mine = &mut self.usage;
        for (kept, new) in [
            (&mut mine.input_tokens, usage.input_tokens),
            (&mut mine.output_tokens, usage.output_tokens),
            (
                &mut mine.cache_creation_input_tokens,
                usage.cache_creation_input_tokens,
            ),
            (
                &mut mine.cache_read_input_tokens,
                usage.cache_read_input_tokens,
            ),
        ] {
            if new.is_some() {
                *kept = new;
            }
        }
    }

    /// The whole turn: the text, the tool calls in the order their blocks started, the
    /// tokens (input counting what was read from and written to the prompt cache), and why
    /// it stopped in chat-completions words.
    fn finish(&mut self) -> Completion {
        let tool_calls = std::mem::take(&mut self.blocks)
            .into_iter()
            .filter_map(|part| match part {
                Part::Call {
                    id,
                    name,
                    input,
                    pieces,
                    start,
                } => {
                    let arguments = if pieces && !input.trim().is_empty() {
                        input
                    } else if start.as_object().is_some_and(|o| !o.is_empty()) {
                        start.to_string()
                    } else {
                        "{}".to_owned()
                    };
                    Some(ToolCall::new(id, name, arguments))
                }
                Part::Text | Part::Other => None,
            })
            .collect();
        let usage = self.counted.then(|| {
            let read = [
                self.usage.input_tokens,
                self.usage.cache_creation_input_tokens,
                self.usage.cache_read_input_tokens,
            ]
            .into_iter()
            .flatten()
            .fold(0_u64, u64::saturating_add);
            Usage::new(read, self.usage.output_tokens.unwrap_or(0))
        });
        Completion {
            content: self.content.take(),
            tool_calls,
            usage,
            finish_reason: self.stop_reason.take().map(|r| finish_reason(&r)),
        }
    }
}

/// A Messages `stop_reason` as the finish reason chat completions give: `end_turn` and
/// `stop_sequence` are `stop`, `max_tokens` (and a full context window) `length`,
/// `tool_use` `tool_calls`, `refusal` `content_filter`; any other (`pause_turn`) as it is.
pub(super) fn finish_reason(stop_reason: &str) -> String {
    match stop_reason {
        "end_turn" | "stop_sequence" => "stop",
        "max_tokens" | "model_context_window_exceeded" => "length",
        "tool_use" => "tool_calls",
        "refusal" => "content_filter",
        other => other,
    }
    .to_owned()
}

#[cfg(test)]
mod tests {
    use std::collections::VecDeque;

    use serde_json::json;

    use super::*;
    use crate::anthropic::sse::Frames;

    fn sse(value: Value) -> Sse {
        Sse::new(
            value["type"].as_str().unwrap_or_default(),
            value.to_string(),
            None,
        )
    }

    /// What a whole body gives: the pieces of text, then the turn or the first error.
    fn run(body: &[u8], chunk: usize, max_event: usize) -> (Vec<String>, Result<Completion>) {
        let mut framing = Frames::new(max_event);
        let mut assembly = Assembly::default();
        let mut texts = Vec::new();
        let mut events = VecDeque::new();
        for piece in body.chunks(chunk.max(1)) {
            // The events before a framing error come first, as the provider hands them on.
            let framed = framing.push(piece, &mut events);
            while let Some(event) = events.pop_front() {
                match parse(&event).and_then(|event| assembly.add(event)) {
                    Ok(Step::Nothing) => {}
                    Ok(Step::Text(text)) => texts.push(text),
                    Ok(Step::Done(done)) => return (texts, Ok(done)),
                    Err(error) => return (texts, Err(error)),
                }
            }
            if let Err(error) = framed {
                return (texts, Err(error));
            }
        }
        (texts, Err(Error::request("cut short")))
    }

    /// A whole answer as Anthropic streams it: text, then a tool call whose arguments come
    /// in three pieces.
    fn answer() -> String {
        let events = [
            json!({"type": "message_start", "message": {"id": "msg_1", "type": "message",
                "role": "assistant", "content": [], "model": "claude-x", "stop_reason": null,
                "usage": {"input_tokens": 25, "cache_read_input_tokens": 5, "output_tokens": 1}}}),
            json!({"type": "content_block_start", "index": 0,
                   "content_block": {"type": "text", "text": ""}}),
            json!({"type": "ping"}),
            json!({"type": "content_block_delta", "index": 0,
                   "delta": {"type": "text_delta", "text": "Let me "}}),
            json!({"type": "content_block_delta", "index": 0,
                   "delta": {"type": "text_delta", "text": "look."}}),
            json!({"type": "content_block_stop", "index": 0}),
            json!({"type": "content_block_start", "index": 1, "content_block": {
                   "type": "tool_use", "id": "toolu_1", "name": "search_books", "input": {}}}),
            json!({"type": "content_block_delta", "index": 1,
                   "delta": {"type": "input_json_delta", "partial_json": ""}}),
            json!({"type": "content_block_delta", "index": 1,
                   "delta": {"type": "input_json_delta", "partial_json": "{\"q\": \"du"}}),
            json!({"type": "content_block_delta", "index": 1,
                   "delta": {"type": "input_json_delta", "partial_json": "ne\", \"max\": 3}"}}),
            json!({"type": "content_block_stop", "index": 1}),
            json!({"type": "content_block_start", "index": 2, "content_block": {
                   "type": "tool_use", "id": "toolu_2", "name": "list_shelves", "input": {}}}),
            json!({"type": "content_block_stop", "index": 2}),
            json!({"type": "message_delta", "delta": {"type": "tool_use", "stop_reason": "tool_use",
                   "stop_sequence": null}, "usage": {"output_tokens": 31}}),
            json!({"type": "message_stop"}),
        ];
        events
            .iter()
            .map(|event| {
                format!(
                    "event: {}\ndata: {event}\n\n",
                    event["type"].as_str().unwrap()
                )
            })
            .collect()
    }

    #[test]
    fn an_answer_is_put_together_from_its_events() {
        let body = answer();
        let (texts, done) = run(body.as_bytes(), body.len(), 1 << 20);
        let done = done.unwrap();
        assert_eq!(texts, ["Let me ", "look."]);
        assert_eq!(done.content.as_deref(), Some("Let me look."));
        assert_eq!(
            done.tool_calls,
            [
                ToolCall::new("toolu_1", "search_books", r#"{"q": "dune", "max": 3}"#),
                ToolCall::new("toolu_2", "list_shelves", "{}"),
            ]
        );
        assert_eq!(done.usage, Some(Usage::new(30, 31)));
        assert_eq!(done.finish_reason.as_deref(), Some("tool_calls"));
        // However the bytes are cut, and whatever the line endings.
        for chunk in [1, 2, 3, 7, 64] {
            let (cut_texts, cut_done) = run(body.as_bytes(), chunk, 1 << 20);
            assert_eq!(
                (cut_texts, cut_done.unwrap()),
                (texts.clone(), done.clone())
            );
        }
        for ending in ["\r\n", "\r"] {
            let other = body.replace('\n', ending);
            let (cut_texts, cut_done) = run(other.as_bytes(), 5, 1 << 20);
            assert_eq!(
                (cut_texts, cut_done.unwrap()),
                (texts.clone(), done.clone())
            );
        }
    }

    #[test]
    fn stop_reasons_as_finish_reasons() {
        for (stop, finish) in [
            ("end_turn", "stop"),
            ("stop_sequence", "stop"),
            ("max_tokens", "length"),
            ("tool_use", "tool_calls"),
            ("refusal", "content_filter"),
            ("pause_turn", "pause_turn"),
        ] {
            assert_eq!(finish_reason(stop), finish);
        }
    }

    #[test]
    fn events_out_of_order_and_errors() {
        let add = |events: &[Value]| {
            let mut assembly = Assembly::default();
            let mut last = Ok(Step::Nothing);
            for event in events {
                last = parse(&sse(event.clone())).and_then(|e| assembly.add(e));
                if last.is_err() {
                    break;
                }
            }
            last
        };
        let start = json!({"type": "message_start", "message": {}});
        let early = add(&[json!({"type": "content_block_stop", "index": 0})]).unwrap_err();
        assert!(early.is_decode() && early.to_string().contains("message_start"));
        let twice = add(&[start.clone(), start.clone()]).unwrap_err();
        assert!(twice.is_decode());
        let text_block = json!({"type": "content_block_start", "index": 0,
                                "content_block": {"type": "text", "text": ""}});
        let again = add(&[start.clone(), text_block.clone(), text_block.clone()]).unwrap_err();
        assert!(again.to_string().contains("started twice"), "{again}");
        let arguments_for_text = add(&[
            start.clone(),
            text_block,
            json!({"type": "content_block_delta", "index": 0,
                   "delta": {"type": "input_json_delta", "partial_json": "{"}}),
        ])
        .unwrap_err();
        assert!(arguments_for_text.is_decode());
        let overloaded = add(&[
            start.clone(),
            json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}),
        ])
        .unwrap_err();
        assert!(!overloaded.is_decode() && overloaded.is_llm());
        assert!(
            overloaded
                .to_string()
                .contains("mid-answer: overloaded_error: Overloaded"),
            "{overloaded}"
        );
        // Unknown events, blocks and deltas are skipped; so are thinking blocks.
        let done = add(&[
            start,
            json!({"type": "something_new", "x": 1}),
            json!({"type": "content_block_start", "index": 0,
                   "content_block": {"type": "thinking", "thinking": ""}}),
            json!({"type": "content_block_delta", "index": 0,
                   "delta": {"type": "thinking_delta", "thinking": "hmm"}}),
            json!({"type": "content_block_delta", "index": 0,
                   "delta": {"type": "signature_delta", "signature": "abc"}}),
            json!({"type": "message_delta", "delta": {"stop_reason": "refusal"}}),
            json!({"type": "message_stop"}),
        ])
        .unwrap();
        let Step::Done(done) = done else {
            panic!("{done:?}")
        };
        assert_eq!(done.content, None);
        assert_eq!(done.usage, None);
        assert_eq!(done.finish_reason.as_deref(), Some("content_filter"));
        let bad = parse(&Sse::new(
            "content_block_delta",
            "{\"type\": \"content_block_delta\", \"index\": 0, \"delta\": {",
            None,
        ))
        .unwrap_err();
        assert!(bad.is_decode() && bad.to_string().contains("content_block_delta"));
    }

    /// Every cut of a whole answer, and thousands of answers with bytes changed: read
    /// without a panic, each to its end, an error, or a turn; and read alike whether the
    /// bytes come at once or a few at a time.
    #[test]
    fn mangled_streams_never_panic() {
        let body = answer().into_bytes();
        for end in 0..body.len() {
            let (_, done) = run(&body[..end], body.len(), 1 << 20);
            assert!(done.is_err(), "a cut at {end} is not a whole answer");
        }
        let specials = b"{}[]:,\"\\\n\r 0123456789aeiou\xFF\xEF";
        let mut seed = 0x2545_f491_4f6c_dd1d_u64;
        let mut next = || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for round in 0..4000 {
            let mut mangled = body.clone();
            for _ in 0..1 + round % 4 {
                let random = next();
                let at = (random % mangled.len() as u64) as usize;
                match random >> 60 {
                    0 => {
                        mangled.remove(at);
                    }
                    1 => mangled.insert(at, specials[(random >> 32) as usize % specials.len()]),
                    2 => mangled[at] ^= 1 << ((random >> 40) % 8),
                    _ => mangled[at] = specials[(random >> 32) as usize % specials.len()],
                }
            }
            let max_event = if round % 5 == 0 { 48 } else { 1 << 20 };
            let whole = run(&mangled, mangled.len(), max_event);
            let bytewise = run(&mangled, 1 + round % 7, max_event);
            assert_eq!(whole.0, bytewise.0, "round {round}");
            match (&whole.1, &bytewise.1) {
                (Ok(a), Ok(b)) => assert_eq!(a, b, "round {round}"),
                (Err(a), Err(b)) => assert_eq!(a.to_string(), b.to_string(), "round {round}"),
                _ => panic!("round {round}: {:?} against {:?}", whole.1, bytewise.1),
            }
        }
    }
}
