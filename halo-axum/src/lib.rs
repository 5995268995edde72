#![doc = include_str!("../README.md")]
#![cfg_attr(docsrs, feature(doc_cfg))]

#[cfg(feature = "agents")]
#[cfg_attr(docsrs, doc(cfg(feature = "agents")))]
pub mod agents;
mod approval;
mod audit;
mod auth;
mod body;
mod catalog;
mod discovery;
mod document_limits;
mod error;
mod govern;
mod layer;
#[cfg(any(feature = "mcp", feature = "agents"))]
mod local;
#[cfg(feature = "mcp")]
#[cfg_attr(docsrs, doc(cfg(feature = "mcp")))]
pub mod mcp;
mod metrics;
#[cfg(feature = "playground")]
#[cfg_attr(docsrs, doc(cfg(feature = "playground")))]
pub mod playground;
mod problem;
mod registry;
mod step;
mod stream;
mod valid_json;
mod validate;

/// Describes an operation to LLM agents: HALO metadata written as `x-halo-*` extensions of
/// the `#[utoipa::path(...)]` attribute below it. See [`halo_macros::halo`] for every key.
///
/// ```
/// use axum::Json;
/// use halo_axum::{halo, HaloLayer};
/// use serde::{Deserialize, Serialize};
/// use utoipa::ToSchema;
/// use utoipa_axum::{router::OpenApiRouter, routes};
///
/// #[derive(Deserialize, ToSchema)]
/// struct Charge { order_id: u64, amount_cents: u32 }
///
/// #[derive(Serialize, ToSchema)]
/// struct Receipt { id: u64, status: String }
///
/// /// Charge a customer's saved card.
/// #[halo(
///     why = "Use right after an order is confirmed; never twice for one order",
///     reversible = true, undo = "/api/payments/{id}/refund",
///     rate = "100/hour", idempotency_key = "Idempotency-Key",
///     example(input = {"order_id": 7, "amount_cents": 1999}, output = {"id": 1, "status": "captured"}),
/// )]
/// #[utoipa::path(post, path = "/api/payments/charge", tags = ["payments", "write"],
///                request_body = Charge, responses((status = 200, body = Receipt)))]
/// async fn charge(Json(c): Json<Charge>) -> Json<Receipt> {
///     Json(Receipt { id: c.order_id, status: "captured".into() })
/// }
///
/// /// Refund a payment.
/// #[utoipa::path(post, path = "/api/payments/{id}/refund", tags = ["payments", "write"],
///                params(("id" = u64, Path)), responses((status = 204)))]
/// async fn refund() {}
///
/// let (router, api) = OpenApiRouter::new()
///     .routes(routes!(charge))
///     .routes(routes!(refund))
///     .split_for_parts();
/// let app: axum::Router = router.layer(HaloLayer::from_openapi(api));
/// # let _ = app;
/// ```
pub use halo_macros::halo;
pub use halo_protocol as protocol;

pub use crate::approval::{
    ApprovalLimits, ApprovalQueue, ApprovalRequest, ApprovalRule, Approver, Verdict,
};
#[cfg(feature = "webhook")]
#[cfg_attr(docsrs, doc(cfg(feature = "webhook")))]
pub use crate::approval::{
    SignatureError, WebhookApprover, WebhookApproverBuilder, WebhookError, WebhookSecret,
};
pub use crate::audit::{
    AuditRecord, AuditSink, JsonLinesSink, JsonLinesSinkBuilder, Outcome, TracingSink,
};
pub use crate::auth::{
    Authenticator, EitherAuthenticator, Principal, ProtectedResource, Scheme, StaticAuthenticator,
    Unauthenticated,
};
#[cfg(feature = "introspection")]
#[cfg_attr(docsrs, doc(cfg(feature = "introspection")))]
pub use crate::auth::{
    IntrospectionAuthenticator, IntrospectionAuthenticatorBuilder, IntrospectionError,
};
#[cfg(feature = "jwt")]
#[cfg_attr(docsrs, doc(cfg(feature = "jwt")))]
pub use crate::auth::{JwtAuthenticator, JwtAuthenticatorBuilder, JwtError};
pub use crate::catalog::Catalogs;
pub use crate::document_limits::DocumentLimits;
pub use crate::error::BuildError;
pub use crate::govern::IdempotencyLimits;
#[cfg(feature = "redis")]
#[cfg_attr(docsrs, doc(cfg(feature = "redis")))]
pub use crate::govern::{Fallback, RedisStore, RedisStoreError};
pub use crate::layer::{Describe, Halo, HaloBuilder, HaloLayer, ResponseFuture};
#[cfg(feature = "prometheus")]
#[cfg_attr(docsrs, doc(cfg(feature = "prometheus")))]
pub use crate::metrics::{Prometheus, PrometheusError};
pub use crate::stream::{OnDisconnect, Progress, ToolResult};
pub use crate::valid_json::{ValidJson, ValidJsonRejection};
pub use crate::validate::Validation;

/// Internals for the fuzz targets (`fuzz/`); not a stable API.
#[cfg(any(test, feature = "fuzzing"))]
#[doc(hidden)]
pub mod fuzzing {
    /// The fast body check's verdict on `body` against `schema`: `Some(true)` when it vouches
    /// for the body, `Some(false)` when it leaves it to the full check, `None` when the
    /// schema does not take the fast check at all.
    #[must_use]
    pub fn fast_body_check(schema: &serde_json::Value, formats: bool, body: &[u8]) -> Option<bool> {
        crate::validate::Fast::compile(schema, formats).map(|fast| fast.accepts(body))
    }

    /// An `application/x-www-form-urlencoded` body as the value the layer checks against
    /// `schema` (whose `$defs` resolve its references); `None` when it is not UTF-8.
    #[must_use]
    pub fn read_form(body: &str, schema: &serde_json::Value) -> Option<serde_json::Value> {
        crate::validate::read_form(body, schema)
    }

    /// A `multipart/form-data` body sent with `content_type` as the value the layer checks
    /// against `schema`; `None` when there is no boundary, `Some(Err(why))` when it is
    /// malformed.
    #[must_use]
    pub fn read_multipart(
        body: &[u8],
        content_type: &str,
        schema: &serde_json::Value,
    ) -> Option<Result<serde_json::Value, &'static str>> {
        crate::validate::read_multipart(body, content_type, schema)
    }
}
