//! [`Readiness`]: whether a layer's shared store answers, for a load balancer's or an
//! orchestrator's readiness probe.

use axum::response::{IntoResponse as _, Response};
use http::HeaderValue;
use http::StatusCode;
use http::header::RETRY_AFTER;

use crate::problem;

/// Whether a [`HaloLayer`](crate::HaloLayer)'s shared store (Redis) answers now: an instance
/// whose store does not answer refuses keyed and shared-budget calls (or keeps its own
/// budgets), so a load balancer should send its traffic to the others. A layer that keeps
/// its state in this process's memory is always ready. Cheap to clone.
///
/// ```
/// use axum::{Router, routing::get};
/// use halo_axum::HaloLayer;
/// # use utoipa_axum::{router::OpenApiRouter, routes};
/// # /// Ping.
/// # #[utoipa::path(get, path = "/ping", responses((status = 200)))]
/// # async fn ping() {}
/// # let (router, api) = OpenApiRouter::new().routes(routes!(ping)).split_for_parts();
///
/// let layer = HaloLayer::from_openapi(api);
/// let readiness = layer.readiness();
/// let app: Router = router
///     .layer(layer)
///     .route("/ready", get(move || async move { readiness.answer().await }));
/// # let _ = app;
/// ```
#[derive(Debug, Clone)]
pub struct Readiness {
    #[cfg(feature = "redis")]
    link: Option<halo_govern::RedisLink>,
}

impl Readiness {
    #[cfg(feature = "redis")]
    pub(crate) fn new(link: Option<halo_govern::RedisLink>) -> Self {
        Self { link }
    }

    #[cfg(not(feature = "redis"))]
    pub(crate) fn new() -> Self {
        Self {}
    }

    /// Whether the shared store answers a `PING` within its timeout (always, without one).
    pub async fn is_ready(&self) -> bool {
        #[cfg(feature = "redis")]
        if let Some(link) = &self.link {
            return link.ping().await;
        }
        true
    }

    /// `200` with `{"ready": true}`, or `503` (problem details, `Retry-After: 1`) when the
    /// shared store does not answer.
    pub async fn answer(&self) -> Response {
        if self.is_ready().await {
            return axum::Json(serde_json::json!({"ready": true})).into_response();
        }
        let mut refused = problem::response(
            StatusCode::SERVICE_UNAVAILABLE,
            "the shared store does not answer",
        );
        refused
            .headers_mut()
            .insert(RETRY_AFTER, HeaderValue::from_static("1"));
        refused
    }
}
