//! Inventory, orders, payments and weather over real HTTP.

use crate::support;

use reqwest::StatusCode;
use serde_json::{Value, json};
use support::{ADMIN, KEY, READER, Server, expect_problem, expect_unauthorized, pointers, send};

const DUNE: &str = "9780441172719";

#[tokio::test]
async fn inventory_needs_the_key_or_the_inventory_scope() {
    let server = Server::start().await;
    let path = format!("/api/inventory/{DUNE}");

    let challenge = expect_unauthorized(server.get(&path)).await;
    assert!(challenge.contains("X-API-Key"), "{challenge}");
    expect_unauthorized(server.get(&path).header("x-api-key", "wrong")).await;
    // A reader's bearer token is not the inventory key and lacks the `inventory` scope; the
    // admin's token holds it.
    expect_problem(server.get(&path).bearer_auth(READER), 403).await;
    let (status, _, _) = send(server.get(&path).bearer_auth(ADMIN)).await;
    assert_eq!(status, StatusCode::OK);

    let (status, _, stock) = send(server.get(&path).header("X-API-Key", KEY)).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        stock,
        json!({"sku": DUNE, "on_hand": 12, "reserved": 0, "available": 12, "warehouse": "Lisbon-1"})
    );

    expect_problem(
        server
            .get("/api/inventory/0000000000000")
            .header("X-API-Key", KEY),
        404,
    )
    .await;
}

#[tokio::test]
async fn reserve_and_release_stock() {
    let server = Server::start().await;
    let reserve = format!("/api/inventory/{DUNE}/reserve");
    let release = format!("/api/inventory/{DUNE}/release");

    expect_unauthorized(server.post(&reserve).json(&json!({"quantity": 2}))).await;
    let (status, _, reservation) = send(
        server
            .post(&reserve)
            .header("X-API-Key", KEY)
            .json(&json!({"quantity": 10})),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED);
    assert_eq!(reservation["status"], "held");
    assert_eq!(reservation["sku"], DUNE);
    let id = reservation["reservation_id"].as_str().unwrap().to_owned();

    let stock = server.stock(DUNE).await;
    assert_eq!(
        (stock["reserved"].as_u64(), stock["available"].as_u64()),
        (Some(10), Some(2))
    );

    let (_, problem) = expect_problem(
        server
            .post(&reserve)
            .header("X-API-Key", KEY)
            .json(&json!({"quantity": 3})),
        409,
    )
    .await;
    assert!(problem["detail"].as_str().unwrap().contains("only 2"));
    let (_, problem) = expect_problem(
        server
            .post(&reserve)
            .header("X-API-Key", KEY)
            .json(&json!({"quantity": 0})),
        422,
    )
    .await;
    assert_eq!(pointers(&problem), ["/quantity"]);
    expect_problem(
        server
            .post(&reserve)
            .header("X-API-Key", KEY)
            .json(&json!({"quantity": -1})),
        422,
    )
    .await;
    expect_problem(
        server
            .post("/api/inventory/nope/reserve")
            .header("X-API-Key", KEY)
            .json(&json!({"quantity": 1})),
        404,
    )
    .await;

    // Releasing under another SKU does not find it.
    expect_problem(
        server
            .post("/api/inventory/9780441478125/release")
            .header("X-API-Key", KEY)
            .json(&json!({"reservation_id": id})),
        404,
    )
    .await;
    let (status, _, released) = send(
        server
            .post(&release)
            .header("X-API-Key", KEY)
            .json(&json!({"reservation_id": id})),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(released["status"], "released");
    expect_problem(
        server
            .post(&release)
            .header("X-API-Key", KEY)
            .json(&json!({"reservation_id": id})),
        409,
    )
    .await;

    let stock = server.stock(DUNE).await;
    assert_eq!(stock["available"], 12);
}

#[tokio::test]
async fn order_charge_refund() {
    let server = Server::start().await;
    let order =
        json!({"customer_email": "ada@example.com", "items": [{"book_id": 1, "quantity": 2}]});

    expect_problem(server.post("/api/orders").json(&order), 401).await;
    expect_problem(
        server.post("/api/orders").bearer_auth(READER).json(&order),
        403,
    )
    .await;
    let (status, headers, created) = send(
        server
            .post("/api/orders")
            .bearer_auth(ADMIN)
            .header("Idempotency-Key", "order-test-1")
            .json(&order),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    assert_eq!(created["status"], "pending_payment");
    assert_eq!(created["total"], 21.98);
    assert_eq!(created["items"][0]["title"], "Dune");
    let id = created["id"].as_u64().unwrap();
    assert_eq!(headers["location"], format!("/api/orders/{id}").as_str());

    let (status, _, fetched) =
        send(server.get(&format!("/api/orders/{id}")).bearer_auth(READER)).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(fetched, created);
    expect_problem(server.get(&format!("/api/orders/{id}")), 401).await;
    expect_problem(server.get("/api/orders/1").bearer_auth(READER), 404).await;

    let charge = |amount: f64| json!({"order_id": id, "amount": amount, "currency": "EUR", "payment_method": "pm_card_visa"});
    expect_problem(
        server
            .post("/api/payments/charge")
            .bearer_auth(READER)
            .json(&charge(21.98)),
        403,
    )
    .await;
    let (_, problem) = expect_problem(
        server
            .post("/api/payments/charge")
            .bearer_auth(ADMIN)
            .json(&charge(20.0)),
        422,
    )
    .await;
    assert_eq!(pointers(&problem), ["/amount"]);
    let (status, _, paid) = send(
        server
            .post("/api/payments/charge")
            .bearer_auth(ADMIN)
            .json(&charge(21.98)),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{paid}");
    assert_eq!(paid["status"], "succeeded");
    let charge_id = paid["id"].as_str().unwrap().to_owned();
    expect_problem(
        server
            .post("/api/payments/charge")
            .bearer_auth(ADMIN)
            .json(&charge(21.98)),
        409,
    )
    .await;
    let (_, _, fetched) = send(server.get(&format!("/api/orders/{id}")).bearer_auth(ADMIN)).await;
    assert_eq!(fetched["status"], "paid");

    // A refund is checked as any call, then waits for an approver (the admin) and runs once
    // approved, answering as the handler did.
    let refund = format!("/api/payments/{charge_id}/refund");
    let reason = json!({"reason": "customer returned the book"});
    expect_problem(server.post(&refund).bearer_auth(READER).json(&reason), 403).await;
    expect_problem(
        server
            .post(&refund)
            .bearer_auth(ADMIN)
            .json(&json!({"reason": ""})),
        422,
    )
    .await;
    let missing = approved(&server, "/api/payments/ch_404/refund", &reason).await;
    assert_eq!(missing["status"], 404, "{missing}");
    let refunded = approved(&server, &refund, &reason).await;
    assert_eq!(refunded["status"], 200, "{refunded}");
    assert_eq!(refunded["body"]["charge_id"], charge_id.as_str());
    assert_eq!(refunded["body"]["amount"], 21.98);
    let again = approved(&server, &refund, &reason).await;
    assert_eq!(again["status"], 409, "{again}");
    let (_, _, fetched) = send(server.get(&format!("/api/orders/{id}")).bearer_auth(ADMIN)).await;
    assert_eq!(fetched["status"], "refunded");
}

/// The admin's refund call of `path` with `body`, held (`202`), approved by the admin: the
/// handler's answer, as the approval keeps it.
async fn approved(server: &Server, path: &str, body: &Value) -> Value {
    let (location, held) = server.held_for_the_admin(path, body).await;
    assert_eq!(held["state"], "pending");
    let decided = server.approved_by_the_admin(&location).await;
    assert_eq!(decided["state"], "approved");
    assert_eq!(decided["decided_by"], "admin");
    decided["response"].clone()
}

#[tokio::test]
async fn refunds_wait_for_an_approver_the_reader_never_sees() {
    let server = Server::start().await;
    // The schema says so before anyone calls.
    let (_, _, schema) =
        send(server.discover_as(support::Caller::Admin, "/api/payments/ch_1/refund")).await;
    assert_eq!(schema[0]["effects"]["approval"], "required", "{schema}");
    let reason = json!({"reason": "damaged in transit"});
    let (location, _) = server
        .held_for_the_admin("/api/payments/ch_1/refund", &reason)
        .await;
    // The admin lists it; the reader sees nothing of approvals.
    let (status, _, list) =
        send(server.get("/.well-known/halo/approvals").bearer_auth(ADMIN)).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(list["approvals"][0]["tool"], "refund_payment", "{list}");
    assert_eq!(list["approvals"][0]["arguments"], reason);
    expect_problem(
        server
            .get("/.well-known/halo/approvals")
            .bearer_auth(READER),
        403,
    )
    .await;
    expect_problem(server.get(&location).bearer_auth(READER), 404).await;
    expect_problem(
        server.post(&format!("{location}/deny")).bearer_auth(READER),
        403,
    )
    .await;
    // Denied by the admin: never run.
    let (status, _, denied) = send(
        server
            .post(&format!("{location}/deny"))
            .bearer_auth(ADMIN)
            .json(&json!({"reason": "no such charge yet"})),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{denied}");
    assert_eq!(denied["state"], "denied");
    assert_eq!(denied["reason"], "no such charge yet");
}

/// The `422` problem that an admin's `POST path` with the JSON `body` is answered with.
async fn unprocessable(server: &Server, path: &str, body: &Value) -> Value {
    let (_, problem) = expect_problem(server.post(path).bearer_auth(ADMIN).json(body), 422).await;
    problem
}

#[tokio::test]
async fn invalid_orders_and_charges_point_at_the_bad_values() {
    let server = Server::start().await;
    // Values the schema allows but the store rejects: a malformed email, an unknown book.
    let order = json!({
        "customer_email": "not-an-email",
        "items": [{"book_id": 1, "quantity": 1}, {"book_id": 404, "quantity": 1}]
    });
    let problem = unprocessable(&server, "/api/orders", &order).await;
    assert_eq!(pointers(&problem), ["/customer_email", "/items/1/book_id"]);

    // A value out of the schema's range.
    let order =
        json!({"customer_email": "ada@example.com", "items": [{"book_id": 1, "quantity": 0}]});
    let problem = unprocessable(&server, "/api/orders", &order).await;
    assert!(
        pointers(&problem).contains(&"/items/0/quantity"),
        "{problem}"
    );

    let empty = json!({"customer_email": "ada@example.com", "items": []});
    let problem = unprocessable(&server, "/api/orders", &empty).await;
    assert!(pointers(&problem).contains(&"/items"), "{problem}");

    let charge = json!({"order_id": 4242, "amount": 1.0, "currency": "EUR", "payment_method": "pm_card_visa"});
    let problem = unprocessable(&server, "/api/payments/charge", &charge).await;
    assert_eq!(pointers(&problem), ["/order_id"]);
    let charge = json!({"order_id": 4242, "amount": 1.0, "currency": "USD", "payment_method": "pm_card_visa"});
    let problem = unprocessable(&server, "/api/payments/charge", &charge).await;
    assert_eq!(pointers(&problem), ["/currency"]);
}

#[tokio::test]
async fn weather_is_public() {
    let server = Server::start().await;
    let (status, _, weather) = send(server.get("/api/weather?city=lisbon")).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(weather["city"], "Lisbon");
    assert_eq!(weather["country"], "PT");
    let (status, _, weather) = send(server.get("/api/weather?city=New%20York")).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(weather["country"], "US");

    let (_, problem) = expect_problem(server.get("/api/weather?city=Atlantis"), 404).await;
    assert!(problem["detail"].as_str().unwrap().contains("Lisbon"));
    let (_, problem) = expect_problem(server.get("/api/weather"), 400).await;
    assert_eq!(pointers(&problem), ["/city"]);
}

#[tokio::test]
async fn cors_preflight_still_works_under_halo() {
    let server = Server::start().await;
    let response = server
        .request(reqwest::Method::OPTIONS, "/api/books")
        .header("Origin", "https://shop.example")
        .header("Access-Control-Request-Method", "POST")
        .header(
            "Access-Control-Request-Headers",
            "authorization, content-type",
        )
        .send()
        .await
        .unwrap();
    assert!(response.status().is_success(), "{}", response.status());
    assert!(
        response
            .headers()
            .contains_key("access-control-allow-origin")
    );
    assert!(
        response
            .headers()
            .contains_key("access-control-allow-methods")
    );
}

#[tokio::test]
async fn an_order_placed_twice_with_one_key_is_placed_once() {
    let server = Server::start().await;
    let order =
        json!({"customer_email": "ada@example.com", "items": [{"book_id": 1, "quantity": 1}]});
    let place = |key: &'static str, order: &Value| {
        server
            .post("/api/orders")
            .bearer_auth(ADMIN)
            .header("Idempotency-Key", key)
            .json(order)
    };
    let (status, _, first) = send(place("twice", &order)).await;
    assert_eq!(status, StatusCode::CREATED, "{first}");
    let (status, headers, again) = send(place("twice", &order)).await;
    assert_eq!(status, StatusCode::CREATED);
    assert_eq!(headers["idempotent-replayed"], "true");
    assert_eq!(again, first, "the same order, not a second one");
    // Another order under the same key is refused; a new key places a new order.
    let other =
        json!({"customer_email": "ada@example.com", "items": [{"book_id": 2, "quantity": 1}]});
    expect_problem(place("twice", &other), 422).await;
    let (_, _, second) = send(place("another", &order)).await;
    assert_eq!(second["id"].as_u64(), first["id"].as_u64().map(|id| id + 1));
}

#[tokio::test]
async fn the_sixth_charge_in_a_minute_is_refused() {
    let server = Server::start().await;
    // Charges of orders that do not exist: valid requests, so each one spends the caller's
    // rate even though the handler refuses it.
    let charge = |order_id: u64| {
        server.post("/api/payments/charge").bearer_auth(ADMIN).json(
            &json!({"order_id": order_id, "amount": 1.0, "currency": "EUR", "payment_method": "pm_card_visa"}),
        )
    };
    for order_id in 1000..1005 {
        let (status, headers, _) = send(charge(order_id)).await;
        // The handler ran (and refused an order that does not exist), spending the rate.
        assert_ne!(status, StatusCode::TOO_MANY_REQUESTS);
        assert!(headers.contains_key("ratelimit"));
    }
    let (headers, problem) = expect_problem(charge(1005), 429).await;
    let retry_after: u64 = headers["retry-after"].to_str().unwrap().parse().unwrap();
    assert!((1..=12).contains(&retry_after), "{retry_after}");
    assert!(
        headers["ratelimit-policy"]
            .to_str()
            .unwrap()
            .ends_with("q=5;w=60")
    );
    assert!(problem["detail"].as_str().unwrap().contains("rate"));
}
