//! Asking an MCP client to confirm a call held for approval (HALO §10.3.2, "Over MCP"): the
//! one question both bridges ask (`elicitation/create`, or an `input_required` result whose
//! request state names the approval), how a client can be asked, what its answer decides,
//! and the note a client is sent while the call waits.

use std::fmt::Write as _;

use rmcp::model::{
    ClientCapabilities, ElicitRequest, ElicitRequestParams, ElicitResult, ElicitationAction,
    ElicitationSchema, InputRequest, InputRequests, InputRequiredResult, InputResponses,
    PrimitiveSchemaDefinition, ProtocolVersion, StringSchema,
};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// What the request state of an `input_required` result starts with; the approval's id
/// follows.
const STATE_PREFIX: &str = "halo-approval:";

/// The key of the one input request: the confirmation.
const CONFIRM: &str = "confirm";

/// The most bytes of the arguments shown.
const MAX_SHOWN: usize = 2000;

/// The reason of a denial when the person who declined gave none.
const DECLINED: &str = "declined in the MCP client";

/// A call held for approval, as the question shows it: the approval's id, the tool's name,
/// the call's method and URL, its arguments (as the server shows them: secrets redacted),
/// and when the approval expires (RFC 3339).
///
/// It is read from the approval's document (`{"id", "tool", "call": {"method", "url"},
/// "arguments", "expires_at", ...}`, the body of the `202` that holds a call) with
/// [`from_approval`](Self::from_approval), which both MCP bridges do; or built field by
/// field with [`new`](Self::new).
///
/// ```
/// use halo_protocol::HeldCall;
/// use serde_json::json;
///
/// let document = json!({
///     "id": "a1", "state": "pending", "tool": "refund",
///     "call": {"method": "POST", "url": "/refunds/7?token=secret"},
///     "arguments": {"amount": 20}, "expires_at": "2026-12-02T10:15:00Z"
/// });
/// let held = HeldCall::from_approval(&document).unwrap();
/// assert_eq!(held.id(), "a1");
/// let asked = held.question();
/// let text = serde_json::to_value(&asked).unwrap()["message"].as_str().unwrap().to_owned();
/// assert!(text.starts_with("Approve this call of the tool refund?\nPOST /refunds/7\n"));
/// assert!(!text.contains("secret"));
/// assert_eq!(held.waiting(), "waiting for approval a1 of refund (expires 2026-12-02T10:15:00Z)");
/// ```
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[must_use]
pub struct HeldCall {
    id: String,
    tool: String,
    #[serde(default)]
    expires_at: String,
    #[serde(default)]
    call: Option<ShownCall>,
    #[serde(default)]
    arguments: Option<Value>,
}

/// The `call` of an approval document: the method and the URL called.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
struct ShownCall {
    method: String,
    url: String,
}

impl HeldCall {
    /// The call held by approval `id` of `tool`, which expires at `expires_at`.
    pub fn new(
        id: impl Into<String>,
        tool: impl Into<String>,
        expires_at: impl Into<String>,
    ) -> Self {
        Self {
            id: id.into(),
            tool: tool.into(),
            expires_at: expires_at.into(),
            call: None,
            arguments: None,
        }
    }

    /// The held call an approval document describes: `approval` is anything that serializes
    /// as one (the JSON body of the `202`, or a client's own approval type). `None` when it
    /// has no string `id` and `tool`.
    ///
    /// ```
    /// use halo_protocol::HeldCall;
    /// use serde_json::json;
    ///
    /// assert!(HeldCall::from_approval(&json!({"id": "a1", "tool": "refund"})).is_some());
    /// assert!(HeldCall::from_approval(&json!({"id": 1, "tool": "refund"})).is_none());
    /// ```
    #[must_use]
    pub fn from_approval<T: Serialize + ?Sized>(approval: &T) -> Option<Self> {
        let document = serde_json::to_value(approval).ok()?;
        Self::deserialize(document).ok()
    }

    /// The call's method and URL (the URL's query is never shown: it may carry secrets).
    pub fn call(mut self, method: impl Into<String>, url: impl Into<String>) -> Self {
        self.call = Some(ShownCall {
            method: method.into(),
            url: url.into(),
        });
        self
    }

    /// The call's arguments, as the server shows them.
    pub fn arguments(mut self, arguments: Value) -> Self {
        self.arguments = Some(arguments);
        self
    }

    /// The approval's id.
    #[must_use]
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The name of the tool called.
    #[must_use]
    pub fn tool(&self) -> &str {
        &self.tool
    }

    /// What a client that asked for progress is told while the call waits: `waiting for
    /// approval ID of TOOL (expires AT)`.
    #[must_use]
    pub fn waiting(&self) -> String {
        format!(
            "waiting for approval {} of {} (expires {})",
            self.id, self.tool, self.expires_at
        )
    }

    /// The `elicitation/create` parameters asking to confirm the call: its words, and one
    /// optional `reason` field.
    #[must_use]
    pub fn question(&self) -> ElicitRequestParams {
        let reason = StringSchema::new()
            .title("Reason")
            .description("Why you approve or deny the call (optional)")
            .max_length(1000);
        let properties = [(
            "reason".to_owned(),
            PrimitiveSchemaDefinition::String(reason),
        )];
        ElicitRequestParams::FormElicitationParams {
            meta: None,
            message: self.message(),
            requested_schema: ElicitationSchema::new(properties.into_iter().collect()),
        }
    }

    /// The `input_required` result asking to confirm the call; its request state names the
    /// approval ([`confirmed_approval`] reads it back).
    #[must_use]
    pub fn input_required(&self) -> InputRequiredResult {
        let mut requests = InputRequests::new();
        let ask = ElicitRequest::new(self.question());
        requests.insert(CONFIRM.to_owned(), InputRequest::Elicitation(ask));
        InputRequiredResult::new(Some(requests), Some(format!("{STATE_PREFIX}{}", self.id)))
    }

    /// The words of the question: the tool, the call's method and path, its arguments (cut
    /// to 2,000 bytes), and when the approval expires.
    fn message(&self) -> String {
        let mut text = format!("Approve this call of the tool {}?", self.tool);
        if let Some(ShownCall { method, url }) = &self.call {
            let path = url.split('?').next().unwrap_or_default();
            let _ = write!(text, "\n{method} {path}");
        }
        if let Some(arguments) = &self.arguments {
            let mut shown = arguments.to_string();
            if shown.len() > MAX_SHOWN {
                let mut end = MAX_SHOWN;
                while !shown.is_char_boundary(end) {
                    end -= 1;
                }
                shown.truncate(end);
                shown.push('…');
            }
            let _ = write!(text, "\nArguments: {shown}");
        }
        let _ = write!(
            text,
            "\nApproval {} expires at {}. Accept to approve it, decline to deny it.",
            self.id, self.expires_at
        );
        text
    }
}

/// What a client's answer to the question decides.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Confirmation {
    /// Accepted: approve the call, with the reason typed, if any.
    Approve(Option<String>),
    /// Declined: deny it, for the reason typed (or "declined in the MCP client").
    Deny(String),
    /// Cancelled, or no answer: nobody decided; the call waits for someone who does.
    Undecided,
}

impl Confirmation {
    /// What `answer` decides.
    ///
    /// ```
    /// use halo_protocol::Confirmation;
    /// use rmcp::model::{ElicitResult, ElicitationAction};
    ///
    /// let declined = ElicitResult::new(ElicitationAction::Decline);
    /// assert_eq!(Confirmation::of(&declined), Confirmation::Deny("declined in the MCP client".into()));
    /// ```
    #[must_use]
    pub fn of(answer: &ElicitResult) -> Self {
        let reason = answer
            .content
            .as_ref()
            .and_then(|content| content.get("reason"))
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|reason| !reason.is_empty())
            .map(str::to_owned);
        match answer.action {
            ElicitationAction::Accept => Self::Approve(reason),
            ElicitationAction::Decline => Self::Deny(reason.unwrap_or_else(|| DECLINED.into())),
            _ => Self::Undecided,
        }
    }

    /// What the responses of the retry of an `input_required` result decide
    /// ([`Undecided`](Confirmation::Undecided) when they hold no answer to the question).
    #[must_use]
    pub fn of_responses(responses: Option<&InputResponses>) -> Self {
        responses
            .and_then(|responses| responses.get(CONFIRM))
            .and_then(|value| serde_json::from_value::<ElicitResult>(value.clone()).ok())
            .map_or(Self::Undecided, |answer| Self::of(&answer))
    }
}

/// How an MCP client can be asked to confirm a held call, by what it declared when it
/// connected.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Asking {
    /// With an `elicitation/create` request in the middle of the call (MCP before
    /// `2026-07-28`; only over a transport that can send the client requests).
    Request,
    /// With an `input_required` result ([`HeldCall::input_required`]; MCP `2026-07-28` and
    /// later, which forbids requests from the server).
    Result,
}

impl Asking {
    /// How a client that negotiated `version` and declared `capabilities` can be asked;
    /// `None` when it declared no form elicitation (a client that declares elicitation and
    /// names no mode takes forms).
    ///
    /// ```
    /// use halo_protocol::Asking;
    /// use rmcp::model::{ClientCapabilities, ElicitationCapability, ProtocolVersion};
    ///
    /// let mut capabilities = ClientCapabilities::default();
    /// assert_eq!(Asking::of(Some(&ProtocolVersion::V_2026_07_28), Some(&capabilities)), None);
    /// capabilities.elicitation = Some(ElicitationCapability::default());
    /// assert_eq!(Asking::of(Some(&ProtocolVersion::V_2026_07_28), Some(&capabilities)), Some(Asking::Result));
    /// assert_eq!(Asking::of(Some(&ProtocolVersion::V_2025_11_25), Some(&capabilities)), Some(Asking::Request));
    /// ```
    #[must_use]
    pub fn of(
        version: Option<&ProtocolVersion>,
        capabilities: Option<&ClientCapabilities>,
    ) -> Option<Self> {
        let form = capabilities
            .and_then(|capabilities| capabilities.elicitation.as_ref())
            .is_some_and(|elicitation| elicitation.form.is_some() || elicitation.url.is_none());
        if !form {
            return None;
        }
        let modern = version.is_some_and(|version| *version >= ProtocolVersion::V_2026_07_28);
        Some(if modern { Self::Result } else { Self::Request })
    }
}

/// The approval id a request state of [`HeldCall::input_required`] names; `None` for any
/// other state.
///
/// ```
/// use halo_protocol::{HeldCall, confirmed_approval};
///
/// let asked = HeldCall::new("a1", "refund", "2026-12-02T10:15:00Z").input_required();
/// let state = serde_json::to_value(&asked).unwrap()["requestState"].as_str().unwrap().to_owned();
/// assert_eq!(confirmed_approval(&state), Some("a1"));
/// assert_eq!(confirmed_approval("something else"), None);
/// ```
#[must_use]
pub fn confirmed_approval(state: &str) -> Option<&str> {
    state.strip_prefix(STATE_PREFIX)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn long_arguments_are_cut_on_a_character_boundary() {
        let arguments = json!({"note": "é".repeat(3000)});
        let text = HeldCall::new("a1", "refund", "later")
            .arguments(arguments)
            .message();
        assert!(text.len() < MAX_SHOWN + 300, "{}", text.len());
        assert!(text.contains('…'));
    }

    #[test]
    fn an_approval_document_is_shown_without_its_query() {
        let document = json!({"id": "a1", "href": "/.well-known/halo/approvals/a1",
            "state": "pending", "tool": "refund",
            "call": {"method": "POST", "url": "/refunds/1?key=secret"},
            "arguments": {"amount": 20, "card": "[redacted]"},
            "expires_at": "2026-12-02T10:15:00.000Z"});
        let held = HeldCall::from_approval(&document).expect("an approval");
        let built = HeldCall::new("a1", "refund", "2026-12-02T10:15:00.000Z")
            .call("POST", "/refunds/1?key=secret")
            .arguments(json!({"amount": 20, "card": "[redacted]"}));
        assert_eq!(held, built);
        let text = held.message();
        assert!(text.starts_with("Approve this call of the tool refund?\nPOST /refunds/1\n"));
        assert!(!text.contains("secret"), "{text}");
        assert!(text.contains(r#""card":"[redacted]""#), "{text}");
        assert!(text.ends_with("Approval a1 expires at 2026-12-02T10:15:00.000Z. Accept to approve it, decline to deny it."));
        // Without a call or arguments, and not a document at all.
        let bare = HeldCall::from_approval(&json!({"id": "a2", "tool": "refund"})).expect("bare");
        assert_eq!(
            bare.waiting(),
            "waiting for approval a2 of refund (expires )"
        );
        assert!(HeldCall::from_approval(&json!({"id": "a3"})).is_none());
        assert!(HeldCall::from_approval(&json!("a1")).is_none());
    }

    #[test]
    fn a_client_is_asked_as_its_version_and_capabilities_allow() {
        use rmcp::model::{
            ElicitationCapability, FormElicitationCapability, UrlElicitationCapability,
        };

        let modern = ProtocolVersion::V_2026_07_28;
        let older = ProtocolVersion::V_2025_11_25;
        assert_eq!(Asking::of(Some(&modern), None), None);
        let mut capabilities = ClientCapabilities::default();
        capabilities.elicitation =
            Some(ElicitationCapability::new().with_url(UrlElicitationCapability::default()));
        assert_eq!(
            Asking::of(Some(&modern), Some(&capabilities)),
            None,
            "URLs only"
        );
        capabilities.elicitation = Some(
            ElicitationCapability::new()
                .with_url(UrlElicitationCapability::default())
                .with_form(FormElicitationCapability::default()),
        );
        assert_eq!(
            Asking::of(Some(&modern), Some(&capabilities)),
            Some(Asking::Result)
        );
        assert_eq!(
            Asking::of(Some(&older), Some(&capabilities)),
            Some(Asking::Request)
        );
        assert_eq!(Asking::of(None, Some(&capabilities)), Some(Asking::Request));
    }

    #[test]
    fn an_accepted_answer_approves_with_its_trimmed_reason() {
        let mut answer = ElicitResult::new(ElicitationAction::Accept);
        answer.content = Some(json!({"reason": "  fine  "}));
        assert_eq!(
            Confirmation::of(&answer),
            Confirmation::Approve(Some("fine".into()))
        );
        answer.content = Some(json!({"reason": " "}));
        assert_eq!(Confirmation::of(&answer), Confirmation::Approve(None));
        let cancelled = ElicitResult::new(ElicitationAction::Cancel);
        assert_eq!(Confirmation::of(&cancelled), Confirmation::Undecided);
        assert_eq!(Confirmation::of_responses(None), Confirmation::Undecided);
    }
}
