//! halo-rs's client against the bookstore sample over real HTTP: every tool discovered and
//! described, arguments placed in path, query and body, credentials by host, an idempotency
//! key attached where the schema advertises one, and error bodies kept.

use halo_client::{Client, Credential, Credentials, Method, RetryPolicy};
use halo_tests::bookstore::one_dune;
use halo_tests::spawn;
use serde_json::json;

#[tokio::test]
async fn the_client_uses_the_bookstore() {
    let server = spawn(bookstore::app()).await;
    let host = server.addr().to_string();
    let credentials = Credentials::new().with(&host, Credential::bearer("demo-admin"));
    let client = Client::builder(server.base_url())
        .credentials(credentials)
        .retry(RetryPolicy::none())
        .build()
        .unwrap();

    let manifest = client.discover(&[]).await.unwrap();
    let schemas = client.describe_all(&manifest.tools).await.unwrap();
    assert_eq!(schemas.len(), manifest.tools.len());
    for (tool, schema) in manifest.tools.iter().zip(&schemas) {
        assert_eq!(
            (tool.method.as_str(), tool.url.as_str()),
            (schema.call.method.as_str(), schema.call.url.as_str())
        );
    }
    let payments = client.discover(&["payments"]).await.unwrap();
    assert!(!payments.tools.is_empty());
    assert!(
        payments
            .tools
            .iter()
            .all(|t| t.tags.iter().any(|tag| tag == "payments"))
    );

    let book = client
        .invoke("/api/books/{id}", Method::GET, json!({"id": 1}))
        .await
        .unwrap();
    assert_eq!(book.json().unwrap()["id"], 1);
    let found = client
        .invoke("/api/books", Method::GET, json!({"limit": 2}))
        .await
        .unwrap();
    assert!(found.json().unwrap()["items"].as_array().unwrap().len() <= 2);

    let orders = client.describe("/api/orders", Method::POST).await.unwrap();
    assert_eq!(
        orders
            .limits
            .as_ref()
            .and_then(|l| l.idempotency_key.as_deref()),
        Some("Idempotency-Key")
    );
    let order = client
        .invoke("/api/orders", Method::POST, one_dune())
        .await
        .unwrap();
    assert!(order.status().is_success(), "{:?}", order.status());

    let invalid = client
        .invoke(
            "/api/orders",
            Method::POST,
            json!({"customer_email": "ada@example.com", "items": []}),
        )
        .await
        .unwrap_err();
    assert!(invalid.is_status());
    let problem = invalid.problem().expect("a problem+json body");
    assert_eq!(problem.status, invalid.status().unwrap().as_u16());
    assert!(
        invalid.to_string().contains("POST /api/orders"),
        "{invalid}"
    );
}

#[tokio::test]
async fn credentials_stay_with_their_host() {
    let server = spawn(bookstore::app()).await;
    let host = server.addr().to_string();
    let admin = Client::builder(server.base_url())
        .credentials(Credentials::new().with(&host, Credential::bearer("demo-admin")))
        .retry(RetryPolicy::none())
        .build()
        .unwrap();
    // A credential for another host only: the bookstore sees none.
    let credentials = Credentials::new().with("api.example.com", Credential::bearer("demo-admin"));
    let client = Client::builder(server.base_url())
        .credentials(credentials)
        .retry(RetryPolicy::none())
        .build()
        .unwrap();

    // Discovery shows an anonymous caller only the public tools: the order tool is not
    // described to it.
    let hidden = client
        .invoke("/api/orders/{id}", Method::GET, json!({"id": 1}))
        .await
        .unwrap_err();
    assert!(hidden.is_not_described(), "{hidden}");
    let public = client.discover(&[]).await.unwrap();
    assert!(public.tools.iter().all(|t| t.name != "get_order"));
    assert!(public.tools.iter().any(|t| t.name == "get_book"));

    // Called anyway, with the schema the admin sees: refused, and says so.
    let schema = admin
        .describe("/api/orders/{id}", Method::GET)
        .await
        .unwrap();
    let error = client.call(&schema, json!({"id": 1})).await.unwrap_err();
    assert_eq!(error.status().map(|s| s.as_u16()), Some(401));
    assert!(!error.to_string().contains("demo-admin"));
    assert!(
        error
            .response()
            .unwrap()
            .headers()
            .contains_key("www-authenticate")
    );
}
