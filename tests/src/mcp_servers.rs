//! MCP servers nobody here wrote, installed pinned in `tests/mcp-servers` (`npm ci` there;
//! `bash .ci/test` does): how to run each, over stdio or streamable HTTP.
//!
//! Node is `HALO_NODE` when set, else `node` on the `PATH` (Node.js 20 or later).

use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

/// A server of the `@modelcontextprotocol/servers` family.
#[derive(Debug, Clone, Copy)]
pub enum McpServer {
    /// `@modelcontextprotocol/server-everything`: every MCP feature, progress included.
    Everything,
    /// `@modelcontextprotocol/server-memory`: a knowledge graph kept in a file.
    Memory,
}

impl McpServer {
    /// Its entry script.
    ///
    /// # Panics
    /// When `tests/mcp-servers` has no `node_modules`.
    #[must_use]
    pub fn script(self) -> PathBuf {
        let folder = crate::workspace_root().join("tests/mcp-servers");
        let package = match self {
            Self::Everything => "server-everything",
            Self::Memory => "server-memory",
        };
        let script = folder
            .join("node_modules/@modelcontextprotocol")
            .join(package)
            .join("dist/index.js");
        assert!(
            script.is_file(),
            "{} is missing: run `npm ci` in {} (`bash .ci/test` does)",
            script.display(),
            folder.display()
        );
        script
    }

    /// The command that runs it over stdio: the program, then its arguments.
    #[must_use]
    pub fn stdio_command(self) -> Vec<String> {
        let mut command = vec![
            node().display().to_string(),
            self.script().display().to_string(),
        ];
        if let Self::Everything = self {
            command.push("stdio".to_owned());
        }
        command
    }
}

/// The command that runs `tests/mcp-servers/fastmcp_notes.py`, a small server written with
/// FastMCP (the official Python SDK's), over stdio: with [`python`](crate::python)'s Python.
#[must_use]
pub fn fastmcp_notes_command() -> Vec<String> {
    fastmcp_command("fastmcp_notes.py", &[])
}

/// The command that runs the FastMCP server of `tests/mcp-servers/<script>` over stdio,
/// with `args` (`fastmcp_trade.py` takes `trade` or `payment`).
#[must_use]
pub fn fastmcp_command(script: &str, args: &[&str]) -> Vec<String> {
    let script = crate::workspace_root()
        .join("tests/mcp-servers")
        .join(script);
    let mut command = vec![
        crate::python().display().to_string(),
        script.display().to_string(),
    ];
    command.extend(args.iter().map(|arg| (*arg).to_owned()));
    command
}

/// The Node.js program.
#[must_use]
pub fn node() -> PathBuf {
    std::env::var_os("HALO_NODE")
        .filter(|path| !path.is_empty())
        .map_or_else(|| PathBuf::from("node"), PathBuf::from)
}

/// `server-everything` over HTTP on a free loopback port, killed when dropped.
#[derive(Debug)]
pub struct EverythingOverHttp {
    child: tokio::process::Child,
    /// Its MCP endpoint: `http://127.0.0.1:<port>/mcp`, or `.../sse` over HTTP with SSE.
    pub url: String,
}

impl EverythingOverHttp {
    /// Starts it over streamable HTTP and waits until it listens.
    ///
    /// # Panics
    /// When it cannot be started, or does not listen within 20 s.
    pub async fn start() -> Self {
        Self::start_as("streamableHttp", "/mcp").await
    }

    /// Starts it over MCP's older HTTP+SSE transport (2024-11-05) alone, and waits until it
    /// listens.
    ///
    /// # Panics
    /// As [`start`](Self::start).
    pub async fn start_with_sse() -> Self {
        Self::start_as("sse", "/sse").await
    }

    async fn start_as(transport: &str, path: &str) -> Self {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|listener| listener.local_addr())
            .expect("a free port")
            .port();
        let child = tokio::process::Command::new(node())
            .arg(McpServer::Everything.script())
            .arg(transport)
            .env("PORT", port.to_string())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("server-everything starts (Node.js >= 20, or HALO_NODE)");
        let address = format!("127.0.0.1:{port}");
        for _ in 0..400 {
            if tokio::net::TcpStream::connect(&address).await.is_ok() {
                return Self {
                    child,
                    url: format!("http://{address}{path}"),
                };
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("server-everything did not listen on {address} within 20 s");
    }
}

impl Drop for EverythingOverHttp {
    fn drop(&mut self) {
        let _ = self.child.start_kill();
    }
}
