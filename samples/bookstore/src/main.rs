//! `bookstore`: serves the sample bookstore API with HALO discovery.
//!
//! ```text
//! bookstore --addr 127.0.0.1:3000 [--audit audit.jsonl] [--redis redis://127.0.0.1:6379/ | --redis-cluster URL,URL,...] [--metrics]
//!           [--llm-base-url http://127.0.0.1:11434/v1 --llm-model qwen2.5:7b [--llm-api-key KEY]]
//!           [--weather-upstream http://127.0.0.1:8080/weather]
//!           [--oauth-issuer https://id.example.com [--oauth-audience https://books.example.com]]
//!           [--approval-webhook https://hooks.example.com/halo]  # secret in HALO_APPROVAL_WEBHOOK_SECRET
//!           [--header-timeout 10] [--max-connections 512]
//! curl -X OPTIONS http://127.0.0.1:3000/ -H 'Accept: application/llm+json'
//! ```

use std::io::Write;
use std::process::ExitCode;

use bookstore::cli::Cli;
use bookstore::{AppState, Options};
use clap::Parser;
use halo_agent::OpenAiProvider;
use halo_axum::{JsonLinesSink, JwtAuthenticator, Prometheus, ProtectedResource, RedisStore};
use tokio::net::TcpListener;
use tracing_subscriber::EnvFilter;

#[tokio::main]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| EnvFilter::new("bookstore=info,tower_http=info")),
        )
        .init();

    // The webhook's secret comes from the environment only, never from the command line.
    let secret = std::env::var(bookstore::cli::WEBHOOK_SECRET_ENV).ok();
    let approval_webhook = match cli.approval_webhook(secret.as_deref()) {
        Ok(hook) => hook,
        Err(error) => {
            eprintln!("bookstore: {error}");
            return ExitCode::FAILURE;
        }
    };
    drop(secret);

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
    let shutdown = shutdown_signal();
    // A closed stdout must not stop the server, so write errors are ignored (println! would panic).
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "bookstore listening on http://{addr}");
    let _ = writeln!(
        out,
        "discover it: curl -X OPTIONS http://{addr}/ -H 'Accept: application/llm+json'"
    );
    let _ = writeln!(
        out,
        "OpenAPI:     curl http://{addr}/openapi.json -H 'Authorization: Bearer demo-admin'"
    );
    let _ = writeln!(out, "playground:  http://{addr}/playground/ (in a browser)");
    if cli.metrics {
        let _ = writeln!(
            out,
            "metrics:     curl http://{addr}/metrics -H 'Authorization: Bearer demo-admin'"
        );
    }
    let _ = out.flush();
    drop(out);

    let mut options = Options::default();
    if let Some(path) = &cli.audit {
        match JsonLinesSink::open(path) {
            Ok(sink) => options = options.audit(sink),
            Err(error) => {
                eprintln!(
                    "bookstore: cannot open the audit file {}: {error}",
                    path.display()
                );
                return ExitCode::FAILURE;
            }
        }
    }
    let store = match (&cli.redis, cli.redis_cluster.as_slice()) {
        (Some(url), _) => Some(("--redis", RedisStore::open(url))),
        (None, []) => None,
        (None, urls) => Some(("--redis-cluster", RedisStore::open_cluster(urls))),
    };
    if let Some((flag, store)) = store {
        match store {
            // Reached on first use: a Redis that is down shows in the answers (503 for keyed
            // calls), not at start-up.
            Ok(store) => options = options.redis(store.prefix("bookstore:")),
            Err(error) => {
                eprintln!("bookstore: {flag}: {error}");
                return ExitCode::FAILURE;
            }
        }
    }
    if cli.metrics {
        match Prometheus::install() {
            Ok(prometheus) => options = options.metrics(prometheus),
            Err(error) => {
                eprintln!("bookstore: --metrics: {error}");
                return ExitCode::FAILURE;
            }
        }
    }
    if let (Some(base_url), Some(model)) = (&cli.llm_base_url, &cli.llm_model) {
        let mut provider = OpenAiProvider::builder().base_url(base_url).model(model);
        if let Some(key) = &cli.llm_api_key {
            provider = provider.api_key(key);
        }
        match provider.build() {
            Ok(provider) => options = options.llm(provider),
            Err(error) => {
                eprintln!("bookstore: --llm-base-url: {error}");
                return ExitCode::FAILURE;
            }
        }
        let mut out = std::io::stdout().lock();
        let _ = writeln!(
            out,
            "agent:       curl -N http://{addr}/agents/{}/run -H 'Authorization: Bearer demo-admin' \\\n             -H 'Accept: text/event-stream' -H 'Content-Type: application/json' -d '{{\"input\": \"Is Dune in stock?\"}}'",
            bookstore::agents::NAME
        );
        let _ = out.flush();
    }
    if let Some(hook) = approval_webhook {
        options = options.approval_webhook(hook);
    }
    if let Some(url) = cli.weather_upstream.clone() {
        options = options.weather_upstream(url);
    }
    if let Some(issuer) = &cli.oauth_issuer {
        let audience = cli
            .oauth_audience
            .clone()
            .unwrap_or_else(|| format!("http://{addr}"));
        let resource = ProtectedResource::new(audience.as_str(), [issuer.as_str()]).mcp("/mcp");
        let mut jwt = JwtAuthenticator::builder(issuer.as_str()).audience(audience.as_str());
        if let Some(mcp) = resource.mcp_identifier() {
            jwt = jwt.audience(mcp);
        }
        match jwt.build().await {
            Ok(jwt) => {
                let mut out = std::io::stdout().lock();
                let _ = writeln!(
                    out,
                    "oauth:       tokens of {issuer} for {audience}; metadata at {}",
                    resource.metadata_url()
                );
                let _ = out.flush();
                options = options.oauth(jwt, resource);
            }
            Err(error) => {
                eprintln!("bookstore: --oauth-issuer: {error}");
                return ExitCode::FAILURE;
            }
        }
    }
    let app = bookstore::app_with(AppState::seeded(), options);
    // Slow and idle connections are closed, and at most `--max-connections` are open.
    bookstore::serve(listener, app, cli.limits(), shutdown).await;
    tracing::info!("bookstore stopped");
    ExitCode::SUCCESS
}

/// Starts listening for Ctrl-C (and SIGTERM on Unix) right away, so that a signal sent as soon as
/// the address is printed is not lost; the returned future resolves when one arrives, letting
/// in-flight requests finish.
#[cfg(unix)]
fn shutdown_signal() -> impl Future<Output = ()> {
    use tokio::signal::unix::{SignalKind, signal};

    let listen = |kind: SignalKind, name: &'static str| {
        signal(kind)
            .inspect_err(|error| tracing::warn!(%error, "cannot listen for {name}"))
            .ok()
    };
    let interrupt = listen(SignalKind::interrupt(), "Ctrl-C");
    let terminate = listen(SignalKind::terminate(), "SIGTERM");
    async move {
        let wait = |signal: Option<tokio::signal::unix::Signal>| async move {
            match signal {
                Some(mut signal) => {
                    signal.recv().await;
                }
                None => std::future::pending::<()>().await,
            }
        };
        tokio::select! {
            () = wait(interrupt) => {},
            () = wait(terminate) => {},
        }
        tracing::info!("shutting down");
    }
}

/// Resolves on Ctrl-C, letting in-flight requests finish.
#[cfg(not(unix))]
fn shutdown_signal() -> impl Future<Output = ()> {
    async {
        if let Err(error) = tokio::signal::ctrl_c().await {
            tracing::warn!(%error, "cannot listen for Ctrl-C");
            std::future::pending::<()>().await;
        }
        tracing::info!("shutting down");
    }
}
