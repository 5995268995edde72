//! Approvals are counted: `halo_approvals_total{tool, event}` for each request, approval,
//! denial, expiry and withdrawal, and the run of an approved call as a call (`halo_tool_calls_total`).
//! The metrics recorder is global to the process, so this file has one test and a recorder
//! of its own that keeps the counters it is handed.
#![allow(missing_docs, unreachable_pub)]

use crate::common;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use axum::Json;
use axum::extract::Path;
use halo_axum::{ApprovalLimits, ApprovalQueue, HaloLayer, Principal, StaticAuthenticator, halo};
use halo_tests::BearerScheme;
use metrics::{
    Counter, CounterFn, Gauge, Histogram, Key, KeyName, Metadata, Recorder, SharedString, Unit,
};
use reqwest::StatusCode;
use serde_json::{Value, json};
use utoipa::OpenApi;
use utoipa_axum::{router::OpenApiRouter, routes};

/// Counter values by `name{label="value",...}` (labels sorted).
#[derive(Clone, Default)]
struct Counts(Arc<Mutex<BTreeMap<String, u64>>>);

impl Counts {
    fn get(&self, series: &str) -> u64 {
        let counts = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        counts.get(series).copied().unwrap_or(0)
    }
}

struct One {
    series: String,
    counts: Counts,
}

impl CounterFn for One {
    fn increment(&self, value: u64) {
        let mut counts = self.counts.0.lock().unwrap_or_else(PoisonError::into_inner);
        *counts.entry(self.series.clone()).or_default() += value;
    }

    fn absolute(&self, value: u64) {
        let mut counts = self.counts.0.lock().unwrap_or_else(PoisonError::into_inner);
        counts.insert(self.series.clone(), value);
    }
}

impl Recorder for Counts {
    fn describe_counter(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn describe_gauge(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn describe_histogram(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}

    fn register_counter(&self, key: &Key, _: &Metadata<'_>) -> Counter {
        let mut labels: Vec<String> = key
            .labels()
            .map(|label| format!("{}=\"{}\"", label.key(), label.value()))
            .collect();
        labels.sort();
        let series = format!("{}{{{}}}", key.name(), labels.join(","));
        Counter::from_arc(Arc::new(One {
            series,
            counts: self.clone(),
        }))
    }

    fn register_gauge(&self, _: &Key, _: &Metadata<'_>) -> Gauge {
        Gauge::noop()
    }

    fn register_histogram(&self, _: &Key, _: &Metadata<'_>) -> Histogram {
        Histogram::noop()
    }
}

/// Close an account: every call waits for approval.
#[halo(approval = "required")]
#[utoipa::path(post, path = "/accounts/{id}/close", params(("id" = u64, Path)),
    responses((status = 200)), security(("bearer" = [])))]
async fn close(Path(id): Path<u64>) -> Json<Value> {
    Json(json!({"closed": id}))
}

#[derive(OpenApi)]
#[openapi(info(title = "Accounts", version = "1"), modifiers(&BearerScheme))]
struct Doc;

fn approvals(event: &str) -> String {
    format!("halo_approvals_total{{event=\"{event}\",tool=\"close\"}}")
}

#[tokio::test]
async fn approvals_are_counted_by_tool_and_event() {
    let counts = Counts::default();
    metrics::set_global_recorder(counts.clone()).expect("the first recorder of this process");
    let (router, api) = OpenApiRouter::with_openapi(Doc::openapi())
        .routes(routes!(close))
        .split_for_parts();
    let auth = StaticAuthenticator::new()
        .bearer("ann", Principal::new("ann"))
        .bearer("ops", Principal::new("ops").with_scopes(["approve"]));
    let layer = HaloLayer::builder(api)
        .authenticator(auth)
        .approver(ApprovalQueue::new("approve"))
        .approval_limits(ApprovalLimits::new().expire_after(Duration::from_secs(60)))
        .metrics(true)
        .build()
        .expect("valid metadata");
    let server = halo_tests::spawn(router.layer(layer)).await;
    let http = reqwest::Client::new();
    let hold = |id: u64| {
        let request = http
            .post(server.url(&format!("/accounts/{id}/close")))
            .bearer_auth("ann");
        async move {
            let response = request.send().await.expect("an answer");
            assert_eq!(response.status(), StatusCode::ACCEPTED);
            response.headers()["location"]
                .to_str()
                .expect("ASCII")
                .to_owned()
        }
    };
    let decide = |location: String, action: &str| {
        http.post(server.url(&format!("{location}/{action}")))
            .bearer_auth("ops")
            .send()
    };
    let approved = hold(1).await;
    let denied = hold(2).await;
    hold(3).await;
    let withdrawn = hold(4).await;
    decide(approved, "approve").await.expect("decided");
    decide(denied, "deny").await.expect("decided");
    let withdrawal = http
        .delete(server.url(&withdrawn))
        .bearer_auth("ann")
        .send()
        .await
        .expect("withdrawn");
    assert_eq!(withdrawal.status(), StatusCode::OK);
    common::fast_forward(Duration::from_secs(61)).await;
    // The expiry is counted when its timer fires; a read sees it settled.
    let list = http
        .get(server.url("/.well-known/halo/approvals"))
        .bearer_auth("ops")
        .send()
        .await
        .expect("the list");
    assert_eq!(
        list.json::<Value>().await.expect("JSON")["approvals"],
        json!([])
    );
    assert_eq!(counts.get(&approvals("requested")), 4);
    assert_eq!(counts.get(&approvals("cancelled")), 1);
    assert_eq!(counts.get(&approvals("approved")), 1);
    assert_eq!(counts.get(&approvals("denied")), 1);
    assert_eq!(counts.get(&approvals("expired")), 1);
    let calls = |outcome: &str, status: &str| {
        counts.get(&format!(
            "halo_tool_calls_total{{outcome=\"{outcome}\",status=\"{status}\",tool=\"close\"}}"
        ))
    };
    assert_eq!(calls("approval_requested", "2xx"), 4);
    assert_eq!(calls("executed", "2xx"), 1, "the approved call ran once");
}
