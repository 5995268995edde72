//! Approvals read and decided over HTTP, as an approver (or, for one approval, its caller):
//! the pending list, one approval, approve, deny; and withdrawn, by the call's own caller. The server answers `401` without
//! credentials and `403` to a caller who may not decide, whatever the id, and `404` for an
//! approval the caller may not see; each is an [`Error::is_status`] error.

use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};
use reqwest::Method;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::approval::{APPROVALS_PATH, Approval};
use crate::client::Prepared;
use crate::{Client, Error, Result, ToolResponse};

/// What an id keeps as it is in a path segment: RFC 3986's unreserved characters.
const SEGMENT: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// The longest id the client sends.
const MAX_ID: usize = 256;

/// The list's answer, `{"approvals": [...]}`.
#[derive(Deserialize)]
struct List {
    approvals: Vec<Approval>,
}

impl Client {
    /// The pending approvals, oldest first (`GET /.well-known/halo/approvals`): for callers
    /// the server lets decide.
    ///
    /// ```no_run
    /// use halo_client::{Client, Credential};
    ///
    /// # async fn run() -> halo_client::Result<()> {
    /// let client = Client::builder("http://127.0.0.1:3000")
    ///     .credential(Credential::bearer("demo-admin"))
    ///     .build()?;
    /// for approval in client.approvals().await? {
    ///     println!("{} {} by {:?}", approval.id, approval.tool, approval.caller);
    /// }
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// [`Error::is_status`] with `401` without credentials, `403` for a caller who may not
    /// decide approvals (and `404` from a server that keeps none); transport errors;
    /// [`Error::is_decode`] when the answer is not a list of approvals.
    pub async fn approvals(&self) -> Result<Vec<Approval>> {
        let url = self.resolve(APPROVALS_PATH)?;
        let request = Prepared::endpoint(Method::GET, url, None, true, self.retry_policy());
        let response = self.fetch(&request).await?;
        let list: List = decode(&response, "the list of approvals")?;
        Ok(list.approvals)
    }

    /// One approval (`GET /.well-known/halo/approvals/{id}`): its caller and approvers may
    /// read it.
    ///
    /// ```no_run
    /// # async fn run(client: halo_client::Client) -> halo_client::Result<()> {
    /// let approval = client.approval("3f0c").await?;
    /// println!("{} is {}", approval.tool, approval.state);
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// [`Error::is_argument`] for an empty id (or one over 256 bytes, or `.` or `..`);
    /// [`Error::is_status`]
    /// with `404` when the server keeps no such approval or does not show it to this caller;
    /// transport and decode errors.
    pub async fn approval(&self, id: &str) -> Result<Approval> {
        let request = Prepared::endpoint(
            Method::GET,
            self.resolve(&path(id, None)?)?,
            None,
            true,
            self.retry_policy(),
        );
        let response = self.fetch(&request).await?;
        decode(&response, "the approval")
    }

    /// Approves approval `id` (`POST /.well-known/halo/approvals/{id}/approve`): the held
    /// call runs, as its caller, and the answer is the approval once it ran
    /// ([`Approval::response`] holds the call's answer).
    ///
    /// ```no_run
    /// # async fn run(client: halo_client::Client) -> halo_client::Result<()> {
    /// let approved = client.approve("3f0c").await?;
    /// if let Some(ran) = &approved.response {
    ///     println!("the call answered {}", ran.status);
    /// }
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// [`Error::is_status`]: `401`, `403` for a caller who may not decide (or who made the
    /// call, unless the server lets callers approve their own), `404` for no such approval,
    /// `409` when it is decided already or expired; [`Error::is_argument`] for an empty id;
    /// transport and decode errors. The decision is not sent again after a timeout (it may
    /// have been taken): read the approval to know.
    pub async fn approve(&self, id: &str) -> Result<Approval> {
        self.decide(id, "approve", None).await
    }

    /// Approves approval `id` as [`approve`](Self::approve) does, saying why (`{"reason":
    /// ...}` when there is one, kept by the server to 1,000 characters and shown to the
    /// call's caller).
    ///
    /// ```no_run
    /// # async fn run(client: halo_client::Client) -> halo_client::Result<()> {
    /// let approved = client.approve_with_reason("3f0c", Some("the book came back")).await?;
    /// assert_eq!(approved.reason.as_deref(), Some("the book came back"));
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// As [`approve`](Self::approve).
    pub async fn approve_with_reason(&self, id: &str, reason: Option<&str>) -> Result<Approval> {
        self.decide(id, "approve", reason).await
    }

    /// Denies approval `id` (`POST /.well-known/halo/approvals/{id}/deny`, with `{"reason":
    /// ...}` when there is one, kept by the server to 1,000 characters): the held call never
    /// runs, and its caller learns who denied it and why.
    ///
    /// ```no_run
    /// # async fn run(client: halo_client::Client) -> halo_client::Result<()> {
    /// let denied = client.deny("3f0c", Some("the charge is disputed")).await?;
    /// assert!(denied.state.is_decided());
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// As [`approve`](Self::approve).
    pub async fn deny(&self, id: &str, reason: Option<&str>) -> Result<Approval> {
        self.decide(id, "deny", reason).await
    }

    /// Withdraws approval `id` of a call this client made, before anyone decides it
    /// (`DELETE /.well-known/halo/approvals/{id}`): the held call never runs, and the answer
    /// is the approval, [`ApprovalState::Cancelled`](crate::ApprovalState::Cancelled). A
    /// client waiting for it ([`Client::wait_for_approval`], or a call that waits) ends with
    /// an [`Error::is_approval_cancelled`] error.
    ///
    /// ```no_run
    /// # async fn run(client: halo_client::Client) -> halo_client::Result<()> {
    /// use halo_client::ApprovalState;
    ///
    /// let withdrawn = client.withdraw("3f0c").await?;
    /// assert_eq!(withdrawn.state, ApprovalState::Cancelled);
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// [`Error::is_status`]: `403` for an approver who did not make the call (it denies
    /// instead), `404` for no such approval or another caller's, `409` when it is decided
    /// already, expired or withdrawn; [`Error::is_argument`] for an empty id; transport and
    /// decode errors. Not sent again after a timeout (it may have been taken): read the
    /// approval to know.
    pub async fn withdraw(&self, id: &str) -> Result<Approval> {
        let request = Prepared::endpoint(
            Method::DELETE,
            self.resolve(&path(id, None)?)?,
            None,
            false,
            self.retry_policy(),
        );
        let response = self.fetch(&request).await?;
        decode(&response, "the withdrawn approval")
    }

    async fn decide(&self, id: &str, action: &str, reason: Option<&str>) -> Result<Approval> {
        let body = reason.map(|reason| json!({ "reason": reason }));
        let request = Prepared::endpoint(
            Method::POST,
            self.resolve(&path(id, Some(action))?)?,
            body.as_ref(),
            // A decision that may have been taken is not taken again (the repeat would be a
            // `409` that hides it).
            false,
            self.retry_policy(),
        );
        let response = self.fetch(&request).await?;
        decode(&response, "the decided approval")
    }
}

/// The path of approval `id`, and of one of its actions.
pub(super) fn path(id: &str, action: Option<&str>) -> Result<String> {
    // `.` and `..` would name another resource once the URL is normalised.
    if id.is_empty() || id.len() > MAX_ID || id == "." || id == ".." {
        return Err(Error::argument(format!(
            "an approval id is 1 to {MAX_ID} bytes, and not `.` or `..`"
        )));
    }
    let id = utf8_percent_encode(id, SEGMENT);
    Ok(match action {
        Some(action) => format!("{APPROVALS_PATH}/{id}/{action}"),
        None => format!("{APPROVALS_PATH}/{id}"),
    })
}

/// A JSON answer read as `T`; `what` names it in the error.
pub(super) fn decode<T: serde::de::DeserializeOwned>(
    response: &ToolResponse,
    what: &str,
) -> Result<T> {
    let value = response.json().cloned().unwrap_or(Value::Null);
    serde_json::from_value(value)
        .map_err(|e| Error::decode(format!("{what} is not as HALO describes it: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_one_path_segment() {
        assert_eq!(
            path("3f0c", None).unwrap(),
            "/.well-known/halo/approvals/3f0c"
        );
        assert_eq!(
            path("a/../b c", Some("deny")).unwrap(),
            "/.well-known/halo/approvals/a%2F..%2Fb%20c/deny"
        );
        assert!(path("", None).unwrap_err().is_argument());
        assert!(path("..", Some("approve")).unwrap_err().is_argument());
        assert!(path(&"x".repeat(257), None).unwrap_err().is_argument());
    }
}
