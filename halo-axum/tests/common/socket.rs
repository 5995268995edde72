//! A raw WebSocket client of HALO streams (`halo-stream.v1`), for the tests of the WebSocket
//! binding: the upgrade (or its HTTP refusal), the messages sent and read as they are, and
//! the close code.

use std::time::Duration;

use futures_util::{SinkExt as _, StreamExt as _};
use serde_json::{Value, json};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::client::IntoClientRequest as _;
use tokio_tungstenite::tungstenite::protocol::CloseFrame;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::{self, Message};
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};

use super::client::Event;

const PATIENCE: Duration = Duration::from_secs(10);

/// An open HALO stream socket.
pub struct Socket(WebSocketStream<MaybeTlsStream<TcpStream>>);

/// An upgrade the server refused: its status, `Content-Type` and body.
#[derive(Debug)]
pub struct Refused {
    pub status: u16,
    pub content_type: String,
    pub body: Value,
}

/// What the server sent next.
#[derive(Debug)]
pub enum Received {
    Event(Event),
    /// A refusal message's problem.
    Problem(Value),
    /// A close frame: its code and reason.
    Closed(u16, String),
    /// The connection ended without a close frame.
    Ended,
}

/// Opens a stream of `method path` (a path and query) on the server at `base`
/// (`http://…`), with `headers` on the upgrade request.
pub async fn open(
    base: &str,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
) -> Result<Socket, Refused> {
    let url = format!("{}{path}", base.replacen("http://", "ws://", 1));
    let mut request = url.into_client_request().expect("a WebSocket request");
    let map = request.headers_mut();
    map.insert("sec-websocket-protocol", "halo-stream.v1".parse().unwrap());
    map.insert("halo-method", method.parse().unwrap());
    for (name, value) in headers {
        map.insert(
            tungstenite::http::HeaderName::from_bytes(name.as_bytes()).unwrap(),
            value.parse().unwrap(),
        );
    }
    match tokio_tungstenite::connect_async(request).await {
        Ok((socket, response)) => {
            assert_eq!(
                response.headers()["sec-websocket-protocol"],
                "halo-stream.v1",
                "the server chooses HALO's subprotocol"
            );
            Ok(Socket(socket))
        }
        Err(tungstenite::Error::Http(response)) => {
            let content_type = response
                .headers()
                .get("content-type")
                .map(|v| v.to_str().unwrap().to_owned())
                .unwrap_or_default();
            let body = response
                .body()
                .as_ref()
                .map(|bytes| serde_json::from_slice(bytes).unwrap_or(Value::Null))
                .unwrap_or(Value::Null);
            Err(Refused {
                status: response.status().as_u16(),
                content_type,
                body,
            })
        }
        Err(other) => panic!("the upgrade failed: {other}"),
    }
}

impl Socket {
    /// Sends the call message with `arguments`.
    pub async fn call(&mut self, arguments: Option<Value>) {
        let message = match arguments {
            Some(arguments) => json!({"type": "call", "arguments": arguments}),
            None => json!({"type": "call"}),
        };
        self.send(&message.to_string()).await;
    }

    /// Sends a text message.
    pub async fn send(&mut self, text: &str) {
        self.0
            .send(Message::text(text.to_owned()))
            .await
            .expect("sent");
    }

    /// Closes with `code`.
    pub async fn close(&mut self, code: u16) {
        let frame = CloseFrame {
            code: CloseCode::from(code),
            reason: "".into(),
        };
        let _ = self.0.close(Some(frame)).await;
    }

    /// What the server sends next (pings skipped).
    pub async fn next(&mut self) -> Received {
        loop {
            let message = tokio::time::timeout(PATIENCE, self.0.next())
                .await
                .expect("a message within the patience");
            let text = match message {
                None | Some(Err(_)) => return Received::Ended,
                Some(Ok(Message::Close(frame))) => {
                    let (code, reason) = frame.map_or((1005, String::new()), |frame| {
                        (u16::from(frame.code), frame.reason.as_str().to_owned())
                    });
                    return Received::Closed(code, reason);
                }
                Some(Ok(Message::Text(text))) => text,
                Some(Ok(_)) => continue,
            };
            let mut value: Value = serde_json::from_str(text.as_str()).expect("JSON messages");
            if value["type"] == "problem" && value.get("id").is_none() {
                return Received::Problem(value["data"].take());
            }
            let object = value.as_object_mut().expect("an object");
            let id = object
                .remove("id")
                .and_then(|id| id.as_u64())
                .expect("an id");
            let name = object["type"].as_str().expect("a type").to_owned();
            return Received::Event(Event {
                id,
                name,
                data: value,
            });
        }
    }

    /// The events up to the close: the events and the close code (`None`: no close frame).
    pub async fn read_to_close(&mut self) -> (Vec<Event>, Option<u16>) {
        let mut events = Vec::new();
        loop {
            match self.next().await {
                Received::Event(event) => events.push(event),
                Received::Problem(problem) => panic!("a refusal: {problem}"),
                Received::Closed(code, _) => return (events, Some(code)),
                Received::Ended => return (events, None),
            }
        }
    }

    /// The events until one named `name` (included).
    pub async fn until(&mut self, name: &str) -> Vec<Event> {
        let mut events = Vec::new();
        loop {
            match self.next().await {
                Received::Event(event) => {
                    let done = event.name == name;
                    events.push(event);
                    if done {
                        return events;
                    }
                }
                other => panic!("{other:?} before `{name}`"),
            }
        }
    }

    /// Drops the connection without a close frame (a cut).
    pub fn cut(self) {
        drop(self);
    }
}
