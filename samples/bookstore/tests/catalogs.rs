//! The discovery documents the bookstore serves beside HALO: `curl localhost:PORT/llms.txt`
//! gives each caller a Markdown digest of the tools it may call, and the RFC 9727 API catalog
//! links the manifest, `/openapi.json` and the playground.

use crate::support;

use reqwest::StatusCode;
use reqwest::header::{CONTENT_TYPE, VARY};
use serde_json::Value;
use support::{Caller, Server};

#[tokio::test]
async fn llms_txt_and_the_api_catalog() {
    let server = Server::start().await;
    let digest = |caller: Caller| {
        let request = caller.sign(server.get("/llms.txt"));
        async move {
            let response = request.send().await.expect("GET /llms.txt");
            assert_eq!(response.status(), StatusCode::OK);
            assert_eq!(
                response.headers()[CONTENT_TYPE],
                "text/markdown; charset=utf-8"
            );
            let vary = response.headers()[VARY].to_str().unwrap().to_owned();
            assert!(
                vary.contains("authorization") && vary.contains("x-api-key"),
                "{vary}"
            );
            response.text().await.expect("a digest")
        }
    };

    let anonymous = digest(Caller::Anonymous).await;
    assert!(
        anonymous.starts_with("# Bookstore\n\n> A bookstore: "),
        "{anonymous}"
    );
    assert!(
        anonymous.contains("- [search_books](/api/books): GET."),
        "{anonymous}"
    );
    // Hidden tools leave no trace: not the payments, nor their tag.
    for hidden in [
        "charge_payment",
        "/api/payments",
        "## payments",
        "reserve_stock",
    ] {
        assert!(!anonymous.contains(hidden), "`{hidden}`:\n{anonymous}");
    }
    let admin = digest(Caller::Admin).await;
    assert!(
        admin.contains("- [charge_payment](/api/payments/charge): POST."),
        "{admin}"
    );
    let key = digest(Caller::Key).await;
    assert!(
        key.contains("[reserve_stock]") && !key.contains("charge_payment"),
        "{key}"
    );

    let response = server
        .get("/.well-known/api-catalog")
        .send()
        .await
        .expect("GET the API catalog");
    assert_eq!(response.status(), StatusCode::OK);
    let catalog: Value = response.json().await.expect("a linkset");
    let text = catalog.to_string();
    let manifest = &catalog["linkset"][1]["service-desc"][0];
    assert_eq!(manifest["href"], "/", "{text}");
    assert_eq!(manifest["type"], "application/llm+json", "{text}");
    assert!(text.contains(r#""href":"/openapi.json""#), "{text}");
    assert!(text.contains(r#""href":"/llms.txt""#), "{text}");
    assert!(text.contains(r#""href":"/playground""#), "{text}");
    // The bookstore hosts no agent without a model: no card.
    let card = server
        .get("/.well-known/agent-card.json")
        .send()
        .await
        .expect("GET the agent card");
    assert_eq!(card.status(), StatusCode::NOT_FOUND);
}
