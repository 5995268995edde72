//! Decoding an event stream's bytes into the events of a tool call.
//!
//! [`decode`] is a pure function of the bytes: however they are split into chunks, it yields
//! the same events (the fuzz target `sse` checks it). The event-stream format itself (fields,
//! line endings, comments, a byte-order mark, invalid UTF-8, the bound on an event) is
//! halo-protocol's [`SseDecoder`], which halo-agent reads its models' answers with too; this
//! module turns its events into [`ToolEvent`]s.

use std::collections::VecDeque;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use futures_core::Stream;
use halo_protocol::{SseDecoder, SseError, SseEvent, ToolEvent};

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
/// [`Broken::Dropped`]; either ends the stream, after the events before it.
pub(crate) fn decode<S, B, E>(
    body: S,
    max_event: usize,
) -> impl Stream<Item = Result<StreamEvent, Broken<E>>>
where
    S: Stream<Item = Result<B, E>> + Unpin,
    B: AsRef<[u8]>,
{
    Decoded {
        body,
        decoder: SseDecoder::new(max_event),
        events: VecDeque::new(),
        too_long: None,
        done: false,
    }
}

/// A tool event from an SSE event; `None` for events of other types.
fn tool_event(event: SseEvent) -> Result<Option<StreamEvent>, Error> {
    if !TOOL_EVENTS.contains(&event.name.as_str()) {
        tracing::debug!(
            target: "halo_client::stream",
            event = %event.name,
            id = ?event.id,
            "skipping an event that is not a tool event"
        );
        return Ok(None);
    }
    let name = event.name;
    let id: u64 = event
        .id
        .as_deref()
        .and_then(|id| id.parse().ok())
        .ok_or_else(|| Error::decode(format!("a `{name}` event without a numeric id")))?;
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

/// A body being decoded: the events read from it and not yet handed on, and the decoder's
/// error, handed on after them.
struct Decoded<S> {
    body: S,
    decoder: SseDecoder,
    events: VecDeque<SseEvent>,
    too_long: Option<SseError>,
    done: bool,
}

impl<S, B, E> Stream for Decoded<S>
where
    S: Stream<Item = Result<B, E>> + Unpin,
    B: AsRef<[u8]>,
{
    type Item = Result<StreamEvent, Broken<E>>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        loop {
            if this.done {
                return Poll::Ready(None);
            }
            if let Some(event) = this.events.pop_front() {
                match tool_event(event) {
                    Ok(Some(event)) => return Poll::Ready(Some(Ok(event))),
                    Ok(None) => continue,
                    Err(error) => {
                        this.done = true;
                        return Poll::Ready(Some(Err(Broken::Invalid(error))));
                    }
                }
            }
            if let Some(error) = this.too_long.take() {
                this.done = true;
                return Poll::Ready(Some(Err(Broken::Invalid(Error::decode(error.to_string())))));
            }
            match ready!(Pin::new(&mut this.body).poll_next(cx)) {
                Some(Ok(chunk)) => {
                    if let Err(error) = this.decoder.push(chunk.as_ref(), &mut this.events) {
                        this.too_long = Some(error);
                    }
                }
                Some(Err(error)) => {
                    this.done = true;
                    return Poll::Ready(Some(Err(Broken::Dropped(error))));
                }
                None => this.done = true,
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
        // One mark is dropped.
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
