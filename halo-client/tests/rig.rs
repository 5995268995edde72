//! halo-client's rig tools over real HTTP on loopback: every tool of the bookstore a rig
//! `DynamicTool` with the definition any LLM API gets, called with the client's credentials;
//! above the budget, `search_tools` and `call_tool`; a `4xx` a rig tool error whose model
//! output is the problem and which holds no credential; a held refund that waits for its
//! approval (or is refused); a retried payment that runs once under one idempotency key.

use crate::support;

use std::time::Duration;

use halo_client::protocol::{ToolEntry, ToolKind, ToolSchema, tool_definitions};
use halo_client::rig::{Offer, RigTools};
use halo_client::{Approval, Client, Credential, Method, ToolFormat, export_tools};
use halo_tests::TestServer;
use halo_tests::bookstore::one_dune;
use rig_core::tool::{DynamicTool, ToolErrorKind, ToolExecutionError, ToolOutput};
use serde_json::{Value, json};
use support::fault::{Action, Reply};
use support::halo::{self, count};
use tokio::sync::mpsc;

const PATIENCE: Duration = Duration::from_secs(20);

async fn bookstore() -> TestServer {
    halo_tests::spawn(bookstore::app()).await
}

fn admin(server: &TestServer) -> Client {
    Client::builder(server.base_url())
        .credential(Credential::bearer("demo-admin"))
        .build()
        .unwrap()
}

fn named(tools: &[DynamicTool], name: &str) -> DynamicTool {
    tools
        .iter()
        .find(|tool| tool.name().as_str() == name)
        .unwrap_or_else(|| panic!("no tool {name}"))
        .clone()
}

fn names(tools: &[DynamicTool]) -> Vec<String> {
    tools.iter().map(|tool| tool.name().to_string()).collect()
}

async fn run(tool: &DynamicTool, arguments: Value) -> Result<ToolOutput, ToolExecutionError> {
    tokio::time::timeout(PATIENCE, tool.execute(arguments))
        .await
        .expect("the tool answers")
}

/// What the model reads of a success, as JSON.
fn json_of(output: &ToolOutput) -> Value {
    output.as_json().cloned().expect("a JSON answer")
}

#[tokio::test]
async fn every_bookstore_tool_is_a_rig_tool_called_with_the_clients_credentials() {
    let server = bookstore().await;
    let client = admin(&server);
    let tools = RigTools::builder(&client)
        .all_tools()
        .discover()
        .await
        .unwrap();
    assert_eq!(tools.offer(), Offer::EveryTool);

    // The definitions are export_tools' (OpenAI function calling), tool for tool.
    let manifest = client.discover(&[]).await.unwrap();
    let described: Vec<(ToolEntry, ToolSchema)> = manifest
        .tools
        .iter()
        .cloned()
        .zip(client.describe_all(&manifest.tools).await.unwrap())
        .filter(|(entry, _)| entry.kind != Some(ToolKind::Agent))
        .collect();
    let exported = export_tools(&described, ToolFormat::OpenAi);
    let rig = tools.tools();
    assert_eq!(rig.len(), exported.len());
    assert!(rig.len() >= 10, "{}", rig.len());
    for (tool, function) in rig.iter().zip(&exported) {
        let definition = tool.definition();
        let function = &function["function"];
        assert_eq!(definition.name.as_str(), function["name"]);
        assert_eq!(definition.description, function["description"]);
        assert_eq!(definition.parameters, function["parameters"]);
    }
    assert_eq!(tools.definitions(), tool_definitions(&described));

    // A call the admin's token alone may make: the stock levels.
    let stock = run(&named(&rig, "get_stock"), json!({"sku": "9780441478125"}))
        .await
        .unwrap();
    assert_eq!(json_of(&stock)["on_hand"], 5);
    // Path, query and body arguments placed as the schema says.
    let book = run(&named(&rig, "get_book"), json!({"id": 1}))
        .await
        .unwrap();
    assert_eq!(json_of(&book)["id"], 1);
    let found = run(&named(&rig, "search_books"), json!({"author": "Le Guin"}))
        .await
        .unwrap();
    assert!(found.render().contains("Le Guin"), "{}", found.render());
    let order = run(&named(&rig, "create_order"), one_dune()).await.unwrap();
    assert_eq!(
        json_of(&order)["status"],
        "pending_payment",
        "{}",
        order.render()
    );

    // Tags choose the tools, as discovery's `?tags=` does.
    let read = RigTools::discover(&client, &["read"]).await.unwrap();
    let read = names(&read.tools());
    assert!(read.contains(&"get_stock".to_owned()), "{read:?}");
    assert!(!read.contains(&"create_order".to_owned()), "{read:?}");
}

#[tokio::test]
async fn a_4xx_is_a_tool_error_the_model_reads_as_its_problem() {
    let server = bookstore().await;
    let client = admin(&server);
    let tools = RigTools::builder(&client)
        .all_tools()
        .discover()
        .await
        .unwrap()
        .tools();

    let missing = run(&named(&tools, "get_book"), json!({"id": 999_999}))
        .await
        .unwrap_err();
    assert_eq!(missing.kind(), ToolErrorKind::NotFound);
    assert_eq!(missing.http_status(), Some(404));
    let problem = missing.model_output().as_json().unwrap();
    assert_eq!(problem["status"], 404);
    assert!(problem["detail"].as_str().is_some(), "{problem}");
    // The client's error is the failure's source, for the application.
    let source = missing.downcast_ref::<halo_client::Error>().unwrap();
    assert_eq!(source.status().map(|s| s.as_u16()), Some(404));

    let invalid = run(
        &named(&tools, "create_order"),
        json!({"customer_email": "ada@example.com", "items": []}),
    )
    .await
    .unwrap_err();
    assert_eq!(invalid.kind(), ToolErrorKind::InvalidArgs, "{invalid}");
    let problem = invalid.model_output().as_json().unwrap();
    assert_eq!(
        Some(problem["status"].as_u64().unwrap() as u16),
        invalid.http_status()
    );

    // Arguments that cannot be placed: a 400 the model can correct, nothing sent.
    let unplaced = run(&named(&tools, "get_book"), json!({}))
        .await
        .unwrap_err();
    assert_eq!(unplaced.kind(), ToolErrorKind::InvalidArgs);
    assert_eq!(unplaced.http_status(), Some(400));
    for failure in [&missing, &invalid, &unplaced] {
        let seen = format!("{failure} {}", failure.model_output().render());
        assert!(!seen.contains("demo-admin"), "{seen}");
    }
}

#[tokio::test]
async fn a_credential_is_sent_to_its_host_and_never_shown_to_the_model() {
    let (server, client) = support::go_with(&json!({}), Credential::bearer("s3cret-token")).await;
    let schema = client.describe("/go", Method::GET).await.unwrap();
    let tools = RigTools::builder(&client)
        .build(vec![(ToolEntry::new("/go", "GET", "go", "Go."), schema)])
        .tools();
    server.script([Action::Reply(
        Reply::json(
            401,
            &json!({"type": "about:blank", "title": "Unauthorized", "status": 401,
                                 "detail": "the token is not valid"}),
        )
        .header("Content-Type", "application/problem+json"),
    )]);
    let refused = run(&tools[0], json!({})).await.unwrap_err();
    assert_eq!(
        server.requests()[0].header("authorization"),
        Some("Bearer s3cret-token")
    );
    assert_eq!(refused.kind(), ToolErrorKind::PermissionDenied);
    assert_eq!(refused.http_status(), Some(401));
    assert_eq!(
        refused.model_output().as_json().unwrap()["detail"],
        "the token is not valid"
    );
    let seen = format!("{refused} {refused:?} {}", refused.model_output().render());
    assert!(!seen.contains("s3cret"), "{seen}");

    // An API that cannot be reached: a network failure, retryable.
    drop(server);
    let unreachable = run(&tools[0], json!({})).await.unwrap_err();
    assert_eq!(unreachable.kind(), ToolErrorKind::Network, "{unreachable}");
    assert!(!format!("{unreachable}").contains("s3cret"));
}

#[tokio::test]
async fn above_the_budget_the_model_searches_then_calls() {
    let server = bookstore().await;
    let client = admin(&server);
    let tools = RigTools::builder(&client)
        .tool_budget(300)
        .discover()
        .await
        .unwrap();
    assert!(tools.listed_tokens() > 300, "{}", tools.listed_tokens());
    assert_eq!(tools.offer(), Offer::SearchAndCall);
    let offered = tools.tools();
    assert_eq!(names(&offered), ["search_tools", "call_tool"]);
    let (search, call) = (&offered[0], &offered[1]);
    assert!(!search.definition().description.contains("by its name"));

    let found = json_of(
        &run(
            search,
            json!({"query": "stock level of a book", "limit": 3}),
        )
        .await
        .unwrap(),
    );
    let first = &found["tools"][0];
    assert_eq!(first["name"], "get_stock", "{found}");
    assert_eq!(first["inputSchema"]["required"], json!(["sku"]), "{found}");

    let stock = run(
        call,
        json!({"name": "get_stock", "arguments": {"sku": "9780441478125"}}),
    )
    .await
    .unwrap();
    assert_eq!(json_of(&stock)["on_hand"], 5);

    // What the model gets wrong comes back as a problem it reads.
    let unknown = run(call, json!({"name": "stock_of", "arguments": {}}))
        .await
        .unwrap_err();
    assert_eq!(unknown.kind(), ToolErrorKind::NotFound);
    let detail = unknown.model_output().as_json().unwrap()["detail"].clone();
    let detail = detail.as_str().unwrap();
    assert!(
        detail.contains("search_tools") && detail.contains("close names:"),
        "{detail}"
    );
    let bad = run(search, json!({"limit": 3})).await.unwrap_err();
    assert_eq!(
        (bad.kind(), bad.http_status()),
        (ToolErrorKind::InvalidArgs, Some(400))
    );
    let nothing = json_of(
        &run(search, json!({"query": "kubernetes pods"}))
            .await
            .unwrap(),
    );
    assert!(nothing["note"].as_str().is_some(), "{nothing}");
    // A failed call through call_tool is the tool's failure.
    let missing = run(
        call,
        json!({"name": "get_book", "arguments": {"id": 999_999}}),
    )
    .await
    .unwrap_err();
    assert_eq!(missing.http_status(), Some(404));

    // The same tools under no budget: each its own.
    let every = tools.every_tool();
    assert_eq!(every.len(), tools.definitions().len());
    assert_eq!(tools.search_and_call().len(), 2);
}

/// The admin's rig tools over the bookstore, with a client that tells of every held call.
fn watched(server: &TestServer) -> (Client, mpsc::UnboundedReceiver<Approval>) {
    let (tell, told) = mpsc::unbounded_channel();
    let client = Client::builder(server.base_url())
        .credential(Credential::bearer("demo-admin"))
        .on_approval_pending(move |approval| {
            let _ = tell.send(approval.clone());
        })
        .build()
        .unwrap();
    (client, told)
}

/// A paid order of one Dune: the charge's id.
async fn paid(client: &Client) -> String {
    let order = client
        .invoke("/api/orders", Method::POST, one_dune())
        .await
        .unwrap();
    let order = order.json().unwrap().clone();
    let charge = client
        .invoke(
            "/api/payments/charge",
            Method::POST,
            json!({"order_id": order["id"], "amount": order["total"], "currency": "EUR",
                   "payment_method": "pm_card_visa"}),
        )
        .await
        .unwrap();
    charge.json().unwrap()["id"].as_str().unwrap().to_owned()
}

#[tokio::test]
async fn a_held_refund_waits_for_its_approval_as_invoke_does() {
    let server = bookstore().await;
    let (client, mut pending) = watched(&server);
    let charge = paid(&client).await;
    let tools = RigTools::discover(&client, &["payments"])
        .await
        .unwrap()
        .tools();
    let refund = named(&tools, "refund_payment");

    for (decision, reason) in [("approve", "returned"), ("deny", "disputed")] {
        let call = {
            let refund = refund.clone();
            let charge = charge.clone();
            tokio::spawn(async move {
                refund
                    .execute(json!({"id": charge, "reason": reason}))
                    .await
            })
        };
        let held = tokio::time::timeout(PATIENCE, pending.recv())
            .await
            .expect("the call is held")
            .unwrap();
        assert_eq!(held.tool, "refund_payment");
        assert!(!call.is_finished());
        let approver = admin(&server);
        let answer = if decision == "approve" {
            approver.approve(&held.id).await.unwrap();
            tokio::time::timeout(PATIENCE, call).await.unwrap().unwrap()
        } else {
            approver
                .deny(&held.id, Some("the charge is disputed"))
                .await
                .unwrap();
            tokio::time::timeout(PATIENCE, call).await.unwrap().unwrap()
        };
        if decision == "approve" {
            let refunded = json_of(&answer.unwrap());
            assert_eq!(refunded["charge_id"], charge.as_str());
        } else {
            let denied = answer.unwrap_err();
            assert!(denied.is_refusal(), "{denied:?}");
            assert_eq!(denied.kind(), ToolErrorKind::PermissionDenied);
            let seen = denied.model_output().render();
            assert!(seen.contains("the charge is disputed"), "{seen}");
            assert!(
                denied
                    .downcast_ref::<halo_client::Error>()
                    .unwrap()
                    .is_denied()
            );
        }
    }
}

#[tokio::test]
async fn a_retried_payment_runs_once_under_one_idempotency_key() {
    let server = halo::Server::start().await;
    let client = Client::builder(&server.base)
        .retry(support::fast_retry())
        .build()
        .unwrap();
    let tools = RigTools::discover(&client, &["payments"])
        .await
        .unwrap()
        .tools();
    assert_eq!(names(&tools), ["pay"]);

    server.fail_next(2);
    let paid = run(&tools[0], json!({"amount": 500})).await.unwrap();
    assert_eq!(count(&server.executions().pay), 1);
    let keys: Vec<String> = server
        .calls("POST", "/payments")
        .iter()
        .map(|seen| seen.header("idempotency-key").unwrap().to_owned())
        .collect();
    assert_eq!(keys.len(), 3);
    assert!(keys.iter().all(|key| *key == keys[0]), "{keys:?}");
    assert_eq!(json_of(&paid)["key"], keys[0].as_str());

    // Failing past the retries: the 503's problem, a provider failure.
    server.fail_next(10);
    let failed = run(&tools[0], json!({"amount": 7})).await.unwrap_err();
    assert_eq!(
        (failed.kind(), failed.http_status()),
        (ToolErrorKind::Provider, Some(503))
    );
}
