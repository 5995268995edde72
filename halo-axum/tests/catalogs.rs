//! The discovery documents beside HALO (`HaloBuilder::catalogs`), the app called in process:
//! the RFC 9727 API catalog, `/llms.txt` and the A2A agent card. Their status, media type and
//! shape; `HEAD` and `304`; `/llms.txt` scoped to the caller (a hidden tool, its path and its
//! tag never appear) and within its token budget on a generated API of hundreds of
//! operations; the agent card listing hosted agents only; and nothing changed for an app
//! that did not opt in.

use crate::common;

use axum::Router;
use axum::http::header::{
    CACHE_CONTROL, CONTENT_LENGTH, CONTENT_TYPE, ETAG, IF_NONE_MATCH, LINK, VARY, WWW_AUTHENTICATE,
};
use axum::http::{Method, StatusCode, Uri};
use axum::routing::get;
use common::client::{Answer, App};
use halo_axum::protocol::estimate_tokens;
use halo_axum::{Catalogs, HaloBuilder, HaloLayer, Principal, StaticAuthenticator};
use serde_json::{Map, Value, json};

const LINKSET: &str =
    "application/linkset+json; profile=\"https://www.rfc-editor.org/info/rfc9727\"";
const MARKDOWN: &str = "text/markdown; charset=utf-8";

/// The pet shop of `common`, with its own `GET /openapi.json`, wrapped by a layer that
/// serves `catalogs`.
fn petshop(catalogs: Catalogs) -> App {
    let (router, api) = common::petshop();
    let layer = HaloLayer::builder(api)
        .catalogs(catalogs)
        .build()
        .expect("valid HALO metadata");
    App::new(
        router
            .route("/openapi.json", get(|| async { "{}" }))
            .layer(layer),
    )
}

async fn request(app: &App, method: Method, path: &str) -> Answer {
    app.request(method, path).send().await
}

/// The text of `GET path`.
async fn get_text(app: &App, path: &str) -> String {
    app.get(path).send().await.body
}

#[tokio::test]
async fn the_api_catalog_is_a_linkset_to_the_manifest_and_the_openapi_document() {
    let app = petshop(
        Catalogs::new()
            .api_catalog(true)
            .llms_txt(true)
            .openapi_url(Uri::from_static("/openapi.json"))
            .docs_url(Uri::from_static("/docs")),
    );
    let response = request(&app, Method::GET, "/.well-known/api-catalog").await;
    assert_eq!(response.status, StatusCode::OK);
    assert_eq!(response.header(&CONTENT_TYPE), LINKSET);
    assert_eq!(
        response.header(&LINK),
        "</.well-known/api-catalog>; rel=\"api-catalog\""
    );
    assert!(response.header(&CACHE_CONTROL).starts_with("public"));
    let etag = response.header(&ETAG).to_owned();
    let catalog = response.json();

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
    let head = request(&app, Method::HEAD, "/.well-known/api-catalog").await;
    assert_eq!(head.status, StatusCode::OK);
    assert_eq!(head.header(&CONTENT_TYPE), LINKSET);
    assert!(head.header(&LINK).contains("rel=\"api-catalog\""));
    assert_eq!(head.header(&ETAG), etag);
    let length: usize = head.header(&CONTENT_LENGTH).parse().unwrap();
    assert_eq!(length, serde_json::to_vec(&catalog).unwrap().len());
    assert!(head.body.is_empty());

    // Revalidation.
    let revalidated = app
        .get("/.well-known/api-catalog")
        .header(IF_NONE_MATCH, &etag)
        .send()
        .await;
    assert_eq!(revalidated.status, StatusCode::NOT_MODIFIED);

    // Another method is the app's: this one has no route there.
    let post = request(&app, Method::POST, "/.well-known/api-catalog").await;
    assert_eq!(post.status, StatusCode::NOT_FOUND);
    // The agent card was not chosen (and the pet shop hosts no agent).
    let card = request(&app, Method::GET, "/.well-known/agent-card.json").await;
    assert_eq!(card.status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn with_a_base_url_every_link_is_absolute() {
    let app = petshop(
        Catalogs::all()
            .openapi_url(Uri::from_static("/openapi.yaml"))
            .base_url(Uri::from_static("https://api.example.com/shop/")),
    );
    let response = request(&app, Method::GET, "/.well-known/api-catalog").await;
    assert_eq!(
        response.header(&LINK),
        "<https://api.example.com/shop/.well-known/api-catalog>; rel=\"api-catalog\""
    );
    let catalog = response.json();
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

    let digest = get_text(&app, "/llms.txt").await;
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
    let app = petshop(Catalogs::new().llms_txt(true));
    let response = request(&app, Method::GET, "/llms.txt").await;
    assert_eq!(response.status, StatusCode::OK);
    assert_eq!(response.header(&CONTENT_TYPE), MARKDOWN);
    // No authenticator: the same for everyone, so public.
    assert!(response.header(&CACHE_CONTROL).starts_with("public"));
    assert!(!response.header(&VARY).contains("authorization"));
    let etag = response.header(&ETAG).to_owned();
    let digest = response.body;
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

    let head = request(&app, Method::HEAD, "/llms.txt").await;
    assert_eq!(head.status, StatusCode::OK);
    assert_eq!(head.header(&CONTENT_TYPE), MARKDOWN);
    assert_eq!(head.header(&CONTENT_LENGTH), digest.len().to_string());
    assert!(head.body.is_empty());
    let revalidated = app
        .get("/llms.txt")
        .header(IF_NONE_MATCH, &etag)
        .send()
        .await;
    assert_eq!(revalidated.status, StatusCode::NOT_MODIFIED);
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

async fn digest_as(app: &App, token: Option<&str>) -> (StatusCode, String) {
    let response = app.get("/llms.txt").caller(token).send().await;
    let status = response.status;
    if status == StatusCode::OK {
        assert_eq!(response.header(&CONTENT_TYPE), MARKDOWN);
        assert!(response.header(&CACHE_CONTROL).starts_with("private"));
        assert!(response.header(&VARY).contains("authorization"));
    }
    (status, response.body)
}

#[tokio::test]
async fn llms_txt_shows_each_caller_only_its_tools() {
    let layer = guarded()
        .catalogs(Catalogs::new().llms_txt(true))
        .build()
        .unwrap();
    let app = App::new(Router::new().layer(layer));

    let (status, anonymous) = digest_as(&app, None).await;
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

    let (_, reader) = digest_as(&app, Some("reader")).await;
    assert!(
        reader.contains("- [list_books](/books): GET. List books\n"),
        "{reader}"
    );
    assert!(
        !reader.contains("read_secrets") && !reader.contains("vault"),
        "{reader}"
    );

    let (_, admin) = digest_as(&app, Some("admin")).await;
    assert!(
        admin.contains("\n## vault\n\n- [read_secrets](/vault/secrets): GET."),
        "{admin}"
    );
    // Rendered once per audience, the same again.
    assert_eq!(digest_as(&app, Some("admin")).await.1, admin);

    // Credentials that are not valid are refused, as discovery refuses them.
    let response = app.get("/llms.txt").bearer_auth("forged").send().await;
    assert_eq!(response.status, StatusCode::UNAUTHORIZED);
    assert!(response.header(&WWW_AUTHENTICATE).contains("invalid_token"));
}

#[tokio::test]
async fn when_discovery_needs_credentials_so_does_llms_txt() {
    let layer = guarded()
        .require_credentials(true)
        .catalogs(Catalogs::new().llms_txt(true).api_catalog(true))
        .build()
        .unwrap();
    let app = App::new(Router::new().layer(layer));
    let (status, _) = digest_as(&app, None).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    let (status, reader) = digest_as(&app, Some("reader")).await;
    assert_eq!(status, StatusCode::OK);
    assert!(reader.contains("list_books"));
    // The catalog names no tool: it stays public.
    let catalog = request(&app, Method::GET, "/.well-known/api-catalog").await;
    assert_eq!(catalog.status, StatusCode::OK);
    assert!(catalog.header(&CACHE_CONTROL).starts_with("public"));
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
    let app = App::new(Router::new().layer(layer));
    let digest = get_text(&app, "/llms.txt").await;
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
    let app = App::new(Router::new().layer(layer));
    let digest = get_text(&app, "/llms.txt").await;
    assert!(estimate_tokens(&digest) <= 600, "{digest}");
    assert!(digest.contains("`OPTIONS /?q=words`"), "{digest}");

    // A budget too small for anything but the title and the note still gets both.
    let layer = HaloBuilder::from_openapi_json(generated(600))
        .catalogs(Catalogs::new().llms_txt(true).llms_txt_budget(10))
        .build()
        .unwrap();
    let app = App::new(Router::new().layer(layer));
    let digest = get_text(&app, "/llms.txt").await;
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
    let app = App::new(Router::new().layer(layer));
    let digest = get_text(&app, "/llms.txt").await;
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
async fn snapshot(app: &App, method: Method, path: &str) -> (StatusCode, String, Vec<u8>) {
    let response = request(app, method, path).await;
    let content_type = response.header(&CONTENT_TYPE).to_owned();
    (response.status, content_type, response.body.into_bytes())
}

#[tokio::test]
async fn without_opting_in_the_app_answers_as_without_the_layer() {
    let (_, api) = common::petshop();
    let bare = App::new(own_routes());
    let layered = App::new(own_routes().layer(HaloLayer::from_openapi(api)));
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
    let app = App::new(own_routes().layer(layer));
    let (status, content_type, body) = snapshot(&app, Method::GET, "/llms.txt").await;
    assert_eq!((status, content_type.as_str()), (StatusCode::OK, MARKDOWN));
    assert!(String::from_utf8(body).unwrap().starts_with("# Pet Shop"));
    let (status, _, body) = snapshot(&app, Method::POST, "/llms.txt").await;
    assert_eq!(
        (status, body.as_slice()),
        (StatusCode::OK, &b"posted to the app"[..])
    );
    // Documents not chosen are the app's.
    let (status, _, body) = snapshot(&app, Method::GET, "/.well-known/api-catalog").await;
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

async fn card_as(app: &App, token: Option<&str>) -> (StatusCode, Value) {
    let response = app
        .get("/.well-known/agent-card.json")
        .caller(token)
        .send()
        .await;
    if response.status == StatusCode::OK {
        assert_eq!(response.header(&CONTENT_TYPE), "application/json");
    }
    (response.status, response.json())
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
    let app = App::new(Router::new().layer(layer));

    let (status, card) = card_as(&app, None).await;
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

    let (_, admin) = card_as(&app, Some("admin")).await;
    let mut ids = skill_ids(&admin);
    ids.sort_unstable();
    assert_eq!(ids, ["auditor", "librarian"]);

    let head = request(&app, Method::HEAD, "/.well-known/agent-card.json").await;
    assert_eq!(head.status, StatusCode::OK);
    // Scoped to the caller, like discovery.
    assert!(head.header(&VARY).contains("authorization"));
    assert!(head.header(&CACHE_CONTROL).starts_with("private"));
    assert!(head.body.is_empty());
}

#[tokio::test]
async fn no_card_without_a_hosted_agent_the_caller_may_run() {
    // An API without agents: the card path stays the app's.
    let app = petshop(Catalogs::new().agent_card(true));
    let (status, _) = card_as(&app, None).await;
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
    let app = App::new(own_routes().layer(layer));
    let anonymous = snapshot(&app, Method::GET, "/.well-known/agent-card.json").await;
    assert_eq!(
        anonymous,
        (
            StatusCode::NOT_FOUND,
            "text/plain; charset=utf-8".to_owned(),
            b"the app's own 404".to_vec()
        )
    );
    let (status, admin) = card_as(&app, Some("admin")).await;
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
    let app = App::new(app);
    let (status, card) = card_as(&app, None).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(skill_ids(&card), ["pet_helper"]);
    assert_eq!(
        card["capabilities"]["extensions"][0]["params"]["run"]["pet_helper"]["url"],
        "/agents/pet_helper/run"
    );
    assert!(!card.to_string().contains("SECRET-PROMPT"));
    let digest = get_text(&app, "/llms.txt").await;
    assert!(
        digest.contains("- [pet_helper](/agents/pet_helper/run): POST. Helps choose a pet."),
        "{digest}"
    );
}
