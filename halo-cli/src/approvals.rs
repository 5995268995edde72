//! Approvals from the command line: `halo call` says on standard error which approval a held
//! call waits for (and then waits, as halo-client does; Ctrl-C withdraws it and exits 130);
//! `halo approvals` lists the pending ones, `halo approve` and `halo deny` decide one, as an
//! approver.
//!
//! What goes where: the call's result stays alone on standard output, so a script reading it
//! does not change when a call starts waiting for approval; the approval's id goes to
//! standard error, for the person who has to go and approve it. Everything the server sent
//! is untrusted and printed through [`output::line`].

use std::fmt::Write as _;
use std::pin::pin;
use std::process::ExitCode;
use std::sync::{Arc, Mutex, PoisonError};

use futures_util::future::{self, Either};
use halo_client::{Approval, Client, ToolResponse};

use crate::failure::Failure;
use crate::interrupt::interrupted;
use crate::output::{self, print_err, print_out};

/// Says on standard error that a call waits for approval: the hook of every client `halo`
/// builds ([`halo_client::ClientBuilder::on_approval_pending`]).
pub(crate) fn announce(approval: &Approval) {
    let mut text = format!(
        "halo: approval {} pending (tool {})",
        output::line(&approval.id),
        output::line(&approval.tool)
    );
    if !approval.expires_at.is_empty() {
        let _ = write!(text, ", expires {}", output::line(&approval.expires_at));
    }
    text.push_str("; waiting for a decision\n");
    print_err(&text);
}

/// The approval a call of this process waits for, once the server held it: what Ctrl-C
/// withdraws.
#[derive(Clone, Debug, Default)]
pub(crate) struct Waiting(Arc<Mutex<Option<String>>>);

impl Waiting {
    /// The hook of a client whose calls may wait: it [`announce`]s each held call and keeps
    /// its approval's id.
    pub(crate) fn hook(&self) -> impl Fn(&Approval) + Send + Sync + 'static {
        let waiting = self.clone();
        move |approval| {
            announce(approval);
            *waiting.lock() = Some(approval.id.clone());
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Option<String>> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// `halo call`'s wait: the answer of `call`, or `None` when Ctrl-C came first. Then the
/// approval the call waits for, if the server held it, is withdrawn (so it never runs), and
/// standard error says what came of it.
pub(crate) async fn interruptible(
    client: &Client,
    waiting: &Waiting,
    call: impl Future<Output = halo_client::Result<ToolResponse>>,
) -> Result<Option<ToolResponse>, Failure> {
    // Ctrl-C first: it is listened for before the call is sent.
    match future::select(pin!(interrupted()), pin!(call)).await {
        Either::Right((answer, _)) => Ok(Some(answer?)),
        Either::Left(((), _)) => {
            let id = waiting.lock().clone();
            let note = match id {
                None => "halo: interrupted\n".to_owned(),
                Some(id) => {
                    let withdrawn = client.withdraw(&id).await;
                    let id = output::line(&id);
                    match withdrawn {
                        Ok(_) => format!(
                            "halo: interrupted; approval {id} withdrawn: the call will not run\n"
                        ),
                        Err(error) => {
                            format!("halo: interrupted; cannot withdraw approval {id}: {error}\n")
                        }
                    }
                }
            };
            print_err(&note);
            Ok(None)
        }
    }
}

/// `halo approvals URL`: the pending approvals, oldest first.
pub(crate) async fn list(client: &Client, json: bool) -> Result<ExitCode, Failure> {
    let approvals = client.approvals().await?;
    print_out(&if json {
        output::json(&approvals)
    } else {
        table(&approvals)
    });
    Ok(ExitCode::SUCCESS)
}

/// `halo approve URL ID`: approves, and shows the call's answer.
pub(crate) async fn approve(client: &Client, id: &str, json: bool) -> Result<ExitCode, Failure> {
    let approval = client.approve(id).await?;
    if json {
        print_out(&output::json(&approval));
        return Ok(ExitCode::SUCCESS);
    }
    let mut text = decided(&approval);
    match approval.to_response() {
        Some(response) => {
            let _ = writeln!(text, "; the call answered {}", response.status());
            text.push_str(&output::response(&response));
        }
        None => text.push('\n'),
    }
    print_out(&text);
    Ok(ExitCode::SUCCESS)
}

/// `halo deny URL ID [--reason TEXT]`.
pub(crate) async fn deny(
    client: &Client,
    id: &str,
    reason: Option<&str>,
    json: bool,
) -> Result<ExitCode, Failure> {
    let approval = client.deny(id, reason).await?;
    print_out(&if json {
        output::json(&approval)
    } else {
        let mut text = decided(&approval);
        if let Some(reason) = &approval.reason {
            let _ = write!(text, ": {}", output::line(reason));
        }
        text.push('\n');
        text
    });
    Ok(ExitCode::SUCCESS)
}

/// `approval ID approved by WHO` (no line end).
fn decided(approval: &Approval) -> String {
    let mut text = format!("approval {} {}", output::line(&approval.id), approval.state);
    if let Some(by) = &approval.decided_by {
        let _ = write!(text, " by {}", output::line(by));
    }
    text
}

/// The pending approvals as a table: id, tool, caller, call, expiry, arguments.
fn table(approvals: &[Approval]) -> String {
    if approvals.is_empty() {
        return "no pending approvals\n".to_owned();
    }
    let rows: Vec<Vec<String>> = approvals
        .iter()
        .map(|approval| {
            let call = approval.call.as_ref().map_or_else(String::new, |call| {
                format!("{} {}", output::line(&call.method), output::line(&call.url))
            });
            vec![
                output::line(&approval.id),
                output::line(&approval.tool),
                approval
                    .caller
                    .as_deref()
                    .map_or_else(|| "-".to_owned(), output::line),
                call,
                output::line(&approval.expires_at),
                approval
                    .arguments
                    .as_ref()
                    .map_or_else(String::new, |a| output::truncate(&output::compact(a), 60)),
            ]
        })
        .collect();
    let header = ["ID", "TOOL", "CALLER", "CALL", "EXPIRES", "ARGUMENTS"];
    output::table(&header, &rows)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn the_table_lines_up_and_keeps_control_characters_out() {
        let approval: Approval = serde_json::from_value(json!({
            "id": "a1", "state": "pending", "tool": "refund\u{1b}[31m",
            "call": {"method": "POST", "url": "/api/payments/ch_1/refund"},
            "arguments": {"reason": "returned"}, "expires_at": "2026-12-02T10:15:00.000Z"
        }))
        .unwrap();
        let text = table(&[approval]);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 2, "{text}");
        assert!(lines[0].starts_with("ID  TOOL"), "{text}");
        assert_eq!(lines[0].find("TOOL"), lines[1].find("refund"), "{text}");
        assert!(!text.contains('\u{1b}'), "{text}");
        assert!(lines[1].contains(" - "), "an anonymous caller: {text}");
        assert_eq!(table(&[]), "no pending approvals\n");
    }
}
