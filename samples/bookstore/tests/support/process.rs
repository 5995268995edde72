//! The real `bookstore` binary as a process of a test, and a client of it (or of several
//! behind a load balancer).

use std::process::Child;
use std::time::Duration;

use reqwest::{Client, RequestBuilder};
use serde_json::json;

use super::{ADMIN, spawn_bookstore, stdout_lines};

/// The real `bookstore` binary on a free loopback port; killed on drop.
pub struct Bookstore {
    child: Option<Child>,
    base: String,
    client: Client,
}

impl Bookstore {
    /// Runs the binary with `args` and `env`, and waits until it prints its address.
    pub fn start(args: &[&str], env: &[(&str, &str)]) -> Self {
        let mut child = spawn_bookstore(args, env);
        // Keeps draining stdout, so the server never writes to a closed pipe.
        let lines_rx = stdout_lines(&mut child);
        let first = lines_rx
            .recv_timeout(Duration::from_secs(60))
            .expect("bookstore prints its address");
        let base = first
            .strip_prefix("bookstore listening on ")
            .expect("the first line names the address")
            .to_owned();
        Self {
            child: Some(child),
            base,
            client: Client::new(),
        }
    }

    /// The bookstores behind a load balancer at `base` (`http://host:port`).
    pub fn behind(base: String) -> Self {
        Self {
            child: None,
            base,
            client: Client::new(),
        }
    }

    /// `http://host:port`.
    pub fn base(&self) -> &str {
        &self.base
    }

    /// `GET path` as the admin.
    pub fn get(&self, path: &str) -> RequestBuilder {
        self.client
            .get(format!("{}{path}", self.base))
            .bearer_auth(ADMIN)
    }

    pub fn post(&self, path: &str) -> RequestBuilder {
        self.client
            .post(format!("{}{path}", self.base))
            .bearer_auth(ADMIN)
    }

    pub fn order(&self, key: &str, book_id: u64) -> RequestBuilder {
        self.post("/api/orders")
            .header("Idempotency-Key", key)
            .json(&json!({"customer_email": "ada@example.com", "items": [{"book_id": book_id, "quantity": 1}]}))
    }

    /// A charge of an order that does not exist: a valid request that spends the rate, and
    /// that the handler refuses (`422`: no such order).
    pub fn charge(&self, order_id: u64) -> RequestBuilder {
        self.post("/api/payments/charge").json(
            &json!({"order_id": order_id, "amount": 1.0, "currency": "EUR", "payment_method": "pm_card_visa"}),
        )
    }

    pub fn get_order(&self, id: u64) -> RequestBuilder {
        self.client
            .get(format!("{}/api/orders/{id}", self.base))
            .bearer_auth(ADMIN)
    }
}

impl Drop for Bookstore {
    fn drop(&mut self) {
        if let Some(child) = &mut self.child {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}
