//! What happens to an approval after its `202`: the approver is told of it, it expires when
//! nobody decides in time, and once approved its request runs, once, through the steps a
//! call takes after the approval (circuit, idempotency key, deadline, handler); its answer is
//! kept for its caller. Its caller may withdraw it while it waits (it is then cancelled and
//! never runs). Every decision, expiry, withdrawal and run is written to the audit trail and
//! counted.

use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::response::Response;
use http::header::{
    CONTENT_LANGUAGE, CONTENT_LOCATION, CONTENT_TYPE, ETAG, LAST_MODIFIED, LINK, LOCATION,
    RETRY_AFTER,
};
use http::{HeaderName, Method, Request, StatusCode};
use http_body_util::BodyExt;

use super::decision::wait_end;
use crate::approval::Failed;
use crate::approval::Verdict;
use crate::approval::{Answer, Decided, Entry, Kept, Phase, Reached};
use crate::audit::{AuditRecord, Outcome};
use crate::layer::Shared;
use crate::step::{Step, Stop};
use crate::{Principal, govern, problem};

/// The headers of an answer kept with it.
const KEPT_HEADERS: [HeaderName; 8] = [
    CONTENT_TYPE,
    CONTENT_LANGUAGE,
    CONTENT_LOCATION,
    LOCATION,
    ETAG,
    LAST_MODIFIED,
    LINK,
    RETRY_AFTER,
];

/// Watches a new approval: tells the approver, expires it when nobody decides in time, and
/// forgets it its while after the decision (or expiry) and run. In Redis, the replica
/// follows its own approvals instead (see halo-govern's `approval::redis`).
pub(crate) fn watch(shared: &Arc<Shared>, entry: Arc<Entry>) {
    let weak = Arc::downgrade(shared);
    // Only held when there is an approver (`hold` refuses the call otherwise).
    tokio::spawn(ask(Weak::clone(&weak), Arc::clone(&entry)));
    #[cfg(feature = "redis")]
    if let Some(book) = shared.approvals.redis() {
        book.follow(shared);
        return;
    }
    let keep = shared.approvals.keep_decided();
    tokio::spawn(async move {
        let mut phase = entry.watch();
        let decided = phase.wait_for(|phase| *phase != Phase::Pending);
        let _ = tokio::time::timeout_at(entry.deadline, decided).await;
        match weak.upgrade() {
            Some(shared) => expire_due(&shared, &entry),
            None => return,
        }
        let _ = phase.wait_for(|phase| *phase != Phase::Running).await;
        tokio::time::sleep(keep).await;
        if let Some(shared) = weak.upgrade() {
            shared.approvals.remove(&entry);
        }
    });
}

/// Tells the approver of `entry`, and decides it when the approver gives a verdict.
async fn ask(weak: Weak<Shared>, entry: Arc<Entry>) {
    let verdict = {
        let Some(shared) = weak.upgrade() else {
            return;
        };
        let Some(approver) = shared.approvals.approver() else {
            return;
        };
        approver.requested(&entry.request).await
    };
    if let (Some(verdict), Some(shared)) = (verdict, weak.upgrade()) {
        let _ = decide(&shared, &entry, &verdict).await;
    }
}

/// Decides `entry` with `verdict`: denied, or approved and run (this waits for the run,
/// here or on the replica that holds it). The approval as it ended, or the phase it was in
/// already when it was no longer pending.
pub(crate) async fn decide(
    shared: &Arc<Shared>,
    entry: &Arc<Entry>,
    verdict: &Verdict,
) -> Reached<Result<Arc<Entry>, Phase>> {
    let kept = match shared.approvals.decide(entry, verdict).await? {
        Decided::Run(kept) => kept,
        Decided::Denied => {
            note(shared, entry, Outcome::ApprovalDenied, Some(verdict.by()));
            return Ok(Ok(Arc::clone(entry)));
        }
        Decided::Already(phase, expired) => {
            if expired {
                note(shared, entry, Outcome::ApprovalExpired, None);
            }
            return Ok(Err(phase));
        }
        Decided::Elsewhere => {
            note(shared, entry, Outcome::Approved, Some(verdict.by()));
            // Run here when the replica that holds it has stopped, and this one may.
            #[cfg(feature = "redis")]
            super::takeover::take_over(shared, entry).await;
            return Ok(Ok(ran_elsewhere(shared, entry).await));
        }
    };
    note(shared, entry, Outcome::Approved, Some(verdict.by()));
    // In a task of its own: the run ends even when the approver's request goes away.
    let _ = start(shared, entry, *kept, verdict.by()).await;
    Ok(Ok(Arc::clone(entry)))
}

/// Withdraws `entry` while it is pending, as `by` (its caller, or `None` for an anonymous
/// caller), for `reason`: it never runs. The approval, cancelled, or the phase it was in
/// already when it was no longer pending.
pub(crate) async fn withdraw(
    shared: &Shared,
    entry: &Arc<Entry>,
    by: Option<&str>,
    reason: &str,
) -> Reached<Result<Arc<Entry>, Phase>> {
    match shared.approvals.withdraw(entry, by, reason).await? {
        Ok(()) => {
            note(shared, entry, Outcome::Cancelled, by);
            Ok(Ok(Arc::clone(entry)))
        }
        Err((phase, expired)) => {
            if expired {
                note(shared, entry, Outcome::ApprovalExpired, None);
            }
            Ok(Err(phase))
        }
    }
}

/// Runs the approved call of `entry` (decided by `decided_by`) in a task of its own.
pub(crate) fn start(
    shared: &Arc<Shared>,
    entry: &Arc<Entry>,
    kept: Kept,
    decided_by: &str,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(run(
        Arc::clone(shared),
        Arc::clone(entry),
        kept,
        decided_by.to_owned(),
    ))
}

/// Waits for the run of `entry` on the replica that holds it: the approval as it ended, or
/// as it is when the tool's deadline (a minute without one) has passed.
async fn ran_elsewhere(shared: &Arc<Shared>, entry: &Arc<Entry>) -> Arc<Entry> {
    let deadline = shared
        .approval_tool(entry)
        .and_then(|tool| shared.governance.rules(tool).timeout);
    let patience = deadline.map_or(Duration::from_secs(60), |d| d + Duration::from_secs(5));
    let waited = tokio::time::timeout(patience, wait_end(shared, Arc::clone(entry))).await;
    match waited {
        Ok(ended) => ended,
        Err(_) => Arc::clone(entry),
    }
}

/// Expires `entry` of this process's memory if its time is up and it is still pending
/// (noting it).
pub(crate) fn expire_due(shared: &Shared, entry: &Entry) {
    if shared.approvals.expire_due(entry) {
        note(shared, entry, Outcome::ApprovalExpired, None);
    }
}

/// The approval with this id (noting an expiry this read made).
pub(crate) async fn find(shared: &Shared, id: &str) -> Reached<Option<Arc<Entry>>> {
    let found = shared.approvals.find(id).await?;
    Ok(found.map(|(entry, expired)| {
        if expired {
            note(shared, &entry, Outcome::ApprovalExpired, None);
        }
        entry
    }))
}

/// The pending approvals, oldest first (noting the expiries this read made).
pub(crate) async fn pending(shared: &Shared) -> Reached<Vec<Arc<Entry>>> {
    let (pending, expired) = shared.approvals.pending().await?;
    for entry in &expired {
        note(shared, entry, Outcome::ApprovalExpired, None);
    }
    Ok(pending)
}

/// Runs an approved call: the circuit, its idempotency key, the handler within its
/// deadline; keeps the answer for its caller.
async fn run(shared: Arc<Shared>, entry: Arc<Entry>, kept: Kept, decided_by: String) {
    let started = Instant::now();
    let tool = shared.approval_tool(&entry);
    let (response, outcome) = match execute(&shared, &entry, tool, kept).await {
        Ok(answered) => answered,
        Err(stop) => stop.into_parts(),
    };
    let status = response.status();
    let mut answer = Answer {
        status,
        headers: KEPT_HEADERS
            .iter()
            .filter_map(|name| Some((name.clone(), response.headers().get(name)?.clone())))
            .collect(),
        body: None,
    };
    let limit = shared.approvals.answer_bytes();
    answer.body = http_body_util::Limited::new(response.into_body(), limit)
        .collect()
        .await
        .ok()
        .map(|collected| collected.to_bytes());
    shared.approvals.finish(&entry, answer).await;
    if let (Some(metrics), Some(tool)) = (&shared.metrics, tool) {
        metrics.call(tool, outcome, status, started.elapsed());
    }
    if let Some(sink) = &shared.audit {
        let mut record = record(&entry);
        record.decided_by = Some(decided_by);
        record.finish(status, outcome, started.elapsed());
        sink.record(record);
    }
}

/// The steps of an approved call after the approval, and the handler; `tool` is where this
/// layer holds the call's tool.
async fn execute(
    shared: &Shared,
    entry: &Entry,
    tool: Option<usize>,
    kept: Kept,
) -> Step<(Response, Outcome)> {
    let Kept {
        parts,
        body,
        runner,
    } = kept;
    let governance = &shared.governance;
    // Approved after a reload that removed its tool: not run.
    let Some(index) = tool else {
        let detail = format!("`{}` is no longer served", entry.request.tool());
        let gone = problem::response(StatusCode::GONE, detail);
        return Err(Stop::new(Outcome::Invalid, gone));
    };
    let tool = shared.discovery.registry.tool_at(index);
    let permit = governance.enter(index).await?;
    let ticket = match governance.idempotency_key(index, tool, &parts, false)? {
        None => None,
        Some(key) => {
            let caller = parts.extensions.get::<Principal>();
            Some(governance.claim(tool, &key, &parts, caller, &body).await?)
        }
    };
    let deadline = governance.rules(index).timeout;
    let request = Request::from_parts(parts, Body::from(body));
    let answer = govern::within(deadline, runner(request)).await;
    if let Some(permit) = permit {
        permit.record(answer.as_ref().ok().map(Response::status));
    }
    let outcome = govern::outcome(&answer);
    let response = governance
        .settle(ticket, answer)
        .await
        .unwrap_or_else(|Failed| {
            problem::response(StatusCode::INTERNAL_SERVER_ERROR, "the service failed")
        });
    Ok((response, outcome))
}

/// The kept answer of an approved call, sent again.
pub(crate) fn replay(answer: Answer) -> Response {
    let mut response = Response::new(answer.body.map_or_else(Body::empty, Body::from));
    *response.status_mut() = answer.status;
    response.headers_mut().extend(answer.headers);
    response
}

/// Writes an approval event of `entry` to the audit trail (`decided_by`: who decided) and
/// counts it.
pub(crate) fn note(shared: &Shared, entry: &Entry, outcome: Outcome, decided_by: Option<&str>) {
    if let Some(metrics) = &shared.metrics {
        let event = match outcome {
            Outcome::ApprovalRequested => "requested",
            Outcome::Approved => "approved",
            Outcome::ApprovalDenied => "denied",
            Outcome::Cancelled => "cancelled",
            _ => "expired",
        };
        if let Some(tool) = shared.approval_tool(entry) {
            metrics.approval(tool, event);
        }
    }
    // The `202` of a new approval is the call's own record.
    if outcome == Outcome::ApprovalRequested {
        return;
    }
    if let Some(sink) = &shared.audit {
        let mut record = record(entry);
        record.decided_by = decided_by.map(str::to_owned);
        let status = match outcome {
            Outcome::Approved => StatusCode::ACCEPTED,
            // As the call of a withdrawn approval ends: cancelled.
            Outcome::Cancelled => StatusCode::CONFLICT,
            _ => StatusCode::FORBIDDEN,
        };
        record.finish(status, outcome, Duration::ZERO);
        sink.record(record);
    }
}

/// A record of a call of `entry`, by its caller.
fn record(entry: &Entry) -> AuditRecord {
    let request = &entry.request;
    let method = Method::from_bytes(request.method().as_bytes()).unwrap_or(Method::POST);
    let path = request.target().split('?').next().unwrap_or("");
    let mut record = AuditRecord::new(&entry.trail, request.tool(), &method, path);
    record.caller = request.caller().map(str::to_owned);
    record
}
