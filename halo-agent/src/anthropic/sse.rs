//! The event stream's framing of a streamed Messages answer: server-sent events read from
//! the body's bytes as they arrive, however they are split.

use std::collections::VecDeque;

use crate::{Error, Result};

/// The UTF-8 byte-order mark, dropped from the start of a stream.
const BOM: &[u8] = b"\xEF\xBB\xBF";

/// One server-sent event: its name and its data (the data lines joined by `\n`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Sse {
    pub(super) name: String,
    pub(super) data: String,
}

/// The SSE framing of a body, read as its bytes arrive however they are split: lines end
/// with `\n`, `\r\n` or `\r`; `event:` and `data:` fields make an event, which a blank line
/// ends; comments (`: ...`), `id:`, `retry:` and unknown fields are skipped; invalid UTF-8
/// is replaced. No event, and no line, may grow past the bound it was made with.
#[derive(Debug)]
pub(super) struct Frames {
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
}

impl Frames {
    /// Framing with events of at most `max_event` bytes (their names and data).
    pub(super) fn new(max_event: usize) -> Self {
        Self {
            max_event,
            line: Vec::new(),
            after_cr: false,
            first_line: true,
            name: String::new(),
            data: String::new(),
            has_data: false,
        }
    }

    /// Reads `bytes`, adding the events they complete to `events`.
    ///
    /// # Errors
    /// [`Error::is_decode`] when an event or a line is longer than the bound.
    pub(super) fn push(&mut self, mut bytes: &[u8], events: &mut VecDeque<Sse>) -> Result<()> {
        while let Some((&first, rest)) = bytes.split_first() {
            if self.after_cr {
                self.after_cr = false;
                if first == b'\n' {
                    bytes = rest;
                    continue;
                }
            }
            match bytes.iter().position(|&b| b == b'\n' || b == b'\r') {
                Some(end) => {
                    self.line.extend_from_slice(&bytes[..end]);
                    self.check()?;
                    self.after_cr = bytes[end] == b'\r';
                    self.end_line(events);
                    bytes = &bytes[end + 1..];
                }
                None => {
                    self.line.extend_from_slice(bytes);
                    self.check()?;
                    break;
                }
            }
        }
        Ok(())
    }

    /// Fails when the event read so far, the current line with it, passes the bound.
    fn check(&self) -> Result<()> {
        if self.name.len() + self.data.len() + self.line.len() > self.max_event {
            return Err(Error::decode(format!(
                "an event of the answer is longer than {} bytes",
                self.max_event
            )));
        }
        Ok(())
    }

    fn end_line(&mut self, events: &mut VecDeque<Sse>) {
        let mut line = self.line.as_slice();
        if std::mem::take(&mut self.first_line) {
            line = line.strip_prefix(BOM).unwrap_or(line);
        }
        if line.is_empty() {
            if std::mem::take(&mut self.has_data) {
                events.push_back(Sse {
                    name: std::mem::take(&mut self.name),
                    data: std::mem::take(&mut self.data),
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
                _ => {}
            }
        }
        self.line.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The events in `body` read in one piece.
    fn frames(body: &[u8], max_event: usize) -> Result<Vec<Sse>> {
        let mut events = VecDeque::new();
        Frames::new(max_event).push(body, &mut events)?;
        Ok(events.into())
    }

    #[test]
    fn framing_follows_the_event_stream_format() {
        let body =
            b"\xEF\xBB\xBF: a comment\nid: 1\nretry: 10\nevent: a\ndata: {\"x\":\ndata:1}\n\n\
                     data\n\nevent: dropped\n\nunknown: field\ndata:no-space\n\ndata: unfinished";
        let events = frames(body, 1 << 10).unwrap();
        let pairs: Vec<(&str, &str)> = events
            .iter()
            .map(|e| (e.name.as_str(), e.data.as_str()))
            .collect();
        assert_eq!(pairs, [("a", "{\"x\":\n1}"), ("", ""), ("", "no-space")]);
        let long = frames(format!("data: {}\n\n", "x".repeat(100)).as_bytes(), 64).unwrap_err();
        assert!(long.is_decode(), "{long}");
        // A line that never ends is bounded too.
        let endless = frames(&[b'x'; 100], 64).unwrap_err();
        assert!(endless.is_decode());
        // Invalid UTF-8 is replaced, not refused.
        let lossy = frames(b"data: \xFF\n\n", 64).unwrap();
        assert_eq!(lossy[0].data, "\u{FFFD}");
    }
}
