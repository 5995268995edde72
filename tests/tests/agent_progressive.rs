//! Progressive disclosure in the agent loops, from end to end over real HTTP: GitHub's 771
//! operations reach a scripted OpenAI-compatible model as `search_tools` and `call_tool`
//! (halo-client's `RemoteTools`), the model finds the tool for its task, calls it, and the
//! call reaches the API; a hosted agent over an app of 241 operations does the same in
//! process, and never finds or calls a tool its caller may not see.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{Method, Uri};
use halo_axum::agents::{Agents, HostedAgent};
use halo_axum::{HaloBuilder, HaloLayer, Principal, StaticAuthenticator};
use halo_client::Client;
use halo_client::agent::{Agent, OpenAiProvider, RemoteTools, ToolSet as _, listed_tokens};
use halo_client::protocol::{DEFAULT_TOOL_BUDGET, ToolDefinition};
use halo_tests::corpus::Document;
use halo_tests::generated::RESOURCES as THINGS;
use halo_tests::json::each_str;
use halo_tests::llm::{Call, Recorded, ScriptedLlm, Turn};
use serde_json::{Value, json};

/// What the API received: `(method, path, body)` of every call that reached it.
type Received = Arc<Mutex<Vec<(String, String, Value)>>>;

/// Records each call, and answers `{"ok": true}`.
async fn record(
    State(received): State<Received>,
    method: Method,
    uri: Uri,
    body: Bytes,
) -> axum::Json<Value> {
    let body = serde_json::from_slice(&body).unwrap_or(Value::Null);
    received
        .lock()
        .unwrap()
        .push((method.to_string(), uri.path().to_owned(), body));
    axum::Json(json!({"ok": true}))
}

fn recorder() -> (Router, Received) {
    let received = Received::default();
    let router = Router::new()
        .fallback(record)
        .with_state(Arc::clone(&received));
    (router, received)
}

fn provider(llm: &ScriptedLlm) -> OpenAiProvider {
    OpenAiProvider::builder()
        .base_url(llm.base_url())
        .model("scripted")
        .min_retry_delay(Duration::from_millis(10))
        .build()
        .unwrap()
}

/// The bytes of the `tools` of a request the model got.
fn tools_bytes(request: &Recorded) -> usize {
    request.body["tools"].to_string().len()
}

/// The bytes of these definitions as OpenAI function tools.
fn definitions_bytes(definitions: &[ToolDefinition]) -> usize {
    let tools: Vec<Value> = definitions
        .iter()
        .map(ToolDefinition::openai_function)
        .collect();
    Value::Array(tools).to_string().len()
}

#[tokio::test(flavor = "multi_thread")]
async fn githubs_771_tools_reach_a_small_model_as_search_then_call() {
    let layer = HaloBuilder::from_openapi_json(Document::GitHub.json())
        .build()
        .unwrap();
    let (router, received) = recorder();
    let server = halo_tests::spawn(router.layer(layer)).await;
    let client = Client::new(server.base_url()).unwrap();
    let tools = RemoteTools::discover(&client, &[]).await.unwrap();
    let definitions = tools.definitions();
    assert_eq!(definitions.len(), 771);
    let tokens = listed_tokens(definitions);
    let all_bytes = definitions_bytes(definitions);

    let llm = ScriptedLlm::start([
        Turn::calls([Call::new(
            "search_tools",
            json!({"query": "create an issue", "tags": ["issues"]}),
        )]),
        Turn::calls([Call::new(
            "call_tool",
            json!({"name": "issues_create", "arguments": {
                "owner": "octocat", "repo": "hello-world", "title": "Found by search"
            }}),
        )]),
        Turn::text("Opened the issue."),
    ])
    .await;
    let started = Instant::now();
    let answer = Agent::builder(provider(&llm))
        .max_turns(4)
        .build()
        .run(
            &tools,
            "Open an issue titled 'Found by search' in octocat/hello-world.",
        )
        .await
        .unwrap();
    let run = started.elapsed();
    assert_eq!(answer.content(), "Opened the issue.");

    // The API received the call the model made through call_tool.
    let received = received.lock().unwrap().clone();
    assert_eq!(
        received,
        [(
            "POST".to_owned(),
            "/repos/octocat/hello-world/issues".to_owned(),
            json!({"title": "Found by search"})
        )]
    );

    let requests = llm.requests();
    // The first request: the two meta-tools alone, a few hundred bytes instead of megabytes.
    assert_eq!(requests[0].tool_names(), ["search_tools", "call_tool"]);
    let first = tools_bytes(&requests[0]);
    assert!(first < 1_500, "{first} bytes");
    assert!(first * 500 < all_bytes, "{first} of {all_bytes} bytes");
    // The search found the tool, tags filtering, from the catalog RemoteTools keeps.
    let result: Value = serde_json::from_str(
        requests[1].messages().last().unwrap()["content"]
            .as_str()
            .unwrap(),
    )
    .unwrap();
    let found: Vec<&str> = each_str(&result["tools"], "/name");
    assert!(found.contains(&"issues_create"), "{result}");
    assert!(
        found.iter().all(|name| name.starts_with("issues_")),
        "{result}"
    );
    assert!(result.get("note").is_none(), "{result}");
    // Then the tools found are offered too, still within the budget.
    let second = requests[1].tool_names();
    assert!(second.contains(&"issues_create".to_owned()), "{second:?}");
    let offered: Vec<ToolDefinition> = [
        halo_client::protocol::search_tools_definition(),
        halo_client::protocol::call_tool_definition(),
    ]
    .into_iter()
    .chain(
        definitions
            .iter()
            .filter(|d| second.contains(&d.name))
            .cloned(),
    )
    .collect();
    let second_tokens = listed_tokens(&offered);
    assert!(second_tokens <= DEFAULT_TOOL_BUDGET, "{second_tokens}");
    eprintln!(
        "GitHub, {} tools: every definition {all_bytes} bytes (~{tokens} tokens); progressive: \
         first request's tools {first} bytes, second's {} bytes ({} tools, ~{second_tokens} \
         tokens); run in {run:?}",
        definitions.len(),
        tools_bytes(&requests[1]),
        second.len(),
    );

    // With every tool, the first request carries them all.
    llm.push([Turn::text("Nothing to do.")]);
    Agent::builder(provider(&llm))
        .all_tools()
        .build()
        .run(&tools, "Nothing.")
        .await
        .unwrap();
    let every = &llm.requests()[3];
    assert_eq!(every.tool_names().len(), 771);
    assert_eq!(tools_bytes(every), all_bytes);
}

const VERBS: [&str; 6] = ["list", "get", "update", "delete", "archive", "restore"];

/// An OpenAPI document of 241 operations: `{verb}_{thing}` at `POST /{thing}s/{id}/{verb}`
/// for every verb and thing, readable with the scope `read`, and `purge_vault`, which only
/// the scope `admin` may see.
fn document() -> Value {
    let mut paths = serde_json::Map::new();
    for thing in THINGS {
        for verb in VERBS {
            paths.insert(
                format!("/{thing}s/{{id}}/{verb}"),
                json!({"post": {
                    "operationId": format!("{verb}_{thing}"),
                    "summary": format!("{verb} a {thing}"),
                    "description": format!("Runs `{verb}` on one {thing} of the store, by its id."),
                    "tags": [thing],
                    "parameters": [{"name": "id", "in": "path", "required": true,
                                    "description": format!("The {thing}'s id"),
                                    "schema": {"type": "integer"}}],
                    "security": [{"bearer": ["read"]}],
                    "responses": {"200": {"description": "Done"}}
                }}),
            );
        }
    }
    paths.insert(
        "/vault/purge".into(),
        json!({"post": {
            "operationId": "purge_vault",
            "summary": "Purge the vault",
            "description": "Deletes everything in the vault, for good.",
            "tags": ["vault"],
            "security": [{"bearer": ["admin"]}],
            "responses": {"200": {"description": "Purged"}}
        }}),
    );
    json!({
        "openapi": "3.1.0",
        "info": {"title": "Store", "version": "1.0.0"},
        "paths": paths,
        "components": {"securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}}}
    })
}

/// The store, hosting `clerk` (every operation its caller may see) on the scripted model.
async fn store(llm: &ScriptedLlm) -> (halo_tests::TestServer, Received) {
    let agents = Agents::new().agent(
        HostedAgent::new("clerk", Agent::builder(provider(llm)).max_turns(6).build())
            .description("Does what the store's staff ask.")
            .system_prompt("You run the store."),
    );
    let api = serde_json::from_value(document()).unwrap();
    let api = agents.document(api).unwrap();
    let halo: HaloLayer = HaloLayer::builder(api)
        .authenticator(
            StaticAuthenticator::new()
                .bearer(
                    "reader-token",
                    Principal::new("reader").with_scopes(["read"]),
                )
                .bearer(
                    "admin-token",
                    Principal::new("admin").with_scopes(["read", "admin"]),
                ),
        )
        .build()
        .unwrap();
    let (router, received) = recorder();
    let app = router
        .clone()
        .merge(agents.router(&halo, router))
        .layer(halo);
    (halo_tests::spawn(app).await, received)
}

async fn run(server: &halo_tests::TestServer, token: &str, input: &str) -> Value {
    let response = reqwest::Client::new()
        .post(server.url("/agents/clerk/run"))
        .bearer_auth(token)
        .json(&json!({"input": input}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    response.json().await.unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_hosted_agent_searches_only_what_its_caller_may_see() {
    let llm = ScriptedLlm::start([
        Turn::calls([Call::new(
            "search_tools",
            json!({"query": "purge the vault"}),
        )]),
        Turn::calls([Call::new(
            "call_tool",
            json!({"name": "purge_vault", "arguments": {}}),
        )]),
        Turn::calls([Call::new(
            "search_tools",
            json!({"query": "archive an invoice"}),
        )]),
        Turn::calls([Call::new("archive_invoice", json!({"id": 5}))]),
        Turn::text("Invoice 5 is archived; the vault is not mine to purge."),
    ])
    .await;
    let (server, received) = store(&llm).await;
    let answer = run(
        &server,
        "reader-token",
        "Archive invoice 5, then purge the vault.",
    )
    .await;
    assert_eq!(
        answer["content"],
        "Invoice 5 is archived; the vault is not mine to purge."
    );
    // Only the archive reached the store.
    assert_eq!(
        received.lock().unwrap().clone(),
        [(
            "POST".to_owned(),
            "/invoices/5/archive".to_owned(),
            Value::Null
        )]
    );
    let requests = llm.requests();
    assert_eq!(requests[0].tool_names(), ["search_tools", "call_tool"]);
    let result = |request: &Recorded| -> Value {
        serde_json::from_str(
            request.messages().last().unwrap()["content"]
                .as_str()
                .unwrap(),
        )
        .unwrap()
    };
    // The reader's search never finds the admin's tool, and call_tool cannot reach it.
    let searched = result(&requests[1]);
    assert!(!searched.to_string().contains("purge_vault"), "{searched}");
    let refused = result(&requests[2]);
    assert_eq!(refused["status"], 404, "{refused}");
    let close = refused["detail"]
        .as_str()
        .unwrap()
        .split("close names:")
        .nth(1);
    assert!(!close.unwrap_or_default().contains("purge"), "{refused}");
    let found = result(&requests[3]);
    assert_eq!(found["tools"][0]["name"], "archive_invoice", "{found}");
    // Found, the tool is offered, and the model called it by name.
    assert!(
        requests[3]
            .tool_names()
            .contains(&"archive_invoice".to_owned())
    );

    // The admin's search finds it.
    llm.push([
        Turn::calls([Call::new(
            "search_tools",
            json!({"query": "purge the vault"}),
        )]),
        Turn::text("Found it."),
    ]);
    run(&server, "admin-token", "Which tool purges the vault?").await;
    let requests = llm.requests();
    let searched = result(requests.last().unwrap());
    assert_eq!(searched["tools"][0]["name"], "purge_vault", "{searched}");
    assert!(
        received.lock().unwrap().len() == 1,
        "a search calls nothing"
    );
}
