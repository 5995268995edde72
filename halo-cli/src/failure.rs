//! Why a command failed: what `halo` prints then, and its exit status.

use std::fmt::Write as _;
use std::process::ExitCode;

use crate::output::{self, print_err, print_out};

/// Why a command failed.
#[derive(Debug)]
pub(crate) enum Failure {
    /// The server answered 4xx or 5xx (exit 1).
    Status(halo_client::Error),
    /// The API does not describe the operation asked for (exit 1).
    NotDescribed(String),
    /// A usage, network or other error (exit 2).
    Other(String),
}

impl From<halo_client::Error> for Failure {
    fn from(error: halo_client::Error) -> Self {
        // A call whose approval was denied, expired or withdrawn: refused, as a `403` would be.
        if error.is_status()
            || error.is_denied()
            || error.is_approval_expired()
            || error.is_approval_cancelled()
        {
            return Self::Status(error);
        }
        if error.is_not_described() {
            return Self::NotDescribed(error.to_string());
        }
        // The client's messages never carry a secret; add the causes behind them.
        let mut message = error.to_string();
        let mut cause = std::error::Error::source(&error).and_then(std::error::Error::source);
        while let Some(inner) = cause {
            let text = inner.to_string();
            if !message.contains(&text) {
                message.push_str(": ");
                message.push_str(&text);
            }
            cause = inner.source();
        }
        Self::Other(message)
    }
}

impl Failure {
    pub(crate) fn other(message: impl Into<String>) -> Self {
        Self::Other(message.into())
    }

    /// What went wrong, as one message.
    pub(crate) fn message(&self) -> String {
        match self {
            Self::Status(error) => error.to_string(),
            Self::NotDescribed(message) | Self::Other(message) => message.clone(),
        }
    }

    /// Prints the failure (to stderr; with `--json`, a server's error body to stdout too)
    /// and gives the exit status.
    pub(crate) fn report(&self, json: bool) -> ExitCode {
        match self {
            Self::Status(error) => {
                let response = error.response();
                let refusal = refusal(error);
                if json {
                    // The server's error body, else the approval that refused the call.
                    print_out(&match (response, error.approval()) {
                        (Some(response), _) => output::json(&response.to_value()),
                        (None, approval) => output::json(&approval),
                    });
                    print_err(&refusal.unwrap_or_else(|| format!("halo: {error}\n")));
                } else {
                    let text = match (response, refusal) {
                        (Some(response), _) => {
                            format!("halo: {}", output::error_response(response))
                        }
                        (None, Some(refusal)) => refusal,
                        (None, None) => format!("halo: {error}\n"),
                    };
                    print_err(&text);
                }
                ExitCode::from(1)
            }
            Self::NotDescribed(message) => {
                print_err(&format!("halo: {message}\n"));
                ExitCode::from(1)
            }
            Self::Other(message) => {
                print_err(&format!("halo: {message}\n"));
                ExitCode::from(2)
            }
        }
    }
}

/// Why a call held for approval did not run: who decided and why, on one line.
fn refusal(error: &halo_client::Error) -> Option<String> {
    let approval = error.approval()?;
    let what = if error.is_denied() {
        let mut what = format!("approval {} was denied", output::line(&approval.id));
        if let Some(by) = &approval.decided_by {
            let _ = write!(what, " by {}", output::line(by));
        }
        if let Some(reason) = &approval.reason {
            let _ = write!(what, ": {}", output::line(reason));
        }
        what
    } else if error.is_approval_cancelled() {
        let mut what = format!("approval {} was withdrawn", output::line(&approval.id));
        if let Some(by) = &approval.decided_by {
            let _ = write!(what, " by {}", output::line(by));
        }
        what
    } else if error.is_approval_expired() {
        format!(
            "approval {} expired at {} without a decision",
            output::line(&approval.id),
            output::line(&approval.expires_at)
        )
    } else {
        return None;
    };
    Some(format!(
        "halo: the call of {} did not run: {what}\n",
        output::line(&approval.tool)
    ))
}
