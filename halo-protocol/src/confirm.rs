//! Asking an MCP client to confirm a call held for approval (HALO §10.3.2, "Over MCP"): the
//! one question both bridges ask (`elicitation/create`, or an `input_required` result whose
//! request state names the approval), and what the client's answer decides.

use std::fmt::Write as _;

use rmcp::model::{
    ElicitRequest, ElicitRequestParams, ElicitResult, ElicitationAction, ElicitationSchema,
    InputRequest, InputRequests, InputRequiredResult, InputResponses, PrimitiveSchemaDefinition,
    StringSchema,
};
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
/// ```
/// use halo_protocol::HeldCall;
/// use serde_json::json;
///
/// let arguments = json!({"amount": 20});
/// let held = HeldCall::new("a1", "refund", "2026-12-02T10:15:00Z")
///     .call("POST", "/refunds/7?token=secret")
///     .arguments(&arguments);
/// let asked = held.question();
/// let text = serde_json::to_value(&asked).unwrap()["message"].as_str().unwrap().to_owned();
/// assert!(text.starts_with("Approve this call of the tool refund?\nPOST /refunds/7\n"));
/// assert!(!text.contains("secret"));
/// ```
#[derive(Debug, Clone, Copy)]
#[must_use]
pub struct HeldCall<'a> {
    id: &'a str,
    tool: &'a str,
    expires_at: &'a str,
    call: Option<(&'a str, &'a str)>,
    arguments: Option<&'a Value>,
}

impl<'a> HeldCall<'a> {
    /// The call held by approval `id` of `tool`, which expires at `expires_at`.
    pub fn new(id: &'a str, tool: &'a str, expires_at: &'a str) -> Self {
        Self {
            id,
            tool,
            expires_at,
            call: None,
            arguments: None,
        }
    }

    /// The call's method and URL (the URL's query is never shown: it may carry secrets).
    pub fn call(mut self, method: &'a str, url: &'a str) -> Self {
        self.call = Some((method, url));
        self
    }

    /// The call's arguments, as the server shows them.
    pub fn arguments(mut self, arguments: &'a Value) -> Self {
        self.arguments = Some(arguments);
        self
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
        if let Some((method, url)) = self.call {
            let path = url.split('?').next().unwrap_or_default();
            let _ = write!(text, "\n{method} {path}");
        }
        if let Some(arguments) = self.arguments {
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
            .arguments(&arguments)
            .message();
        assert!(text.len() < MAX_SHOWN + 300, "{}", text.len());
        assert!(text.contains('…'));
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
