//! Slow and idle clients cannot hold the server ([`bookstore::serve`]): a connection that does
//! not send a request's headers in time is closed, a kept-alive connection left idle too, and
//! past the connection cap new connections wait until others close. Over real sockets on
//! loopback, with short limits and generous bounds (nothing here measures speed).

use crate::support;

use std::time::{Duration, Instant};

use bookstore::Limits;
use bookstore::cli::Cli;
use reqwest::StatusCode;
use support::Server;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// The header timeout of these tests.
const HEADER_TIMEOUT: Duration = Duration::from_millis(300);
/// How long a test waits for what must happen: far longer than any limit it sets.
const PATIENCE: Duration = Duration::from_secs(5);

const GET_HEALTH: &[u8] = b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";

async fn serve(limits: Limits) -> Server {
    Server::start_with(bookstore::app(), limits).await
}

/// Reads until the server closes `stream`, and returns what it sent; panics when it is still
/// open after [`PATIENCE`].
async fn read_to_close(stream: &mut TcpStream) -> Vec<u8> {
    let mut received = Vec::new();
    let read = tokio::time::timeout(PATIENCE, async {
        let mut buffer = [0; 1024];
        loop {
            match stream.read(&mut buffer).await {
                Ok(0) | Err(_) => break, // closed, or reset
                Ok(n) => received.extend_from_slice(&buffer[..n]),
            }
        }
    })
    .await;
    assert!(
        read.is_ok(),
        "the connection is still open after {PATIENCE:?}; received {:?}",
        String::from_utf8_lossy(&received)
    );
    received
}

/// Reads one response to `GET /health` (its body is `ok`), within [`PATIENCE`].
async fn read_health(stream: &mut TcpStream) -> String {
    let mut received = Vec::new();
    tokio::time::timeout(PATIENCE, async {
        let mut buffer = [0; 1024];
        while !received.ends_with(b"\r\n\r\nok") {
            let n = stream.read(&mut buffer).await.expect("read a response");
            assert!(n > 0, "closed before the response ended: {received:?}");
            received.extend_from_slice(&buffer[..n]);
        }
    })
    .await
    .expect("a response in time");
    String::from_utf8(received).expect("an ASCII response")
}

#[tokio::test]
async fn a_connection_that_sends_nothing_is_closed_after_the_header_timeout() {
    let server = serve(Limits::default().header_timeout(HEADER_TIMEOUT)).await;
    let opened = Instant::now();
    let mut stream = TcpStream::connect(server.addr).await.unwrap();
    let received = read_to_close(&mut stream).await;
    assert!(received.is_empty(), "{received:?}");
    // Timers never fire early: this was the header timeout, not something else.
    assert!(opened.elapsed() >= HEADER_TIMEOUT, "{:?}", opened.elapsed());
}

#[tokio::test]
async fn a_slowloris_is_closed_although_it_keeps_sending() {
    let server = serve(Limits::default().header_timeout(HEADER_TIMEOUT)).await;
    let stream = TcpStream::connect(server.addr).await.unwrap();
    let (mut reader, mut writer) = stream.into_split();
    // A request line, then one more header every 50 ms, never the blank line that ends them.
    let trickle = tokio::spawn(async move {
        writer.write_all(b"GET /health HTTP/1.1\r\n").await?;
        for n in 0.. {
            tokio::time::sleep(Duration::from_millis(50)).await;
            writer
                .write_all(format!("X-Slow-{n}: 1\r\n").as_bytes())
                .await?;
        }
        Ok::<_, std::io::Error>(())
    });
    let read = tokio::time::timeout(PATIENCE, async {
        let mut received = Vec::new();
        let mut buffer = [0; 1024];
        loop {
            match reader.read(&mut buffer).await {
                Ok(0) | Err(_) => break received,
                Ok(n) => received.extend_from_slice(&buffer[..n]),
            }
        }
    })
    .await;
    trickle.abort();
    let received = read.expect("the slowloris is still connected");
    assert!(
        !String::from_utf8_lossy(&received).contains(" 200 "),
        "{received:?}"
    );
}

#[tokio::test]
async fn headers_sent_in_time_are_answered_and_an_idle_keep_alive_connection_is_closed() {
    let server = serve(Limits::default().header_timeout(HEADER_TIMEOUT)).await;
    let mut stream = TcpStream::connect(server.addr).await.unwrap();
    for _ in 0..2 {
        stream.write_all(GET_HEALTH).await.unwrap();
        let response = read_health(&mut stream).await;
        assert!(response.starts_with("HTTP/1.1 200 OK\r\n"), "{response}");
        // Kept alive: the server did not say it would close.
        assert!(
            !response.to_ascii_lowercase().contains("connection: close"),
            "{response}"
        );
    }
    // Then idle: closed after the header timeout, having sent nothing more.
    let idle = Instant::now();
    let received = read_to_close(&mut stream).await;
    assert!(received.is_empty(), "{received:?}");
    assert!(idle.elapsed() >= HEADER_TIMEOUT, "{:?}", idle.elapsed());
}

#[tokio::test]
async fn past_the_connection_cap_new_connections_wait_until_others_close() {
    // Long header timeout: only the cap is at work here.
    let limits = Limits::default()
        .header_timeout(Duration::from_secs(60))
        .max_connections(2);
    let server = serve(limits).await;
    // Two connections, each answered once (so accepted) and kept open.
    let mut held = Vec::new();
    for _ in 0..2 {
        let mut stream = TcpStream::connect(server.addr).await.unwrap();
        stream.write_all(GET_HEALTH).await.unwrap();
        read_health(&mut stream).await;
        held.push(stream);
    }
    // A third connects (the kernel completes the handshake) but is not served.
    let mut third = TcpStream::connect(server.addr).await.unwrap();
    third.write_all(GET_HEALTH).await.unwrap();
    let mut byte = [0; 1];
    let early = tokio::time::timeout(Duration::from_millis(500), third.read(&mut byte)).await;
    assert!(early.is_err(), "served past the cap: {early:?}");
    // One closes: the third is accepted and answered.
    drop(held.pop());
    let response = read_health(&mut third).await;
    assert!(response.starts_with("HTTP/1.1 200 OK\r\n"), "{response}");
    // Under the cap again, an ordinary client is served as usual.
    drop(third);
    let client = reqwest::Client::builder()
        .timeout(PATIENCE)
        .build()
        .unwrap();
    let health = client
        .get(format!("{}/health", server.base))
        .send()
        .await
        .expect("served under the cap");
    assert_eq!(health.status(), StatusCode::OK);
    assert_eq!(health.text().await.unwrap(), "ok");
}

#[tokio::test]
async fn shutdown_closes_idle_connections_and_returns() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let served = tokio::spawn(bookstore::serve(
        listener,
        bookstore::app(),
        Limits::default(),
        async move {
            let _ = stopped.await;
        },
    ));
    let mut stream = TcpStream::connect(addr).await.unwrap();
    stream.write_all(GET_HEALTH).await.unwrap();
    read_health(&mut stream).await;
    stop.send(()).unwrap();
    // The kept-alive connection is closed at once (not after the 10 s header timeout), and
    // `serve` returns.
    read_to_close(&mut stream).await;
    tokio::time::timeout(PATIENCE, served)
        .await
        .expect("serve returns after shutdown")
        .unwrap();
}

#[test]
fn the_limits_come_from_the_command_line() {
    let cli = Cli::parse_from_args([
        "bookstore",
        "--header-timeout",
        "0.3",
        "--max-connections",
        "2",
    ])
    .unwrap();
    assert_eq!(
        cli.limits(),
        Limits::default()
            .header_timeout(Duration::from_millis(300))
            .max_connections(2)
    );
    if std::env::var_os("HALO_HEADER_TIMEOUT").is_none()
        && std::env::var_os("HALO_MAX_CONNECTIONS").is_none()
    {
        let cli = Cli::parse_from_args(["bookstore"]).unwrap();
        assert_eq!(cli.limits(), Limits::default());
        assert_eq!(cli.limits().header_timeout, Duration::from_secs(10));
        assert_eq!(cli.limits().max_connections, 512);
    }
    for (flag, bad) in [
        ("--header-timeout", "0"),
        ("--header-timeout", "-1"),
        ("--header-timeout", "soon"),
        ("--header-timeout", "NaN"),
        ("--header-timeout", "3601"),
        ("--max-connections", "0"),
        ("--max-connections", "-5"),
        ("--max-connections", "many"),
    ] {
        let error = Cli::parse_from_args(["bookstore", &format!("{flag}={bad}")]).unwrap_err();
        assert_eq!(
            error.kind(),
            clap::error::ErrorKind::ValueValidation,
            "{flag} {bad}"
        );
    }
}
