//! Reading an event stream (`text/event-stream`, the WHATWG server-sent events format) from
//! its bytes as they arrive, however they are split: the one decoder of halo-client's tool
//! streams and halo-agent's model answers.
//!
//! Lines end with `\n`, `\r\n` or `\r`; `event`, `data` and `id` fields make an event, which
//! a blank line ends (an event without `data` is dropped, as browsers drop it); comments
//! (`: ...`), `retry` and unknown fields are skipped; a leading byte-order mark is dropped;
//! invalid UTF-8 is replaced by U+FFFD. Each byte is read once, so a stream costs time in
//! proportion to its length however it is cut; no event, and no line, grows past the bound
//! the decoder was made with.
//!
//! ```
//! use std::collections::VecDeque;
//! use halo_protocol::{SseDecoder, SseEvent};
//!
//! let mut decoder = SseDecoder::new(1024);
//! let mut events = VecDeque::new();
//! decoder.push(b"event: tool_progress\r\nid: 2\r\nda", &mut events).unwrap();
//! decoder.push(b"ta: {\"step\":1}\r\n\r\n", &mut events).unwrap();
//! assert_eq!(
//!     events.pop_front(),
//!     Some(SseEvent::new("tool_progress", "{\"step\":1}", Some("2")))
//! );
//! assert!(decoder.push(&[b'x'; 2000], &mut events).unwrap_err().is_too_long());
//! ```

use std::collections::VecDeque;
use std::fmt;

/// The UTF-8 byte-order mark, dropped from the start of a stream.
const BOM: &[u8] = b"\xEF\xBB\xBF";

/// One event of a stream.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct SseEvent {
    /// Its `event` field (empty when it had none: a `message`).
    pub name: String,
    /// Its `data` lines, joined by `\n`.
    pub data: String,
    /// The stream's last event id when it ended (an `id` field persists to the events after
    /// it, as the format says); `None` before any.
    pub id: Option<String>,
}

impl SseEvent {
    /// An event named `name` with `data` and last event id `id`.
    #[must_use]
    pub fn new(name: impl Into<String>, data: impl Into<String>, id: Option<&str>) -> Self {
        Self {
            name: name.into(),
            data: data.into(),
            id: id.map(str::to_owned),
        }
    }
}

/// Why a stream cannot be read on: an event (its name, data and id, or one line) grew past
/// the decoder's bound.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseError {
    max_event: usize,
}

impl SseError {
    /// Whether an event was longer than the bound (the only cause).
    #[must_use]
    pub fn is_too_long(&self) -> bool {
        true
    }

    /// The bound, in bytes.
    #[must_use]
    pub fn max_event(&self) -> usize {
        self.max_event
    }
}

impl fmt::Display for SseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "an event longer than {} bytes", self.max_event)
    }
}

impl std::error::Error for SseError {}

/// The decoder of one stream: lines end with `\n`, `\r\n` or `\r`; `event`, `data` and `id`
/// fields make an event, which a blank line ends; each byte is read once, and no event grows
/// past the bound.
#[derive(Debug)]
pub struct SseDecoder {
    max_event: usize,
    /// The line being read.
    line: Vec<u8>,
    /// The last byte read was a `\r`: a `\n` right after it ends no other line.
    after_cr: bool,
    /// No line has ended yet (the first one may start with a byte-order mark).
    first_line: bool,
    name: String,
    data: String,
    has_data: bool,
    id: Option<String>,
    /// Bytes of the current event's lines so far (comments and skipped fields included),
    /// line endings aside.
    event_len: usize,
}

impl SseDecoder {
    /// A decoder of events of at most `max_event` bytes, line endings aside.
    #[must_use]
    pub fn new(max_event: usize) -> Self {
        Self {
            max_event,
            line: Vec::new(),
            after_cr: false,
            first_line: true,
            name: String::new(),
            data: String::new(),
            has_data: false,
            id: None,
            event_len: 0,
        }
    }

    /// Reads `bytes`, adding the events they complete to `events`, in order.
    ///
    /// # Errors
    /// When an event grows past the bound: the events completed before it are in `events`,
    /// and the stream cannot be read on.
    pub fn push(
        &mut self,
        mut bytes: &[u8],
        events: &mut VecDeque<SseEvent>,
    ) -> Result<(), SseError> {
        while let Some((&first, rest)) = bytes.split_first() {
            if std::mem::take(&mut self.after_cr) && first == b'\n' {
                bytes = rest;
                continue;
            }
            let (taken, ended) = match bytes.iter().position(|&b| b == b'\n' || b == b'\r') {
                Some(end) => (&bytes[..end], Some(bytes[end])),
                None => (bytes, None),
            };
            self.event_len += taken.len();
            if self.event_len > self.max_event {
                return Err(SseError {
                    max_event: self.max_event,
                });
            }
            self.line.extend_from_slice(taken);
            let Some(ending) = ended else {
                break;
            };
            self.after_cr = ending == b'\r';
            self.end_line(events);
            bytes = &bytes[taken.len() + 1..];
        }
        Ok(())
    }

    fn end_line(&mut self, events: &mut VecDeque<SseEvent>) {
        let mut line = self.line.as_slice();
        if std::mem::take(&mut self.first_line) {
            line = line.strip_prefix(BOM).unwrap_or(line);
        }
        if line.is_empty() {
            self.event_len = 0;
            if std::mem::take(&mut self.has_data) {
                events.push_back(SseEvent {
                    name: std::mem::take(&mut self.name),
                    data: std::mem::take(&mut self.data),
                    id: self.id.clone(),
                });
            } else {
                self.name.clear();
            }
        } else if line[0] != b':' {
            let (field, value) = match line.iter().position(|&b| b == b':') {
                Some(colon) => {
                    let value = &line[colon + 1..];
                    (&line[..colon], value.strip_prefix(b" ").unwrap_or(value))
                }
                None => (line, &[][..]),
            };
            match field {
                b"event" => {
                    self.name.clear();
                    self.name.push_str(&String::from_utf8_lossy(value));
                }
                b"data" => {
                    if std::mem::replace(&mut self.has_data, true) {
                        self.data.push('\n');
                    }
                    self.data.push_str(&String::from_utf8_lossy(value));
                }
                // An id with a NUL in it is ignored, as the format says.
                b"id" if !value.contains(&0) => {
                    self.id = Some(String::from_utf8_lossy(value).into_owned());
                }
                _ => {}
            }
        }
        self.line.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The events in `body` read in one piece, or the error.
    fn whole(body: &[u8], max_event: usize) -> (Vec<SseEvent>, Option<SseError>) {
        let mut events = VecDeque::new();
        let error = SseDecoder::new(max_event).push(body, &mut events).err();
        (events.into(), error)
    }

    /// The same, however `body` is cut: anywhere in two, and byte by byte.
    fn cut_anyhow(body: &[u8], max_event: usize) -> (Vec<SseEvent>, Option<SseError>) {
        let expected = whole(body, max_event);
        let mut cuts: Vec<Vec<&[u8]>> = (0..=body.len())
            .map(|at| vec![&body[..at], &body[at..]])
            .collect();
        cuts.push(body.chunks(1).collect());
        for pieces in cuts {
            let mut decoder = SseDecoder::new(max_event);
            let mut events = VecDeque::new();
            let mut error = None;
            for piece in &pieces {
                if let Err(e) = decoder.push(piece, &mut events) {
                    error = Some(e);
                    break;
                }
            }
            assert_eq!((Vec::from(events), error), expected, "{pieces:?}");
        }
        expected
    }

    #[test]
    fn fields_events_and_line_endings() {
        let body = b"\xEF\xBB\xBF: a comment\nid: 1\nretry: 10\nevent: a\ndata: {\"x\":\ndata:1}\n\n\
                     data\r\n\r\nevent: dropped\r\rid: 7\0\nunknown: field\ndata:no-space\n\nid\ndata: x\n\ndata: unfinished";
        let (events, error) = cut_anyhow(body, 1 << 10);
        assert_eq!(error, None);
        assert_eq!(
            events,
            [
                SseEvent::new("a", "{\"x\":\n1}", Some("1")),
                SseEvent::new("", "", Some("1")),
                SseEvent::new("", "no-space", Some("1")),
                SseEvent::new("", "x", Some("")),
            ]
        );
    }

    #[test]
    fn invalid_utf8_is_replaced_and_a_split_character_kept_whole() {
        let mut body = "data: a\u{e9}\u{1f980}".as_bytes().to_vec();
        body.extend_from_slice(b"\xff\n\n");
        let (events, _) = cut_anyhow(&body, 64);
        assert_eq!(events[0].data, "a\u{e9}\u{1f980}\u{fffd}");
    }

    #[test]
    fn a_second_byte_order_mark_is_part_of_the_first_field() {
        let (events, _) = cut_anyhow(b"\xEF\xBB\xBF\xEF\xBB\xBFdata: x\n\ndata: y\n\n", 64);
        assert_eq!(events, [SseEvent::new("", "y", None)]);
    }

    #[test]
    fn events_and_lines_are_bounded() {
        let body = format!("data: ok\n\n: {}\n\ndata: after\n\n", "x".repeat(100));
        let (events, error) = cut_anyhow(body.as_bytes(), 64);
        assert_eq!(events, [SseEvent::new("", "ok", None)]);
        assert_eq!(
            error.map(|e| e.to_string()).as_deref(),
            Some("an event longer than 64 bytes")
        );
        // Exactly at the bound is fine: the comment line is 102 bytes.
        let (events, error) = cut_anyhow(body.as_bytes(), 102);
        assert_eq!(error, None);
        assert_eq!(events.len(), 2);
        // A line that never ends is bounded too.
        let (_, error) = cut_anyhow(&[b'x'; 100], 64);
        assert!(error.is_some_and(|e| e.is_too_long() && e.max_event() == 64));
    }
}
