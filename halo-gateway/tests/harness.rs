//! The MCP Tool Harness's policy format, read as it is: its README's example (a coupon
//! reservation on one MCP server, a refund on another, both FastMCP servers here) loads, and
//! the gateway enforces what it says: who may call which tool (from the caller's verified
//! token), rate limits per tenant and argument value, the refund's approval, timeouts and
//! circuits, each visible in the tools' schemas and in `explain`.

use halo_gateway::{Config, Gateway};
use halo_tests::mcp_servers::fastmcp_command;
use reqwest::StatusCode;
use serde_json::{Value, json};

const COUPON_A: &str = "coupon-agent-token-tenant-a";
const RISK_B: &str = "risk-agent-token-tenant-b";
const FINANCE_A: &str = "finance-agent-token-tenant-a";
const FINANCE_B: &str = "finance-agent-token-tenant-b";
const OPS: &str = "ops-approver-token-0123";

struct Harnessed {
    server: halo_tests::TestServer,
    gateway: Gateway,
    http: reqwest::Client,
    _dir: tempfile::TempDir,
}

impl Harnessed {
    async fn start() -> Self {
        let dir = tempfile::tempdir().unwrap();
        std::fs::copy(
            concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/tests/fixtures/harness-trade.yaml"
            ),
            dir.path().join("harness.yaml"),
        )
        .unwrap();
        let stdio = |which: &str| json!(fastmcp_command("fastmcp_trade.py", &[which]));
        let text = format!(
            r#"
listen: 127.0.0.1:0
auth:
  tokens:
    {COUPON_A}: {{ caller: coupon-agent, tenant: tenant-a }}
    {RISK_B}: {{ caller: risk-agent, tenant: tenant-b }}
    {FINANCE_A}: {{ caller: finance-agent, tenant: tenant-a }}
    {FINANCE_B}: {{ caller: finance-agent, tenant: tenant-b }}
    {OPS}: {{ caller: ops, scopes: [approver] }}
approvals: {{ scope: approver }}
upstreams:
  trade-mcp: {{ stdio: {} }}
  payment-mcp: {{ stdio: {} }}
policies: harness.yaml
"#,
            stdio("trade"),
            stdio("payment"),
        );
        let config = Config::from_text(&text, dir.path()).unwrap();
        let gateway = Gateway::build(&config).await.unwrap();
        let server = halo_tests::spawn(gateway.router()).await;
        Self {
            server,
            gateway,
            http: reqwest::Client::new(),
            _dir: dir,
        }
    }

    async fn call(&self, token: &str, path: &str, body: Value) -> (StatusCode, Value) {
        let answer = self
            .http
            .post(self.server.url(path))
            .bearer_auth(token)
            .json(&body)
            .send()
            .await
            .unwrap();
        let status = answer.status();
        let text = answer.text().await.unwrap();
        (
            status,
            serde_json::from_str(&text).unwrap_or(Value::String(text)),
        )
    }

    async fn tools(&self, token: &str) -> Vec<String> {
        let manifest = halo_tests::discover(&self.server.url("/"), Some(token)).await;
        halo_tests::json::each_str(&manifest["tools"], "/name")
            .into_iter()
            .map(str::to_owned)
            .collect()
    }

    async fn schema(&self, token: &str, path: &str) -> Value {
        let schemas = halo_tests::discover(&self.server.url(path), Some(token)).await;
        schemas
            .as_array()
            .map_or(schemas.clone(), |all| all[0].clone())
    }
}

#[tokio::test]
async fn the_harness_example_loads_and_each_tool_is_open_to_its_agents_only() {
    let gw = Harnessed::start().await;
    assert_eq!(gw.tools(COUPON_A).await, ["trade-mcp_coupon_reserve"]);
    assert_eq!(gw.tools(RISK_B).await, ["trade-mcp_coupon_reserve"]);
    assert_eq!(gw.tools(FINANCE_A).await, ["payment-mcp_payment_refund"]);
    assert!(
        gw.tools(OPS).await.is_empty(),
        "the approver is no agent of either"
    );

    // A tool not open to the caller is refused before it reaches the server, naming nothing.
    let (status, problem) = gw
        .call(
            COUPON_A,
            "/payment-mcp/payment.refund",
            json!({"order_id": "O-1", "amount_cents": 100}),
        )
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{problem}");
    assert_eq!(
        problem["detail"],
        "this operation is not open to this caller"
    );

    // What the policies say is in the schemas the agents read.
    let coupon = gw.schema(COUPON_A, "/trade-mcp/coupon.reserve").await;
    assert_eq!(coupon["resilience"]["timeout_ms"], 300, "{coupon:#}");
    assert_eq!(
        coupon["resilience"]["circuit"],
        json!({"failures": 5, "cool_down_ms": 30000, "successes": 2}),
        "{coupon:#}"
    );
    assert_eq!(
        coupon["limits"]["rates"],
        json!([
            {"rate": "1000/50 seconds", "per": "tenant"},
            {"rate": "100/50 seconds", "per": "combined",
             "of": [{"per": "tenant"}, {"per": "argument", "argument": "campaign_id"}]}
        ]),
        "{coupon:#}"
    );
    assert!(coupon["effects"]["approval"].is_null(), "{coupon:#}");
    // Who may call is enforced, not told.
    let text = coupon.to_string();
    assert!(
        !text.contains("callers") && !text.contains("risk-agent"),
        "{text}"
    );
    let refund = gw.schema(FINANCE_A, "/payment-mcp/payment.refund").await;
    assert_eq!(refund["effects"]["approval"], "required", "{refund:#}");
    assert_eq!(refund["resilience"]["timeout_ms"], 800, "{refund:#}");

    // `explain` names the policy that applies.
    let explained = gw.gateway.explain("trade-mcp_coupon_reserve").unwrap();
    assert!(
        explained.contains("policies.tool_harness")
            || explained.contains("harness.yaml.tool_harness.policies[0]"),
        "{explained}"
    );
    assert!(
        explained.contains("only coupon-agent, risk-agent"),
        "{explained}"
    );
}

#[tokio::test]
async fn coupon_reservations_are_limited_per_tenant_and_campaign() {
    let gw = Harnessed::start().await;
    let reserve = |token: &'static str, campaign: &str, order: usize| {
        let body = json!({"campaign_id": campaign, "order_id": format!("O-{order}")});
        let gw = &gw;
        async move { gw.call(token, "/trade-mcp/coupon.reserve", body).await }
    };
    // 100 at once for a tenant and campaign, then one more every half second.
    let started = std::time::Instant::now();
    for order in 0..100 {
        let (status, answer) = reserve(COUPON_A, "C-2026", order).await;
        assert_eq!(status, StatusCode::OK, "call {order}: {answer}");
    }
    let mut order = 100;
    let problem = loop {
        let (status, answer) = reserve(COUPON_A, "C-2026", order).await;
        if status != StatusCode::OK {
            assert_eq!(status, StatusCode::TOO_MANY_REQUESTS, "{answer}");
            break answer;
        }
        order += 1;
    };
    let refilled = (started.elapsed().as_secs_f64() * 2.0).ceil() as usize;
    assert!(order <= 100 + refilled, "{order} calls let through");
    assert_eq!(problem["limit"]["per"], "combined", "{problem}");
    assert!(
        problem["detail"]
            .as_str()
            .unwrap()
            .contains("100/50 seconds per tenant and campaign_id"),
        "{problem}"
    );
    // Another campaign, or the same campaign for another tenant, has a budget of its own.
    let (status, answer) = reserve(COUPON_A, "C-2027", 1).await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    assert!(
        answer.to_string().contains(r#""reserved":true"#),
        "{answer}"
    );
    let (status, answer) = reserve(RISK_B, "C-2026", 1).await;
    assert_eq!(status, StatusCode::OK, "{answer}");
}

#[tokio::test]
async fn a_refund_waits_for_approval_and_is_limited_per_tenant_and_order() {
    let gw = Harnessed::start().await;
    let refund = |token: &'static str, order: &str| {
        let body = json!({"order_id": order, "amount_cents": 1250});
        let gw = &gw;
        async move {
            gw.http
                .post(gw.server.url("/payment-mcp/payment.refund"))
                .bearer_auth(token)
                .json(&body)
                .send()
                .await
                .unwrap()
        }
    };
    let held = refund(FINANCE_A, "O-1").await;
    assert_eq!(held.status(), StatusCode::ACCEPTED);
    let location = held.headers()["location"].to_str().unwrap().to_owned();
    let approve = gw.http.post(gw.server.url(&format!("{location}/approve")));
    let approved = halo_tests::json::fetch(approve.bearer_auth(OPS)).await;
    assert_eq!(approved["state"], "approved", "{approved}");
    assert_eq!(approved["response"]["status"], 200, "{approved}");
    let refunded = &approved["response"]["body"];
    assert!(refunded.to_string().contains("1250"), "{approved}");

    // One refund of an order per tenant every 100 seconds; other orders and tenants have
    // budgets of their own.
    let again = refund(FINANCE_A, "O-1").await;
    assert_eq!(again.status(), StatusCode::TOO_MANY_REQUESTS);
    assert!(again.headers().contains_key("retry-after"));
    assert_eq!(
        refund(FINANCE_A, "O-2").await.status(),
        StatusCode::ACCEPTED
    );
    assert_eq!(
        refund(FINANCE_B, "O-1").await.status(),
        StatusCode::ACCEPTED
    );
}
