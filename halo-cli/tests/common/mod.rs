//! Running the `halo` binary in a test: its exit code and output.
#![allow(dead_code, unreachable_pub)]

use std::process::{Command, Stdio};

use rmcp::transport::TokioChildProcess;
use serde_json::Value;

/// What a run of `halo` left.
#[derive(Debug)]
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    /// The run, after asserting its exit code.
    pub fn expect(self, code: i32) -> Self {
        assert_eq!(self.code, code, "{self:#?}");
        self
    }

    /// Standard output as one JSON document.
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {self:#?}"))
    }

    /// Each line of standard output as JSON.
    pub fn json_lines(&self) -> Vec<Value> {
        self.stdout
            .lines()
            .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}")))
            .collect()
    }
}

/// `halo ARGS`, with none of the credentials or model settings of the environment.
pub fn halo(args: &[&str]) -> Run {
    halo_with_env(args, &[])
}

/// `halo ARGS` with `env` set, and none of the credentials or model settings of the
/// environment otherwise.
pub fn halo_with_env(args: &[&str], env: &[(&str, &str)]) -> Run {
    let mut command = Command::new(env!("CARGO_BIN_EXE_halo"));
    command.args(args);
    for name in [
        "HALO_BEARER",
        "HALO_API_KEY",
        "HALO_OAUTH_TOKEN_URL",
        "HALO_OAUTH_CLIENT_ID",
        "HALO_OAUTH_CLIENT_SECRET",
        "HALO_LLM_BASE_URL",
        "HALO_LLM_MODEL",
        "HALO_LLM_API_KEY",
        "OPENAI_API_KEY",
        "OPENAI_BASE_URL",
    ] {
        command.env_remove(name);
    }
    command.envs(env.iter().copied());
    let output = command.output().expect("run halo");
    Run {
        code: output.status.code().expect("halo exits, not killed"),
        stdout: String::from_utf8(output.stdout).expect("UTF-8 stdout"),
        stderr: String::from_utf8(output.stderr).expect("UTF-8 stderr"),
    }
}

/// `halo ARGS` as an MCP server on a child process (its standard error passed through), with
/// none of the credentials of the environment: the transport an MCP client connects over.
pub fn halo_mcp(args: &[&str]) -> TokioChildProcess {
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_halo"));
    command
        .args(args)
        .env_remove("HALO_BEARER")
        .env_remove("HALO_API_KEY");
    let (transport, _) = TokioChildProcess::builder(command)
        .stderr(Stdio::inherit())
        .spawn()
        .expect("start halo mcp");
    transport
}

/// Serves `app` on `127.0.0.1:<free port>` from a background thread with its own runtime, for
/// as long as the test process lives; its base URL.
pub fn serve(app: axum::Router) -> String {
    let (ready, address) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime");
        runtime.block_on(async move {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
                .await
                .expect("bind 127.0.0.1:0");
            ready
                .send(listener.local_addr().expect("local address"))
                .expect("report the address");
            axum::serve(listener, app).await.expect("serve");
        });
    });
    format!("http://{}", address.recv().expect("the server starts"))
}
