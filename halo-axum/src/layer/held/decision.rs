//! Reading and deciding an approval as a caller, whatever asks: the HTTP endpoints
//! ([`endpoint`](super::endpoint)) or another front of the layer (MCP). Who may do what:
//! the list and the decisions are for approvers; an approval is its caller's and approvers';
//! nobody decides a call of their own unless the approver allows it. And waiting for an
//! approval's end.

use std::sync::Arc;
#[cfg(feature = "redis")]
use std::time::Duration;

use axum::response::Response;
use http::StatusCode;

use super::run;
#[cfg(feature = "mcp")]
pub(crate) use crate::approval::State;
use crate::approval::Verdict;
use crate::approval::state_name;
/// An approval, where it is, and what it holds, for those who read it as a caller.
pub(crate) use crate::approval::{Entry, Phase};
use crate::approval::{Unreachable, unreachable};
use crate::layer::Shared;
use crate::{Principal, problem};

/// Why a caller may not read or decide an approval.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// Listing or deciding needs credentials (`401`).
    Anonymous,
    /// The caller is not an approver (`403`).
    NotApprover,
    /// An approver may not decide its own call (`403`).
    OwnCall,
    /// Only its caller withdraws a call; an approver denies it instead (`403`).
    NotCaller,
    /// No such approval, or not the caller's (`404`).
    Missing,
    /// Decided already, expired or withdrawn (`409`): its phase.
    Decided(Phase),
    /// The store of approvals cannot be reached (`503`).
    Unreachable,
}

impl From<Unreachable> for Refusal {
    fn from(Unreachable: Unreachable) -> Self {
        Self::Unreachable
    }
}

impl Refusal {
    /// The answer to send, as `application/problem+json`.
    pub(crate) fn response(self) -> Response {
        let (status, detail) = match self {
            Self::Anonymous => (
                StatusCode::UNAUTHORIZED,
                "approvals are listed and decided with credentials".to_owned(),
            ),
            Self::NotApprover => (
                StatusCode::FORBIDDEN,
                "the credentials do not allow deciding approvals".to_owned(),
            ),
            Self::OwnCall => (
                StatusCode::FORBIDDEN,
                "a call is approved or denied by someone other than its caller".to_owned(),
            ),
            Self::NotCaller => (
                StatusCode::FORBIDDEN,
                "only its caller withdraws a call; an approver denies it instead".to_owned(),
            ),
            Self::Missing => (StatusCode::NOT_FOUND, "no such approval".to_owned()),
            Self::Decided(phase) => (
                StatusCode::CONFLICT,
                format!("the approval is {} already", state_name(phase)),
            ),
            Self::Unreachable => return unreachable(),
        };
        problem::response(status, detail)
    }
}

/// The caller, when it may list and decide approvals.
pub(crate) fn approver<'a>(
    shared: &Shared,
    caller: Option<&'a Principal>,
) -> Result<&'a Principal, Refusal> {
    let caller = caller.ok_or(Refusal::Anonymous)?;
    match shared.approvals.approver() {
        Some(approver) if approver.may_decide(caller) => Ok(caller),
        _ => Err(Refusal::NotApprover),
    }
}

/// Whether `caller` made the call of `entry` (both anonymous counts).
pub(crate) fn is_callers(entry: &Entry, caller: Option<&Principal>) -> bool {
    made_by(entry, caller.map(Principal::id))
}

/// Whether the principal of id `by` made the call of `entry` (`None`: anonymous).
pub(super) fn made_by(entry: &Entry, by: Option<&str>) -> bool {
    entry.request.caller() == by
}

/// Approval `id`, as `caller` may read it: its own, or any for approvers.
pub(crate) async fn read_as(
    shared: &Arc<Shared>,
    caller: Option<&Principal>,
    id: &str,
) -> Result<Arc<Entry>, Refusal> {
    let entry = run::find(shared, id).await?.ok_or(Refusal::Missing)?;
    if approver(shared, caller).is_err() && !is_callers(&entry, caller) {
        return Err(Refusal::Missing);
    }
    // Approved, and its replica stopped before running it: run here, when this one may.
    #[cfg(feature = "redis")]
    super::takeover::take_over(shared, &entry).await;
    Ok(entry)
}

/// Approves (`approve`) or denies approval `id` as `caller`, for `reason`: the approval once
/// decided, and run when approved (this waits for the run, here or on the replica that holds
/// the call).
pub(crate) async fn decide_as(
    shared: &Arc<Shared>,
    caller: Option<&Principal>,
    id: &str,
    approve: bool,
    reason: Option<String>,
) -> Result<Arc<Entry>, Refusal> {
    let decider = approver(shared, caller)?;
    let entry = run::find(shared, id).await?.ok_or(Refusal::Missing)?;
    let own_allowed = shared
        .approvals
        .approver()
        .is_some_and(|approver| approver.self_approval());
    if !own_allowed && is_callers(&entry, Some(decider)) {
        return Err(Refusal::OwnCall);
    }
    let verdict = Verdict::new(approve, decider.id(), reason);
    let ended = run::decide(shared, &entry, &verdict).await?;
    ended.map_err(Refusal::Decided)
}

/// The answer of an approved call that ran, as its caller is given it: its status, and its
/// body as the approval shows it (`null` when there is none, or it was not kept).
#[cfg(feature = "mcp")]
pub(crate) fn kept_answer(entry: &Entry) -> Option<(StatusCode, serde_json::Value)> {
    let answer = entry.answer()?;
    let body = match crate::approval::response(&answer) {
        serde_json::Value::Object(mut shown) => shown.remove("body"),
        _ => None,
    };
    Some((answer.status, body.unwrap_or_default()))
}

/// Waits until `entry` is over (ran, denied, expired or cancelled): the approval as it ended. An
/// approval this process follows is watched; one kept in Redis by another replica is read
/// again every `POLL` (halo-govern's `approval::POLL`), until it is over or gone, or (Redis unreachable)
/// until it would have been forgotten.
pub(crate) async fn wait_end(shared: &Arc<Shared>, entry: Arc<Entry>) -> Arc<Entry> {
    #[cfg(feature = "redis")]
    let entry = match shared.approvals.redis() {
        Some(book) => match book.own_entry(&entry.id) {
            // This replica's own approval is the entry it moves; a read of it may be a copy.
            Some(own) => own,
            None if entry.phase().is_over() => entry,
            None => return poll_end(shared, entry, shared.approvals.keep_decided()).await,
        },
        None => entry,
    };
    let _ = shared;
    watch_end(entry).await
}

/// Waits until `entry`, an approval this process moves, is over.
async fn watch_end(entry: Arc<Entry>) -> Arc<Entry> {
    let mut phase = entry.watch();
    let _ = phase.wait_for(|phase| phase.is_over()).await;
    entry
}

/// [`wait_end`] for an approval of another replica.
#[cfg(feature = "redis")]
async fn poll_end(shared: &Arc<Shared>, mut entry: Arc<Entry>, keep: Duration) -> Arc<Entry> {
    let give_up = entry.deadline + keep;
    while tokio::time::Instant::now() < give_up {
        tokio::time::sleep(crate::approval::POLL).await;
        match run::find(shared, &entry.id).await {
            Ok(Some(read)) => {
                entry = read;
                if entry.phase().is_over() {
                    break;
                }
                // Its replica stopped before running it: run here, when this one may, and
                // wait on the run here.
                super::takeover::take_over(shared, &entry).await;
                if let Some(book) = shared.approvals.redis()
                    && let Some(own) = book.own_entry(&entry.id)
                {
                    return watch_end(own).await;
                }
            }
            Ok(None) => break,
            Err(Unreachable) => {}
        }
    }
    entry
}
