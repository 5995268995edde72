//! The task of a call held for approval: its id names the approval (`approval-{id}`), and
//! it is read and withdrawn through the approvals' own functions, as its caller. Nothing is
//! kept for it outside the approvals' book, so with approvals kept in Redis any replica
//! answers for it.

use std::sync::Arc;

use halo_protocol::{HeldCall, Rfc3339, TaskTimes, task_over};
use http::request::Parts;
use rmcp::ErrorData;
use rmcp::model::DetailedTask;

use super::{TaskError, not_found};
use crate::Principal;
use crate::layer::Shared;
use crate::layer::held::decision::{Entry, Phase, Refusal, is_callers, read_as};
use crate::layer::held::withdraw_as;
use crate::mcp::approval::stage;

/// The task of approval `id`, when it is the call of the caller of `parts`.
pub(super) async fn get(
    layer: &Arc<Shared>,
    parts: Option<&Parts>,
    task_id: &str,
    id: &str,
) -> Result<DetailedTask, ErrorData> {
    let caller = caller(layer, parts).await;
    let entry = own(layer, caller.as_ref(), task_id, id).await?;
    Ok(task(layer, &entry))
}

/// Withdraws approval `id` for the caller of `parts`, as `DELETE` of the approval does: only
/// a pending call of its own; an approved, denied, expired or withdrawn one is refused.
pub(super) async fn cancel(
    layer: &Arc<Shared>,
    parts: Option<&Parts>,
    task_id: &str,
    id: &str,
) -> Result<(), ErrorData> {
    let caller = caller(layer, parts).await;
    own(layer, caller.as_ref(), task_id, id).await?;
    match withdraw_as(layer, caller.as_ref(), id).await {
        Ok(_) => Ok(()),
        Err(refusal) => Err(refused(task_id, refusal)),
    }
}

/// The task of `entry` as it now is.
pub(super) fn task(layer: &Shared, entry: &Entry) -> DetailedTask {
    let expires_at = Rfc3339(entry.expires_at).to_string();
    let held = HeldCall::new(&*entry.id, entry.request.tool(), expires_at.clone());
    let created_at = Rfc3339(entry.requested_at).to_string();
    // The book does not keep when an approval was decided: a task that moved on tells its
    // expiry when it expired, and when it was made otherwise.
    let updated_at = match entry.phase() {
        Phase::Expired => expires_at,
        _ => created_at.clone(),
    };
    let lifetime = entry
        .expires_at
        .duration_since(entry.requested_at)
        .unwrap_or_default()
        + layer.approvals.keep_decided();
    let ttl_ms = u64::try_from(lifetime.as_millis()).unwrap_or(u64::MAX);
    held.task(
        stage(entry),
        &TaskTimes::new(created_at, updated_at, ttl_ms),
    )
}

/// The caller of `parts`, as the layer identifies it (anonymous when it refuses the
/// credentials, whose requests `/mcp` answered `401` already when the layer requires them).
async fn caller(layer: &Shared, parts: Option<&Parts>) -> Option<Principal> {
    let parts = parts?;
    layer.gate.identify(parts).await.ok().flatten()
}

/// Approval `id` when `caller` made its call: an approver reading someone else's is told, as
/// anyone else is, that no such task exists.
async fn own(
    layer: &Arc<Shared>,
    caller: Option<&Principal>,
    task_id: &str,
    id: &str,
) -> Result<Arc<Entry>, ErrorData> {
    match read_as(layer, caller, id).await {
        Ok(entry) if is_callers(&entry, caller) => Ok(entry),
        Ok(_) => Err(not_found(task_id)),
        Err(refusal) => Err(refused(task_id, refusal)),
    }
}

/// The JSON-RPC error for a refusal of the approvals.
pub(super) fn refused(task_id: &str, refusal: Refusal) -> ErrorData {
    match refusal {
        Refusal::Decided(phase) => task_over(task_id, phase_name(phase)),
        Refusal::Unreachable => TaskError::Unreachable.error(task_id),
        // Anonymous, not an approver, not the caller, missing: not the caller's task.
        _ => not_found(task_id),
    }
}

/// How the task of an approval in `phase` is told: what its status is.
fn phase_name(phase: Phase) -> &'static str {
    match phase {
        Phase::Pending | Phase::Running => "working (its call was approved and runs)",
        Phase::Ran => "completed",
        Phase::Denied | Phase::Expired => "failed",
        Phase::Cancelled => "cancelled",
    }
}
