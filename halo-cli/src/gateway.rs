//! `halo gateway`: serve, check and explain a gateway configuration, and pin its MCP
//! upstreams' tools (halo-gateway).

use std::net::SocketAddr;
use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

use halo_gateway::{Config, Gateway, Reloading};

use crate::cli::GatewayCommand;
use crate::failure::Failure;
use crate::output::{print_err, print_out};

/// Runs a `halo gateway` command.
pub(crate) async fn execute(command: GatewayCommand) -> Result<ExitCode, Failure> {
    match command {
        GatewayCommand::Schema => {
            let schema = serde_json::to_string_pretty(&Config::json_schema())
                .map_err(|e| Failure::other(e.to_string()))?;
            print_out(&format!("{schema}\n"));
            Ok(ExitCode::SUCCESS)
        }
        GatewayCommand::Check { config, tools } => {
            let Some(gateway) = build(&config).await else {
                return Ok(ExitCode::from(1));
            };
            let report = gateway.report();
            let mut out = String::new();
            out.push_str(&report.to_string());
            if tools {
                for upstream in report.upstreams() {
                    for tool in upstream.tools() {
                        out.push_str(&format!("{}: {tool}\n", upstream.name()));
                    }
                }
            }
            out.push_str(&format!("ok: {} tools\n", report.tools()));
            print_out(&out);
            Ok(ExitCode::SUCCESS)
        }
        GatewayCommand::Explain { config, tool } => {
            let Some(gateway) = build(&config).await else {
                return Ok(ExitCode::from(1));
            };
            match gateway.explain(&tool) {
                Some(explained) => {
                    print_out(explained);
                    Ok(ExitCode::SUCCESS)
                }
                None => {
                    print_err(&format!("error: no upstream has a tool named `{tool}`\n"));
                    Ok(ExitCode::from(1))
                }
            }
        }
        GatewayCommand::Pin { config } => {
            let Some(config) = read(&config) else {
                return Ok(ExitCode::from(1));
            };
            match halo_gateway::pin(&config).await {
                Ok(changes) => {
                    let mut out = String::new();
                    for (upstream, changes) in changes {
                        out.push_str(&pinned(&upstream, &changes));
                    }
                    print_out(&out);
                    Ok(ExitCode::SUCCESS)
                }
                Err(error) => {
                    print_err(&format!("error: {error}\n"));
                    Ok(ExitCode::from(1))
                }
            }
        }
        GatewayCommand::Run { config: path } => {
            let _ = tracing_subscriber::fmt()
                .with_env_filter(
                    tracing_subscriber::EnvFilter::try_from_default_env()
                        .unwrap_or_else(|_| "info".into()),
                )
                .with_writer(std::io::stderr)
                .try_init();
            let gateway = match Reloading::start(&path).await {
                Ok(gateway) => gateway,
                Err(error) => {
                    print_err(&format!("error: {}: {error}\n", path.display()));
                    return Ok(ExitCode::from(1));
                }
            };
            print_err(&gateway.report().to_string());
            let listener = tokio::net::TcpListener::bind(gateway.listen())
                .await
                .map_err(|e| {
                    Failure::other(format!("cannot listen on {}: {e}", gateway.listen()))
                })?;
            let address = listener
                .local_addr()
                .map_err(|e| Failure::other(e.to_string()))?;
            print_out(&format!("listening on http://{address}\n"));
            tokio::spawn(gateway.clone().watch(Duration::from_secs(1)));
            let app = gateway
                .router()
                .into_make_service_with_connect_info::<SocketAddr>();
            axum::serve(listener, app)
                .with_graceful_shutdown(async {
                    let _ = tokio::signal::ctrl_c().await;
                })
                .await
                .map_err(|e| Failure::other(format!("the server stopped: {e}")))?;
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// What pinning `upstream` changed, a line each.
fn pinned(upstream: &str, changes: &halo_gateway::PinChanges) -> String {
    let mut out = format!("{upstream}: {} pinned as before", changes.kept);
    for (what, names) in [
        ("new", &changes.new),
        ("changed", &changes.changed),
        ("gone", &changes.removed),
    ] {
        if !names.is_empty() {
            out.push_str(&format!(", {what}: {}", names.join(", ")));
        }
    }
    out.push('\n');
    out
}

/// The configuration at `path`, or `None` once the reason is printed.
fn read(path: &Path) -> Option<Config> {
    match Config::from_path(path) {
        Ok(config) => Some(config),
        Err(error) => {
            print_err(&format!("error: {}: {error}\n", path.display()));
            None
        }
    }
}

async fn build(path: &Path) -> Option<Gateway> {
    build_from(&read(path)?).await
}

async fn build_from(config: &Config) -> Option<Gateway> {
    match Gateway::build(config).await {
        Ok(gateway) => Some(gateway),
        Err(error) => {
            print_err(&format!("error: {error}\n"));
            None
        }
    }
}
