//! Serving the app over HTTP/1.1 with limits that keep slow or idle clients from holding the
//! server: a deadline for each request's headers, and a cap on open connections.
//!
//! `axum::serve` has neither, so the bookstore drives hyper itself:
//!
//! - **Header timeout** ([`Limits::header_timeout`], 10 s by default): a connection must send
//!   a request's complete headers within this time, counted from when the server starts
//!   waiting for them, or it is closed. hyper starts waiting as soon as a connection opens
//!   and again as soon as it has answered a request, so this is also the keep-alive timeout:
//!   a connection that sends nothing, a slowloris that trickles its headers, and a kept-alive
//!   connection left idle are all closed after it. It does not limit a request once its
//!   headers are in: a long handler or a long event stream is not cut.
//! - **Connection cap** ([`Limits::max_connections`], 512 by default): past it the server
//!   stops accepting. New connections wait in the kernel's listen backlog, holding no file
//!   descriptor of the process, and are served in turn as others close; when the backlog is
//!   full too, the kernel turns them away. Refusing them instead would take a descriptor to
//!   accept each one first, which is what runs out. 512 is half of the 1,024 open files a
//!   process commonly may have (`ulimit -n`), leaving the rest for the listener, the audit
//!   file, Redis and the model's connections: keep the cap below that limit when raising
//!   either. The cap cannot tell an attacker's connections from others: behind a flood of
//!   idle connections, a real one waits about one header timeout for every `max_connections`
//!   ahead of it.
//!
//! Only HTTP/1.1 is served, as before: hyper's header timeout is HTTP/1's, and HTTP/2 would need
//! idle limits of its own.
//!
//! ```no_run
//! # async fn run() -> std::io::Result<()> {
//! use std::time::Duration;
//!
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:3000").await?;
//! let limits = bookstore::Limits::default()
//!     .header_timeout(Duration::from_secs(5))
//!     .max_connections(256);
//! bookstore::serve(listener, bookstore::app(), limits, async {
//!     let _ = tokio::signal::ctrl_c().await;
//! })
//! .await;
//! # Ok(())
//! # }
//! ```

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::ConnectInfo;
use axum::extract::Request;
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tower_service::Service;

/// The default [`Limits::header_timeout`].
pub const DEFAULT_HEADER_TIMEOUT: Duration = Duration::from_secs(10);
/// The default [`Limits::max_connections`].
pub const DEFAULT_MAX_CONNECTIONS: usize = 512;

/// How long a client may take, and how many connections may be open at once (see the
/// [module documentation](self)).
///
/// ```
/// let limits = bookstore::Limits::default();
/// assert_eq!(limits.header_timeout, std::time::Duration::from_secs(10));
/// assert_eq!(limits.max_connections, 512);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Limits {
    /// How long a connection may take to send a request's headers, counted from when the
    /// server starts waiting for them (so also how long a kept-alive connection may stay
    /// idle).
    pub header_timeout: Duration,
    /// How many connections may be open at once; past it, new ones wait to be accepted. At
    /// least 1.
    pub max_connections: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            header_timeout: DEFAULT_HEADER_TIMEOUT,
            max_connections: DEFAULT_MAX_CONNECTIONS,
        }
    }
}

impl Limits {
    /// The same limits with `timeout` for a request's headers.
    #[must_use]
    pub fn header_timeout(mut self, timeout: Duration) -> Self {
        self.header_timeout = timeout;
        self
    }

    /// The same limits with at most `connections` open at once (at least 1).
    #[must_use]
    pub fn max_connections(mut self, connections: usize) -> Self {
        self.max_connections = connections;
        self
    }
}

/// Serves `app` on `listener` within `limits` until `shutdown` resolves, then stops accepting
/// and waits for the requests in flight to finish (idle connections are closed at once).
///
/// Handlers see the client's address as [`ConnectInfo<SocketAddr>`], as with axum's
/// `into_make_service_with_connect_info`, so anonymous callers get rate budgets of their own.
/// An error accepting a connection is logged and, unless it concerns only that connection,
/// waited out for a second (a process out of file descriptors gets some back as connections
/// close).
pub async fn serve(
    listener: TcpListener,
    app: Router,
    limits: Limits,
    shutdown: impl Future<Output = ()>,
) {
    let mut http = http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(limits.header_timeout);
    let slots = Arc::new(Semaphore::new(
        limits.max_connections.clamp(1, Semaphore::MAX_PERMITS),
    ));
    let connections = GracefulShutdown::new();
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        // A slot first: past the cap, nothing is accepted until a connection closes.
        let next = async {
            let slot = Arc::clone(&slots).acquire_owned().await;
            (slot, listener.accept().await)
        };
        let (slot, accepted) = tokio::select! {
            next = next => next,
            () = &mut shutdown => break,
        };
        let Ok(slot) = slot else { break }; // the semaphore is never closed
        let (stream, peer) = match accepted {
            Ok(accepted) => accepted,
            Err(error) => {
                accept_failed(&error).await;
                continue;
            }
        };
        let app = app.clone();
        let service = service_fn(move |mut request: Request<Incoming>| {
            request
                .extensions_mut()
                .insert(ConnectInfo::<SocketAddr>(peer));
            app.clone().call(request)
        });
        let connection = connections.watch(http.serve_connection(TokioIo::new(stream), service));
        tokio::spawn(async move {
            // Timeouts, resets and bad requests end here; none is the server's fault.
            if let Err(error) = connection.await {
                tracing::debug!(%error, "connection closed");
            }
            drop(slot);
        });
    }
    drop(listener);
    connections.shutdown().await;
}

/// Logs an accept error and, unless it concerns only the connection being accepted, waits a
/// second before the next attempt (as hyper 0.14 and axum do).
async fn accept_failed(error: &std::io::Error) {
    use std::io::ErrorKind::{ConnectionAborted, ConnectionRefused, ConnectionReset};

    if matches!(
        error.kind(),
        ConnectionAborted | ConnectionRefused | ConnectionReset
    ) {
        return;
    }
    tracing::error!(%error, "cannot accept a connection; trying again in a second");
    tokio::time::sleep(Duration::from_secs(1)).await;
}
