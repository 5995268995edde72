//! A streamed Messages answer being read: its bytes framed into events ([`Frames`]), the
//! events put together into a turn ([`Assembly`]), within the answer's bounds.

use std::collections::VecDeque;
use std::time::Duration;

use futures_util::StreamExt as _;
use futures_util::stream::{self, BoxStream};

use super::event::{self, Assembly, Step};
use super::sse::{Frames, Sse};
use crate::endpoint::silence;
use crate::{ChatEvent, ChatStream, Error, Result};

/// The longest wait for a body's end after `message_stop`.
const DRAIN_TIME: Duration = Duration::from_millis(50);

/// The most bytes read after `message_stop`.
const DRAIN_BYTES: usize = 64 * 1024;

/// What an answer may be: its longest silence, its largest event and its length.
#[derive(Debug, Clone, Copy)]
pub(super) struct Bounds {
    /// The longest silence within the answer; `None` for no limit.
    pub(super) idle_timeout: Option<Duration>,
    /// The largest event, its name and data, in bytes.
    pub(super) max_event: usize,
    /// The largest answer, in bytes as they arrive.
    pub(super) max_response: usize,
}

/// An answer being read: its bytes (in chunks of type `B`), framed into events, put
/// together into a turn.
pub(super) struct Reading<B> {
    body: BoxStream<'static, Result<B>>,
    bounds: Bounds,
    /// The endpoint as errors name it.
    endpoint: String,
    /// The API key, kept out of errors.
    api_key: Option<String>,
    frames: Frames,
    assembly: Assembly,
    /// Events framed, not yet handed on.
    events: VecDeque<Sse>,
    /// The framing's error, once the events before it are handed on.
    broken: Option<Error>,
    /// The bytes read so far.
    received: usize,
}

impl<B: AsRef<[u8]> + Send + 'static> Reading<B> {
    /// The events of the answer whose bytes `body` gives: its pieces of text, then the turn
    /// or an error (naming `endpoint` for a silence, without `api_key`), then nothing.
    pub(super) fn stream(
        body: BoxStream<'static, Result<B>>,
        bounds: Bounds,
        endpoint: String,
        api_key: Option<String>,
    ) -> ChatStream {
        let reading = Self {
            body,
            bounds,
            endpoint,
            api_key,
            frames: Frames::new(bounds.max_event),
            assembly: Assembly::default(),
            events: VecDeque::new(),
            broken: None,
            received: 0,
        };
        stream::unfold(Some(reading), |reading| async move {
            let mut reading = reading?;
            match reading.next().await {
                Ok(event @ ChatEvent::Text(_)) => Some((Ok(event), Some(reading))),
                Ok(done) => Some((Ok(done), None)),
                Err(error) => {
                    let error = error.scrubbed(reading.api_key.as_deref());
                    Some((Err(error), None))
                }
            }
        })
        .boxed()
    }
}

impl<B: AsRef<[u8]>> Reading<B> {
    /// Reads what follows `message_stop`, which is only the body's end, for a moment: a
    /// body read to its end lets its connection serve the next turn (without a new TLS
    /// handshake). A server slow to end it is not waited for.
    async fn drain(&mut self) {
        let mut extra = 0_usize;
        let rest = async {
            while let Some(Ok(chunk)) = self.body.next().await {
                extra += chunk.as_ref().len();
                if extra > DRAIN_BYTES {
                    break;
                }
            }
        };
        let _ = tokio::time::timeout(DRAIN_TIME, rest).await;
    }

    /// The next event of the answer: a piece of text, or the whole turn.
    async fn next(&mut self) -> Result<ChatEvent> {
        loop {
            while let Some(sse) = self.events.pop_front() {
                match self.assembly.add(event::parse(&sse)?)? {
                    Step::Nothing => {}
                    Step::Text(text) => return Ok(ChatEvent::Text(text)),
                    Step::Done(done) => {
                        self.drain().await;
                        return Ok(ChatEvent::Done(done));
                    }
                }
            }
            if let Some(error) = self.broken.take() {
                return Err(error);
            }
            let next = match self.bounds.idle_timeout {
                Some(limit) => tokio::time::timeout(limit, self.body.next())
                    .await
                    .map_err(|_| silence(limit, &self.endpoint))?,
                None => self.body.next().await,
            };
            let Some(chunk) = next.transpose()? else {
                return Err(Error::request(
                    "the answer ended before message_stop: it was cut short",
                ));
            };
            let chunk = chunk.as_ref();
            self.received = self.received.saturating_add(chunk.len());
            if self.received > self.bounds.max_response {
                return Err(Error::decode(format!(
                    "the answer is longer than {} bytes",
                    self.bounds.max_response
                )));
            }
            if let Err(error) = self.frames.push(chunk, &mut self.events) {
                self.broken = Some(error);
            }
        }
    }
}
