//! Streamed calls over WebSocket (feature `ws`): the same events as the SSE envelope, one
//! text message each, written from the same stream engine ([`relay`]), within the bounds of
//! [`WebSocketLimits`].

mod relay;

use std::time::Duration;

pub(crate) use self::relay::{Cancelling, first_call, relay};

/// The bounds of one WebSocket stream (HALO §10.1.2): what a client may send, what the
/// server buffers, and how long a client may stay silent.
///
/// ```
/// use std::time::Duration;
/// use halo_axum::WebSocketLimits;
///
/// let limits = WebSocketLimits::new()
///     .max_message(64 * 1024)
///     .idle_timeout(Duration::from_secs(30));
/// assert_eq!(limits.max_message_bytes(), 64 * 1024);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct WebSocketLimits {
    max_message: usize,
    write_buffer: usize,
    max_write_buffer: usize,
    idle: Duration,
}

impl Default for WebSocketLimits {
    fn default() -> Self {
        Self {
            max_message: 2 * 1024 * 1024 + 4 * 1024,
            write_buffer: 128 * 1024,
            max_write_buffer: 32 * 1024 * 1024,
            idle: Duration::from_secs(60),
        }
    }
}

impl WebSocketLimits {
    /// The defaults: client messages up to 2 MiB + 4 KiB (a call message whose arguments
    /// fill the default body limit), a 128 KiB send buffer that may grow to 32 MiB (the
    /// largest event, a 16 MiB result, fits), and a client silent for 60 s closed.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// The largest message (and frame) a client may send; a larger one closes the socket
    /// with `1009` (message too big).
    #[must_use]
    pub fn max_message(mut self, bytes: usize) -> Self {
        self.max_message = bytes.max(256);
        self
    }

    /// The largest message a client may send.
    #[must_use]
    pub fn max_message_bytes(&self) -> usize {
        self.max_message
    }

    /// How much is written to the socket at once (128 KiB by default), and the most it may
    /// buffer before the socket is closed (32 MiB by default): events are written as the
    /// client reads them, so a slow client holds the stream back, never the server's memory.
    #[must_use]
    pub fn send_buffer(mut self, bytes: usize, max: usize) -> Self {
        self.write_buffer = bytes.max(1024);
        self.max_write_buffer = max.max(self.write_buffer * 2);
        self
    }

    /// How long a client may stay silent (no message, no pong to the server's pings, which
    /// come every [`stream_keep_alive`](crate::HaloBuilder::stream_keep_alive)) before the
    /// server closes the socket with `4408`; also how long a new call's first message may
    /// take. 60 s by default; keep it above the keep-alive interval.
    #[must_use]
    pub fn idle_timeout(mut self, idle: Duration) -> Self {
        self.idle = idle.max(Duration::from_millis(10));
        self
    }

    pub(crate) fn write_buffer(&self) -> (usize, usize) {
        (self.write_buffer, self.max_write_buffer)
    }

    pub(crate) fn idle(&self) -> Duration {
        self.idle
    }
}
