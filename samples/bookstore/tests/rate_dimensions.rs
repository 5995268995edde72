//! `reserve_stock` declares a rate limit per argument value, `10/minute per sku`
//! (`#[halo(rates(...))]`): the schema shows it, and the eleventh hold of one SKU within a
//! minute gets a `429` that names it, whoever asks, while another SKU's holds go through.

use crate::support;

use serde_json::json;
use support::{ADMIN, KEY, Server, expect_problem, send};

const DUNE: &str = "9780441172719";
const EMMA: &str = "9780141439518";

#[tokio::test]
async fn the_eleventh_hold_of_a_sku_in_a_minute_is_refused_naming_the_limit() {
    let server = Server::start().await;
    let limit = json!({"rate": "10/minute", "per": "argument", "argument": "sku"});
    let reserve = |sku: &str| format!("/api/inventory/{sku}/reserve");
    let hold = json!({"quantity": 1});

    let (_, _, schema) = send(server.discover(&reserve(DUNE)).bearer_auth(ADMIN)).await;
    assert_eq!(schema[0]["limits"]["rates"], json!([limit]), "{schema}");

    // Ten holds of one copy, by the API key and by a bearer token: one budget per SKU.
    for left in (0..10).rev() {
        let request = server.post(&reserve(DUNE)).json(&hold);
        let request = if left % 2 == 0 {
            request.header("X-API-Key", KEY)
        } else {
            request.bearer_auth(ADMIN)
        };
        let (status, headers, body) = send(request).await;
        assert_eq!(status, 201, "{body}");
        assert_eq!(
            headers["ratelimit"],
            format!("\"reserve_stock/sku\";r={left};t=0").as_str()
        );
    }
    let (headers, problem) = expect_problem(
        server
            .post(&reserve(DUNE))
            .header("X-API-Key", KEY)
            .json(&hold),
        429,
    )
    .await;
    assert_eq!(problem["limit"], limit, "{problem}");
    assert_eq!(headers["retry-after"], "6", "one hold frees up every 6 s");
    assert_eq!(
        headers["ratelimit-policy"],
        "\"reserve_stock/sku\";q=10;w=60"
    );
    let stock = server.stock(DUNE).await;
    assert_eq!(
        stock["reserved"], 10,
        "the refused hold did not run: {stock}"
    );

    // Another SKU has a budget of its own.
    let (status, _, body) = send(
        server
            .post(&reserve(EMMA))
            .header("X-API-Key", KEY)
            .json(&hold),
    )
    .await;
    assert_eq!(status, 201, "{body}");
}
