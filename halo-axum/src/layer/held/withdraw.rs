//! A caller withdraws its own held call before anyone decides it: the approval moves from
//! pending to `cancelled`, its request is dropped, and the call never runs. Over HTTP as
//! `DELETE` of the approval ([`endpoint`](super::endpoint)), or, for a streamed call, as a
//! cancel request of the call (`DELETE /.well-known/halo/calls/{call_id}`), which ends its
//! stream with the cancelled `tool_error` (`409`).
//!
//! Who may withdraw: the approval's own caller (the same principal, or anonymous for an
//! anonymous call), as for reading it. Anyone else is told it does not exist (`404`), but an
//! approver, who may read it, is told to deny it instead (`403`). The move is one step of
//! the book, like a decision, so that of a withdrawal and an approval at once exactly one
//! wins; the loser gets `409`.

use std::sync::Arc;

use super::decision::{Refusal, approver, is_callers, made_by};
use super::run;
use crate::Principal;
use crate::approval::{Entry, Phase, Reached};
use crate::layer::Shared;

/// The reason a withdrawn approval shows.
const WITHDRAWN: &str = "withdrawn by its caller";

/// The reason an approval shows when an administrator cancelled its streamed call.
const CANCELLED: &str = "cancelled by an administrator";

/// Withdraws approval `id` as `caller`: the approval, cancelled.
pub(crate) async fn withdraw_as(
    shared: &Shared,
    caller: Option<&Principal>,
    id: &str,
) -> Result<Arc<Entry>, Refusal> {
    let entry = run::find(shared, id).await?.ok_or(Refusal::Missing)?;
    if !is_callers(&entry, caller) {
        return Err(match approver(shared, caller) {
            Ok(_) => Refusal::NotCaller,
            Err(_) => Refusal::Missing,
        });
    }
    let by = caller.map(Principal::id);
    let withdrawn = run::withdraw(shared, &entry, by, WITHDRAWN).await?;
    withdrawn.map_err(Refusal::Decided)
}

/// Withdraws the approval this process's streamed call `call` waits on, for a cancel request
/// of the call by `by` (its caller, or an administrator when `admin`): whether there was one
/// pending and it is withdrawn now. The cancel request then ends the stream, as for a
/// running call.
pub(crate) async fn withdraw_stream(
    shared: &Shared,
    call: &str,
    by: Option<&str>,
    admin: bool,
) -> Reached<bool> {
    let Some(entry) = shared.approvals.stream_approval(call) else {
        return Ok(false);
    };
    if entry.phase() != Phase::Pending {
        return Ok(false);
    }
    let reason = match admin && !made_by(&entry, by) {
        true => CANCELLED,
        false => WITHDRAWN,
    };
    Ok(run::withdraw(shared, &entry, by, reason).await?.is_ok())
}
