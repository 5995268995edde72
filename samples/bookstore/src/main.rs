//! `bookstore`: serves the sample bookstore API with HALO discovery.
//!
//! ```text
//! bookstore --addr 127.0.0.1:3000
//! curl -X OPTIONS http://127.0.0.1:3000/ -H 'Accept: application/llm+json'
//! ```

use std::process::ExitCode;

use bookstore::cli::Cli;
use clap::Parser;
use tokio::net::TcpListener;
use tracing_subscriber::EnvFilter;

#[tokio::main]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    tracing_subscriber::fmt()
        .with_env_filter(
            EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| EnvFilter::new("bookstore=info,tower_http=info")),
        )
        .init();

    let listener = match TcpListener::bind(&cli.addr).await {
        Ok(listener) => listener,
        Err(error) => {
            eprintln!("bookstore: cannot listen on {}: {error}", cli.addr);
            return ExitCode::FAILURE;
        }
    };
    let addr = match listener.local_addr() {
        Ok(addr) => addr,
        Err(error) => {
            eprintln!("bookstore: cannot read the bound address: {error}");
            return ExitCode::FAILURE;
        }
    };
    println!("bookstore listening on http://{addr}");
    println!("discover it: curl -X OPTIONS http://{addr}/ -H 'Accept: application/llm+json'");
    println!("OpenAPI:     curl http://{addr}/openapi.json");

    let served = axum::serve(listener, bookstore::app())
        .with_graceful_shutdown(shutdown_signal())
        .await;
    match served {
        Ok(()) => {
            tracing::info!("bookstore stopped");
            ExitCode::SUCCESS
        }
        Err(error) => {
            eprintln!("bookstore: server error: {error}");
            ExitCode::FAILURE
        }
    }
}

/// Resolves on Ctrl-C (and on SIGTERM on Unix), letting in-flight requests finish.
async fn shutdown_signal() {
    let ctrl_c = async {
        if let Err(error) = tokio::signal::ctrl_c().await {
            tracing::warn!(%error, "cannot listen for Ctrl-C");
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(error) => {
                tracing::warn!(%error, "cannot listen for SIGTERM");
                std::future::pending::<()>().await;
            }
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {},
        () = terminate => {},
    }
    tracing::info!("shutting down");
}
