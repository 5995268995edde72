//! A TCP proxy in front of a server that cuts event streams part-way (a module of
//! [`sse`](super)).

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

use super::lock;

/// Where the proxy cuts an event stream: after `events` events (each ending with an empty
/// line, comments included) and then `bytes` more bytes.
#[derive(Debug, Clone, Copy)]
pub struct Cut {
    pub events: usize,
    pub bytes: usize,
}

impl Cut {
    /// After `events` whole events.
    pub fn after(events: usize) -> Self {
        Self { events, bytes: 0 }
    }
}

/// A TCP proxy in front of a server. Each event-stream answer that passes through it (known
/// by its `text/event-stream` head), and each WebSocket (known by its `101` head, its events
/// counted as the server's frames), takes the next [`Cut`] of the list, if any, and its
/// connection is closed there, both ways.
#[derive(Debug)]
pub struct Proxy {
    /// `http://127.0.0.1:<port>`.
    pub base: String,
    cuts: Arc<Mutex<VecDeque<Cut>>>,
    connections: Arc<AtomicUsize>,
    /// The request lines clients sent (`DELETE /x HTTP/1.1`), in order.
    requests: Arc<Mutex<Vec<String>>>,
    task: JoinHandle<()>,
}

impl Proxy {
    /// A proxy to `upstream` on a free port.
    pub async fn start(upstream: SocketAddr) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("local address");
        let cuts: Arc<Mutex<VecDeque<Cut>>> = Arc::default();
        let connections: Arc<AtomicUsize> = Arc::default();
        let requests: Arc<Mutex<Vec<String>>> = Arc::default();
        let task = tokio::spawn({
            let cuts = Arc::clone(&cuts);
            let connections = Arc::clone(&connections);
            let requests = Arc::clone(&requests);
            async move {
                loop {
                    let Ok((client, _)) = listener.accept().await else {
                        continue;
                    };
                    connections.fetch_add(1, Ordering::SeqCst);
                    let seen = Arc::clone(&requests);
                    tokio::spawn(relay(client, upstream, Arc::clone(&cuts), seen));
                }
            }
        });
        Self {
            base: format!("http://{addr}"),
            cuts,
            connections,
            requests,
            task,
        }
    }

    /// Cuts the next event streams, one cut each, in order.
    pub fn cut(&self, cuts: impl IntoIterator<Item = Cut>) {
        lock(&self.cuts).extend(cuts);
    }

    /// Cuts not yet made.
    pub fn cuts_left(&self) -> usize {
        lock(&self.cuts).len()
    }

    /// The request lines clients sent through it so far (`DELETE /x HTTP/1.1`), in order.
    pub fn requests(&self) -> Vec<String> {
        lock(&self.requests).clone()
    }

    /// Connections accepted so far.
    pub fn connections(&self) -> usize {
        self.connections.load(Ordering::SeqCst)
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Where the answer being relayed is.
#[derive(Clone, Copy)]
enum Relay {
    /// Looking for an event stream's head.
    Scanning,
    /// In an event stream's head, to be cut in its body.
    Head(Cut),
    /// In an event stream's body: events and then bytes passed so far.
    Body {
        cut: Cut,
        events: usize,
        bytes: usize,
    },
    /// In a WebSocket's `101` head, to be cut after some of the server's frames.
    SocketHead(Cut),
    /// In a WebSocket: the server's frames passed so far, and the bytes of the current one.
    Socket { cut: Cut, frames: usize },
}

/// The length of the WebSocket frame that `bytes` (a server's, unmasked) starts with, once
/// its header is whole.
fn frame_len(bytes: &[u8]) -> Option<usize> {
    let short = usize::from(*bytes.get(1)? & 0x7f);
    let (header, payload) = match short {
        126 => (
            4,
            usize::from(u16::from_be_bytes([*bytes.get(2)?, *bytes.get(3)?])),
        ),
        127 => {
            let mut len = [0u8; 8];
            len.copy_from_slice(bytes.get(2..10)?);
            (10, usize::try_from(u64::from_be_bytes(len)).ok()?)
        }
        n => (2, n),
    };
    Some(header + payload)
}

async fn relay(
    mut client: TcpStream,
    upstream: SocketAddr,
    cuts: Arc<Mutex<VecDeque<Cut>>>,
    seen: Arc<Mutex<Vec<String>>>,
) {
    let Ok(mut server) = TcpStream::connect(upstream).await else {
        return;
    };
    let (mut from_client, mut to_client) = client.split();
    let (mut from_server, mut to_server) = server.split();
    let requests = async {
        // Copied as it comes; each line that reads as a request line is noted.
        let mut line: Vec<u8> = Vec::new();
        let mut buffer = [0u8; 4096];
        loop {
            let n = match from_client.read(&mut buffer).await {
                Ok(0) | Err(_) => break,
                Ok(n) => n,
            };
            for &byte in &buffer[..n] {
                if byte != b'\n' {
                    // A request line is short; a body's long line is not one.
                    if line.len() < 8192 {
                        line.push(byte);
                    }
                    continue;
                }
                let text = String::from_utf8_lossy(&line);
                let text = text.trim_end();
                if text.ends_with(" HTTP/1.1") && text.starts_with(|c: char| c.is_ascii_uppercase())
                {
                    lock(&seen).push(text.to_owned());
                }
                line.clear();
            }
            if to_server.write_all(&buffer[..n]).await.is_err() {
                break;
            }
        }
        let _ = to_server.shutdown().await;
        // Keep the answers flowing after the client is done sending.
        std::future::pending::<()>().await;
    };
    let answers = async {
        let mut state = Relay::Scanning;
        let mut recent: Vec<u8> = Vec::new();
        // The bytes of the server's current WebSocket frame.
        let mut frame: Vec<u8> = Vec::new();
        let mut buffer = [0u8; 4096];
        loop {
            let n = match from_server.read(&mut buffer).await {
                Ok(0) | Err(_) => return,
                Ok(n) => n,
            };
            let mut end = n;
            let mut cut_here = false;
            for (at, &byte) in buffer[..n].iter().enumerate() {
                recent.push(byte);
                if recent.len() > 64 {
                    recent.drain(..32);
                }
                state = match state {
                    // The header line, not the words: a script or page passing through
                    // may well say `text/event-stream`.
                    Relay::Scanning
                        if recent
                            .to_ascii_lowercase()
                            .ends_with(b"\r\ncontent-type: text/event-stream") =>
                    {
                        match lock(&cuts).pop_front() {
                            Some(cut) => Relay::Head(cut),
                            None => Relay::Scanning,
                        }
                    }
                    Relay::Scanning if recent.ends_with(b"HTTP/1.1 101 ") => {
                        match lock(&cuts).pop_front() {
                            Some(cut) => Relay::SocketHead(cut),
                            None => Relay::Scanning,
                        }
                    }
                    Relay::SocketHead(cut) if recent.ends_with(b"\r\n\r\n") => {
                        frame.clear();
                        Relay::Socket { cut, frames: 0 }
                    }
                    Relay::Socket { cut, mut frames } => {
                        frame.push(byte);
                        if frame_len(&frame) == Some(frame.len()) {
                            frame.clear();
                            frames += 1;
                        }
                        Relay::Socket { cut, frames }
                    }
                    Relay::Head(cut) if recent.ends_with(b"\r\n\r\n") => {
                        recent.clear();
                        Relay::Body {
                            cut,
                            events: 0,
                            bytes: 0,
                        }
                    }
                    Relay::Body {
                        cut,
                        mut events,
                        mut bytes,
                    } => {
                        if events == cut.events {
                            bytes += 1;
                        } else if recent.ends_with(b"\n\n") {
                            recent.clear();
                            events += 1;
                        }
                        Relay::Body { cut, events, bytes }
                    }
                    other => other,
                };
                let socket_cut = matches!(state, Relay::Socket { cut, frames } if frames == cut.events && frame.is_empty());
                let sse_cut = matches!(state, Relay::Body { cut, events, bytes }
                    if events == cut.events && bytes == cut.bytes);
                if sse_cut || socket_cut {
                    end = at + 1;
                    cut_here = true;
                    break;
                }
            }
            if to_client.write_all(&buffer[..end]).await.is_err() {
                return;
            }
            if cut_here {
                // Everything passed so far reaches the client before the end of the stream:
                // a cut, not a reset that could lose the last events on their way.
                let _ = to_client.flush().await;
                let _ = to_client.shutdown().await;
                return;
            }
        }
    };
    tokio::select! {
        () = requests => {}
        () = answers => {}
    }
}
