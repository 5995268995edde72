//! What tests send the bookstore sample (`samples/bookstore`).

use serde_json::{Value, json};

/// The arguments of `POST /api/orders` for an order of one Dune (book 1) by Ada.
#[must_use]
pub fn one_dune() -> Value {
    json!({"customer_email": "ada@example.com", "items": [{"book_id": 1, "quantity": 1}]})
}
