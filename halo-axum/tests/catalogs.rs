//! The discovery documents beside HALO (`HaloBuilder::catalogs`), over real HTTP on loopback:
//! the RFC 9727 API catalog, `/llms.txt` and the A2A agent card. Their status, media type and
//! shape; `HEAD` and `304`; `/llms.txt` scoped to the caller (a hidden tool, its path and its
//! tag never appear) and within its token budget on a generated API of hundreds of
//! operations; the agent card listing hosted agents only; and nothing changed for an app
//! that did not opt in.

mod common;

use axum::Router;
use axum::routing::get;
use halo_axum::protocol::estimate_tokens;
use halo_axum::{Catalogs, HaloBuilder, HaloLayer, Principal, StaticAuthenticator};
use halo_tests::{TestServer, spawn};
use http::Uri;
use reqwest::header::{
    CACHE_CONTROL, CONTENT_LENGTH, CONTENT_TYPE, ETAG, IF_NONE_MATCH, LINK, VARY, WWW_AUTHENTICATE,
};
use reqwest::{Client, Method, StatusCode};
use serde_json::{Map, Value, json};

const LINKSET: &str =
    "application/linkset+json; profile=\"https://www.rfc-editor.org/info/rfc9727\"";
const MARKDOWN: &str = "text/markdown; charset=utf-8";

/// The pet shop of `common`, with its own `GET /openapi.json`, wrapped by a layer that
/// serves `catalogs`.
async fn petshop(catalogs: Catalogs) -> TestServer {
    let (router, api) = common::petshop();
    let layer = HaloLayer::builder(api)
        .catalogs(catalogs)
        .build()
        .expect("valid HALO metadata");
    spawn(
        router
            .route("/openapi.json", get(|| async { "{}" }))
            .layer(layer),
    )
    .await
}

async fn request(server: &TestServer, method: Method, path: &str) -> reqwest::Response {
    Client::new()
        .request(method, server.url(path))
        .send()
        .await
        .expect("request")
}

fn header<'r>(response: &'r reqwest::Response, name: &reqwest::header::HeaderName) -> &'r str {
    response
        .headers()
        .get(name)
        .and_then(|value| value.to_str().ok())
        .unwrap_or_default()
}

#[tokio::test]
async fn the_api_catalog_is_a_linkset_to_the_manifest_and_the_openapi_document() {
    let server = petshop(
        Catalogs::new()
            .api_catalog(true)
            .llms_txt(true)
            .openapi_url(Uri::from_static("/openapi.json"))
            .docs_url(Uri::from_static("/docs")),
    )
    .await;
    let response = request(&server, Method::GET, "/.well-known/api-catalog").await;
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(header(&response, &CONTENT_TYPE), LINKSET);
    assert_eq!(
        header(&response, &LINK),
        "</.well-known/api-catalog>; rel=\"api-catalog\""
    );
    assert!(header(&response, &CACHE_CONTROL).starts_with("public"));
    let etag = header(&response, &ETAG).to_owned();
    let catalog: Value = response.json().await.unwrap();

    // RFC 9264 §4.2.1: `linkset` is the only member, an array of link context objects.
    let object = catalog.as_object().unwrap();
    assert_eq!(object.keys().collect::<Vec<_>>(), ["linkset"]);
    let contexts = catalog["linkset"].as_array().unwrap();
    let context = |anchor: &str| {
        contexts
            .iter()
            .find(|c| c["anchor"] == anchor)
            .unwrap_or_else(|| panic!("no link context {anchor}: {catalog}"))
    };
    // The catalog's item is the API (RFC 9727 §3.1).
    assert_eq!(context("/.well-known/api-catalog")["item"][0]["href"], "/");
    let api = context("/");
    let descriptions = api["service-desc"].as_array().unwrap();
    assert!(
        descriptions
            .iter()
            .any(|d| d["href"] == "/" && d["type"] == "application/llm+json"),
        "{api}"
    );
    assert!(
        descriptions.iter().any(
            |d| d["href"] == "/openapi.json" && d["type"] == "application/vnd.oai.openapi+json"
        ),
        "{api}"
    );
    let docs = api["service-doc"].as_array().unwrap();
    assert!(
        docs.iter()
            .any(|d| d["href"] == "/llms.txt" && d["type"] == "text/markdown")
    );
    assert!(docs.iter().any(|d| d["href"] == "/docs"));
    // Every relation's value is an array of targets, each with an `href`.
    for context in contexts {
        for (relation, targets) in context.as_object().unwrap() {
            if relation != "anchor" {
                let targets = targets.as_array().unwrap();
                assert!(targets.iter().all(|t| t["href"].is_string()), "{relation}");
            }
        }
    }

    // HEAD: the same head, the Link header RFC 9727 asks for, no body.
    let head = request(&server, Method::HEAD, "/.well-known/api-catalog").await;
    assert_eq!(head.status(), StatusCode::OK);
    assert_eq!(header(&head, &CONTENT_TYPE), LINKSET);
    assert!(header(&head, &LINK).contains("rel=\"api-catalog\""));
    assert_eq!(header(&head, &ETAG), etag);
    let length: usize = header(&head, &CONTENT_LENGTH).parse().unwrap();
    assert_eq!(length, serde_json::to_vec(&catalog).unwrap().len());
    assert!(head.bytes().await.unwrap().is_empty());

    // Revalidation.
    let revalidated = Client::new()
        .get(server.url("/.well-known/api-catalog"))
        .header(IF_NONE_MATCH, &etag)
        .send()
        .await
        .unwrap();
    assert_eq!(revalidated.status(), StatusCode::NOT_MODIFIED);

    // Another method is the app's: this one has no route there.
    let post = request(&server, Method::POST, "/.well-known/api-catalog").await;
    assert_eq!(post.status(), StatusCode::NOT_FOUND);
    // The agent card was not chosen (and the pet shop hosts no agent).
    let card = request(&server, Method::GET, "/.well-known/agent-card.json").await;
    assert_eq!(card.status(), StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn with_a_base_url_every_link_is_absolute() {
    let server = petshop(
        Catalogs::all()
            .openapi_url(Uri::from_static("/openapi.yaml"))
            .base_url(Uri::from_static("https://api.example.com/shop/")),
    )
    .await;
    let response = request(&server, Method::GET, "/.well-known/api-catalog").await;
    assert_eq!(
        header(&response, &LINK),
        "<https://api.example.com/shop/.well-known/api-catalog>; rel=\"api-catalog\""
    );
    let catalog: Value = response.json().await.unwrap();
    let text = catalog.to_string();
    for context in catalog["linkset"].as_array().unwrap() {
        let anchor = context["anchor"].as_str().unwrap();
        assert!(
            anchor.starts_with("https://api.example.com/shop/"),
            "{text}"
        );
    }
    let described = catalog["linkset"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|context| context["service-desc"].as_array())
        .flatten()
        .any(|link| {
            link["href"] == "https://api.example.com/shop/openapi.yaml"
                && link["type"] == "application/vnd.oai.openapi"
        });
    assert!(described, "{text}");
    assert!(
        text.contains(r#""href":"https://api.example.com/shop/llms.txt""#),
        "{text}"
    );

    let digest = request(&server, Method::GET, "/llms.txt")
        .await
        .text()
        .await
        .unwrap();
    assert!(
        digest.contains("- [list_pets](https://api.example.com/shop/pets): GET."),
        "{digest}"
    );
    assert!(
        digest.contains("`OPTIONS https://api.example.com/shop/?q=words`"),
        "{digest}"
    );
}

#[tokio::test]
async fn llms_txt_lists_the_tools_by_tag_in_markdown() {
    let server = petshop(Catalogs::new().llms_txt(true)).await;
    let response = request(&server, Method::GET, "/llms.txt").await;
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(header(&response, &CONTENT_TYPE), MARKDOWN);
    // No authenticator: the same for everyone, so public.
    assert!(header(&response, &CACHE_CONTROL).starts_with("public"));
    assert!(!header(&response, &VARY).contains("authorization"));
    let etag = header(&response, &ETAG).to_owned();
    let digest = response.text().await.unwrap();
    let mut lines = digest.lines();
    assert_eq!(lines.next(), Some("# Pet Shop"));
    assert_eq!(lines.next(), Some(""));
    assert_eq!(lines.next(), Some("> Pets for sale"));
    // The tags with the most tools first: `pets` (7) before `categories` (1).
    let pets = digest.find("\n## pets\n").expect("a pets section");
    let categories = digest
        .find("\n## categories\n")
        .expect("a categories section");
    assert!(pets < categories, "{digest}");
    assert!(
        digest.contains("- [list_pets](/pets): GET. List pets.\n"),
        "{digest}"
    );
    assert!(
        digest.contains("- [delete_pet](/pets/{id}): DELETE. Delete a pet.\n"),
        "{digest}"
    );
    assert!(digest.contains("- [categories](/categories): GET. A category tree.\n"));
    assert!(digest.contains("`OPTIONS /?q=words`"));
    // Everything fits: no note about the rest.
    assert!(!digest.contains("Finding the rest"), "{digest}");
    // Each tool once.
    assert_eq!(digest.matches("[list_pets]").count(), 1);

    let head = request(&server, Method::HEAD, "/llms.txt").await;
    assert_eq!(head.status(), StatusCode::OK);
    assert_eq!(header(&head, &CONTENT_TYPE), MARKDOWN);
    assert_eq!(header(&head, &CONTENT_LENGTH), digest.len().to_string());
    assert!(head.bytes().await.unwrap().is_empty());
    let revalidated = Client::new()
        .get(server.url("/llms.txt"))
        .header(IF_NONE_MATCH, &etag)
        .send()
        .await
        .unwrap();
    assert_eq!(revalidated.status(), StatusCode::NOT_MODIFIED);
}

/// An API with a public tool, a tool for readers and a tool for admins only, whose tag and
/// path are its own: `GET /vault/secrets` tagged `vault`.
fn guarded() -> HaloBuilder {
    HaloBuilder::from_openapi_json(json!({
        "openapi": "3.1.0",
        "info": {"title": "Guarded", "version": "1", "description": "Public and private tools.\n\nMore words."},
        "components": {"securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}}},
        "paths": {
            "/status": {"get": {"operationId": "status", "summary": "Say if the API is up",
                "tags": ["health"], "responses": {}}},
            "/books": {"get": {"operationId": "list_books", "summary": "List books",
                "tags": ["books"], "security": [{"bearer": ["books:read"]}], "responses": {}}},
            "/vault/secrets": {"get": {"operationId": "read_secrets", "summary": "Read the secrets",
                "tags": ["vault"], "security": [{"bearer": ["admin"]}], "responses": {}}}
        }
    }))
    .authenticator(
        StaticAuthenticator::new()
            .bearer("reader", Principal::new("reader").with_scopes(["books:read"]))
            .bearer(
                "admin",
                Principal::new("admin").with_scopes(["books:read", "admin"]),
            ),
    )
}

async fn digest_as(server: &TestServer, token: Option<&str>) -> (StatusCode, String) {
    let mut request = Client::new().get(server.url("/llms.txt"));
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    let response = request.send().await.unwrap();
    let status = response.status();
    if status == StatusCode::OK {
        assert_eq!(header(&response, &CONTENT_TYPE), MARKDOWN);
        assert!(header(&response, &CACHE_CONTROL).starts_with("private"));
        assert!(header(&response, &VARY).contains("authorization"));
    }
    (status, response.text().await.unwrap())
}

#[tokio::test]
async fn llms_txt_shows_each_caller_only_its_tools() {
    let layer = guarded()
        .catalogs(Catalogs::new().llms_txt(true))
        .build()
        .unwrap();
    let server = spawn(Router::new().layer(layer)).await;

    let (status, anonymous) = digest_as(&server, None).await;
    assert_eq!(status, StatusCode::OK);
    assert!(anonymous.starts_with("# Guarded\n\n> Public and private tools.\n"));
    assert!(anonymous.contains("[status](/status)"), "{anonymous}");
    for hidden in [
        "list_books",
        "/books",
        "read_secrets",
        "/vault",
        "vault",
        "## books",
    ] {
        assert!(
            !anonymous.contains(hidden),
            "`{hidden}` shown to anyone:\n{anonymous}"
        );
    }

    let (_, reader) = digest_as(&server, Some("reader")).await;
    assert!(
        reader.contains("- [list_books](/books): GET. List books\n"),
        "{reader}"
    );
    assert!(
        !reader.contains("read_secrets") && !reader.contains("vault"),
        "{reader}"
    );

    let (_, admin) = digest_as(&server, Some("admin")).await;
    assert!(
        admin.contains("\n## vault\n\n- [read_secrets](/vault/secrets): GET."),
        "{admin}"
    );
    // Rendered once per audience, the same again.
    assert_eq!(digest_as(&server, Some("admin")).await.1, admin);

    // Credentials that are not valid are refused, as discovery refuses them.
    let response = Client::new()
        .get(server.url("/llms.txt"))
        .bearer_auth("forged")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
    assert!(header(&response, &WWW_AUTHENTICATE).contains("invalid_token"));
}

#[tokio::test]
async fn when_discovery_needs_credentials_so_does_llms_txt() {
    let layer = guarded()
        .require_credentials(true)
        .catalogs(Catalogs::new().llms_txt(true).api_catalog(true))
        .build()
        .unwrap();
    let server = spawn(Router::new().layer(layer)).await;
    let (status, _) = digest_as(&server, None).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    let (status, reader) = digest_as(&server, Some("reader")).await;
    assert_eq!(status, StatusCode::OK);
    assert!(reader.contains("list_books"));
    // The catalog names no tool: it stays public.
    let catalog = request(&server, Method::GET, "/.well-known/api-catalog").await;
    assert_eq!(catalog.status(), StatusCode::OK);
    assert!(header(&catalog, &CACHE_CONTROL).starts_with("public"));
}

/// An OpenAPI document of `count` operations over tags of very different sizes, with
/// summaries of a realistic length.
fn generated(count: usize) -> Value {
    let tags = [
        "accounts",
        "billing",
        "catalog",
        "customers",
        "deployments",
        "files",
        "issues",
        "messages",
        "orders",
        "projects",
        "reports",
        "search",
        "teams",
        "users",
        "webhooks",
    ];
    let mut paths = Map::new();
    for index in 0..count {
        // Tag `i` gets about twice the operations of tag `i + 1`, and the last few a handful.
        let tag = tags[(index.trailing_zeros() as usize).min(tags.len() - 1)];
        paths.insert(
            format!("/{tag}/things{index}/{{id}}"),
            json!({"post": {
                "operationId": format!("{tag}_operation_{index}"),
                "summary": format!("Update thing number {index} of the {tag} area, keeping its history and notifying its owners"),
                "tags": [tag, "write"],
                "parameters": [{"name": "id", "in": "path", "required": true, "schema": {"type": "integer"}}],
                "responses": {}
            }}),
        );
    }
    json!({
        "openapi": "3.1.0",
        "info": {"title": "Big API", "version": "9", "description": "Everything, everywhere."},
        "paths": paths
    })
}

#[tokio::test]
async fn a_large_api_stays_within_the_budget_and_says_how_to_search() {
    let layer = HaloBuilder::from_openapi_json(generated(600))
        .catalogs(Catalogs::new().llms_txt(true))
        .build()
        .unwrap();
    let server = spawn(Router::new().layer(layer)).await;
    let digest = request(&server, Method::GET, "/llms.txt")
        .await
        .text()
        .await
        .unwrap();
    let tokens = estimate_tokens(&digest);
    assert!(tokens <= 4_000, "{tokens} tokens");
    assert!(tokens > 3_000, "the budget is used: {tokens} tokens");
    assert!(digest.contains("## Finding the rest"), "{digest}");
    assert!(digest.contains("of the 600 tools you may call"), "{digest}");
    assert!(digest.contains("`OPTIONS /?q=words`"), "{digest}");
    assert!(digest.contains("`OPTIONS /?tags=name`"), "{digest}");
    // Whole tags are listed, and the others summarised with their counts.
    assert!(digest.contains("\n## Other tags\n\n"), "{digest}");
    assert!(digest.contains("- accounts: 300 tools\n"), "{digest}");
    let listed = digest.matches("\n- [").count();
    assert!(listed > 0, "{digest}");
    let note = format!("This digest lists {listed} of the 600 tools");
    assert!(digest.contains(&note), "{digest}");

    // A smaller budget is kept too.
    let layer = HaloBuilder::from_openapi_json(generated(600))
        .catalogs(Catalogs::new().llms_txt(true).llms_txt_budget(600))
        .build()
        .unwrap();
    let server = spawn(Router::new().layer(layer)).await;
    let digest = request(&server, Method::GET, "/llms.txt")
        .await
        .text()
        .await
        .unwrap();
    assert!(estimate_tokens(&digest) <= 600, "{digest}");
    assert!(digest.contains("`OPTIONS /?q=words`"), "{digest}");

    // A budget too small for anything but the title and the note still gets both.
    let layer = HaloBuilder::from_openapi_json(generated(600))
        .catalogs(Catalogs::new().llms_txt(true).llms_txt_budget(10))
        .build()
        .unwrap();
    let server = spawn(Router::new().layer(layer)).await;
    let digest = request(&server, Method::GET, "/llms.txt")
        .await
        .text()
        .await
        .unwrap();
    assert!(digest.starts_with("# Big API\n"), "{digest}");
    assert!(
        digest.contains("This digest lists 0 of the 600 tools"),
        "{digest}"
    );
    assert!(!digest.contains("\n- "), "{digest}");

    // A budget that fits everything lists everything.
    let layer = HaloBuilder::from_openapi_json(generated(600))
        .catalogs(Catalogs::new().llms_txt(true).llms_txt_budget(1_000_000))
        .build()
        .unwrap();
    let server = spawn(Router::new().layer(layer)).await;
    let digest = request(&server, Method::GET, "/llms.txt")
        .await
        .text()
        .await
        .unwrap();
    assert_eq!(digest.matches("\n- [").count(), 600);
    assert!(!digest.contains("Finding the rest"));
}

/// An app with its own `/llms.txt` (GET and POST) and its own 404 page.
fn own_routes() -> Router {
    Router::new()
        .route(
            "/llms.txt",
            get(|| async { ([("content-type", "text/plain")], "the app's own digest") })
                .post(|| async { "posted to the app" }),
        )
        .fallback(|| async { (StatusCode::NOT_FOUND, "the app's own 404") })
}

/// Status, content type and body of `GET path`.
async fn snapshot(
    server: &TestServer,
    method: Method,
    path: &str,
) -> (StatusCode, String, Vec<u8>) {
    let response = request(server, method, path).await;
    let status = response.status();
    let content_type = header(&response, &CONTENT_TYPE).to_owned();
    (
        status,
        content_type,
        response.bytes().await.unwrap().to_vec(),
    )
}

#[tokio::test]
async fn without_opting_in_the_app_answers_as_without_the_layer() {
    let (_, api) = common::petshop();
    let bare = spawn(own_routes()).await;
    let layered = spawn(own_routes().layer(HaloLayer::from_openapi(api))).await;
    for path in [
        "/llms.txt",
        "/.well-known/api-catalog",
        "/.well-known/agent-card.json",
    ] {
        for method in [Method::GET, Method::HEAD, Method::POST] {
            assert_eq!(
                snapshot(&layered, method.clone(), path).await,
                snapshot(&bare, method.clone(), path).await,
                "{method} {path}"
            );
        }
    }
}

#[tokio::test]
async fn opted_in_the_layer_answers_get_and_head_first_and_leaves_the_rest_to_the_app() {
    let (_, api) = common::petshop();
    let layer = HaloLayer::builder(api)
        .catalogs(Catalogs::new().llms_txt(true))
        .build()
        .unwrap();
    let server = spawn(own_routes().layer(layer)).await;
    let (status, content_type, body) = snapshot(&server, Method::GET, "/llms.txt").await;
    assert_eq!((status, content_type.as_str()), (StatusCode::OK, MARKDOWN));
    assert!(String::from_utf8(body).unwrap().starts_with("# Pet Shop"));
    let (status, _, body) = snapshot(&server, Method::POST, "/llms.txt").await;
    assert_eq!(
        (status, body.as_slice()),
        (StatusCode::OK, &b"posted to the app"[..])
    );
    // Documents not chosen are the app's.
    let (status, _, body) = snapshot(&server, Method::GET, "/.well-known/api-catalog").await;
    assert_eq!(
        (status, body.as_slice()),
        (StatusCode::NOT_FOUND, &b"the app's own 404"[..])
    );
}

/// An API hosting two agents (one for admins only) beside an ordinary tool, described as
/// `Agents::document` describes them.
fn with_agents(catalogs: Catalogs) -> HaloLayer {
    let run = |name: &str, summary: &str, security: Value| {
        json!({"post": {
            "operationId": name,
            "summary": summary,
            "description": format!("{summary}.\n\nIn several turns."),
            "tags": ["agents"],
            "requestBody": {"required": true, "content": {"application/json": {"schema": {
                "type": "object", "required": ["input"],
                "properties": {"input": {"type": "string"}}
            }}}},
            "responses": {},
            "security": security,
            "x-halo-kind": "agent",
            "x-halo-why": format!("Use to {summary}"),
            "x-halo-examples": [{"input": {"input": "Find me a book about whales"}}]
        }})
    };
    let document = json!({
        "openapi": "3.1.0",
        "info": {"title": "Library", "version": "3.2.1", "description": "Books and the agents that know them."},
        "components": {"securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}}},
        "paths": {
            "/books": {"get": {"operationId": "list_books", "summary": "List books", "tags": ["books"], "responses": {}}},
            "/agents/librarian/run": run("librarian", "answer questions about books", json!([])),
            "/agents/auditor/run": run("auditor", "audit the catalogue", json!([{"bearer": ["admin"]}]))
        }
    });
    HaloBuilder::from_openapi_json(document)
        .authenticator(
            StaticAuthenticator::new()
                .bearer("admin", Principal::new("admin").with_scopes(["admin"])),
        )
        .catalogs(catalogs)
        .build()
        .unwrap()
}

async fn card_as(server: &TestServer, token: Option<&str>) -> (StatusCode, Value) {
    let mut request = Client::new().get(server.url("/.well-known/agent-card.json"));
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    let response = request.send().await.unwrap();
    let status = response.status();
    if status == StatusCode::OK {
        assert_eq!(header(&response, &CONTENT_TYPE), "application/json");
    }
    let bytes = response.bytes().await.unwrap();
    (
        status,
        serde_json::from_slice(&bytes).unwrap_or(Value::Null),
    )
}

fn skill_ids(card: &Value) -> Vec<&str> {
    card["skills"]
        .as_array()
        .unwrap()
        .iter()
        .map(|skill| skill["id"].as_str().unwrap())
        .collect()
}

#[tokio::test]
async fn the_agent_card_lists_the_hosted_agents_the_caller_may_run() {
    let layer = with_agents(Catalogs::new().agent_card(true).llms_txt(true));
    let server = spawn(Router::new().layer(layer)).await;

    let (status, card) = card_as(&server, None).await;
    assert_eq!(status, StatusCode::OK);
    for field in [
        "protocolVersion",
        "name",
        "description",
        "url",
        "version",
        "capabilities",
        "defaultInputModes",
        "defaultOutputModes",
        "skills",
    ] {
        assert!(!card[field].is_null(), "no `{field}`: {card}");
    }
    assert_eq!(card["name"], "Library");
    assert_eq!(card["version"], "3.2.1");
    assert_eq!(card["url"], "/");
    assert_eq!(card["capabilities"]["streaming"], true);
    // Not A2A JSON-RPC: HALO is the transport, and a required extension.
    assert_eq!(card["preferredTransport"], "HALO");
    let extension = &card["capabilities"]["extensions"][0];
    assert_eq!(extension["required"], true);
    assert_eq!(
        extension["params"]["run"]["librarian"],
        json!({"method": "POST", "url": "/agents/librarian/run"})
    );
    assert_eq!(card["documentationUrl"], "/llms.txt");
    // Hosted agents only: the ordinary tool is no skill; the admin's agent is hidden.
    assert_eq!(skill_ids(&card), ["librarian"]);
    let skill = &card["skills"][0];
    assert_eq!(skill["name"], "librarian");
    assert_eq!(skill["tags"], json!(["agents"]));
    assert!(
        skill["description"]
            .as_str()
            .unwrap()
            .contains("In several turns.")
    );
    assert_eq!(skill["examples"], json!(["Find me a book about whales"]));
    assert!(!card.to_string().contains("auditor"), "{card}");

    let (_, admin) = card_as(&server, Some("admin")).await;
    let mut ids = skill_ids(&admin);
    ids.sort_unstable();
    assert_eq!(ids, ["auditor", "librarian"]);

    let head = request(&server, Method::HEAD, "/.well-known/agent-card.json").await;
    assert_eq!(head.status(), StatusCode::OK);
    // Scoped to the caller, like discovery.
    assert!(header(&head, &VARY).contains("authorization"));
    assert!(header(&head, &CACHE_CONTROL).starts_with("private"));
    assert!(head.bytes().await.unwrap().is_empty());
}

#[tokio::test]
async fn no_card_without_a_hosted_agent_the_caller_may_run() {
    // An API without agents: the card path stays the app's.
    let server = petshop(Catalogs::new().agent_card(true)).await;
    let (status, _) = card_as(&server, None).await;
    assert_eq!(status, StatusCode::NOT_FOUND);

    // Agents that only admins may run: an anonymous caller gets the app's answer.
    let document = json!({
        "openapi": "3.1.0",
        "info": {"title": "Private", "version": "1"},
        "components": {"securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}}},
        "paths": {"/agents/auditor/run": {"post": {
            "operationId": "auditor", "summary": "Audit", "tags": ["agents"],
            "security": [{"bearer": ["admin"]}], "responses": {}, "x-halo-kind": "agent"
        }}}
    });
    let layer = HaloBuilder::from_openapi_json(document)
        .authenticator(
            StaticAuthenticator::new()
                .bearer("admin", Principal::new("admin").with_scopes(["admin"])),
        )
        .catalogs(Catalogs::new().agent_card(true))
        .build()
        .unwrap();
    let server = spawn(own_routes().layer(layer)).await;
    let anonymous = snapshot(&server, Method::GET, "/.well-known/agent-card.json").await;
    assert_eq!(
        anonymous,
        (
            StatusCode::NOT_FOUND,
            "text/plain; charset=utf-8".to_owned(),
            b"the app's own 404".to_vec()
        )
    );
    let (status, admin) = card_as(&server, Some("admin")).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(skill_ids(&admin), ["auditor"]);
}

/// The card of agents set up with `Agents`, as an app hosts them.
#[cfg(feature = "agents")]
#[tokio::test]
async fn the_card_of_agents_hosted_with_agents() {
    use halo_agent::{Agent, OpenAiProvider};
    use halo_axum::agents::{Agents, HostedAgent};

    // The model is never asked: the card is built from the document.
    let provider = OpenAiProvider::builder()
        .base_url("http://127.0.0.1:9/v1")
        .model("unused")
        .build()
        .unwrap();
    let agent = Agent::builder(provider).build();
    let agents = Agents::new().agent(
        HostedAgent::new("pet_helper", agent)
            .description("Helps choose a pet.")
            .why("Use when someone wants a pet but does not know which")
            .system_prompt("SECRET-PROMPT"),
    );
    let (router, api) = common::petshop();
    let api = agents.document(api).unwrap();
    let layer = HaloLayer::builder(api)
        .catalogs(Catalogs::all())
        .build()
        .unwrap();
    let app = router
        .clone()
        .merge(agents.router(&layer, router))
        .layer(layer);
    let server = spawn(app).await;
    let (status, card) = card_as(&server, None).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(skill_ids(&card), ["pet_helper"]);
    assert_eq!(
        card["capabilities"]["extensions"][0]["params"]["run"]["pet_helper"]["url"],
        "/agents/pet_helper/run"
    );
    assert!(!card.to_string().contains("SECRET-PROMPT"));
    let digest = request(&server, Method::GET, "/llms.txt")
        .await
        .text()
        .await
        .unwrap();
    assert!(
        digest.contains("- [pet_helper](/agents/pet_helper/run): POST. Helps choose a pet."),
        "{digest}"
    );
}
