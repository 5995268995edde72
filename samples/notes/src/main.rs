//! `notes`: serves the sample notes API (OpenAPI by aide) with HALO discovery.
//!
//! ```text
//! notes [--addr 127.0.0.1:3001]
//! curl -X OPTIONS http://127.0.0.1:3001/ -H 'Accept: application/llm+json'
//! ```

use std::io::Write;
use std::process::ExitCode;

use clap::Parser;
use tokio::net::TcpListener;

/// Runs the sample notes API, described to LLM agents over HALO.
#[derive(Debug, Parser)]
#[command(name = "notes", version, about)]
struct Cli {
    /// Address to listen on, as HOST:PORT (port 0 picks a free port).
    #[arg(long, env = "HALO_ADDR", default_value = "127.0.0.1:3001")]
    addr: String,
}

#[tokio::main]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    let listener = match TcpListener::bind(&cli.addr).await {
        Ok(listener) => listener,
        Err(error) => {
            eprintln!("notes: cannot listen on {}: {error}", cli.addr);
            return ExitCode::FAILURE;
        }
    };
    if let Ok(addr) = listener.local_addr() {
        // A closed stdout must not stop the server.
        let _ = writeln!(
            std::io::stdout(),
            "notes listening on http://{addr}\n\
             discover it: curl -X OPTIONS http://{addr}/ -H 'Accept: application/llm+json'"
        );
    }
    let shutdown = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    match axum::serve(listener, notes::app())
        .with_graceful_shutdown(shutdown)
        .await
    {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("notes: {error}");
            ExitCode::FAILURE
        }
    }
}
