//! MCP's older HTTP transport (2024-11-05, "HTTP with SSE"), for a server that offers only
//! that: the client opens an event stream with `GET`, the server's first event (`endpoint`)
//! names the URL the client `POST`s its messages to, and every answer and notification
//! arrives on the stream. rmcp has no client for it any more, so it is written here as a
//! sink of messages (each one `POST`ed) and a stream of them (the events), which rmcp runs.
//!
//! The gateway tries the streamable HTTP transport first and this one when that fails, as
//! MCP's backwards-compatibility section says a client does.

use std::time::Duration;

use std::collections::VecDeque;

use bytes::Bytes;
use futures_util::{Sink, Stream, StreamExt as _};
use halo_protocol::{SseDecoder, SseEvent};
use reqwest::Url;
use reqwest::header::{ACCEPT, CONTENT_TYPE};
use rmcp::model::{
    ClientJsonRpcMessage, ErrorData, JsonRpcError, JsonRpcMessage, ServerJsonRpcMessage,
};
use tokio::sync::mpsc;

/// Messages from the server waiting for rmcp to read them.
const QUEUE: usize = 256;

/// The largest event (one message) read from the server, line endings aside: 16 MiB.
const MAX_EVENT: usize = 16 << 20;

/// Opens the event stream at `url` with `client` (which carries the upstream's headers) and
/// waits, at most `timeout`, for the endpoint to post to: the transport, as rmcp takes it.
pub(super) async fn connect(
    client: reqwest::Client,
    url: &Url,
    timeout: Duration,
) -> Result<
    (
        impl Sink<ClientJsonRpcMessage, Error = std::io::Error> + Send + Unpin + 'static,
        impl Stream<Item = ServerJsonRpcMessage> + Send + Unpin + 'static,
    ),
    String,
> {
    let opened = client
        .get(url.clone())
        .header(ACCEPT, "text/event-stream")
        .send();
    let response = tokio::time::timeout(timeout, opened)
        .await
        .map_err(|_| "its event stream did not open in time".to_owned())?
        .map_err(|e| format!("its event stream could not be opened: {e}"))?;
    let is_stream = response
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|media| media.trim_start().starts_with("text/event-stream"));
    if !response.status().is_success() || !is_stream {
        return Err(format!(
            "it answered `GET` with {} ({}), not an event stream",
            response.status(),
            response
                .headers()
                .get(CONTENT_TYPE)
                .and_then(|value| value.to_str().ok())
                .unwrap_or("no content type")
        ));
    }
    let mut events = Box::pin(events(response.bytes_stream()));
    let endpoint = tokio::time::timeout(timeout, async {
        while let Some(event) = events.next().await {
            let event = event.map_err(|e| format!("its event stream broke: {e}"))?;
            if event.name == "endpoint" {
                return endpoint(url, &event.data);
            }
        }
        Err("its event stream ended before it named an endpoint".to_owned())
    })
    .await
    .map_err(|_| "it named no endpoint in time".to_owned())??;

    let (received, mut inbox) = mpsc::channel::<ServerJsonRpcMessage>(QUEUE);
    let replies = received.clone();
    tokio::spawn(async move {
        loop {
            let event = tokio::select! {
                () = received.closed() => return,
                event = events.next() => event,
            };
            let event = match event {
                Some(Ok(event)) => event,
                Some(Err(error)) => {
                    tracing::warn!(%error, "an MCP server's event stream broke");
                    return;
                }
                None => return,
            };
            if !matches!(event.name.as_str(), "" | "message") {
                continue;
            }
            match serde_json::from_str::<ServerJsonRpcMessage>(&event.data) {
                Ok(message) => {
                    if received.send(message).await.is_err() {
                        return;
                    }
                }
                Err(error) => {
                    tracing::warn!(%error, "an MCP server sent a message that is not one");
                }
            }
        }
    });
    let sink = Box::pin(futures_util::sink::unfold(
        (client, endpoint, replies),
        |(client, endpoint, replies), message: ClientJsonRpcMessage| async move {
            let request = match &message {
                JsonRpcMessage::Request(request) => Some(request.id.clone()),
                _ => None,
            };
            let sent = client.post(endpoint.clone()).json(&message).send().await;
            let refused = match sent {
                Ok(answer) if answer.status().is_success() => None,
                Ok(answer) => Some(format!(
                    "the server answered the message with {}",
                    answer.status()
                )),
                Err(error) => Some(format!("the message could not be sent: {error}")),
            };
            // A request the server did not take is answered here, so the call ends now.
            if let (Some(why), Some(id)) = (refused, request) {
                let error = JsonRpcError {
                    jsonrpc: Default::default(),
                    id: Some(id),
                    error: ErrorData::internal_error(why, None),
                };
                let _ = replies.send(JsonRpcMessage::Error(error)).await;
            }
            Ok::<_, std::io::Error>((client, endpoint, replies))
        },
    ));
    let stream = futures_util::stream::poll_fn(move |cx| inbox.poll_recv(cx));
    Ok((sink, stream))
}

/// The endpoint an `endpoint` event names, relative to the stream's URL; only on the
/// stream's own origin, so that the server cannot send the upstream's credentials elsewhere.
fn endpoint(stream: &Url, named: &str) -> Result<Url, String> {
    let endpoint = stream
        .join(named.trim())
        .map_err(|e| format!("its endpoint `{named}` is not a URL: {e}"))?;
    if endpoint.origin() != stream.origin() {
        return Err(format!(
            "its endpoint `{endpoint}` is not on the origin of its event stream; the gateway \
             posts the upstream's credentials only there"
        ));
    }
    Ok(endpoint)
}

/// The events of an event stream's `body`, read with halo-protocol's decoder: until the body
/// ends, or fails or sends an event past [`MAX_EVENT`] (then, after the events before it, an
/// error saying so).
fn events(
    body: impl Stream<Item = reqwest::Result<Bytes>> + Send + Unpin + 'static,
) -> impl Stream<Item = Result<SseEvent, String>> + Send + 'static {
    let reading = Reading {
        body,
        decoder: SseDecoder::new(MAX_EVENT),
        queue: VecDeque::new(),
        failed: None,
        over: false,
    };
    futures_util::stream::unfold(reading, |mut reading| async move {
        loop {
            if let Some(event) = reading.queue.pop_front() {
                return Some((Ok(event), reading));
            }
            if let Some(failed) = reading.failed.take() {
                reading.over = true;
                return Some((Err(failed), reading));
            }
            if reading.over {
                return None;
            }
            match reading.body.next().await? {
                Ok(chunk) => {
                    if let Err(error) = reading.decoder.push(&chunk, &mut reading.queue) {
                        reading.failed = Some(error.to_string());
                    }
                }
                Err(error) => reading.failed = Some(error.to_string()),
            }
        }
    })
}

/// An event stream being read by [`events`].
struct Reading<B> {
    body: B,
    decoder: SseDecoder,
    /// Events read, not yet handed on.
    queue: VecDeque<SseEvent>,
    /// Why the stream cannot go on, handed on after the queued events.
    failed: Option<String>,
    over: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_endpoint_stays_on_the_streams_origin() {
        let stream: Url = "http://127.0.0.1:3001/sse".parse().unwrap();
        assert_eq!(
            endpoint(&stream, "/message?sessionId=7").unwrap().as_str(),
            "http://127.0.0.1:3001/message?sessionId=7"
        );
        assert_eq!(
            endpoint(&stream, "messages/?session_id=a")
                .unwrap()
                .as_str(),
            "http://127.0.0.1:3001/messages/?session_id=a"
        );
        for elsewhere in [
            "http://evil.example/steal",
            "//evil.example/x",
            "https://127.0.0.1:3001/m",
        ] {
            assert!(endpoint(&stream, elsewhere).is_err(), "{elsewhere}");
        }
    }
}
