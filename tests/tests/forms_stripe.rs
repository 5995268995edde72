//! Stripe's document (form-encoded bodies with `encoding` `style: deepObject`, `deepObject`
//! query parameters) through halo-client, against a loopback echo server behind the layer:
//! what reaches the server is encoded as the document says.

use axum::Router;
use axum::body::Bytes;
use axum::http::{HeaderMap, Method as AxumMethod, Uri};
use halo_axum::HaloBuilder;
use halo_axum::Validation;
use halo_client::Client;
use halo_tests::corpus::Document;
use reqwest::Method;
use serde_json::{Value, json};

/// Answers with what it received.
async fn echo(method: AxumMethod, uri: Uri, headers: HeaderMap, body: Bytes) -> axum::Json<Value> {
    axum::Json(json!({
        "method": method.as_str(),
        "path": uri.path(),
        "query": uri.query(),
        "content_type": headers.get("content-type").and_then(|v| v.to_str().ok()),
        "body": String::from_utf8_lossy(&body),
    }))
}

async fn stripe() -> (halo_tests::TestServer, Client) {
    // Validation on: what the client encodes, the layer reads back and accepts.
    let layer = HaloBuilder::from_openapi_json(Document::Stripe.json())
        .validate(Validation::On)
        .build()
        .unwrap();
    let server = halo_tests::spawn(Router::new().fallback(echo).layer(layer)).await;
    let client = Client::new(server.base_url()).unwrap();
    (server, client)
}

/// `application/x-www-form-urlencoded` text as decoded `key=value` lines.
/// The decoded pairs of a form or query, sorted: their order follows the arguments' JSON
/// object, which is `serde_json`'s map (sorted unless an application turns on
/// `preserve_order`).
fn decoded(text: &str) -> Vec<String> {
    let url = reqwest::Url::parse(&format!("http://x/?{text}")).unwrap();
    let mut pairs: Vec<String> = url.query_pairs().map(|(k, v)| format!("{k}={v}")).collect();
    pairs.sort_unstable();
    pairs
}

#[tokio::test]
async fn a_form_body_is_sent_form_encoded_with_deep_objects() {
    let (_server, client) = stripe().await;
    let schema = client
        .describe("/v1/customers", Method::POST)
        .await
        .unwrap();
    assert_eq!(
        schema.input["metadata"].media_type.as_deref(),
        Some("application/x-www-form-urlencoded")
    );
    assert_eq!(
        schema.input["metadata"].style.as_deref(),
        Some("deepObject")
    );
    let answer = client
        .call(
            &schema,
            json!({
                "email": "ada@example.com",
                "name": "Ada Lovelace",
                "metadata": {"order": "42"},
                "expand": ["sources", "tax"],
                "address": {"city": "London", "line1": "12 St James's Square"}
            }),
        )
        .await
        .unwrap();
    let echoed = answer.json().unwrap();
    assert_eq!(echoed["method"], "POST");
    assert_eq!(echoed["content_type"], "application/x-www-form-urlencoded");
    let body = echoed["body"].as_str().unwrap();
    let pairs = decoded(body);
    assert_eq!(
        pairs,
        [
            "address[city]=London",
            "address[line1]=12 St James's Square",
            "email=ada@example.com",
            "expand[0]=sources",
            "expand[1]=tax",
            "metadata[order]=42",
            "name=Ada Lovelace",
        ]
    );
    // Brackets, spaces and `@` are percent-encoded on the wire.
    assert!(body.contains("metadata%5Border%5D=42"), "{body}");
    assert!(body.contains("name=Ada+Lovelace"), "{body}");
}

#[tokio::test]
async fn deep_object_query_parameters_are_bracketed() {
    let (_server, client) = stripe().await;
    let answer = client
        .invoke(
            "/v1/customers",
            Method::GET,
            json!({"created": {"gte": 1_700_000_000, "lt": 1_800_000_000}, "limit": 3,
                   "expand": ["data.tax"]}),
        )
        .await
        .unwrap();
    let echoed = answer.json().unwrap();
    let query = echoed["query"].as_str().unwrap();
    let pairs = decoded(query);
    assert_eq!(
        pairs,
        [
            "created[gte]=1700000000",
            "created[lt]=1800000000",
            "expand[0]=data.tax",
            "limit=3"
        ]
    );
    assert_eq!(echoed["body"], "");
}

#[tokio::test]
async fn form_bodies_and_deep_objects_are_validated_like_json() {
    let (server, _client) = stripe().await;
    let http = reqwest::Client::new();
    let refused = http
        .post(server.url("/v1/customers"))
        .header("content-type", "application/x-www-form-urlencoded")
        .body("email=ada%40example.com&balance=lots&metadata[order]=42&invoice_settings[footer]=1")
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), 422);
    let problem: Value = refused.json().await.unwrap();
    let pointers: Vec<&str> = problem["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["pointer"].as_str().unwrap())
        .collect();
    assert_eq!(pointers, ["/balance"], "{problem}");

    let refused = http
        .get(server.url("/v1/customers?created[gte]=soon&limit=3"))
        .send()
        .await
        .unwrap();
    assert_eq!(
        refused.status(),
        400,
        "a query parameter, as axum's Query answers"
    );
    let problem: Value = refused.json().await.unwrap();
    assert!(
        problem["errors"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["pointer"] == "/created"),
        "{problem}"
    );

    // JSON where the document says a form: the media type is refused, as axum's Form does.
    let wrong = http
        .post(server.url("/v1/customers"))
        .json(&json!({"email": "ada@example.com"}))
        .send()
        .await
        .unwrap();
    assert_eq!(wrong.status(), 415);

    let fine = http
        .post(server.url("/v1/customers"))
        .header("content-type", "application/x-www-form-urlencoded")
        .body("balance=12&metadata[order]=42&expand[0]=tax")
        .send()
        .await
        .unwrap();
    assert_eq!(fine.status(), 200, "{}", fine.text().await.unwrap());
}

#[tokio::test]
async fn a_multipart_body_is_sent_in_parts_and_validated() {
    let (server, client) = stripe().await;
    let schema = client.describe("/v1/files", Method::POST).await.unwrap();
    assert_eq!(
        schema.input["file"].media_type.as_deref(),
        Some("multipart/form-data")
    );
    let answer = client
        .call(
            &schema,
            json!({"purpose": "dispute_evidence", "file": "%PDF-1.7 …",
                   "file_link_data": {"create": true, "expires_at": 1_900_000_000}}),
        )
        .await
        .unwrap();
    let echoed = answer.json().unwrap();
    let content_type = echoed["content_type"].as_str().unwrap();
    let boundary = content_type
        .strip_prefix("multipart/form-data; boundary=")
        .unwrap();
    let body = echoed["body"].as_str().unwrap();
    for (name, value) in [
        ("purpose", "dispute_evidence"),
        ("file", "%PDF-1.7 …"),
        ("file_link_data[create]", "true"),
        ("file_link_data[expires_at]", "1900000000"),
    ] {
        let part = format!(
            "--{boundary}\r\nContent-Disposition: form-data; name=\"{name}\"\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n{value}\r\n"
        );
        assert!(body.contains(&part), "{part} in {body}");
    }
    assert!(body.ends_with(&format!("--{boundary}--\r\n")));

    // The layer reads the parts back and checks them: an unknown purpose is a 422.
    let refused = reqwest::Client::new()
        .post(server.url("/v1/files"))
        .header("content-type", "multipart/form-data; boundary=b0undary")
        .body(
            "--b0undary\r\nContent-Disposition: form-data; name=\"purpose\"\r\n\r\nmischief\r\n\
             --b0undary\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.pdf\"\r\n\
             Content-Type: application/pdf\r\n\r\n%PDF\r\n--b0undary--\r\n",
        )
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), 422);
    let problem: Value = refused.json().await.unwrap();
    assert_eq!(problem["errors"][0]["pointer"], "/purpose", "{problem}");
    let broken = reqwest::Client::new()
        .post(server.url("/v1/files"))
        .header("content-type", "multipart/form-data; boundary=b0undary")
        .body("--b0undary\r\nno headers end")
        .send()
        .await
        .unwrap();
    assert_eq!(broken.status(), 400);
}
