//! A real OAuth 2.0 authorization server on a loopback port, for the tests of
//! `halo_axum::JwtAuthenticator`: node's `oidc-provider` (pinned in `tests/oidc`, installed
//! with `npm ci` there, which `bash .ci/test` does), run by `tests/oidc/server.mjs`.
//!
//! One confidential client may use the client-credentials grant with a resource indicator
//! (RFC 8707); the access tokens are JWTs (RFC 9068) signed with RS256, for that resource.
//! Node is `HALO_NODE` when set, else `node` on the `PATH` (Node.js 20 or later). A missing
//! Node or `node_modules` fails the test with a message that says what to install.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::Value;

/// The client the server knows.
pub const CLIENT_ID: &str = "halo-test-agent";
/// Its secret (HTTP Basic or form parameters, RFC 6749 §2.3.1).
pub const CLIENT_SECRET: &str = "halo-test-agent-secret-that-is-long-enough";

/// The API's own client at the server, which asks the introspection endpoint about tokens.
pub const API_CLIENT_ID: &str = "halo-test-api";
/// The secret of [`API_CLIENT_ID`].
pub const API_CLIENT_SECRET: &str = "halo-test-api-secret-that-is-long-enough";

/// What kind of access tokens a server issues.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tokens {
    /// JWTs for the resource, also to a token request that names none.
    Jwt,
    /// JWTs for the resource to a request that names it; else an opaque token for none.
    JwtOnlyForTheResource,
    /// Opaque tokens for the resource, to be introspected.
    Opaque,
}

/// An `oidc-provider` process started for a test; killed on drop.
#[derive(Debug)]
pub struct AuthorizationServer {
    child: Child,
    issuer: String,
}

impl AuthorizationServer {
    /// Starts a server that issues tokens for `resource` (their `aud`), knows `scopes`, and
    /// grants its one client (`CLIENT_ID`) any of `client_scopes`; waits until it listens.
    ///
    /// # Panics
    /// When Node or `tests/oidc/node_modules` is missing, or the server does not start
    /// within 30 s.
    #[must_use]
    pub fn start(resource: &str, scopes: &[&str], client_scopes: &[&str]) -> Self {
        Self::launch(resource, scopes, client_scopes, Tokens::Jwt)
    }

    /// Starts a server as [`start`](Self::start) does, except that its tokens for `resource`
    /// are opaque: the API asks the introspection endpoint (RFC 7662) about them, as the
    /// client [`API_CLIENT_ID`] with [`API_CLIENT_SECRET`] (HTTP Basic).
    ///
    /// # Panics
    /// As [`start`](Self::start).
    #[must_use]
    pub fn start_opaque(resource: &str, scopes: &[&str], client_scopes: &[&str]) -> Self {
        Self::launch(resource, scopes, client_scopes, Tokens::Opaque)
    }

    /// Starts a server as [`start`](Self::start) does, except that a token request without
    /// a `resource` (RFC 8707) gets an opaque token for no resource, which the API refuses:
    /// a client must find the resource (from the API's RFC 9728 metadata) to get a JWT.
    ///
    /// # Panics
    /// As [`start`](Self::start).
    #[must_use]
    pub fn start_without_default_resource(
        resource: &str,
        scopes: &[&str],
        client_scopes: &[&str],
    ) -> Self {
        Self::launch(
            resource,
            scopes,
            client_scopes,
            Tokens::JwtOnlyForTheResource,
        )
    }

    fn launch(resource: &str, scopes: &[&str], client_scopes: &[&str], tokens: Tokens) -> Self {
        let folder = crate::workspace_root().join("tests/oidc");
        assert!(
            folder.join("node_modules/oidc-provider").is_dir(),
            "{} has no node_modules: run `npm ci` there (`bash .ci/test` does)",
            folder.display()
        );
        let node = std::env::var_os("HALO_NODE")
            .filter(|path| !path.is_empty())
            .map_or_else(|| PathBuf::from("node"), PathBuf::from);
        let mut child = Command::new(&node)
            .arg("server.mjs")
            .current_dir(&folder)
            .env("HALO_OIDC_RESOURCE", resource)
            .env("HALO_OIDC_SCOPES", scopes.join(" "))
            .env("HALO_OIDC_CLIENT_ID", CLIENT_ID)
            .env("HALO_OIDC_CLIENT_SECRET", CLIENT_SECRET)
            .env("HALO_OIDC_CLIENT_SCOPES", client_scopes.join(" "))
            .env(
                "HALO_OIDC_DEFAULT_RESOURCE",
                if tokens == Tokens::JwtOnlyForTheResource {
                    "0"
                } else {
                    "1"
                },
            )
            .env(
                "HALO_OIDC_TOKEN_FORMAT",
                if tokens == Tokens::Opaque {
                    "opaque"
                } else {
                    "jwt"
                },
            )
            .env("HALO_OIDC_API_CLIENT_ID", API_CLIENT_ID)
            .env("HALO_OIDC_API_CLIENT_SECRET", API_CLIENT_SECRET)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap_or_else(|error| {
                panic!(
                    "cannot start {} ({error}): the OIDC tests need Node.js >= 20; install it \
                     or set HALO_NODE",
                    node.display()
                )
            });
        // The first line of its output names the issuer, once it listens.
        let stdout = child.stdout.take().expect("piped stdout");
        let (sender, receiver) = mpsc::channel();
        // The thread keeps reading after the first line: the server logs notices to its
        // standard output too (on the first introspection, say), and a closed pipe would
        // make node exit.
        std::thread::spawn(move || {
            let mut lines = BufReader::new(stdout).lines();
            if let Some(Ok(line)) = lines.next() {
                let _ = sender.send(line);
            }
            lines.for_each(drop);
        });
        let line = receiver.recv_timeout(Duration::from_secs(30));
        let issuer = line
            .ok()
            .and_then(|line| serde_json::from_str::<Value>(&line).ok())
            .and_then(|started| started.get("issuer")?.as_str().map(str::to_owned));
        let Some(issuer) = issuer else {
            let _ = child.kill();
            let _ = child.wait();
            panic!("tests/oidc/server.mjs did not start within 30 s (see its stderr above)");
        };
        Self { child, issuer }
    }

    /// The issuer identifier (`http://127.0.0.1:<port>`).
    #[must_use]
    pub fn issuer(&self) -> &str {
        &self.issuer
    }

    /// Asks for an access token with the client-credentials grant, for `resource` and
    /// `scope` (space-separated): the token, or the server's error document.
    ///
    /// # Errors
    /// The server's answer when it is not a token.
    ///
    /// # Panics
    /// When the server cannot be reached.
    pub async fn client_credentials(&self, resource: &str, scope: &str) -> Result<String, Value> {
        let body = [
            ("grant_type", "client_credentials"),
            ("client_id", CLIENT_ID),
            ("client_secret", CLIENT_SECRET),
            ("resource", resource),
            ("scope", scope),
        ]
        .iter()
        .map(|(name, value)| format!("{name}={}", form_encode(value)))
        .collect::<Vec<_>>()
        .join("&");
        let answer: Value = reqwest::Client::new()
            .post(format!("{}/token", self.issuer))
            .header("content-type", "application/x-www-form-urlencoded")
            .body(body)
            .send()
            .await
            .expect("the authorization server answers")
            .json()
            .await
            .expect("the token endpoint answers JSON");
        match answer.get("access_token").and_then(Value::as_str) {
            Some(token) => Ok(token.to_owned()),
            None => Err(answer),
        }
    }
}

/// `text` as `application/x-www-form-urlencoded` writes it.
fn form_encode(text: &str) -> String {
    let mut encoded = String::with_capacity(text.len());
    for byte in text.bytes() {
        match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'*' => {
                encoded.push(char::from(byte));
            }
            b' ' => encoded.push('+'),
            _ => encoded.push_str(&format!("%{byte:02X}")),
        }
    }
    encoded
}

impl Drop for AuthorizationServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `token` with one character of its signature changed: a token whose signature does not
/// match.
#[must_use]
pub fn tampered(token: &str) -> String {
    let at = token.len().saturating_sub(20);
    let swapped = if token.get(at..=at) == Some("A") {
        "B"
    } else {
        "A"
    };
    format!("{}{swapped}{}", &token[..at], &token[at + 1..])
}
