//! [`Describe`]: HALO metadata attached to an operation by its `operationId`, for operations
//! that cannot carry `#[halo(...)]`.

use std::time::Duration;

use halo_protocol::{
    Approval, Backoff, Circuit, Effects, Example, Lifecycle, Limit, Limits, LocalizedText,
    Metadata, Next, Observe, Rate, Resilience, Status, Stream, Trust,
};
use serde_json::{Map, Value};

use crate::BuildError;

/// HALO metadata for one operation, set at run time: the same keys as `#[halo(...)]`.
///
/// ```
/// use halo_axum::Describe;
/// use halo_axum::protocol::Rate;
/// use serde_json::json;
///
/// # fn main() -> Result<(), halo_axum::protocol::RateParseError> {
/// let charge = Describe::new()
///     .why("Use right after order confirmation")
///     .reversible(true)
///     .undo("/api/payments/{id}/refund")
///     .rate("100/hour".parse::<Rate>()?)
///     .example(json!({"order_id": 7, "amount": 1999}), Some(json!({"status": "captured"})));
/// # let _ = charge;
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone, Default)]
#[must_use]
pub struct Describe {
    meta: Metadata,
    bad_example: bool,
}

impl Describe {
    /// No metadata yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// When a model should choose this tool over others.
    pub fn why(mut self, why: impl Into<String>) -> Self {
        self.meta.why = Some(why.into());
        self
    }

    /// Whether the action can be undone.
    pub fn reversible(mut self, reversible: bool) -> Self {
        self.effects().reversible = Some(reversible);
        self
    }

    /// The operation that undoes this one (a path of this API, or an absolute URL).
    pub fn undo(mut self, undo: impl Into<String>) -> Self {
        self.effects().undo = Some(undo.into());
        self
    }

    /// Whether a call must be approved before it runs (`effects.approval`): published in
    /// the schema and enforced by the layer, which holds every call (`202 Accepted` with the
    /// approval to follow) until an [`Approver`](crate::Approver) decides, and refuses it
    /// (`403`) when the layer has none.
    ///
    /// ```
    /// use halo_axum::Describe;
    /// use halo_axum::protocol::Approval;
    ///
    /// let refund = Describe::new().reversible(false).approval(Approval::Required);
    /// # let _ = refund;
    /// ```
    pub fn approval(mut self, approval: Approval) -> Self {
        self.effects().approval = Some(approval);
        self
    }

    /// The operation's rate limit (`limits.rate`), per caller: published in its schema and
    /// enforced by the layer (`429` with `Retry-After` past it). A [`Rate`] is `N/unit` or
    /// `N/K units` parsed (`5/minute`, `100/50s`, `250/ms`), or built by [`Rate::new`],
    /// [`Rate::spanning`] or [`Rate::over`].
    pub fn rate(mut self, rate: Rate) -> Self {
        self.limits().rate = Some(rate);
        self
    }

    /// Adds a rate limit with its dimension (`limits.rates`): per caller, per tenant, per
    /// tool as a whole, per value of a top-level argument, or per combination of caller,
    /// tenant and argument values ([`Dimension::combined`](crate::protocol::Dimension::combined)).
    /// Published in the schema and enforced by the layer together with [`rate`](Self::rate),
    /// all or nothing: a call refused by one limit (`429` naming it) spends none of the
    /// others.
    ///
    /// ```
    /// use halo_axum::Describe;
    /// use halo_axum::protocol::{Limit, Rate};
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let order = Describe::new()
    ///     .rate("100/minute".parse::<Rate>()?)
    ///     .limit(Limit::per_tenant("1000/hour".parse()?))
    ///     .limit(Limit::per_tool("20/minute".parse()?))
    ///     .limit(Limit::per_argument("3/minute".parse()?, "sku"))
    ///     .limit("100/50s per tenant and sku".parse::<Limit>()?);
    /// # let _ = order;
    /// # Ok(())
    /// # }
    /// ```
    pub fn limit(mut self, limit: Limit) -> Self {
        self.limits().rates.push(limit);
        self
    }

    /// Whether repeating the call has the effect of calling once.
    pub fn idempotent(mut self, idempotent: bool) -> Self {
        self.limits().idempotent = Some(idempotent);
        self
    }

    /// The header that makes a repeated call safe, usually `Idempotency-Key`.
    pub fn idempotency_key(mut self, header: impl Into<String>) -> Self {
        self.limits().idempotency_key = Some(header.into());
        self
    }

    /// Suggests `suggest` as the next call when `when` holds.
    pub fn next(mut self, when: impl Into<String>, suggest: impl Into<String>) -> Self {
        self.meta.next.push(Next::new(when, suggest));
        self
    }

    /// Adds a worked example; `input` must be a JSON object (checked by
    /// [`HaloBuilder::build`](crate::HaloBuilder::build)).
    pub fn example(mut self, input: Value, output: Option<Value>) -> Self {
        match input {
            Value::Object(input) => self.meta.examples.push(Example::new(input, output)),
            _ => self.bad_example = true,
        }
        self
    }

    /// Whether retrying a failed call is worthwhile.
    pub fn retry(mut self, retry: bool) -> Self {
        self.resilience().retry = Some(retry);
        self
    }

    /// The backoff strategy clients should use.
    pub fn backoff(mut self, backoff: Backoff) -> Self {
        self.resilience().backoff = Some(backoff);
        self
    }

    /// The operation's timeout (`resilience.timeout_ms`): the deadline of its handler,
    /// published in its schema and enforced by the layer, which drops the handler past it
    /// and answers `504` (a streamed call ends with a `504` `tool_error`). Operations that
    /// declare none have [`HaloBuilder::default_timeout`](crate::HaloBuilder::default_timeout).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.resilience().timeout_ms = Some(u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX));
        self
    }

    /// The operation's circuit breaker (`resilience.circuit`), published in its schema and
    /// enforced by the layer: after `failures` failed calls in a row (`5xx` answers, the
    /// layer's `504` included) calls are refused with `503` and `Retry-After` for the
    /// cool-down, then let through one probe at a time until `successes` probes in a row
    /// succeed. Operations that declare none have
    /// [`HaloBuilder::default_circuit`](crate::HaloBuilder::default_circuit), if set.
    ///
    /// ```
    /// use halo_axum::Describe;
    /// use halo_axum::protocol::Circuit;
    ///
    /// # fn main() -> Result<(), halo_axum::protocol::CircuitError> {
    /// let weather = Describe::new().circuit("5/10s/1".parse::<Circuit>()?);
    /// # let _ = weather;
    /// # Ok(())
    /// # }
    /// ```
    pub fn circuit(mut self, circuit: Circuit) -> Self {
        self.resilience().circuit = Some(circuit);
        self
    }

    /// An operation to try when this one keeps failing.
    pub fn fallback(mut self, fallback: impl Into<String>) -> Self {
        self.resilience().fallback = Some(fallback.into());
        self
    }

    /// Whether the schema is signed, and where its verification keys are.
    pub fn trust(mut self, signed: bool, jwks: Option<String>) -> Self {
        let trust = self.meta.trust.get_or_insert_with(Trust::default);
        trust.signed = Some(signed);
        trust.jwks = jwks;
        self
    }

    /// The header that carries the trace context, usually `traceparent`.
    pub fn trace_header(mut self, header: impl Into<String>) -> Self {
        self.meta
            .observe
            .get_or_insert_with(Observe::default)
            .trace_header = Some(header.into());
        self
    }

    /// Whether callers should say why they call.
    pub fn explain(mut self, explain: bool) -> Self {
        self.meta
            .observe
            .get_or_insert_with(Observe::default)
            .explain = Some(explain);
        self
    }

    /// The lifecycle status.
    pub fn status(mut self, status: Status) -> Self {
        self.lifecycle().status = Some(status);
        self
    }

    /// The date (`YYYY-MM-DD`) the operation goes away.
    pub fn sunset(mut self, date: impl Into<String>) -> Self {
        self.lifecycle().sunset = Some(date.into());
        self
    }

    /// The operation to use instead.
    pub fn replace_with(mut self, replacement: impl Into<String>) -> Self {
        self.lifecycle().replace_with = Some(replacement.into());
        self
    }

    /// Marks the operation as streaming progress events.
    pub fn stream(mut self) -> Self {
        let mut stream = Stream::default();
        stream.events.push("tool_progress".to_owned());
        self.meta.stream = Some(stream);
        self
    }

    /// Localised text for a language tag (`zh`, `en-GB`).
    pub fn locale(mut self, language: impl Into<String>, text: LocalizedText) -> Self {
        self.meta.locales.insert(language.into(), text);
        self
    }

    fn effects(&mut self) -> &mut Effects {
        self.meta.effects.get_or_insert_with(Effects::default)
    }

    fn limits(&mut self) -> &mut Limits {
        self.meta.limits.get_or_insert_with(Limits::default)
    }

    fn resilience(&mut self) -> &mut Resilience {
        self.meta.resilience.get_or_insert_with(Resilience::default)
    }

    fn lifecycle(&mut self) -> &mut Lifecycle {
        self.meta.lifecycle.get_or_insert_with(Lifecycle::default)
    }

    /// The metadata, checked the way `x-halo-*` extensions are.
    pub(super) fn into_metadata(self, operation_id: &str) -> Result<Metadata, BuildError> {
        let label = format!("operationId `{operation_id}`");
        if self.bad_example {
            return Err(invalid(
                &label,
                "x-halo-examples",
                "an example's input must be a JSON object".into(),
            ));
        }
        // One validation for both ways in: round-trip through the extension form.
        let extensions: Map<String, Value> = self.meta.to_extensions().into_iter().collect();
        Metadata::from_extensions(extensions.iter().map(|(k, v)| (k.as_str(), v)))
            .map_err(|source| BuildError::metadata(&label, source))
    }
}

fn invalid(label: &str, key: &str, message: String) -> BuildError {
    let source = halo_protocol::MetadataError::Invalid {
        key: key.to_owned(),
        message,
    };
    BuildError::metadata(label, source)
}
