//! `/mcp` over real HTTP on loopback, driven by rmcp's streamable HTTP client: each caller
//! lists the tools it may see and calls them in process through the layer (credentials,
//! validation, limits, audit), errors come back as `isError` results with the problem
//! details, and only loopback hosts and origins are accepted by default. A call held for
//! approval is confirmed by a client that can be asked (accept approves it, decline denies
//! it), and waited for by any other until an approver decides over HTTP.

use crate::common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use axum::Json;
use axum::extract::{Path, Query, State};
use axum::http::request::Parts;
use axum::http::{HeaderName, StatusCode};
use common::audit::Records;
use common::gate::Runs;
use common::notes::{self, Note, Search};
use halo_axum::mcp::McpService;
use halo_axum::{
    ApprovalLimits, ApprovalQueue, Authenticator, HaloLayer, Principal, StaticAuthenticator,
    Unauthenticated, Validation, halo,
};
use halo_tests::mcp::{Confirming, call, call_through, search, text};
use halo_tests::{ApiKeyScheme, BearerScheme, TestServer, spawn};
use reqwest::header::{AUTHORIZATION, HeaderMap, HeaderValue};
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, ClientConfig, ClientRequest, ElicitationAction,
    ProgressNotificationParam, Tool,
};
use rmcp::service::{NotificationContext, PeerRequestOptions, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ClientHandler, RoleClient, ServiceExt as _};
use serde_json::{Value, json};
use tokio::sync::mpsc;
use utoipa::OpenApi;
use utoipa_axum::{router::OpenApiRouter, routes};

/// Read one note.
#[halo(why = "Use when you know the note's id")]
#[utoipa::path(get, path = "/notes/{id}", tags = ["notes", "read"],
    params(("id" = u64, Path, description = "The note's id")),
    responses((status = 200, body = Note), (status = 404)),
    security(("bearer" = ["notes:read"])))]
async fn get_note(Path(id): Path<u64>) -> Result<Json<Note>, StatusCode> {
    if id == 1 {
        Ok(Json(Note {
            id,
            text: "hello world".into(),
        }))
    } else {
        Err(StatusCode::NOT_FOUND)
    }
}

/// Search notes.
#[utoipa::path(get, path = "/notes", tags = ["notes", "read"], params(Search),
    responses((status = 200, body = Vec<Note>)))]
async fn search_notes(Query(search): Query<Search>) -> Json<Vec<Note>> {
    let text = format!("you searched for {}", search.q.unwrap_or_default());
    Json(vec![Note { id: 1, text }])
}

/// Count what is in stock.
#[utoipa::path(get, path = "/stock", tags = ["stock", "read"],
    responses((status = 200, body = Value)), security(("key" = [])))]
async fn stock() -> Json<Value> {
    Json(json!({"notebooks": 3}))
}

/// The security scheme `key`: a key in `X-Key`.
const KEY: ApiKeyScheme = ApiKeyScheme {
    name: "key",
    header: "X-Key",
};

#[derive(OpenApi)]
#[openapi(info(title = "Notes", version = "1.0.0"), modifiers(&BearerScheme, &KEY))]
struct Doc;

/// The notes app with `/mcp` mounted; `configure` adjusts the MCP service.
async fn serve(
    configure: impl FnOnce(halo_axum::mcp::McpBuilder) -> halo_axum::mcp::McpBuilder,
) -> (TestServer, Records) {
    let (router, api) = OpenApiRouter::with_openapi(Doc::openapi())
        .routes(routes!(get_note))
        .routes(routes!(search_notes, notes::create_note))
        .routes(routes!(stock))
        .split_for_parts();
    let audit = Records::default();
    let halo = HaloLayer::builder(api)
        .authenticator(notes::readers_and_writers("reader", "writer").api_key(
            HeaderName::from_static("x-key"),
            "secret-key",
            Principal::new("stock-keeper"),
        ))
        .audit(audit.clone())
        .validate(Validation::On)
        .build()
        .expect("valid metadata");
    let mcp = configure(McpService::builder(&halo, router.clone())).build();
    let app = router.layer(halo).nest_service("/mcp", mcp);
    (spawn(app).await, audit)
}

/// An rmcp client of `url` sending `headers` with every request.
async fn client(url: String, headers: &[(&str, &str)]) -> RunningService<RoleClient, ()> {
    client_with((), url, headers).await
}

/// An rmcp client of `url` whose server requests and notifications `handler` receives.
async fn client_with<H: ClientHandler>(
    handler: H,
    url: String,
    headers: &[(&str, &str)],
) -> RunningService<RoleClient, H> {
    handler
        .serve(transport(url, headers))
        .await
        .expect("an MCP session over HTTP")
}

/// rmcp's streamable HTTP transport to `url`, sending `headers` with every request.
fn transport(
    url: String,
    headers: &[(&str, &str)],
) -> StreamableHttpClientTransport<reqwest::Client> {
    let mut map = HeaderMap::new();
    for (name, value) in headers {
        map.insert(
            reqwest::header::HeaderName::from_bytes(name.as_bytes()).unwrap(),
            HeaderValue::from_str(value).unwrap(),
        );
    }
    let http = reqwest::Client::builder()
        .default_headers(map)
        .build()
        .unwrap();
    StreamableHttpClientTransport::with_client(
        http,
        StreamableHttpClientTransportConfig::with_uri(url),
    )
}

/// The tools' names, sorted.
fn names(tools: &[Tool]) -> Vec<&str> {
    let mut names: Vec<&str> = tools.iter().map(|tool| tool.name.as_ref()).collect();
    names.sort_unstable();
    names
}

fn tool<'a>(tools: &'a [Tool], name: &str) -> &'a Tool {
    tools.iter().find(|tool| tool.name == name).expect(name)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_caller_sees_and_calls_its_own_tools() {
    let (server, audit) = serve(|mcp| mcp).await;
    let url = server.url("/mcp");

    let anonymous = client(url.clone(), &[]).await;
    let tools = anonymous.list_all_tools().await.expect("tools/list");
    assert_eq!(names(&tools), ["search_notes"], "only the public tool");

    let reader = client(url.clone(), &[("authorization", "Bearer reader")]).await;
    let tools = reader.list_all_tools().await.expect("tools/list");
    assert_eq!(names(&tools), ["get_note", "search_notes"]);
    let get_note = tool(&tools, "get_note");
    assert_eq!(
        get_note.description.as_deref(),
        Some("Use when you know the note's id\n\nRead one note.")
    );
    let hints = get_note.annotations.as_ref().unwrap();
    assert_eq!(hints.read_only_hint, Some(true));
    assert_eq!(get_note.input_schema["required"], json!(["id"]));
    assert!(get_note.output_schema.is_some());

    let found = call(&reader, "get_note", json!({"id": 1})).await;
    assert_eq!(found.is_error, Some(false), "{}", text(&found));
    assert_eq!(
        found.structured_content,
        Some(json!({"id": 1, "text": "hello world"}))
    );
    // Query arguments are encoded; a list answer is text only.
    let searched = call(&reader, "search_notes", json!({"q": "a&b c"})).await;
    assert!(
        text(&searched).contains("you searched for a&b c"),
        "{}",
        text(&searched)
    );
    assert_eq!(searched.structured_content, None);

    // The layer validates: a bad argument is an error result with the problem.
    let invalid = call(&reader, "get_note", json!({"id": "one"})).await;
    assert_eq!(invalid.is_error, Some(true));
    let problem = invalid.structured_content.clone().expect("a problem");
    assert_eq!(
        problem["status"], 400,
        "a path value, as axum's Path answers"
    );
    assert_eq!(problem["errors"][0]["pointer"], "/id");
    assert_eq!(
        serde_json::from_str::<Value>(&text(&invalid)).unwrap(),
        problem
    );
    let missing = call(&reader, "get_note", json!({"id": 9})).await;
    assert_eq!(missing.is_error, Some(true));
    assert_eq!(missing.structured_content.unwrap()["status"], 404);
    let unplaced = call(&reader, "get_note", json!({})).await;
    assert_eq!(unplaced.is_error, Some(true));
    let problem = unplaced.structured_content.as_ref().expect("a problem");
    assert_eq!(problem["status"], 400);
    assert_eq!(
        problem["detail"],
        "invalid arguments: missing path parameter `id`"
    );

    // A tool the caller may not see cannot be called by name either, and is refused in the
    // words used for a tool that does not exist.
    let hidden = reader
        .call_tool(
            CallToolRequestParams::new("create_note")
                .with_arguments(json!({"text": "x"}).as_object().unwrap().clone()),
        )
        .await
        .expect_err("a hidden tool");
    assert!(
        hidden
            .to_string()
            .contains("no tool is named `create_note`"),
        "{hidden}"
    );
    let unknown = reader
        .call_tool(CallToolRequestParams::new("no_such_tool"))
        .await
        .expect_err("an unknown tool");
    assert_eq!(
        unknown.to_string().replace("no_such_tool", "create_note"),
        hidden.to_string()
    );

    let writer = client(url.clone(), &[("authorization", "Bearer writer")]).await;
    let tools = writer.list_all_tools().await.expect("tools/list");
    assert_eq!(names(&tools), ["create_note", "get_note", "search_notes"]);
    let create = tool(&tools, "create_note").annotations.as_ref().unwrap();
    assert_eq!(create.read_only_hint, Some(false));
    assert_eq!(create.destructive_hint, Some(true));
    let created = call(&writer, "create_note", json!({"text": "buy milk"})).await;
    assert_eq!(
        created.structured_content,
        Some(json!({"id": 2, "text": "buy milk"}))
    );
    let too_long = call(&writer, "create_note", json!({"text": "x".repeat(101)})).await;
    assert_eq!(too_long.is_error, Some(true));
    assert_eq!(
        too_long.structured_content.unwrap()["errors"][0]["pointer"],
        "/text"
    );

    // The API-key header goes with the request too.
    let keeper = client(url, &[("x-key", "secret-key")]).await;
    let tools = keeper.list_all_tools().await.expect("tools/list");
    assert!(names(&tools).contains(&"stock"), "{:?}", names(&tools));
    let stock = call(&keeper, "stock", json!({})).await;
    assert_eq!(stock.structured_content, Some(json!({"notebooks": 3})));

    // Every call reached the layer's audit, under its caller.
    let records = audit.all();
    let callers: Vec<(&str, u16)> = records
        .iter()
        .map(|r| (r.caller.as_deref().unwrap_or("-"), r.status))
        .collect();
    assert!(callers.contains(&("reader", 200)), "{callers:?}");
    assert!(callers.contains(&("reader", 400)), "{callers:?}");
    assert!(callers.contains(&("writer", 422)), "{callers:?}");
    assert!(callers.contains(&("writer", 201)), "{callers:?}");
    assert!(callers.contains(&("stock-keeper", 200)), "{callers:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_loopback_hosts_and_origins_by_default() {
    let (server, _) = serve(|mcp| mcp).await;
    let http = reqwest::Client::new();
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "test", "version": "1"}}});
    let post = |host: Option<&str>, origin: Option<&str>| {
        let mut request = http
            .post(server.url("/mcp"))
            .header("accept", "application/json, text/event-stream")
            .json(&initialize);
        if let Some(host) = host {
            request = request.header("host", host);
        }
        if let Some(origin) = origin {
            request = request.header("origin", origin);
        }
        request.send()
    };
    let ok = post(None, None).await.unwrap();
    assert_eq!(ok.status(), 200);
    let body: Value = ok.json().await.unwrap();
    assert_eq!(body["result"]["capabilities"]["tools"], json!({}));
    let local_page = post(None, Some("http://localhost:5173")).await.unwrap();
    assert_eq!(local_page.status(), 200);
    // A page of another site, or a name rebound to this machine: refused.
    let other_site = post(None, Some("https://evil.example")).await.unwrap();
    assert_eq!(other_site.status(), 403);
    let rebound = post(Some("evil.example"), None).await.unwrap();
    assert_eq!(rebound.status(), 403);
    // An `Origin` that is no origin but begins like a loopback one: refused.
    let port = server
        .url("")
        .rsplit(':')
        .next()
        .unwrap()
        .trim_end_matches('/')
        .to_owned();
    for origin in [
        format!("http://127.0.0.1:{port}.evil.example"),
        "http://[::1].evil.example".to_owned(),
        "http://localhost:5173/path".to_owned(),
    ] {
        let answer = post(None, Some(&origin)).await.unwrap();
        assert_eq!(answer.status(), 403, "{origin}");
    }
    // Two `Host`s or two `Origin`s, one loopback and one not: refused.
    let twice = |name: &'static str, values: [&'static str; 2]| {
        http.post(server.url("/mcp"))
            .header("accept", "application/json, text/event-stream")
            .header(name, values[0])
            .header(name, values[1])
            .json(&initialize)
            .send()
    };
    let hosts = twice("host", ["127.0.0.1", "evil.example"]).await.unwrap();
    assert_eq!(hosts.status(), 400);
    let origins = twice("origin", ["http://localhost:5173", "https://evil.example"])
        .await
        .unwrap();
    assert_eq!(origins.status(), 400);

    let (public, _) = serve(|mcp| {
        mcp.allowed_hosts(["api.example.com"])
            .allowed_origins(["https://app.example.com"])
    })
    .await;
    let post = |host: &str, origin: &str| {
        http.post(public.url("/mcp"))
            .header("accept", "application/json, text/event-stream")
            .header("host", host)
            .header("origin", origin)
            .json(&initialize)
            .send()
    };
    assert_eq!(
        post("api.example.com", "https://app.example.com")
            .await
            .unwrap()
            .status(),
        200
    );
    assert_eq!(
        post("127.0.0.1", "https://app.example.com")
            .await
            .unwrap()
            .status(),
        403
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_required_credentials_mcp_answers_401() {
    let (router, api) = OpenApiRouter::with_openapi(Doc::openapi())
        .routes(routes!(get_note))
        .split_for_parts();
    let halo = HaloLayer::builder(api)
        .authenticator(StaticAuthenticator::new().bearer(
            "reader",
            Principal::new("reader").with_scopes(["notes:read"]),
        ))
        .require_credentials(true)
        .build()
        .unwrap();
    let mcp = McpService::builder(&halo, router.clone()).build();
    let server = spawn(router.layer(halo).nest_service("/mcp", mcp)).await;
    // Refused at the door, as MCP's authorization asks: `401` with the challenge.
    let refused = raw_mcp(&server, None, "initialize", json!({})).await;
    assert_eq!(refused.0, 401);
    assert!(refused.1.starts_with("Bearer realm="), "{}", refused.1);
    let reader = client(
        server.url("/mcp"),
        &[(AUTHORIZATION.as_str(), "Bearer reader")],
    )
    .await;
    assert_eq!(names(&reader.list_all_tools().await.unwrap()), ["get_note"]);
}

/// One JSON-RPC request to `/mcp` over plain HTTP: the status, `WWW-Authenticate` and body.
async fn raw_mcp(
    server: &TestServer,
    token: Option<&str>,
    method: &str,
    params: Value,
) -> (u16, String, String) {
    let mut request = reqwest::Client::new()
        .post(server.url("/mcp"))
        .header("accept", "application/json, text/event-stream")
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}));
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    let challenge = response
        .headers()
        .get("www-authenticate")
        .map(|value| value.to_str().unwrap().to_owned())
        .unwrap_or_default();
    (status, challenge, response.text().await.unwrap())
}

/// A plain `tools/call` is answered without rmcp's per-request machinery; its answer is the
/// one rmcp writes for the same call sent in a shape only rmcp answers (with `_meta`):
/// results, tool errors with their problems, invalid arguments, hidden and unknown tools.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plain_call_is_answered_as_rmcp_answers_it() {
    let (server, _) = serve(|mcp| mcp).await;
    let cases = [
        (
            Some("reader"),
            json!({"name": "get_note", "arguments": {"id": 1}}),
        ),
        (
            Some("reader"),
            json!({"name": "get_note", "arguments": {"id": 2}}),
        ),
        (
            Some("reader"),
            json!({"name": "get_note", "arguments": {"id": "one"}}),
        ),
        (
            Some("reader"),
            json!({"name": "search_notes", "arguments": {"q": "tea"}}),
        ),
        (
            Some("reader"),
            json!({"name": "create_note", "arguments": {"text": "t"}}),
        ),
        (None, json!({"name": "get_note", "arguments": {"id": 1}})),
        (None, json!({"name": "no_such_tool"})),
    ];
    // Each call as a client of no stated version, and of the last before 2026-07-28.
    let post = async |token: Option<&str>, params: &Value, version: Option<&str>| {
        let mut request = reqwest::Client::new()
            .post(server.url("/mcp"))
            .header("accept", "application/json, text/event-stream")
            .json(&json!({"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": params}));
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        if let Some(version) = version {
            request = request.header("mcp-protocol-version", version);
        }
        let response = request.send().await.unwrap();
        let status = response.status().as_u16();
        (status, response.json::<Value>().await.unwrap())
    };
    for version in [None, Some("2025-11-25")] {
        for (token, params) in &cases {
            let direct = post(*token, params, version).await;
            let mut meta = params.clone();
            meta["_meta"] = json!({});
            let through_rmcp = post(*token, &meta, version).await;
            assert_eq!(direct.0, 200, "{params}: {direct:?}");
            assert_eq!(direct, through_rmcp, "{version:?} {params}");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_credentials_get_401_before_any_tool_is_looked_up() {
    let (server, _) = serve(|mcp| mcp).await;
    let call = |name: &str| json!({"name": name, "arguments": {"id": 1}});
    // A tool the caller may not see, and one that does not exist: the same answer.
    let hidden = raw_mcp(&server, Some("forged"), "tools/call", call("create_note")).await;
    let unknown = raw_mcp(&server, Some("forged"), "tools/call", call("no_such_tool")).await;
    assert_eq!(hidden.0, 401);
    assert!(hidden.1.contains("error=\"invalid_token\""), "{}", hidden.1);
    assert_eq!(hidden, unknown);
    let listed = raw_mcp(&server, Some("forged"), "tools/list", json!({})).await;
    assert_eq!(listed, hidden);
    // Without credentials, the public tools are still there.
    let anonymous = raw_mcp(&server, None, "tools/list", json!({})).await;
    assert_eq!(anonymous.0, 200, "{anonymous:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn above_the_budget_tools_are_found_by_search_and_called_by_name() {
    let (server, audit) = serve(|mcp| mcp.tool_budget(60)).await;
    let url = server.url("/mcp");

    // Over the budget: only the two tools of progressive disclosure are listed.
    let reader = client(url.clone(), &[("authorization", "Bearer reader")]).await;
    let listed = reader.list_tools(None).await.expect("tools/list");
    assert_eq!(names(&listed.tools), ["call_tool", "search_tools"]);
    assert_eq!(listed.next_cursor, None);
    // Cache hints from discovery: its max-age, private because discovery depends on the
    // caller.
    assert_eq!(listed.ttl_ms, Some(60_000));
    assert_eq!(listed.cache_scope, Some(rmcp::model::CacheScope::Private));

    // The search answers the caller's tools only, with what a model needs to call them.
    let found = search(&reader, "read a note by its id").await;
    assert_eq!(found.is_error, Some(false), "{}", text(&found));
    let answer = found.structured_content.clone().expect("structured");
    assert_eq!(answer["tools"][0]["name"], "get_note", "{answer}");
    assert_eq!(answer["tools"][0]["inputSchema"]["required"], json!(["id"]));
    assert_eq!(
        serde_json::from_str::<Value>(&text(&found)).unwrap(),
        answer
    );
    let writes = search(&reader, "create a new note").await;
    assert!(
        !text(&writes).contains("create_note"),
        "a hidden tool is never found: {}",
        text(&writes)
    );
    let limited = call(
        &reader,
        "search_tools",
        json!({"query": "note", "limit": 1}),
    )
    .await;
    let limited = limited.structured_content.unwrap();
    assert_eq!(limited["tools"].as_array().unwrap().len(), 1);
    assert_eq!(limited["more"], 1, "{limited}");

    // Found tools are called through call_tool, or by their name though never listed.
    let through = call_through(&reader, "get_note", json!({"id": 1})).await;
    assert_eq!(
        through.structured_content,
        Some(json!({"id": 1, "text": "hello world"}))
    );
    let direct = call(&reader, "get_note", json!({"id": 1})).await;
    assert_eq!(direct.structured_content, through.structured_content);
    // Hidden stays hidden through call_tool.
    let hidden = reader
        .call_tool(
            CallToolRequestParams::new("call_tool").with_arguments(
                json!({"name": "create_note", "arguments": {"text": "x"}})
                    .as_object()
                    .unwrap()
                    .clone(),
            ),
        )
        .await
        .expect_err("a hidden tool");
    assert!(
        hidden
            .to_string()
            .contains("no tool is named `create_note`")
    );

    // Bad arguments are results the model reads.
    for (name, args) in [
        ("search_tools", json!({})),
        ("search_tools", json!({"query": "x", "limit": 0})),
        ("call_tool", json!({"arguments": {}})),
    ] {
        let result = call(&reader, name, args.clone()).await;
        assert_eq!(result.is_error, Some(true), "{name} {args}");
    }
    let records = audit.all();
    assert!(
        records.iter().filter(|r| r.tool == "get_note").count() >= 2,
        "both calls ran"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_tool_listed_in_pages_when_asked() {
    let (server, _) = serve(|mcp| mcp.tool_budget(60).list_all_tools().page_size(1)).await;
    let writer = client(server.url("/mcp"), &[("authorization", "Bearer writer")]).await;
    let first = writer.list_tools(None).await.expect("tools/list");
    assert_eq!(first.tools.len(), 1);
    let cursor = first.next_cursor.clone().expect("more pages");
    let second = writer
        .list_tools(Some(
            rmcp::model::PaginatedRequestParams::default().with_cursor(Some(cursor)),
        ))
        .await
        .expect("the second page");
    assert_eq!(second.tools.len(), 1);
    assert_ne!(second.tools[0].name, first.tools[0].name);
    let all = writer.list_all_tools().await.expect("every page");
    assert_eq!(names(&all), ["create_note", "get_note", "search_notes"]);
    // Without a budget, `search_tools` is not a tool of its own.
    let missing = writer
        .call_tool(
            CallToolRequestParams::new("search_tools")
                .with_arguments(json!({"query": "note"}).as_object().unwrap().clone()),
        )
        .await;
    assert!(missing.is_err());
    let invalid = writer
        .list_tools(Some(
            rmcp::model::PaginatedRequestParams::default().with_cursor(Some("x".into())),
        ))
        .await;
    assert!(invalid.is_err(), "an invalid cursor is refused");
}

/// A refund's body.
#[derive(serde::Deserialize, utoipa::ToSchema)]
struct Refund {
    amount: u32,
}

/// Refund a payment: every call waits for approval.
#[halo(approval = "required")]
#[utoipa::path(post, path = "/refunds/{id}", tags = ["payments", "write"],
    params(("id" = String, Path)), request_body = Refund, responses((status = 200, body = Value)),
    security(("bearer" = [])))]
async fn refund(
    State(runs): State<Runs>,
    Path(id): Path<String>,
    Json(refund): Json<Refund>,
) -> Json<Value> {
    Json(json!({"refund": id, "amount": refund.amount, "run": runs.add()}))
}

/// Alice and Carol may decide approvals (their own too); Bob may not.
const ALICE: &str = "Bearer alice-token";
const BOB: &str = "Bearer bob-token";
const CAROL: &str = "carol-token";

/// The payments app's authenticator, counting the requests of the approvals endpoints made
/// as Bob (over HTTP, or in process by `/mcp` on his behalf).
struct Counting {
    inner: StaticAuthenticator,
    bobs_approval_requests: Arc<AtomicUsize>,
}

impl Authenticator for Counting {
    async fn authenticate(&self, parts: &Parts) -> Result<Option<Principal>, Unauthenticated> {
        let principal = self.inner.authenticate(parts).await?;
        let endpoint = parts.uri.path().starts_with("/.well-known/halo/approvals");
        if endpoint && principal.as_ref().is_some_and(|p| p.id() == "bob") {
            self.bobs_approval_requests.fetch_add(1, Ordering::SeqCst);
        }
        Ok(principal)
    }
}

/// The payments app with `/mcp`: its handler's runs, and the server.
async fn payments() -> (TestServer, Runs) {
    let (server, runs, _) = payments_counted().await;
    (server, runs)
}

/// [`payments`], and how many requests of the approvals endpoints were made as Bob.
async fn payments_counted() -> (TestServer, Runs, Arc<AtomicUsize>) {
    let runs = Runs::default();
    let (router, api) = OpenApiRouter::with_openapi(Doc::openapi())
        .routes(routes!(refund))
        .split_for_parts();
    let router = router.with_state(runs.clone());
    let approver = Principal::new("carol").with_scopes(["approve"]);
    let auth = StaticAuthenticator::new()
        .bearer(
            "alice-token",
            Principal::new("alice").with_scopes(["approve"]),
        )
        .bearer("bob-token", Principal::new("bob"))
        .bearer(CAROL, approver);
    let bobs_approval_requests = Arc::new(AtomicUsize::new(0));
    let auth = Counting {
        inner: auth,
        bobs_approval_requests: Arc::clone(&bobs_approval_requests),
    };
    let halo = HaloLayer::builder(api)
        .authenticator(auth)
        .approver(ApprovalQueue::new("approve").self_approval(true))
        .approval_limits(ApprovalLimits::default().expire_after(Duration::from_secs(30)))
        .build()
        .expect("valid metadata");
    let mcp = McpService::builder(&halo, router.clone()).build();
    (
        spawn(router.layer(halo).nest_service("/mcp", mcp)).await,
        runs,
        bobs_approval_requests,
    )
}

/// A client without elicitation that tells the test of each progress notification's words.
#[derive(Clone)]
struct Waiting(mpsc::UnboundedSender<String>);

impl ClientHandler for Waiting {
    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let _ = self.0.send(params.message.unwrap_or_default());
    }

    fn get_info(&self) -> ClientConfig {
        ClientConfig::default()
    }
}

/// A client that answers confirmations with `action`, and what it is asked.
async fn confirming(
    url: String,
    token: &str,
    action: ElicitationAction,
    reason: Option<&'static str>,
) -> (
    RunningService<RoleClient, Confirming>,
    mpsc::UnboundedReceiver<String>,
) {
    let transport = transport(url, &[("authorization", token)]);
    Confirming::connect(transport, action, reason).await
}

/// Bob's MCP client of the payments app at `server`, and the messages of the progress
/// notifications it receives.
async fn waiting_bob(
    server: &TestServer,
) -> (
    RunningService<RoleClient, Waiting>,
    mpsc::UnboundedReceiver<String>,
) {
    let (sender, notes) = mpsc::unbounded_channel();
    let bob = client_with(
        Waiting(sender),
        server.url("/mcp"),
        &[("authorization", BOB)],
    );
    (bob.await, notes)
}

/// The id of the approval a progress notification says the call waits for.
async fn waited_for(notes: &mut mpsc::UnboundedReceiver<String>) -> String {
    let note = tokio::time::timeout(Duration::from_secs(10), notes.recv())
        .await
        .expect("a progress notification")
        .expect("the client is there");
    note.strip_prefix("waiting for approval ")
        .and_then(|rest| rest.split_once(" of refund"))
        .map(|(id, _)| id.to_owned())
        .unwrap_or_else(|| panic!("not a wait for approval: {note}"))
}

/// Carol decides approval `id` over HTTP.
async fn carol_decides(server: &TestServer, id: &str, action: &str, body: Value) -> Value {
    let url = server.url(&format!("/.well-known/halo/approvals/{id}/{action}"));
    let answer = reqwest::Client::new()
        .post(url)
        .bearer_auth(CAROL)
        .json(&body)
        .send()
        .await
        .expect("an answer");
    assert_eq!(answer.status(), StatusCode::OK);
    answer.json().await.expect("the approval")
}

fn refund_args() -> Value {
    json!({"id": "ch_1", "amount": 20})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_confirms_approves_the_call_which_runs_once() {
    let (server, runs) = payments().await;
    let accept = ElicitationAction::Accept;
    let url = server.url("/mcp");
    let (alice, mut asked) = confirming(url, ALICE, accept, Some("the book came back")).await;

    let refunded = call(&alice, "refund", refund_args()).await;
    assert_eq!(refunded.is_error, Some(false), "{refunded:?}");
    let answer = refunded.structured_content.expect("the handler's answer");
    assert_eq!(answer, json!({"refund": "ch_1", "amount": 20, "run": 1}));
    assert_eq!(runs.count(), 1);
    // The confirmation named the tool, the call and its arguments.
    let question = asked.try_recv().expect("the client was asked");
    assert!(question.contains("the tool refund?"), "{question}");
    assert!(question.contains("POST /refunds/ch_1"), "{question}");
    assert!(question.contains(r#""amount":20"#), "{question}");
    assert!(asked.try_recv().is_err(), "asked once");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_declines_denies_the_call_which_never_runs() {
    let (server, runs) = payments().await;
    let decline = ElicitationAction::Decline;
    let (alice, mut asked) = confirming(server.url("/mcp"), ALICE, decline, None).await;

    let denied = call(&alice, "refund", refund_args()).await;
    assert_eq!(denied.is_error, Some(true), "{denied:?}");
    let problem = denied.structured_content.expect("the problem");
    assert_eq!(problem["status"], 403);
    let detail = problem["detail"].as_str().expect("a detail");
    assert!(detail.contains("was denied by alice"), "{detail}");
    assert!(detail.contains("declined in the MCP client"), "{detail}");
    assert!(asked.try_recv().is_ok(), "the client was asked");
    assert_eq!(runs.count(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_caller_who_may_not_decide_is_not_asked_and_waits_for_an_approver() {
    let (server, runs) = payments().await;
    let accept = ElicitationAction::Accept;
    let (bob, mut asked) = confirming(server.url("/mcp"), BOB, accept, None).await;
    let (watcher, mut notes) = waiting_bob(&server).await;

    // Bob's elicitation is not used: he may not approve. His call waits; Carol approves.
    let waiting = tokio::spawn(async move {
        let result = call(&watcher, "refund", refund_args()).await;
        (watcher, result)
    });
    let id = waited_for(&mut notes).await;
    let approved = carol_decides(&server, &id, "approve", json!({"reason": "fine"})).await;
    assert_eq!(approved["state"], "approved");
    let (_watcher, refunded) = waiting.await.expect("the call ends");
    assert_eq!(refunded.is_error, Some(false), "{refunded:?}");
    let answer = refunded.structured_content.expect("the handler's answer");
    assert_eq!(answer, json!({"refund": "ch_1", "amount": 20, "run": 1}));

    // Denied: an error result saying by whom and why; the handler does not run again.
    let (watcher, mut notes) = waiting_bob(&server).await;
    let waiting = tokio::spawn(async move { call(&watcher, "refund", refund_args()).await });
    let id = waited_for(&mut notes).await;
    carol_decides(&server, &id, "deny", json!({"reason": "disputed"})).await;
    let denied = waiting.await.expect("the call ends");
    assert_eq!(denied.is_error, Some(true), "{denied:?}");
    let detail = denied.structured_content.expect("the problem")["detail"].clone();
    assert_eq!(
        detail,
        format!("approval {id} was denied by carol: disputed; the call did not run")
    );
    assert_eq!(runs.count(), 1);
    assert!(asked.try_recv().is_err(), "bob was never asked");
    drop(bob);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_wait_is_told_of_the_decision_and_never_reads_the_approval_again() {
    let (server, runs, bobs_reads) = payments_counted().await;
    let (bob, mut notes) = waiting_bob(&server).await;
    let waiting = tokio::spawn(async move { call(&bob, "refund", refund_args()).await });
    let id = waited_for(&mut notes).await;
    carol_decides(&server, &id, "approve", json!({})).await;
    let refunded = waiting.await.expect("the call ends");
    assert_eq!(refunded.is_error, Some(false), "{refunded:?}");
    assert_eq!(runs.count(), 1);
    // The bridge learnt of the approval and the run without asking the approvals endpoints
    // as Bob, before or after Carol decided: nothing polls.
    assert_eq!(bobs_reads.load(Ordering::SeqCst), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_wait_ends_the_call_and_leaves_the_approval_pending() {
    let (server, runs) = payments().await;
    let (bob, mut notes) = waiting_bob(&server).await;
    let Value::Object(args) = refund_args() else {
        unreachable!("an object")
    };
    let params = CallToolRequestParams::new("refund").with_arguments(args);
    let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
    let handle = bob
        .peer()
        .send_cancellable_request(request, PeerRequestOptions::no_options())
        .await
        .expect("tools/call sent");
    let id = waited_for(&mut notes).await;
    handle
        .cancel(Some("the user gave up".to_owned()))
        .await
        .expect("notifications/cancelled sent");

    // The approval stays pending: an approver still sees it, and approving it runs the call.
    let listed: Value = reqwest::Client::new()
        .get(server.url("/.well-known/halo/approvals"))
        .bearer_auth(CAROL)
        .send()
        .await
        .expect("an answer")
        .json()
        .await
        .expect("the list");
    assert_eq!(listed["approvals"][0]["id"], id.as_str());
    assert_eq!(listed["approvals"][0]["state"], "pending");
    assert_eq!(runs.count(), 0);
    let approved = carol_decides(&server, &id, "approve", json!({})).await;
    assert_eq!(approved["response"]["body"]["run"], 1);
}

/// A plain `tools/call` (answered without rmcp's per-request machinery) of a tool that needs
/// approval waits for the decision as any client that cannot be asked does: Carol approves
/// over HTTP, and the call's answer is the refund, run once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plain_call_held_for_approval_waits_for_the_decision() {
    let (server, runs) = payments().await;
    let mcp = server.url("/mcp");
    let waiting = tokio::spawn(async move {
        let answer = reqwest::Client::new()
            .post(mcp)
            .header("accept", "application/json, text/event-stream")
            .header("authorization", BOB)
            .json(&json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                          "params": {"name": "refund", "arguments": refund_args()}}))
            .send()
            .await
            .unwrap();
        answer.json::<Value>().await.unwrap()
    });
    // The pending approval, as Carol lists it.
    let pending = async || {
        let approvals = reqwest::Client::new().get(server.url("/.well-known/halo/approvals"));
        let listed = halo_tests::json::fetch(approvals.bearer_auth(CAROL)).await;
        listed["approvals"][0]["id"].as_str().map(str::to_owned)
    };
    let mut id = None;
    for _ in 0..200 {
        id = pending().await;
        if id.is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let id = id.expect("the call is held for approval");
    let approved = carol_decides(&server, &id, "approve", json!({})).await;
    assert_eq!(approved["state"], "approved");
    let answer = waiting.await.unwrap();
    assert_eq!(answer["id"], 3);
    let result = &answer["result"];
    assert_eq!(result["isError"], false, "{answer}");
    assert_eq!(
        result["structuredContent"],
        json!({"refund": "ch_1", "amount": 20, "run": 1})
    );
    assert_eq!(runs.count(), 1);
}
