//! Support for the cross-crate tests of halo-rs.
//!
//! - [`spawn`] serves any axum [`Router`] on `127.0.0.1:<free port>` and hands back a
//!   [`TestServer`] that stops the server gracefully when dropped; [`closed_port`] is a
//!   loopback port nothing listens on, for the tests of endpoints that cannot be reached.
//! - [`python`] finds the interpreter of the interop virtualenv (the one that has the Python
//!   reference implementation, `halo-fastapi`, installed); [`interop_script`] finds the scripts
//!   that drive it.
//! - [`redis::RedisServer`] runs a throwaway `redis-server` on a loopback port, for the tests
//!   of the shared stores.
//! - [`oidc::AuthorizationServer`] runs a real OAuth 2.0 authorization server (node's
//!   `oidc-provider`) on a loopback port, for the tests of JWT bearer tokens.
//! - [`corpus`] reads the real OpenAPI documents kept as fixtures (GitHub's, Stripe's, and
//!   Slack's, OpenAI's, Discord's and Adyen's); [`slice::slice_bytes`] measures the OpenAPI
//!   slice of an operation, which its served schema is held to.
//! - [`tokens::cl100k`] counts tokens with a real tokenizer (bundled, no network).
//! - [`llm::ScriptedLlm`] is an OpenAI-compatible chat-completions server that streams the
//!   turns a test scripts, for the tests of agents.
//! - [`wait::eventually`] polls for what a test cannot be told about (a shared store catching
//!   up after an outage).
//! - [`held::Held`] is told of handlers that only a cancel ends: that one arrived, that one
//!   was dropped unfinished.
//! - [`bookstore::one_dune`] is the order tests of the bookstore sample place.
//! - [`json::strings`] and [`json::each_str`] read the lists of a JSON answer,
//!   [`json::fetch`] fetches one; [`sse::data_events`] reads the events of an event stream
//!   and [`sse::post_streamed`] asks for one.
//!
//! ```no_run
//! # async fn run() {
//! let server = halo_tests::spawn(axum::Router::new()).await;
//! println!("serving on {}", server.base_url());
//! # }
//! ```

pub mod bookstore;
pub mod corpus;
pub mod generated;
pub mod haproxy;
pub mod held;
pub mod json;
pub mod llm;
pub mod mcp;
pub mod mcp_servers;
pub mod oidc;
mod program;
pub mod redis;
pub mod redis_cluster;
pub mod shared_redis;
pub mod slice;
pub mod sse;
pub mod tokens;
pub mod wait;

/// The README and the guide under `docs/`: their Rust code blocks are doctests of this crate
/// (`cargo test -p halo-tests --doc`), compiled against the dev-dependencies, and run unless
/// marked `no_run`.
#[cfg(doctest)]
mod guide {
    #[doc = include_str!("../../README.md")]
    mod readme {}
    #[doc = include_str!("../../docs/README.md")]
    mod index {}
    #[doc = include_str!("../../docs/adding-the-layer.md")]
    mod adding_the_layer {}
    #[doc = include_str!("../../docs/discovery.md")]
    mod discovery {}
    #[doc = include_str!("../../docs/execution.md")]
    mod execution {}
    #[doc = include_str!("../../docs/governance.md")]
    mod governance {}
    #[doc = include_str!("../../docs/approvals.md")]
    mod approvals {}
    #[doc = include_str!("../../docs/identity.md")]
    mod identity {}
    #[doc = include_str!("../../docs/mcp.md")]
    mod mcp {}
    #[doc = include_str!("../../docs/large-apis.md")]
    mod large_apis {}
    #[doc = include_str!("../../docs/agents.md")]
    mod agents {}
    #[doc = include_str!("../../docs/playground.md")]
    mod playground {}
    #[doc = include_str!("../../docs/client.md")]
    mod client {}
    #[doc = include_str!("../../docs/lint.md")]
    mod lint {}
    #[doc = include_str!("../../docs/performance.md")]
    mod performance {}
    #[doc = include_str!("../../docs/crates.md")]
    mod crates {}
    #[doc = include_str!("../../docs/dependencies.md")]
    mod dependencies {}
    #[doc = include_str!("../../docs/development.md")]
    mod development {}
}

use std::io;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use axum::Router;
use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// A server started by [`spawn`]. Dropping it asks the server to shut down gracefully (open
/// connections finish their requests); [`TestServer::shutdown`] also waits for it.
#[derive(Debug)]
pub struct TestServer {
    addr: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    task: Option<JoinHandle<io::Result<()>>>,
}

/// Serves `router` on `127.0.0.1` at a port the OS picks.
///
/// Must be called inside a Tokio runtime; the server runs as a task of that runtime.
///
/// # Panics
/// When no local port can be bound.
pub async fn spawn(router: Router) -> TestServer {
    let listener = TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind 127.0.0.1:0 for a test server");
    let addr = listener
        .local_addr()
        .expect("the test server's local address");
    let (stop, stopped) = oneshot::channel::<()>();
    let task = tokio::spawn(async move {
        axum::serve(listener, router)
            .with_graceful_shutdown(async move {
                // Either a stop signal or the sender being dropped ends the server.
                let _ = stopped.await;
            })
            .await
    });
    TestServer {
        addr,
        stop: Some(stop),
        task: Some(task),
    }
}

/// A loopback port nothing listens on (the OS picked it free, and it was let go at once).
///
/// # Panics
/// When no local port can be bound.
#[must_use]
pub fn closed_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
    listener.local_addr().expect("a local address").port()
}

impl TestServer {
    /// The address the server listens on.
    #[must_use]
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://127.0.0.1:<port>`, without a trailing slash.
    #[must_use]
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The absolute URL of `path` (which starts with `/`) on this server.
    #[must_use]
    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base_url())
    }

    /// Stops the server gracefully and waits until it has stopped.
    ///
    /// # Errors
    /// The server's own I/O error, if it failed while serving.
    ///
    /// # Panics
    /// If the server task panicked.
    pub async fn shutdown(mut self) -> io::Result<()> {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        match self.task.take() {
            Some(task) => task.await.expect("the test server task panicked"),
            None => Ok(()),
        }
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

/// The root of the halo-rs workspace (the folder holding the workspace `Cargo.toml`).
#[must_use]
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map_or_else(|| PathBuf::from("."), Path::to_path_buf)
}

/// The Python interpreter of the interop virtualenv, which has `halo-fastapi` installed.
///
/// `HALO_PYTHON` when set; otherwise `<workspace>/target/halo-venv/bin/python`, which
/// `bash .ci/test` creates.
///
/// # Panics
/// When `HALO_PYTHON` is not set and the virtualenv does not exist, or `HALO_PYTHON` names a
/// file that does not exist; the message says how to create the virtualenv.
#[must_use]
pub fn python() -> PathBuf {
    if let Some(path) = std::env::var_os("HALO_PYTHON").filter(|path| !path.is_empty()) {
        let path = PathBuf::from(path);
        assert!(
            path.exists(),
            "HALO_PYTHON={} does not exist",
            path.display()
        );
        return path;
    }
    let venv = workspace_root()
        .join("target")
        .join("halo-venv")
        .join("bin")
        .join("python");
    assert!(
        venv.exists(),
        "the interop virtualenv {} does not exist: run `bash .ci/test` once (it creates it with \
         Python >= 3.13 and halo-fastapi), or set HALO_PYTHON to a Python that has halo-fastapi installed",
        venv.display()
    );
    venv
}

/// The path of an interop script in `tests/interop/`, e.g. `halo_client_discovers.py`.
#[must_use]
pub fn interop_script(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("interop")
        .join(name)
}

/// Runs a helper program (an interop script, a browser test) to its end within `limit`, and
/// gives its standard output. Fails the test, with everything the program printed, when it
/// cannot start, takes longer than `limit` (it is then killed), or exits unsuccessfully.
///
/// # Panics
/// As said: that is how it fails the test.
pub async fn run_to_end(
    command: &mut tokio::process::Command,
    limit: std::time::Duration,
) -> String {
    let what = format!("{:?}", command.as_std());
    let output = tokio::time::timeout(limit, command.kill_on_drop(true).output())
        .await
        .unwrap_or_else(|_| panic!("{what} did not finish within {limit:?}"))
        .unwrap_or_else(|error| panic!("cannot run {what}: {error}"));
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "{what} exited with {}\n--- stdout ---\n{stdout}\n--- stderr ---\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    stdout
}

/// A `halo-fastapi` 0.3.0 server (the reference implementation) serving
/// `tests/interop/fastapi_server.py` on a free loopback port; killed on drop.
///
/// Its API: `GET|POST /notes`, `GET|DELETE /notes/{note_id}`; writes need
/// `Authorization: Bearer interop-token`.
#[derive(Debug)]
pub struct FastApiServer {
    child: std::process::Child,
    port: u16,
}

impl FastApiServer {
    /// The bearer token its write routes accept.
    pub const TOKEN: &'static str = "interop-token";

    /// Starts the server and waits until it listens.
    ///
    /// # Panics
    /// When the interpreter is missing (see [`python`]) or the server does not start.
    #[must_use]
    pub fn start() -> Self {
        use std::io::BufRead;
        let mut child = std::process::Command::new(python())
            .arg(interop_script("fastapi_server.py"))
            .env("PYTHONDONTWRITEBYTECODE", "1")
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap_or_else(|error| panic!("cannot start the halo-fastapi server: {error}"));
        let stdout = child.stdout.take().expect("piped stdout");
        let mut line = String::new();
        std::io::BufReader::new(stdout)
            .read_line(&mut line)
            .expect("the server prints its port");
        let port = line
            .trim()
            .strip_prefix("PORT ")
            .and_then(|port| port.parse().ok())
            .unwrap_or_else(|| panic!("the halo-fastapi server did not start: {line:?}"));
        // uvicorn accepts on the socket once it has bound it; wait until it answers.
        let addr = SocketAddr::from(([127, 0, 0, 1], port));
        let _listening = wait::until(std::time::Duration::from_secs(5), || {
            std::net::TcpStream::connect(addr).is_ok()
        });
        Self { child, port }
    }

    /// `http://127.0.0.1:<port>`.
    #[must_use]
    pub fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }
}

impl Drop for FastApiServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A utoipa modifier that declares the security scheme `bearer` (HTTP bearer tokens), for
/// test APIs whose operations say `security(("bearer" = [...]))`.
#[derive(Debug, Clone, Copy)]
pub struct BearerScheme;

impl utoipa::Modify for BearerScheme {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
        let bearer = HttpBuilder::new().scheme(HttpAuthScheme::Bearer).build();
        declare_scheme(openapi, "bearer", SecurityScheme::Http(bearer));
    }
}

/// A utoipa modifier that declares the security scheme `name`: an API key sent in the
/// request header `header`. As `#[openapi(modifiers(...))]` takes names, a test API declares
/// it as a constant:
///
/// ```
/// use halo_tests::{ApiKeyScheme, BearerScheme};
/// use utoipa::OpenApi;
///
/// const KEY: ApiKeyScheme = ApiKeyScheme { name: "key", header: "X-Key" };
///
/// #[derive(OpenApi)]
/// #[openapi(modifiers(&BearerScheme, &KEY))]
/// struct Doc;
///
/// let components = Doc::openapi().components.unwrap();
/// assert!(components.security_schemes.contains_key("key"));
/// ```
#[derive(Debug, Clone, Copy)]
pub struct ApiKeyScheme {
    /// The scheme's name, as operations name it in `security(...)`.
    pub name: &'static str,
    /// The request header that carries the key.
    pub header: &'static str,
}

impl utoipa::Modify for ApiKeyScheme {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        use utoipa::openapi::security::{ApiKey, ApiKeyValue, SecurityScheme};
        let key = ApiKey::Header(ApiKeyValue::new(self.header));
        declare_scheme(openapi, self.name, SecurityScheme::ApiKey(key));
    }
}

/// Adds `scheme`, named `name`, to the security schemes of `openapi`.
fn declare_scheme(
    openapi: &mut utoipa::openapi::OpenApi,
    name: &str,
    scheme: utoipa::openapi::security::SecurityScheme,
) {
    openapi
        .components
        .get_or_insert_with(Default::default)
        .add_security_scheme(name, scheme);
}

/// An in-process HALO discovery request: `OPTIONS uri` with `Accept: application/llm+json`,
/// for [`oneshot()`].
///
/// # Panics
/// When `uri` is not a valid request target.
#[must_use]
pub fn discovery_request(uri: &str) -> axum::http::Request<axum::body::Body> {
    axum::http::Request::builder()
        .method(axum::http::Method::OPTIONS)
        .uri(uri)
        .header("accept", "application/llm+json")
        .body(axum::body::Body::empty())
        .expect("a request")
}

/// Calls a clone of `service` once, in process, and reads the whole body, as a server would
/// write it: for benchmarks and tests that need no network.
///
/// # Panics
/// When the body cannot be read (an in-memory body always can).
pub async fn oneshot<S>(
    service: &S,
    request: axum::http::Request<axum::body::Body>,
) -> (axum::http::StatusCode, bytes::Bytes)
where
    S: tower::Service<
            axum::http::Request<axum::body::Body>,
            Response = axum::response::Response,
            Error = std::convert::Infallible,
        > + Clone,
{
    use http_body_util::BodyExt as _;
    use tower::ServiceExt as _;
    let Ok(response) = service.clone().oneshot(request).await;
    let status = response.status();
    let body = response
        .into_body()
        .collect()
        .await
        .expect("an in-memory body")
        .to_bytes();
    (status, body)
}

/// `OPTIONS url` with `Accept: application/llm+json` (and the bearer token, when given): the
/// manifest or schemas the server answers.
///
/// # Panics
/// When the request fails, the answer is not `200`, or its body is not JSON.
pub async fn discover(url: &str, bearer: Option<&str>) -> serde_json::Value {
    let mut request = reqwest::Client::new()
        .request(reqwest::Method::OPTIONS, url)
        .header("accept", "application/llm+json");
    if let Some(token) = bearer {
        request = request.bearer_auth(token);
    }
    let response = request.send().await.expect("a discovery answer");
    assert_eq!(response.status(), 200, "OPTIONS {url}");
    response.json().await.expect("a JSON discovery answer")
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use tokio::process::Command;

    use super::run_to_end;

    #[tokio::test]
    async fn a_program_that_succeeds_gives_its_output() {
        let mut command = Command::new("sh");
        command.args(["-c", "echo summary"]);
        assert_eq!(
            run_to_end(&mut command, Duration::from_secs(10)).await,
            "summary\n"
        );
    }

    #[tokio::test]
    #[should_panic(
        expected = "exited with exit status: 3\n--- stdout ---\nout\n\n--- stderr ---\nerr"
    )]
    async fn a_program_that_fails_fails_the_test_with_its_output() {
        let mut command = Command::new("sh");
        command.args(["-c", "echo out; echo err >&2; exit 3"]);
        run_to_end(&mut command, Duration::from_secs(10)).await;
    }

    #[tokio::test]
    #[should_panic(expected = "did not finish within 200ms")]
    async fn a_program_that_hangs_is_stopped() {
        let mut command = Command::new("sleep");
        command.arg("30");
        run_to_end(&mut command, Duration::from_millis(200)).await;
    }
}
