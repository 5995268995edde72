//! Decoding an event stream's bytes into the events of a tool call.
//!
//! [`decode`] is a pure function of the bytes: however they are split into chunks, it yields
//! the same events (the fuzz target `sse` checks it). The SSE grammar itself (fields, line
//! endings, comments, a byte-order mark) is eventsource-stream's; this module adds what sits
//! around it: bytes to text as the SSE standard decodes them (invalid UTF-8 replaced), a bound
//! on the size of one event, and SSE events to [`ToolEvent`]s.

use std::pin::Pin;
use std::task::{Context, Poll, ready};

use eventsource_stream::{Event, EventStreamError, Eventsource as _};
use futures_core::Stream;
use futures_util::StreamExt as _;
use halo_protocol::ToolEvent;

use crate::{Error, StreamEvent};

/// The largest event a client accepts by default, line endings aside: 16 MiB.
pub(crate) const MAX_EVENT: usize = 16 << 20;

/// The SSE event names of tool events; other names are skipped.
pub(crate) const TOOL_EVENTS: [&str; 5] = [
    "tool_start",
    "tool_progress",
    "tool_end",
    "tool_error",
    "approval_pending",
];

/// Why decoding stopped short.
#[derive(Debug)]
pub(crate) enum Broken<E> {
    /// The body failed: the connection dropped, and the call may be resumed.
    Dropped(E),
    /// The body is not a HALO event stream.
    Invalid(Error),
}

/// The tool events in an event stream's body, in order, each with its id.
///
/// Comments (`: keep-alive`) and events of other types are skipped (the latter logged at
/// debug level). A tool event without a numeric id, whose data is not the event's JSON, or
/// longer than `max_event` bytes is [`Broken::Invalid`]; a body error is
/// [`Broken::Dropped`]; either ends the stream.
pub(crate) fn decode<S, B, E>(
    body: S,
    max_event: usize,
) -> impl Stream<Item = Result<StreamEvent, Broken<E>>>
where
    S: Stream<Item = Result<B, E>> + Unpin,
    B: AsRef<[u8]>,
{
    Text::new(body, max_event).eventsource().filter_map(|item| {
        std::future::ready(match item {
            Ok(event) => tool_event(event).map_err(Broken::Invalid).transpose(),
            Err(EventStreamError::Transport(broken)) => Some(Err(broken)),
            // Unreachable with text from `Text`, whose every line parses.
            Err(EventStreamError::Utf8(_) | EventStreamError::Parser(_)) => Some(Err(
                Broken::Invalid(Error::decode("the event stream cannot be parsed")),
            )),
        })
    })
}

/// A tool event from an SSE event; `None` for events of other types.
fn tool_event(event: Event) -> Result<Option<StreamEvent>, Error> {
    if !TOOL_EVENTS.contains(&event.event.as_str()) {
        tracing::debug!(
            target: "halo_client::stream",
            event = %event.event,
            id = %event.id,
            "skipping an event that is not a tool event"
        );
        return Ok(None);
    }
    let name = event.event;
    let id: u64 = event
        .id
        .parse()
        .map_err(|_| Error::decode(format!("a `{name}` event without a numeric id")))?;
    let parsed: ToolEvent = serde_json::from_str(&event.data)
        .map_err(|e| Error::decode(e).with_context(format!("event {id} (`{name}`)")))?;
    if parsed.name() != name {
        return Err(Error::decode(format!(
            "event {id} is named `{name}` but carries `{}`",
            parsed.name()
        )));
    }
    Ok(Some(StreamEvent::new(id, parsed)))
}

/// A body as text for the SSE parser: invalid UTF-8 replaced by U+FFFD (as the SSE standard
/// decodes streams), a character split between chunks kept whole, a leading byte-order mark
/// removed, and no event longer than `max_event` bytes: the lines before the limit are passed
/// on, then an error.
///
/// The text is passed on one line at a time, each as soon as its line ending arrives (a line
/// cut between chunks waits here for its end). eventsource-stream 0.2.3 copies what is left
/// of its buffer after each line it parses, so a chunk of many lines given whole costs it
/// the square of the chunk's size, and a long line given in many pieces is scanned again
/// with each; one line at a time, each line is read once.
struct Text<S> {
    body: S,
    /// The start of a character that the next chunk completes.
    carry: Vec<u8>,
    /// Text not passed on yet, from `sent` on: whole lines, then the start of one.
    pending: String,
    /// How much of `pending` was passed on.
    sent: usize,
    max_event: usize,
    /// Bytes of the current event so far, line endings aside.
    event_len: usize,
    /// Whether the last byte ended a line (or nothing was read yet).
    at_line_start: bool,
    /// Whether the last byte was a CR, so that an LF after it ends the same line.
    after_cr: bool,
    /// Whether any text was read yet.
    started: bool,
    too_long: bool,
    /// Whether the body ended (or failed): what is pending is the last of it.
    ended: bool,
    done: bool,
}

impl<S> Text<S> {
    fn new(body: S, max_event: usize) -> Self {
        Self {
            body,
            carry: Vec::new(),
            pending: String::new(),
            sent: 0,
            max_event,
            event_len: 0,
            at_line_start: true,
            after_cr: false,
            started: false,
            too_long: false,
            ended: false,
            done: false,
        }
    }

    /// The next whole line pending, with its ending; at the body's end, what is left.
    fn next_line(&mut self) -> Option<String> {
        let rest = &self.pending[self.sent..];
        // A CR that ends the text so far goes on alone: the parser waits for what follows
        // it, and joins an LF that comes next to it as one line ending.
        let line = match rest.find(['\n', '\r']) {
            Some(end) if rest.as_bytes().get(end..end + 2) == Some(b"\r\n") => &rest[..end + 2],
            Some(end) => &rest[..=end],
            None if self.ended && !rest.is_empty() => rest,
            None => return None,
        };
        let line = line.to_owned();
        self.sent += line.len();
        Some(line)
    }

    /// Takes `text` read from the body after what is pending.
    fn push(&mut self, text: &str) {
        self.pending.drain(..self.sent);
        self.sent = 0;
        if self.started || text.is_empty() {
            self.pending.push_str(text);
        } else {
            self.started = true;
            // The byte-order mark is ours to strip: eventsource-stream 0.2.3 panics on one
            // (it slices off one byte of three). An empty line first changes nothing and
            // keeps a second mark, part of a field name, from reaching it.
            self.pending.push('\n');
            self.pending
                .push_str(text.strip_prefix('\u{feff}').unwrap_or(text));
        }
    }

    /// How much of `chunk` the event size allows (all of it unless an event grows past the
    /// limit there).
    fn allowed(&mut self, chunk: &[u8]) -> usize {
        for (at, &byte) in chunk.iter().enumerate() {
            match byte {
                b'\n' if self.after_cr => self.after_cr = false,
                b'\n' | b'\r' => {
                    // A line ending right after another one: an empty line ends the event.
                    if self.at_line_start {
                        self.event_len = 0;
                    }
                    self.at_line_start = true;
                    self.after_cr = byte == b'\r';
                }
                _ => {
                    self.at_line_start = false;
                    self.after_cr = false;
                    self.event_len += 1;
                    if self.event_len > self.max_event {
                        self.too_long = true;
                        return at;
                    }
                }
            }
        }
        chunk.len()
    }

    /// `chunk` as text, after the carried start of a character.
    fn text(&mut self, chunk: &[u8]) -> String {
        let joined;
        let mut rest = if self.carry.is_empty() {
            chunk
        } else {
            self.carry.extend_from_slice(chunk);
            joined = std::mem::take(&mut self.carry);
            joined.as_slice()
        };
        let mut text = String::with_capacity(rest.len());
        loop {
            match std::str::from_utf8(rest) {
                Ok(valid) => {
                    text.push_str(valid);
                    return text;
                }
                Err(error) => {
                    let (valid, after) = rest.split_at(error.valid_up_to());
                    text.push_str(std::str::from_utf8(valid).expect("valid up to here"));
                    match error.error_len() {
                        Some(len) => {
                            text.push(char::REPLACEMENT_CHARACTER);
                            rest = &after[len..];
                        }
                        // The chunk ends inside a character.
                        None => {
                            self.carry = after.to_vec();
                            return text;
                        }
                    }
                }
            }
        }
    }
}

impl<S, B, E> Stream for Text<S>
where
    S: Stream<Item = Result<B, E>> + Unpin,
    B: AsRef<[u8]>,
{
    type Item = Result<String, Broken<E>>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        loop {
            if this.done {
                return Poll::Ready(None);
            }
            if let Some(line) = this.next_line() {
                return Poll::Ready(Some(Ok(line)));
            }
            if this.too_long {
                this.done = true;
                return Poll::Ready(Some(Err(Broken::Invalid(Error::decode(format!(
                    "an event longer than {} bytes",
                    this.max_event
                ))))));
            }
            if this.ended {
                this.done = true;
                return Poll::Ready(None);
            }
            match ready!(Pin::new(&mut this.body).poll_next(cx)) {
                Some(Ok(chunk)) => {
                    let chunk = chunk.as_ref();
                    let allowed = this.allowed(chunk);
                    let text = this.text(&chunk[..allowed]);
                    this.push(&text);
                }
                Some(Err(error)) => {
                    this.done = true;
                    return Poll::Ready(Some(Err(Broken::Dropped(error))));
                }
                None => this.ended = true,
            }
        }
    }
}

/// Decodes a whole body given in chunks, synchronously: its events, or a message where
/// decoding stopped. For the fuzz target and the tests; not a stable API.
#[cfg(any(test, feature = "fuzzing"))]
#[must_use]
pub fn decode_chunks<'a, I>(chunks: I, max_event: usize) -> Vec<Result<StreamEvent, String>>
where
    I: IntoIterator<Item = &'a [u8]>,
{
    let body =
        futures_util::stream::iter(chunks.into_iter().map(Ok::<_, std::convert::Infallible>));
    let mut events = std::pin::pin!(decode(body, max_event));
    let mut cx = Context::from_waker(std::task::Waker::noop());
    let mut decoded = Vec::new();
    loop {
        match events.as_mut().poll_next(&mut cx) {
            Poll::Ready(Some(item)) => decoded.push(item.map_err(|broken| match broken {
                Broken::Invalid(error) => error.to_string(),
                Broken::Dropped(never) => match never {},
            })),
            Poll::Ready(None) => return decoded,
            Poll::Pending => unreachable!("chunks in memory are always ready"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use halo_protocol::{Problem, ToolEnd, ToolStart};
    use serde_json::json;

    /// Every way of cutting `body` in two, byte by byte, and a few hundred random ways
    /// decode as the whole does.
    fn same_whatever_the_chunking(
        body: &[u8],
        max_event: usize,
    ) -> Vec<Result<StreamEvent, String>> {
        let whole = decode_chunks([body], max_event);
        for at in 0..=body.len() {
            let (a, b) = body.split_at(at);
            assert_eq!(decode_chunks([a, b], max_event), whole, "cut at {at}");
        }
        let bytes: Vec<&[u8]> = body.chunks(1).collect();
        assert_eq!(decode_chunks(bytes, max_event), whole, "byte by byte");
        let mut rng = fastrand::Rng::with_seed(7);
        for _ in 0..300 {
            let mut chunks = Vec::new();
            let mut rest = body;
            while !rest.is_empty() {
                let (chunk, after) = rest.split_at(rng.usize(0..=rest.len().min(40)));
                chunks.push(chunk);
                rest = after;
            }
            assert_eq!(
                decode_chunks(chunks.clone(), max_event),
                whole,
                "{chunks:?}"
            );
        }
        whole
    }

    fn ok(id: u64, event: ToolEvent) -> Result<StreamEvent, String> {
        Ok(StreamEvent::new(id, event))
    }

    #[test]
    fn a_call_decodes_the_same_whatever_the_chunking() {
        let body = concat!(
            "\u{feff}: keep-alive\n\n",
            "event: tool_start\nid: 1\n",
            "data: {\"type\":\"tool_start\",\"data\":{\"call_id\":\"c-7f3\",\"tool\":\"summarize_book\"}}\n\n",
            "event: agent_note\r\nid: 2\r\ndata: {\"type\":\"agent_note\"}\r\n\r\n",
            ": keep-alive\r\r",
            "event: tool_progress\rid: 3\rdata: {\"type\":\"tool_progress\",\r",
            "data: \"data\":{\"step\":1,\"message\":\"chapter 1 — “naïve” 🦀\"}}\r\r",
            "event: tool_end\nid: 4\n",
            "data: {\"type\":\"tool_end\",\"data\":{\"status\":200,\"content\":{\"words\":3}}}\n\n",
            "event: tool_progress\nid: 5\ndata: {\"type\":\"tool_progress\",\"data\":null}\n",
        );
        let events = same_whatever_the_chunking(body.as_bytes(), MAX_EVENT);
        assert_eq!(
            events,
            [
                ok(
                    1,
                    ToolEvent::ToolStart(ToolStart::new("c-7f3", "summarize_book"))
                ),
                ok(
                    3,
                    ToolEvent::ToolProgress(
                        json!({"step": 1, "message": "chapter 1 — “naïve” 🦀"})
                    )
                ),
                ok(
                    4,
                    ToolEvent::ToolEnd(ToolEnd::new(200, json!({"words": 3})))
                ),
            ],
            "the event without a final empty line is not dispatched"
        );
    }

    #[test]
    fn invalid_utf8_is_replaced_not_fatal() {
        let mut body = b"event: tool_error\nid: 7\ndata: {\"type\":\"tool_error\",\"data\":{\"status\":504,\"detail\":\"a\xffb\xe2\x82\"}}\n\n".to_vec();
        body.extend_from_slice(
            "event: tool_end\nid: 8\ndata: {\"type\":\"tool_end\",\"data\":{\"status\":200,\"content\":\"é\"}}\n\n"
                .as_bytes(),
        );
        let problem: Problem =
            serde_json::from_value(json!({"status": 504, "detail": "a\u{fffd}b\u{fffd}"})).unwrap();
        assert_eq!(
            same_whatever_the_chunking(&body, MAX_EVENT),
            [
                ok(7, ToolEvent::ToolError(problem)),
                ok(8, ToolEvent::ToolEnd(ToolEnd::new(200, json!("é")))),
            ]
        );
    }

    #[test]
    fn byte_order_marks() {
        let start = "event: tool_start\nid: 1\ndata: {\"type\":\"tool_start\",\"data\":{\"call_id\":\"c\",\"tool\":\"t\"}}\n\n";
        let expected = [ok(1, ToolEvent::ToolStart(ToolStart::new("c", "t")))];
        // One mark is dropped; eventsource-stream alone would panic on it.
        let marked = format!("\u{feff}{start}");
        assert_eq!(
            same_whatever_the_chunking(marked.as_bytes(), MAX_EVENT),
            expected
        );
        // A second one is part of the first field's name, which no longer says `event`.
        let twice = format!("\u{feff}\u{feff}{start}");
        assert_eq!(same_whatever_the_chunking(twice.as_bytes(), MAX_EVENT), []);
        assert_eq!(same_whatever_the_chunking(b"\xef\xbb", MAX_EVENT), []);
    }

    #[test]
    fn malformed_tool_events_end_the_stream() {
        let cases: [(&str, &str); 4] = [
            ("event: tool_start\ndata: {}\n\n", "without a numeric id"),
            (
                "event: tool_start\nid: x\ndata: {}\n\n",
                "without a numeric id",
            ),
            (
                "event: tool_end\nid: 1\ndata: {\"type\":\"tool_end\"}\n\n",
                "event 1 (`tool_end`)",
            ),
            (
                "event: tool_end\nid: 1\ndata: {\"type\":\"tool_progress\",\"data\":1}\n\n",
                "named `tool_end` but carries `tool_progress`",
            ),
        ];
        for (body, message) in cases {
            let events = same_whatever_the_chunking(body.as_bytes(), MAX_EVENT);
            match events.as_slice() {
                [Err(error)] => assert!(error.contains(message), "{body:?}: {error}"),
                other => panic!("{body:?}: {other:?}"),
            }
        }
    }

    #[test]
    fn an_event_longer_than_the_limit_is_an_error_after_the_events_before_it() {
        let start = "event: tool_start\nid: 1\ndata: {\"type\":\"tool_start\",\"data\":{\"call_id\":\"c\",\"tool\":\"t\"}}\n\n";
        assert!(start.len() < 150);
        let body = format!("{start}: {}\n\n{start}", "x".repeat(200));
        let events = same_whatever_the_chunking(body.as_bytes(), 150);
        assert_eq!(events.len(), 2, "{events:?}");
        assert_eq!(
            events[0],
            ok(1, ToolEvent::ToolStart(ToolStart::new("c", "t")))
        );
        assert_eq!(
            events[1],
            Err("could not read the response: an event longer than 150 bytes".to_owned())
        );
        // Exactly at the limit is fine.
        let events = same_whatever_the_chunking(body.as_bytes(), 202);
        assert_eq!(events.len(), 2, "{events:?}");
        assert!(events.iter().all(Result::is_ok));
    }

    #[test]
    fn random_bodies_decode_the_same_whatever_the_chunking() {
        // Pieces of event streams, line endings of every kind among them, put together at
        // random: whatever they make, cutting it anywhere changes nothing.
        let pieces: [&[u8]; 14] = [
            b"event: tool_progress",
            b"event: tool_end",
            b"id: 4",
            b"id: x",
            b"data: {\"type\":\"tool_progress\",\"data\":{\"step\":1}}",
            b"data: {\"type\":\"tool_end\",\"data\":{\"status\":200,\"content\":1}}",
            b": keep-alive",
            b"\n",
            b"\r",
            b"\r\n",
            b"\n\n",
            b"\xef\xbb\xbf",
            b"\xff\xe2\x82",
            b"retry: 10",
        ];
        let mut rng = fastrand::Rng::with_seed(11);
        for _ in 0..80 {
            let body: Vec<u8> = (0..rng.usize(1..30))
                .flat_map(|_| pieces[rng.usize(..pieces.len())].iter().copied())
                .collect();
            for max_event in [40, MAX_EVENT] {
                same_whatever_the_chunking(&body, max_event);
            }
        }
    }
}
