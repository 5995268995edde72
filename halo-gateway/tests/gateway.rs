//! `halo gateway` in front of an echo upstream, over real HTTP on loopback: what is
//! forwarded (and what never is), what the policies make the layer enforce, and what callers
//! see.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use axum::Router;
use axum::body::Bytes;
use axum::extract::Request;
use axum::response::{IntoResponse, Json};
use halo_gateway::{Config, Gateway};
use halo_tests::TestServer;
use reqwest::StatusCode;
use serde_json::{Value, json};

const OPS: &str = "ops-token-0123456789abcdef";
const READER: &str = "reader-token-0123456789abcdef";
const UPSTREAM_KEY: &str = "the-gateways-own-upstream-key";

/// An upstream that answers every request with what it received, and counts them.
async fn echo() -> (TestServer, Arc<AtomicUsize>) {
    let hits = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&hits);
    let app = Router::new().fallback(move |request: Request| {
        let hits = Arc::clone(&counted);
        async move {
            hits.fetch_add(1, Ordering::SeqCst);
            let (parts, body) = request.into_parts();
            let body: Bytes = axum::body::to_bytes(body, 1 << 20)
                .await
                .unwrap_or_default();
            let headers: serde_json::Map<String, Value> = parts
                .headers
                .iter()
                .map(|(k, v)| (k.to_string(), json!(v.to_str().unwrap_or("?"))))
                .collect();
            let status = match parts.uri.path() {
                "/v1/pets/500" => StatusCode::INTERNAL_SERVER_ERROR,
                _ => StatusCode::OK,
            };
            let answer = Json(json!({
                "method": parts.method.as_str(),
                "path": parts.uri.path(),
                "query": parts.uri.query(),
                "headers": headers,
                "body": String::from_utf8_lossy(&body),
            }));
            (
                status,
                [("set-cookie", "upstream-session=1"), ("x-upstream", "echo")],
                answer,
            )
                .into_response()
        }
    });
    (halo_tests::spawn(app).await, hits)
}

/// A small document of the kind vendors publish: API keys in a header and the query.
fn pets_document() -> Value {
    json!({
        "openapi": "3.0.3",
        "info": {"title": "Pets", "version": "1"},
        "servers": [{"url": "https://pets.example.com/v1"}],
        "security": [{"header_key": []}],
        "paths": {
            "/pets": {
                "get": {
                    "operationId": "listPets", "summary": "List pets", "tags": ["pets"],
                    "parameters": [
                        {"name": "limit", "in": "query", "schema": {"type": "integer", "maximum": 100}},
                        {"name": "api_key", "in": "query", "schema": {"type": "string"}}
                    ],
                    "responses": {"200": {"description": "The pets"}}
                },
                "post": {
                    "operationId": "createPet", "summary": "Add a pet", "tags": ["pets"],
                    "requestBody": {"required": true, "content": {"application/json": {"schema": {
                        "type": "object", "required": ["name"],
                        "properties": {"name": {"type": "string"}}}}}},
                    "responses": {"201": {"description": "Added"}}
                }
            },
            "/pets/{id}": {
                "parameters": [{"name": "id", "in": "path", "required": true, "schema": {"type": "string"}}],
                "get": {"operationId": "getPet", "summary": "One pet", "tags": ["pets"],
                        "responses": {"200": {"description": "The pet"}}},
                "delete": {"operationId": "deletePet", "summary": "Remove a pet", "tags": ["pets"],
                           "responses": {"204": {"description": "Removed"}}}
            }
        },
        "components": {"securitySchemes": {
            "header_key": {"type": "apiKey", "in": "header", "name": "X-Api-Key"},
            "query_key": {"type": "apiKey", "in": "query", "name": "api_key"}
        }}
    })
}

struct Running {
    url: String,
    hits: Arc<AtomicUsize>,
    gateway: Gateway,
    http: reqwest::Client,
    _dir: tempfile::TempDir,
    _servers: [TestServer; 2],
}

async fn start(policies: &str) -> Running {
    start_with(policies, "", echo().await).await
}

/// A gateway with `policies` and the top-level settings `extra`, in front of `upstream`.
async fn start_with(
    policies: &str,
    extra: &str,
    (upstream, hits): (TestServer, Arc<AtomicUsize>),
) -> Running {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("pets.json"), pets_document().to_string()).unwrap();
    let text = format!(
        r#"
listen: 127.0.0.1:0
auth:
  tokens:
    "${{OPS_TOKEN}}": {{ caller: ops, tenant: acme, scopes: [admin] }}
    "{READER}": {{ caller: reader, tenant: acme }}
approvals: {{ scope: admin }}
audit: audit.jsonl
{extra}
upstreams:
  pets:
    openapi: pets.json
    base_url: "{}/v1"
    headers: {{ X-Api-Key: "${{PETS_KEY}}" }}
policies:
{policies}
"#,
        upstream.url("")
    );
    let config = Config::from_text_with_env(&text, dir.path(), |name| match name {
        "OPS_TOKEN" => Some(OPS.to_owned()),
        "PETS_KEY" => Some(UPSTREAM_KEY.to_owned()),
        _ => None,
    })
    .unwrap();
    let gateway = Gateway::build(&config).await.unwrap();
    let server = halo_tests::spawn(gateway.router()).await;
    Running {
        url: server.url(""),
        _servers: [upstream, server],
        hits,
        gateway,
        http: reqwest::Client::new(),
        _dir: dir,
    }
}

const POLICIES: &str = r#"
  - match: { upstream: "*" }
    set: { timeout: 5s }
  - match: { upstream: pets, methods: [POST] }
    set: { rate: 2/minute }
  - match: { upstream: pets, tools: "*delete*" }
    set: { risk: L2, visible_to: { scopes: [admin] } }
"#;

#[tokio::test]
async fn calls_reach_the_upstream_with_its_credentials_and_never_the_callers() {
    let gw = start(POLICIES).await;
    let answer = gw
        .http
        .get(format!("{}/pets/pets?limit=3&api_key=callers-key", gw.url))
        .bearer_auth(READER)
        .header("cookie", "session=caller")
        .header("x-api-key", "callers-key")
        .header("x-request-id", "r-1")
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), StatusCode::OK);
    assert_eq!(answer.headers()["x-upstream"], "echo");
    assert!(answer.headers().get("set-cookie").is_none());
    let echo: Value = answer.json().await.unwrap();
    assert_eq!(echo["method"], "GET");
    assert_eq!(echo["path"], "/v1/pets");
    assert_eq!(echo["query"], "limit=3");
    let headers = &echo["headers"];
    assert_eq!(headers["x-api-key"], UPSTREAM_KEY);
    assert_eq!(headers["x-request-id"], "r-1");
    assert!(headers.get("authorization").is_none(), "{headers}");
    assert!(headers.get("cookie").is_none(), "{headers}");
    let text = echo.to_string();
    assert!(
        !text.contains(READER) && !text.contains("callers-key"),
        "{text}"
    );

    // A body is forwarded as it came.
    let answer = gw
        .http
        .post(format!("{}/pets/pets", gw.url))
        .bearer_auth(READER)
        .json(&json!({"name": "Rex"}))
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), StatusCode::OK);
    let echo: Value = answer.json().await.unwrap();
    assert_eq!(echo["body"], r#"{"name":"Rex"}"#);
    assert_eq!(echo["headers"]["content-type"], "application/json");
    assert_eq!(gw.hits.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn what_the_layer_refuses_never_reaches_the_upstream() {
    let gw = start(POLICIES).await;
    let get = |path: &str, token: Option<&str>| {
        let request = gw.http.get(format!("{}{path}", gw.url));
        match token {
            Some(token) => request.bearer_auth(token),
            None => request,
        }
    };
    // No credentials, bad credentials.
    let answer = get("/pets/pets", None).send().await.unwrap();
    assert_eq!(answer.status(), StatusCode::UNAUTHORIZED);
    let answer = get("/pets/pets", Some("not-a-token")).send().await.unwrap();
    assert_eq!(answer.status(), StatusCode::UNAUTHORIZED);
    // Arguments that do not fit the schema.
    let answer = get("/pets/pets?limit=many", Some(READER))
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), StatusCode::BAD_REQUEST);
    assert_eq!(answer.headers()["content-type"], "application/problem+json");
    let answer = gw
        .http
        .post(format!("{}/pets/pets", gw.url))
        .bearer_auth(READER)
        .json(&json!({"nom": "Rex"}))
        .send()
        .await
        .unwrap();
    assert!(answer.status().is_client_error(), "{}", answer.status());
    // Paths no tool describes.
    for path in ["/pets/nothing/here", "/elsewhere", "/pets"] {
        let answer = get(path, Some(READER)).send().await.unwrap();
        assert_eq!(answer.status(), StatusCode::NOT_FOUND, "{path}");
    }
    // A tool the caller lacks the scope for: refused, naming the scope to ask for.
    let answer = gw
        .http
        .delete(format!("{}/pets/pets/7", gw.url))
        .bearer_auth(READER)
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), StatusCode::FORBIDDEN);
    let challenge = answer.headers()["www-authenticate"].to_str().unwrap();
    assert!(challenge.contains("insufficient_scope"), "{challenge}");
    assert_eq!(gw.hits.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn policies_are_enforced_and_shown_to_the_model() {
    let gw = start(POLICIES).await;
    // Rate: two calls a minute.
    let post = || {
        gw.http
            .post(format!("{}/pets/pets", gw.url))
            .bearer_auth(READER)
            .json(&json!({"name": "Rex"}))
            .send()
    };
    assert_eq!(post().await.unwrap().status(), StatusCode::OK);
    assert_eq!(post().await.unwrap().status(), StatusCode::OK);
    let third = post().await.unwrap();
    assert_eq!(third.status(), StatusCode::TOO_MANY_REQUESTS);
    assert!(third.headers().contains_key("retry-after"));
    assert_eq!(gw.hits.load(Ordering::SeqCst), 2);

    // L2: an administrator's delete waits for approval, and is not run yet.
    let held = gw
        .http
        .delete(format!("{}/pets/pets/7", gw.url))
        .bearer_auth(OPS)
        .send()
        .await
        .unwrap();
    assert_eq!(held.status(), StatusCode::ACCEPTED);
    assert!(held.headers().contains_key("location"));
    assert_eq!(gw.hits.load(Ordering::SeqCst), 2);

    // Discovery: scoped to the caller, declarations in the schema.
    let discover = |token: &'static str, path: &str| {
        gw.http
            .request(reqwest::Method::OPTIONS, format!("{}{path}", gw.url))
            .header("accept", "application/llm+json")
            .bearer_auth(token)
            .send()
    };
    let manifest: Value = discover(READER, "/").await.unwrap().json().await.unwrap();
    let names = halo_tests::json::each_str(&manifest["tools"], "/name");
    assert_eq!(names, ["pets_listPets", "pets_createPet", "pets_getPet"]);
    let manifest: Value = discover(OPS, "/").await.unwrap().json().await.unwrap();
    assert_eq!(manifest["tools"].as_array().unwrap().len(), 4);
    let schemas: Value = discover(OPS, "/pets/pets/7")
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let schema = schemas
        .as_array()
        .unwrap()
        .iter()
        .find(|schema| schema["call"]["method"] == "DELETE")
        .unwrap_or_else(|| panic!("{schemas:#}"));
    assert_eq!(schema["effects"]["approval"], "required");
    assert_eq!(schema["effects"]["reversible"], false);
    assert_eq!(schema["resilience"]["timeout_ms"], 5000);
    let text = schema.to_string();
    assert!(
        !text.contains("api_key") && !text.contains("X-Api-Key"),
        "{text}"
    );

    // Explain: each field with the rule that set it.
    let explained = gw.gateway.explain("pets_deletePet").unwrap();
    assert!(explained.contains("approval     required"), "{explained}");
    assert!(explained.contains("policies[2]"), "{explained}");
    assert!(explained.contains("through risk L2"), "{explained}");
    assert!(
        explained.contains("policies[0] (upstream=*)"),
        "{explained}"
    );
    assert_eq!(gw.gateway.explain("deletePet"), Some(explained));
    assert!(gw.gateway.explain("nothing").is_none());
}

#[tokio::test]
async fn an_upstream_that_fails_is_a_problem_for_the_caller_not_the_gateway() {
    let gw = start("  - match: { upstream: \"*\" }\n    set: { circuit: 2/60s/1 }").await;
    let get = |id: &str| {
        gw.http
            .get(format!("{}/pets/pets/{id}", gw.url))
            .bearer_auth(READER)
            .send()
    };
    // Its own failures pass through, and open the circuit.
    assert_eq!(
        get("500").await.unwrap().status(),
        StatusCode::INTERNAL_SERVER_ERROR
    );
    assert_eq!(
        get("500").await.unwrap().status(),
        StatusCode::INTERNAL_SERVER_ERROR
    );
    let open = get("1").await.unwrap();
    assert_eq!(open.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(gw.hits.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn an_upstream_that_cannot_be_reached_is_a_bad_gateway() {
    // A port nothing listens on.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = closed.local_addr().unwrap();
    drop(closed);
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("pets.json"), pets_document().to_string()).unwrap();
    let text = format!(
        "upstreams:\n  pets: {{ openapi: pets.json, base_url: \"http://{address}\", headers: {{ X-Api-Key: secret-upstream-key }} }}\n"
    );
    let config = Config::from_text(&text, dir.path()).unwrap();
    let gateway = Gateway::build(&config).await.unwrap();
    let server = halo_tests::spawn(gateway.router()).await;
    let answer = reqwest::get(server.url("/pets/pets")).await.unwrap();
    assert_eq!(answer.status(), StatusCode::BAD_GATEWAY);
    assert_eq!(answer.headers()["content-type"], "application/problem+json");
    let text = answer.text().await.unwrap();
    assert!(text.contains("`pets` could not be reached"), "{text}");
    assert!(
        !text.contains(&address.to_string()) && !text.contains("secret"),
        "{text}"
    );
}

#[tokio::test]
async fn a_real_document_builds_and_forwards() {
    let (upstream, hits) = echo().await;
    let dir = tempfile::tempdir().unwrap();
    let github = halo_tests::corpus::Document::GitHub;
    std::fs::write(dir.path().join("github.json"), github.text()).unwrap();
    let text = format!(
        "upstreams:\n  github: {{ openapi: github.json, base_url: \"{}\" }}\n",
        upstream.url("")
    );
    let config = Config::from_text(&text, dir.path()).unwrap();
    let gateway = Gateway::build(&config).await.unwrap();
    assert_eq!(gateway.report().tools(), 771, "{}", gateway.report());
    let server = halo_tests::spawn(gateway.router()).await;
    let url = server.url("");
    let answer = reqwest::get(format!(
        "{url}/github/repos/octocat/hello/issues?state=open"
    ))
    .await
    .unwrap();
    assert_eq!(answer.status(), StatusCode::OK);
    let echo: Value = answer.json().await.unwrap();
    assert_eq!(echo["path"], "/repos/octocat/hello/issues");
    assert_eq!(echo["query"], "state=open");
    assert_eq!(hits.load(Ordering::SeqCst), 1);
    // An argument out of its enum never leaves.
    let answer = reqwest::get(format!(
        "{url}/github/repos/octocat/hello/issues?state=sideways"
    ))
    .await
    .unwrap();
    assert_eq!(answer.status(), StatusCode::BAD_REQUEST);
    assert_eq!(hits.load(Ordering::SeqCst), 1);
}

/// Two gateways on a Redis Cluster (`redis: {cluster: [...]}`) spend one rate budget.
#[tokio::test]
async fn two_gateways_on_a_redis_cluster_share_one_budget() {
    let cluster = halo_tests::redis_cluster::RedisCluster::start();
    let nodes: Vec<String> = cluster
        .urls()
        .iter()
        .map(|url| format!("\"{url}\""))
        .collect();
    let extra = format!("redis: {{ cluster: [{}] }}", nodes.join(", "));
    let (upstream, hits) = echo().await;
    let a = start_with(POLICIES, &extra, (upstream, Arc::clone(&hits))).await;
    let b = start_with(POLICIES, &extra, echo().await).await;
    let post = |gw: &Running| {
        gw.http
            .post(format!("{}/pets/pets", gw.url))
            .bearer_auth(READER)
            .json(&json!({"name": "Rex"}))
            .send()
    };
    assert_eq!(post(&a).await.unwrap().status(), StatusCode::OK);
    assert_eq!(post(&b).await.unwrap().status(), StatusCode::OK);
    for gw in [&a, &b] {
        let refused = post(gw).await.unwrap();
        assert_eq!(refused.status(), StatusCode::TOO_MANY_REQUESTS);
    }
    assert_eq!(
        a.hits.load(Ordering::SeqCst) + b.hits.load(Ordering::SeqCst),
        2
    );
    // Readiness: every primary of the cluster answers.
    let ready = a.http.get(format!("{}/ready", a.url)).send().await.unwrap();
    assert_eq!(ready.status(), StatusCode::OK);
}
