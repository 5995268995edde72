//! The payments API that the approval tests serve, in the parts they share: its callers (two
//! who call, one who approves), its refund tool (every call waits for approval), the audit
//! trail a test waits on, the API served on loopback behind a layer each test finishes (or
//! as one of several instances sharing Redis), a streamed refund read up to its
//! `approval_pending` event, and the outcome of a withdrawal racing an approval.

use std::sync::Arc;
use std::time::Duration;

use axum::Json;
use axum::extract::{FromRef, Path, State};
use halo_axum::{
    AuditRecord, AuditSink, HaloBuilder, HaloLayer, Principal, Progress, StaticAuthenticator,
    Validation, halo,
};
use halo_tests::{BearerScheme, TestServer};
use reqwest::StatusCode;
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::sync::watch;
use utoipa::{OpenApi, ToSchema};
use utoipa_axum::{router::OpenApiRouter, routes};

use super::client::{Answer, Event};
use super::gate::Runs;

/// Where approvals are listed; an approval is `{APPROVALS}/{id}`.
pub const APPROVALS: &str = "/.well-known/halo/approvals";
/// The callers' bearer tokens: alice and bob call, carol approves (see [`callers`]).
pub const ALICE: &str = "alice-token";
pub const BOB: &str = "bob-token";
pub const CAROL: &str = "carol-token";

/// How long a test waits for a record that should come at once.
const PATIENCE: Duration = Duration::from_secs(10);

/// Asserts that of a withdrawal and an approval of one call racing (in round `round`), one
/// won (`200`) and the other was refused (`409`), whichever it was.
pub fn assert_one_won(round: usize, withdrawn: &Answer, approved: &Answer) {
    let mut statuses = [withdrawn.status, approved.status];
    statuses.sort();
    assert_eq!(
        statuses,
        [StatusCode::OK, StatusCode::CONFLICT],
        "round {round}: {} / {}",
        withdrawn.body,
        approved.body
    );
}

/// The callers by their tokens: alice and bob, and carol, who holds the scope `approve`.
pub fn callers() -> StaticAuthenticator {
    StaticAuthenticator::new()
        .bearer(ALICE, Principal::new("alice"))
        .bearer(BOB, Principal::new("bob"))
        .bearer(CAROL, Principal::new("carol").with_scopes(["approve"]))
}

#[derive(Deserialize, ToSchema)]
pub struct Refund {
    pub amount: u32,
    /// The card's PIN: never shown to approvers.
    #[schema(write_only)]
    pub pin: Option<String>,
}

/// What the refund handler needs of the app's state: where it counts its runs, and the name
/// of the instance when several serve the API (a `Runs` state gives no name).
#[derive(Clone, Debug, Default)]
pub struct Till {
    pub instance: Option<&'static str>,
    pub runs: Runs,
}

impl FromRef<Runs> for Till {
    fn from_ref(runs: &Runs) -> Self {
        Self {
            instance: None,
            runs: runs.clone(),
        }
    }
}

/// Refund a payment: every call waits for approval.
///
/// Answers the refund, its amount, who it ran as and which run it was; `on`, the instance
/// that ran it, when it has a name; `pin: true` when a PIN came (the handler gets it, the
/// approvers do not).
#[halo(approval = "required", idempotency_key = "Idempotency-Key")]
#[utoipa::path(post, path = "/refunds/{id}", params(("id" = String, Path)),
    request_body = Refund, responses((status = 200)), security(("bearer" = [])))]
pub async fn refund(
    State(till): State<Till>,
    Path(id): Path<String>,
    caller: Principal,
    progress: Progress,
    Json(refund): Json<Refund>,
) -> Json<Value> {
    let run = till.runs.add();
    progress.step(1, Some(1), "refunding");
    let mut answer = json!({"refund": id, "amount": refund.amount, "by": caller.id(), "run": run});
    if let Some(instance) = till.instance {
        answer["on"] = json!(instance);
    }
    if refund.pin.is_some() {
        answer["pin"] = json!(true);
    }
    Json(answer)
}

#[derive(OpenApi)]
#[openapi(info(title = "Payments", version = "1"), modifiers(&BearerScheme))]
struct Doc;

/// The payments API's routes: the refund tool, to which a test may add its own.
pub fn payments<S>() -> OpenApiRouter<S>
where
    S: Clone + Send + Sync + 'static,
    Till: FromRef<S>,
{
    OpenApiRouter::with_openapi(Doc::openapi()).routes(routes!(refund))
}

/// Audit records, with a signal for each one that arrives.
#[derive(Clone)]
pub struct Trail(Arc<watch::Sender<Vec<AuditRecord>>>);

impl Default for Trail {
    fn default() -> Self {
        Self(Arc::new(watch::channel(Vec::new()).0))
    }
}

impl AuditSink for Trail {
    fn record(&self, record: AuditRecord) {
        self.0.send_modify(|records| records.push(record));
    }
}

impl Trail {
    pub fn outcomes(&self) -> Vec<String> {
        self.0
            .borrow()
            .iter()
            .map(|record| record.outcome.as_str().to_owned())
            .collect()
    }

    /// The records with `outcome` so far.
    pub fn records(&self, outcome: &str) -> Vec<AuditRecord> {
        let records = self.0.borrow();
        let found = records.iter().filter(|r| r.outcome.as_str() == outcome);
        found.cloned().collect()
    }

    /// The record with `outcome`, once it is written.
    pub async fn wait(&self, outcome: &str) -> AuditRecord {
        let mut records = self.0.subscribe();
        let found = tokio::time::timeout(
            PATIENCE,
            records.wait_for(|records| records.iter().any(|r| r.outcome.as_str() == outcome)),
        )
        .await
        .unwrap_or_else(|_| panic!("no `{outcome}` record: {:?}", self.outcomes()))
        .expect("the trail is there");
        found
            .iter()
            .find(|r| r.outcome.as_str() == outcome)
            .cloned()
            .expect("found above")
    }
}

/// A payments API on loopback, with what its handlers ran and its audit trail.
pub struct Payments {
    pub server: TestServer,
    pub runs: Runs,
    pub trail: Trail,
}

/// Serves `routes` (from [`payments`]) behind a layer with the [`callers`], validation on
/// and a [`Trail`], as `configure` builds it further.
pub async fn serve(
    routes: OpenApiRouter<Runs>,
    configure: impl FnOnce(HaloBuilder) -> HaloBuilder,
) -> Payments {
    let (runs, trail) = (Runs::default(), Trail::default());
    let (router, api) = routes.split_for_parts();
    let builder = HaloLayer::builder(api)
        .authenticator(callers())
        .validate(Validation::On)
        .audit(trail.clone());
    let layer = configure(builder).build().expect("valid metadata");
    let server = halo_tests::spawn(router.with_state(runs.clone()).layer(layer)).await;
    Payments {
        server,
        runs,
        trail,
    }
}

/// One instance of the payments API among several sharing Redis: its name, how many calls
/// its handler ran, its audit records.
#[derive(Debug, Clone)]
pub struct Instance {
    pub name: &'static str,
    pub runs: Runs,
    pub audit: super::audit::Records,
}

/// The refund handler runs on the instance, by its name.
impl FromRef<Instance> for Till {
    fn from_ref(instance: &Instance) -> Self {
        Self {
            instance: Some(instance.name),
            runs: instance.runs.clone(),
        }
    }
}

/// An instance's server, state and client.
pub struct Api {
    pub server: TestServer,
    pub instance: Instance,
    pub http: reqwest::Client,
}

impl Api {
    /// `GET path` with the bearer `token`.
    pub async fn get(&self, path: &str, token: &str) -> super::client::Answer {
        let request = self.http.get(self.server.url(path)).bearer_auth(token);
        super::client::Answer::read(request.send().await.expect("an answer")).await
    }
}

/// Instance `name` of the payments API on loopback, its calls decided by holders of
/// `approve`, keeping its approvals in `redis` (key prefix `pay:`) within `limits`; given its
/// app to run the calls of instances that stopped (`HaloLayer::take_over_with`) when
/// `takes_over`.
#[cfg(feature = "redis")]
pub async fn on_redis(
    redis: &halo_tests::redis::RedisServer,
    name: &'static str,
    limits: halo_axum::ApprovalLimits,
    takes_over: bool,
) -> Api {
    let instance = Instance {
        name,
        runs: Runs::default(),
        audit: super::audit::Records::default(),
    };
    let (router, api) = payments().split_for_parts();
    let store = halo_axum::RedisStore::open(&redis.url())
        .unwrap()
        .prefix("pay:");
    let layer = HaloLayer::builder(api)
        .authenticator(callers())
        .approver(halo_axum::ApprovalQueue::new("approve"))
        .approval_limits(limits)
        .redis(store)
        .audit(instance.audit.clone())
        .build()
        .expect("valid metadata");
    let app = router.with_state(instance.clone()).layer(layer.clone());
    let app = if takes_over {
        layer.take_over_with(app)
    } else {
        app
    };
    Api {
        server: halo_tests::spawn(app).await,
        instance,
        http: reqwest::Client::new(),
    }
}

/// A streamed call of `/refunds/{id}` by alice (`{"amount": 3}`) on `server`: the response,
/// its stream read up to the `approval_pending` event, and the approval's `Location`.
pub async fn streamed_refund(
    http: &reqwest::Client,
    server: &TestServer,
    id: &str,
) -> (reqwest::Response, String, String) {
    let mut response = http
        .post(server.url(&format!("/refunds/{id}")))
        .bearer_auth(ALICE)
        .header("accept", "text/event-stream")
        .json(&json!({"amount": 3}))
        .send()
        .await
        .expect("a stream");
    assert_eq!(response.status(), reqwest::StatusCode::OK);
    assert_eq!(response.headers()["content-type"], "text/event-stream");
    let location = response.headers()["location"]
        .to_str()
        .expect("ASCII")
        .to_owned();
    let mut head = String::new();
    while !head.contains("approval_pending") {
        let chunk = tokio::time::timeout(PATIENCE, response.chunk())
            .await
            .expect("the stream in time")
            .expect("a readable stream")
            .expect("more of the stream");
        head.push_str(std::str::from_utf8(&chunk).expect("text"));
    }
    (response, head, location)
}

/// The events of a stream whose beginning was `head`, read to its end.
pub async fn rest(response: reqwest::Response, head: &str) -> Vec<Event> {
    let rest = tokio::time::timeout(PATIENCE, response.text())
        .await
        .expect("the stream ends")
        .expect("the rest of the stream");
    super::client::events(&format!("{head}{rest}"))
}

/// Whether any value `redis` holds contains `text`.
pub fn redis_holds(redis: &halo_tests::redis::RedisServer, text: &str) -> bool {
    let script = r"
for _, key in ipairs(redis.call('KEYS', '*')) do
  local kind = redis.call('TYPE', key)['ok']
  local values = {}
  if kind == 'hash' then values = redis.call('HVALS', key)
  elseif kind == 'string' then values = {redis.call('GET', key)} end
  for _, value in ipairs(values) do
    if string.find(value, ARGV[1], 1, true) then return 1 end
  end
end
return 0";
    redis.command(&["EVAL", script, "0", text]).as_deref() == Some(":1")
}
