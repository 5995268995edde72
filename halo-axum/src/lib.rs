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
mod readiness;
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

pub use crate::approval::{ApprovalLimits, ApprovalQueue, ApprovalRequest, Approver, Verdict};
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
pub use crate::govern::IdempotencyLimits;
#[cfg(feature = "redis")]
#[cfg_attr(docsrs, doc(cfg(feature = "redis")))]
pub use crate::govern::{Fallback, RedisStore, RedisStoreError};
pub use crate::layer::{Describe, Halo, HaloBuilder, HaloLayer, ResponseFuture, ToolCall};
#[cfg(feature = "prometheus")]
#[cfg_attr(docsrs, doc(cfg(feature = "prometheus")))]
pub use crate::metrics::{Prometheus, PrometheusError};
pub use crate::readiness::Readiness;
#[cfg(feature = "ws")]
#[cfg_attr(docsrs, doc(cfg(feature = "ws")))]
pub use crate::stream::WebSocketLimits;
pub use crate::stream::{OnDisconnect, Progress, ToolResult};
pub use crate::valid_json::{ValidJson, ValidJsonRejection};
pub use halo_openapi::ApprovalRule;
pub use halo_openapi::{BuildError, DocumentLimits, Skipped, Validation};

/// Internals for the fuzz targets (`fuzz/`); not a stable API.
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub use halo_openapi::fuzzing;
