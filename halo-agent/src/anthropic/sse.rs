//! The event stream's framing of a streamed Messages answer: halo-protocol's decoder
//! ([`SseDecoder`]), which reads the body's bytes as they arrive however they are split, with
//! its error told as this provider tells errors.

use std::collections::VecDeque;

use halo_protocol::SseDecoder;
pub(super) use halo_protocol::SseEvent as Sse;

use crate::{Error, Result};

/// The framing of one answer.
#[derive(Debug)]
pub(super) struct Frames(SseDecoder);

impl Frames {
    /// Framing with events of at most `max_event` bytes (their lines, endings aside).
    pub(super) fn new(max_event: usize) -> Self {
        Self(SseDecoder::new(max_event))
    }

    /// Reads `bytes`, adding the events they complete to `events`.
    ///
    /// # Errors
    /// [`Error::is_decode`] when an event or a line is longer than the bound.
    pub(super) fn push(&mut self, bytes: &[u8], events: &mut VecDeque<Sse>) -> Result<()> {
        self.0.push(bytes, events).map_err(|error| {
            Error::decode(format!(
                "an event of the answer is longer than {} bytes",
                error.max_event()
            ))
        })
    }
}
