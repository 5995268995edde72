//! `limits.rates`: rate limits per tenant, per tool as a whole, per argument value and per
//! combination of tenant and argument value, beside
//! the per-caller `limits.rate`, all or nothing; the `429` names the limit that refused, and
//! the schema shows them. In process (no time passes: every budget here is spent within a
//! test), and through a real Redis shared by two instances (`redis` feature).
#![allow(missing_docs, unreachable_pub)]

use crate::common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use axum::Json;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use common::client::{Answer, App};
use halo_axum::protocol::{Dimension, Limit, Rate};
use halo_axum::{
    Describe, HaloBuilder, HaloLayer, Principal, StaticAuthenticator, Validation, halo,
};
use halo_tests::BearerScheme;
use serde::Deserialize;
use serde_json::{Value, json};
use utoipa::{IntoParams, OpenApi, ToSchema};
use utoipa_axum::{router::OpenApiRouter, routes};

/// How many calls each handler ran.
#[derive(Debug, Clone, Default)]
struct Runs(Arc<[AtomicUsize; 6]>);

const REPORT: usize = 0;
const PING: usize = 1;
const ORDER: usize = 2;
const STOCK: usize = 3;
const SEARCH: usize = 4;
const MAILING: usize = 5;

impl Runs {
    fn ran(&self, handler: usize) -> Json<Value> {
        let run = self.0[handler].fetch_add(1, Ordering::SeqCst) + 1;
        Json(json!({"run": run}))
    }

    fn of(&self, handler: usize) -> usize {
        self.0[handler].load(Ordering::SeqCst)
    }
}

/// The tenant's report: limited per tenant (by `Describe`, below).
#[utoipa::path(get, path = "/report", operation_id = "report", responses((status = 200)),
    security(("bearer" = [])))]
async fn report(State(runs): State<Runs>) -> Json<Value> {
    runs.ran(REPORT)
}

/// Ping the upstream: two calls a minute in all, whoever makes them.
#[halo(rates("2/minute per tool"))]
#[utoipa::path(get, path = "/ping", responses((status = 200)), security(("bearer" = [])))]
async fn ping(State(runs): State<Runs>) -> Json<Value> {
    runs.ran(PING)
}

#[derive(Debug, Deserialize, ToSchema)]
struct NewOrder {
    /// The item.
    sku: String,
    /// How many.
    #[serde(default)]
    quantity: Option<u32>,
}

/// Place an order: three a minute per caller, and one a minute per SKU.
#[halo(rate = "3/minute", rates("1/minute per sku"))]
#[utoipa::path(post, path = "/orders", request_body = NewOrder, responses((status = 200)),
    security(("bearer" = [])))]
async fn place_order(State(runs): State<Runs>, Json(order): Json<NewOrder>) -> Json<Value> {
    let _ = (order.sku, order.quantity);
    runs.ran(ORDER)
}

/// Stock of a SKU: twice a minute per SKU (a path parameter).
#[halo(rates("2/minute per sku"))]
#[utoipa::path(get, path = "/stock/{sku}", params(("sku" = String, Path, description = "The SKU")),
    responses((status = 200)), security(("bearer" = [])))]
async fn stock(State(runs): State<Runs>, Path(_sku): Path<String>) -> Json<Value> {
    runs.ran(STOCK)
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
struct Search {
    /// The words to look for; without them, everything.
    q: Option<String>,
}

/// Search: once a minute per query (an optional query parameter).
#[halo(rates("1/minute per q"))]
#[utoipa::path(get, path = "/search", params(Search), responses((status = 200)),
    security(("bearer" = [])))]
async fn search(State(runs): State<Runs>, Query(search): Query<Search>) -> Json<Value> {
    let _ = search.q;
    runs.ran(SEARCH)
}

#[derive(Debug, Deserialize, ToSchema)]
struct Mailing {
    /// The campaign mailed; without it, a one-off mailing.
    #[serde(default)]
    campaign_id: Option<String>,
}

/// Mail a campaign: once per 50 seconds for each tenant and campaign together (a field of
/// the body, which the layer reads to find it).
#[halo(rates("1/50s per tenant and campaign_id"))]
#[utoipa::path(post, path = "/mailings", request_body = Mailing, responses((status = 200)),
    security(("bearer" = [])))]
async fn send_mailing(State(runs): State<Runs>, Json(mailing): Json<Mailing>) -> Json<Value> {
    let _ = mailing.campaign_id;
    runs.ran(MAILING)
}

#[derive(OpenApi)]
#[openapi(info(title = "Shop", version = "1"), modifiers(&BearerScheme))]
struct Doc;

fn router() -> (axum::Router<Runs>, utoipa::openapi::OpenApi) {
    OpenApiRouter::with_openapi(Doc::openapi())
        .routes(routes!(report))
        .routes(routes!(ping))
        .routes(routes!(place_order))
        .routes(routes!(stock))
        .routes(routes!(search))
        .routes(routes!(send_mailing))
        .split_for_parts()
}

/// alice and bob work for acme, carol for globex; dave and erin for no tenant.
fn authenticator() -> StaticAuthenticator {
    StaticAuthenticator::new()
        .bearer("alice", Principal::new("alice").in_tenant("acme"))
        .bearer("bob", Principal::new("bob").in_tenant("acme"))
        .bearer("carol", Principal::new("carol").in_tenant("globex"))
        .bearer("dave", Principal::new("dave"))
        .bearer("erin", Principal::new("erin"))
}

/// The layer of these tests, configured further by `configure`.
fn layer(
    api: utoipa::openapi::OpenApi,
    configure: impl FnOnce(HaloBuilder) -> HaloBuilder,
) -> HaloLayer {
    let per_tenant = Limit::per_tenant("2/minute".parse::<Rate>().unwrap());
    let builder = HaloLayer::builder(api)
        .authenticator(authenticator())
        .describe("report", Describe::new().limit(per_tenant));
    configure(builder).build().unwrap()
}

fn serve(runs: &Runs, configure: impl FnOnce(HaloBuilder) -> HaloBuilder) -> App {
    let (router, api) = router();
    App::new(router.with_state(runs.clone()).layer(layer(api, configure)))
}

async fn get(app: &App, caller: &str, uri: &str) -> Answer {
    app.get(uri).bearer_auth(caller).send().await
}

async fn order(app: &App, caller: &str, sku: &str) -> Answer {
    app.post("/orders")
        .bearer_auth(caller)
        .json(&json!({"sku": sku, "quantity": 1}))
        .send()
        .await
}

async fn mailing(app: &App, caller: &str, campaign: Option<&str>) -> Answer {
    let body = match campaign {
        Some(campaign) => json!({"campaign_id": campaign}),
        None => json!({}),
    };
    app.post("/mailings")
        .bearer_auth(caller)
        .json(&body)
        .send()
        .await
}

/// A `429` whose problem names `limit`, with `Retry-After` at most `within` seconds and the
/// `RateLimit` headers of the policy `policy`.
#[track_caller]
fn assert_refused_by(answer: &Answer, limit: &Value, policy: &str, within: u64) {
    assert_eq!(
        answer.status,
        StatusCode::TOO_MANY_REQUESTS,
        "{}",
        answer.body
    );
    let problem = answer.problem();
    assert_eq!(problem["status"], 429);
    assert_eq!(&problem["limit"], limit, "{}", answer.body);
    let retry_after: u64 = answer.header("retry-after").parse().unwrap();
    assert!((1..=within).contains(&retry_after), "{retry_after}");
    assert!(
        answer
            .header("ratelimit-policy")
            .starts_with(&format!("\"{policy}\";")),
        "{}",
        answer.header("ratelimit-policy")
    );
    assert_eq!(
        answer.header("ratelimit"),
        format!("\"{policy}\";r=0;t={retry_after}")
    );
}

#[tokio::test]
async fn callers_of_one_tenant_share_its_budget_and_others_have_their_own() {
    let runs = Runs::default();
    let app = serve(&runs, |b| b);
    let first = get(&app, "alice", "/report").await;
    assert_eq!(first.status, StatusCode::OK, "{}", first.body);
    assert_eq!(
        first.header("ratelimit-policy"),
        "\"report/tenant\";q=2;w=60"
    );
    assert_eq!(first.header("ratelimit"), "\"report/tenant\";r=1;t=0");
    assert_eq!(get(&app, "bob", "/report").await.status, StatusCode::OK);
    // acme's two calls are spent, by alice and bob together.
    let tenant = json!({"rate": "2/minute", "per": "tenant"});
    for caller in ["alice", "bob"] {
        assert_refused_by(
            &get(&app, caller, "/report").await,
            &tenant,
            "report/tenant",
            30,
        );
    }
    // globex has its own.
    assert_eq!(get(&app, "carol", "/report").await.status, StatusCode::OK);
    // A caller without a tenant counts as a tenant of its own.
    for _ in 0..2 {
        assert_eq!(get(&app, "dave", "/report").await.status, StatusCode::OK);
    }
    assert_refused_by(
        &get(&app, "dave", "/report").await,
        &tenant,
        "report/tenant",
        30,
    );
    assert_eq!(get(&app, "erin", "/report").await.status, StatusCode::OK);
    assert_eq!(runs.of(REPORT), 6, "refused calls never reach the handler");
}

#[tokio::test]
async fn a_limit_per_tool_is_shared_by_every_caller() {
    let runs = Runs::default();
    let app = serve(&runs, |b| b);
    assert_eq!(get(&app, "alice", "/ping").await.status, StatusCode::OK);
    let second = get(&app, "carol", "/ping").await;
    assert_eq!(second.status, StatusCode::OK);
    assert_eq!(second.header("ratelimit"), "\"ping/tool\";r=0;t=0");
    let tool = json!({"rate": "2/minute", "per": "tool"});
    for caller in ["dave", "alice"] {
        assert_refused_by(&get(&app, caller, "/ping").await, &tool, "ping/tool", 30);
    }
    assert_eq!(runs.of(PING), 2);
}

#[tokio::test]
async fn a_limit_per_argument_counts_each_value_apart() {
    let runs = Runs::default();
    let app = serve(&runs, |b| b);
    // A path parameter, percent-decoded: `A%2D1` is `A-1`.
    let sku = json!({"rate": "2/minute", "per": "argument", "argument": "sku"});
    assert_eq!(
        get(&app, "alice", "/stock/A-1").await.status,
        StatusCode::OK
    );
    assert_eq!(
        get(&app, "carol", "/stock/A%2D1").await.status,
        StatusCode::OK
    );
    assert_refused_by(
        &get(&app, "dave", "/stock/A-1").await,
        &sku,
        "stock/sku",
        30,
    );
    assert_eq!(get(&app, "dave", "/stock/B-2").await.status, StatusCode::OK);
    assert_eq!(runs.of(STOCK), 3);

    // An optional query parameter: each value once a minute; a call without it is not
    // counted against the limit.
    let q = json!({"rate": "1/minute", "per": "argument", "argument": "q"});
    assert_eq!(
        get(&app, "alice", "/search?q=dune").await.status,
        StatusCode::OK
    );
    assert_refused_by(
        &get(&app, "bob", "/search?q=dune").await,
        &q,
        "search/q",
        60,
    );
    assert_eq!(
        get(&app, "bob", "/search?q=emma").await.status,
        StatusCode::OK
    );
    for _ in 0..3 {
        let unlimited = get(&app, "bob", "/search").await;
        assert_eq!(unlimited.status, StatusCode::OK);
        assert_eq!(unlimited.header("ratelimit"), "", "no limit applied");
    }
    assert_eq!(runs.of(SEARCH), 5);
}

#[tokio::test]
async fn a_combined_limit_counts_each_tenant_and_value_together() {
    let runs = Runs::default();
    let app = serve(&runs, |b| b);
    let policy = "send_mailing/tenant+campaign_id";
    let limit = json!({"rate": "1/50 seconds", "per": "combined", "of": [
        {"per": "tenant"}, {"per": "argument", "argument": "campaign_id"}]});
    let first = mailing(&app, "alice", Some("spring")).await;
    assert_eq!(first.status, StatusCode::OK, "{}", first.body);
    assert_eq!(
        first.header("ratelimit-policy"),
        format!("\"{policy}\";q=1;w=50")
    );
    assert_eq!(first.header("ratelimit"), format!("\"{policy}\";r=0;t=0"));
    // bob works for acme too: the same tenant and campaign, one budget.
    let refused = mailing(&app, "bob", Some("spring")).await;
    assert_refused_by(&refused, &limit, policy, 50);
    assert!(
        refused.problem()["detail"]
            .as_str()
            .unwrap()
            .contains("1/50 seconds per tenant and campaign_id"),
        "{}",
        refused.body
    );
    // The same campaign in another tenant, and another campaign in acme, have their own.
    let globex = mailing(&app, "carol", Some("spring")).await;
    assert_eq!(globex.status, StatusCode::OK, "{}", globex.body);
    let autumn = mailing(&app, "bob", Some("autumn")).await;
    assert_eq!(autumn.status, StatusCode::OK, "{}", autumn.body);
    assert_refused_by(
        &mailing(&app, "alice", Some("autumn")).await,
        &limit,
        policy,
        50,
    );
    // A caller without a tenant counts as its own, apart from every tenant.
    assert_eq!(
        mailing(&app, "dave", Some("spring")).await.status,
        StatusCode::OK
    );
    // Without the campaign one part is missing: the limit does not apply.
    for _ in 0..3 {
        let unlimited = mailing(&app, "alice", None).await;
        assert_eq!(unlimited.status, StatusCode::OK, "{}", unlimited.body);
        assert_eq!(unlimited.header("ratelimit"), "", "no limit applied");
    }
    assert_eq!(runs.of(MAILING), 7, "refused calls never reach the handler");
}

/// The all-or-nothing rule, counted: a call the per-SKU limit refuses leaves the caller's
/// budget as it was.
async fn all_or_nothing(app: &App, runs: &Runs) {
    let sku = json!({"rate": "1/minute", "per": "argument", "argument": "sku"});
    let caller = json!({"rate": "3/minute", "per": "caller"});
    let first = order(app, "alice", "A").await;
    assert_eq!(first.status, StatusCode::OK, "{}", first.body);
    // The tightest limit's headers: the SKU has no call left, the caller two.
    assert_eq!(
        first.header("ratelimit-policy"),
        "\"place_order/sku\";q=1;w=60"
    );
    assert_eq!(first.header("ratelimit"), "\"place_order/sku\";r=0;t=0");
    for _ in 0..5 {
        assert_refused_by(&order(app, "alice", "A").await, &sku, "place_order/sku", 60);
    }
    // Had the five refused calls spent alice's budget (3 a minute), C would be refused.
    let b = order(app, "alice", "B").await;
    assert_eq!(b.status, StatusCode::OK, "{}", b.body);
    assert_eq!(b.header("ratelimit"), "\"place_order/sku\";r=0;t=0");
    let c = order(app, "alice", "C").await;
    assert_eq!(c.status, StatusCode::OK, "{}", c.body);
    // Both limits at 0: the first declared is the tightest.
    assert_eq!(c.header("ratelimit"), "\"place_order\";r=0;t=0");
    // Now alice's own budget refuses, and names it; the fresh SKU is not spent either.
    assert_refused_by(&order(app, "alice", "D").await, &caller, "place_order", 20);
    assert_eq!(order(app, "bob", "D").await.status, StatusCode::OK);
    assert_eq!(runs.of(ORDER), 4);
}

#[tokio::test]
async fn a_call_refused_by_one_limit_spends_none_of_the_others() {
    // Validation off: the layer reads the body's `sku` itself.
    let runs = Runs::default();
    all_or_nothing(&serve(&runs, |b| b), &runs).await;
    // Validation on: the parsed body is read.
    let runs = Runs::default();
    all_or_nothing(&serve(&runs, |b| b.validate(Validation::On)), &runs).await;
}

#[tokio::test]
async fn a_huge_argument_value_is_counted_by_its_digest() {
    let runs = Runs::default();
    let app = serve(&runs, |b| b);
    let huge = "x".repeat(1 << 20);
    assert_eq!(order(&app, "alice", &huge).await.status, StatusCode::OK);
    let sku = json!({"rate": "1/minute", "per": "argument", "argument": "sku"});
    assert_refused_by(
        &order(&app, "bob", &huge).await,
        &sku,
        "place_order/sku",
        60,
    );
    assert_eq!(
        order(&app, "bob", &format!("{huge}y")).await.status,
        StatusCode::OK
    );
}

#[tokio::test]
async fn the_schema_shows_every_limit() {
    let app = serve(&Runs::default(), |b| b);
    let schema = |path: &'static str| {
        let app = app.clone();
        async move {
            let answer = app.discover(path).bearer_auth("alice").send().await;
            assert_eq!(answer.status, StatusCode::OK, "{}", answer.body);
            answer.json()[0]["limits"].clone()
        }
    };
    let orders = schema("/orders").await;
    assert_eq!(
        orders["rate"], "3/minute",
        "`rate` stays as HALO 0.3.1 reads it"
    );
    assert_eq!(
        orders["rates"],
        json!([{"rate": "1/minute", "per": "argument", "argument": "sku"}])
    );
    assert_eq!(
        schema("/report").await["rates"],
        json!([{"rate": "2/minute", "per": "tenant"}])
    );
    assert_eq!(
        schema("/ping").await["rates"],
        json!([{"rate": "2/minute", "per": "tool"}])
    );
    assert!(schema("/ping").await.get("rate").is_none());
    assert_eq!(
        schema("/mailings").await["rates"],
        json!([{"rate": "1/50 seconds", "per": "combined", "of": [
            {"per": "tenant"}, {"per": "argument", "argument": "campaign_id"}]}])
    );
}

/// Asserts that `limit` on `GET /report`, which takes no argument `colour`, fails the
/// layer's build, saying so.
fn assert_report_cannot_count_colour(limit: Limit) {
    let (_, api) = router();
    let error = HaloLayer::builder(api)
        .describe("report", Describe::new().limit(limit))
        .build()
        .unwrap_err();
    assert!(error.is_metadata(), "{error}");
    let message = error.to_string();
    assert!(
        message.contains("GET /report") && message.contains("`colour`"),
        "{message}"
    );
}

#[test]
fn a_limit_per_an_argument_the_operation_does_not_take_fails_the_build() {
    let per_colour = Limit::per_argument("1/minute".parse::<Rate>().unwrap(), "colour");
    assert_report_cannot_count_colour(per_colour);
}

#[test]
fn a_combination_with_an_argument_the_operation_does_not_take_fails_the_build() {
    let parts = vec![Dimension::Tenant, Dimension::Argument("colour".into())];
    let per_tenant_and_colour = Limit::new(
        "1/minute".parse::<Rate>().unwrap(),
        Dimension::combined(parts).unwrap(),
    );
    assert_report_cannot_count_colour(per_tenant_and_colour);
}

#[cfg(feature = "redis")]
mod shared {
    //! Two instances of the API share one Redis: the same budgets, all or nothing across
    //! them, and no argument value kept verbatim.

    use std::time::Duration;

    use halo_axum::{Fallback, RedisStore};
    use halo_tests::redis::RedisServer;

    use super::*;

    fn instance(redis: &RedisServer, runs: &Runs) -> App {
        // Refuse rather than fall back to this instance's memory, with a timeout no busy
        // machine reaches: a call answered from memory would not be shared.
        let store = RedisStore::open(&redis.url())
            .unwrap()
            .prefix("shop:")
            .timeout(Duration::from_secs(30))
            .rate_fallback(Fallback::Refuse);
        serve(runs, |b| b.redis(store))
    }

    #[tokio::test]
    async fn two_instances_enforce_every_dimension_together() {
        let redis = RedisServer::start();
        let (runs_a, runs_b) = (Runs::default(), Runs::default());
        let (a, b) = (instance(&redis, &runs_a), instance(&redis, &runs_b));

        // Per tenant: alice on one instance, bob on the other, one budget.
        assert_eq!(get(&a, "alice", "/report").await.status, StatusCode::OK);
        let second = get(&b, "bob", "/report").await;
        assert_eq!(second.status, StatusCode::OK);
        assert_eq!(second.header("ratelimit"), "\"report/tenant\";r=0;t=0");
        let tenant = json!({"rate": "2/minute", "per": "tenant"});
        assert_refused_by(
            &get(&a, "bob", "/report").await,
            &tenant,
            "report/tenant",
            30,
        );
        assert_eq!(get(&b, "carol", "/report").await.status, StatusCode::OK);

        // Per tool.
        assert_eq!(get(&a, "alice", "/ping").await.status, StatusCode::OK);
        assert_eq!(get(&b, "dave", "/ping").await.status, StatusCode::OK);
        let tool = json!({"rate": "2/minute", "per": "tool"});
        assert_refused_by(&get(&a, "carol", "/ping").await, &tool, "ping/tool", 30);

        // Per argument, all or nothing: the refusals by the SKU leave alice's budget whole.
        let sku = json!({"rate": "1/minute", "per": "argument", "argument": "sku"});
        assert_eq!(order(&a, "alice", "A").await.status, StatusCode::OK);
        for app in [&b, &a, &b] {
            assert_refused_by(&order(app, "alice", "A").await, &sku, "place_order/sku", 60);
        }
        assert_eq!(order(&b, "alice", "B").await.status, StatusCode::OK);
        assert_eq!(order(&a, "alice", "C").await.status, StatusCode::OK);
        let caller = json!({"rate": "3/minute", "per": "caller"});
        assert_refused_by(&order(&b, "alice", "D").await, &caller, "place_order", 20);
        assert_eq!(
            order(&a, "bob", "D").await.status,
            StatusCode::OK,
            "D was not spent"
        );
        assert_eq!(runs_a.of(ORDER) + runs_b.of(ORDER), 4);

        // Per tenant and campaign: one budget across the instances.
        let campaign = json!({"rate": "1/50 seconds", "per": "combined", "of": [
            {"per": "tenant"}, {"per": "argument", "argument": "campaign_id"}]});
        let policy = "send_mailing/tenant+campaign_id";
        assert_eq!(
            mailing(&a, "alice", Some("spring")).await.status,
            StatusCode::OK
        );
        assert_refused_by(
            &mailing(&b, "bob", Some("spring")).await,
            &campaign,
            policy,
            50,
        );
        assert_eq!(
            mailing(&b, "carol", Some("spring")).await.status,
            StatusCode::OK
        );

        // A huge value is kept as a digest: every key is short, and none holds the value.
        let huge = "z".repeat(1 << 20);
        assert_eq!(order(&a, "carol", &huge).await.status, StatusCode::OK);
        assert_refused_by(&order(&b, "erin", &huge).await, &sku, "place_order/sku", 60);
        let client = redis::Client::open(redis.url()).unwrap();
        let mut connection = client.get_connection().unwrap();
        let keys: Vec<String> = redis::cmd("KEYS")
            .arg("shop:*rate*")
            .query(&mut connection)
            .unwrap();
        assert!(
            keys.iter()
                .any(|key| key.starts_with("shop:{rate:place_order}:argument:")),
            "{keys:?}"
        );
        assert!(
            keys.iter()
                .any(|key| key.starts_with("shop:{rate:report}:tenant:")),
            "{keys:?}"
        );
        let combined: Vec<&String> = keys
            .iter()
            .filter(|key| key.starts_with("shop:{rate:send_mailing}:combined:"))
            .collect();
        assert_eq!(combined.len(), 2, "acme's and globex's: {keys:?}");
        assert!(
            keys.iter()
                .all(|key| key.len() < 80 && !key.contains("alice")),
            "{keys:?}"
        );
    }
}
