use std::sync::Arc;

use halo_openapi::Skipped;
use tower_layer::Layer;
use utoipa::openapi::OpenApi;

use super::Shared;
use super::{Halo, HaloBuilder};
use crate::catalog::Documents;

/// A [`Layer`] that makes every operation of a utoipa [`OpenApi`] a HALO tool.
///
/// Wrap the whole application with it, outermost (outside tower-http's `CorsLayer`, which
/// answers every `OPTIONS` itself). It answers `OPTIONS` requests that accept
/// `application/llm+json` from responses built once at start-up. Calls of described
/// operations that ask for `text/event-stream` run as streamed tools; with an
/// [`Authenticator`](crate::Authenticator) set, calls are also checked (credentials, scopes,
/// input) before the handler runs. Everything else passes through untouched.
///
/// ```
/// use axum::{Json, Router};
/// use halo_axum::HaloLayer;
/// use utoipa_axum::{router::OpenApiRouter, routes};
///
/// /// Say hello.
/// #[utoipa::path(get, path = "/hello", tags = ["greetings", "read"],
///                responses((status = 200, body = String)))]
/// async fn hello() -> Json<&'static str> {
///     Json("hello")
/// }
///
/// let (router, api) = OpenApiRouter::new().routes(routes!(hello)).split_for_parts();
/// let app: Router = router.layer(HaloLayer::from_openapi(api));
/// # let _ = app;
/// ```
#[derive(Debug, Clone)]
pub struct HaloLayer {
    pub(crate) shared: Arc<Shared>,
    /// The discovery documents served beside HALO, when any is.
    pub(crate) catalogs: Option<Arc<Documents>>,
}

impl HaloLayer {
    /// Whether this layer's shared store answers, for a readiness probe (see [`Readiness`]).
    ///
    /// [`Readiness`]: crate::Readiness
    #[must_use]
    pub fn readiness(&self) -> crate::Readiness {
        #[cfg(feature = "redis")]
        return crate::Readiness::new(self.shared.governance.stores.link.clone());
        #[cfg(not(feature = "redis"))]
        crate::Readiness::new()
    }

    /// Builds the layer from an OpenAPI document, with default settings.
    ///
    /// # Panics
    /// When the document's HALO metadata is invalid (a misspelt `x-halo-*` key, a bad rate,
    /// a `$ref` that points nowhere, a link to an undescribed path). Like a route that does
    /// not parse in axum, this is a programming error found at start-up; use
    /// [`HaloLayer::builder`] to handle it as an error instead.
    #[must_use]
    #[track_caller]
    pub fn from_openapi(openapi: OpenApi) -> Self {
        match Self::builder(openapi).build() {
            Ok(layer) => layer,
            Err(error) => panic!("HaloLayer: {error}"),
        }
    }

    /// A builder for settings beyond the defaults, and for metadata attached by
    /// `operationId` to operations you cannot annotate.
    pub fn builder(openapi: OpenApi) -> HaloBuilder {
        HaloBuilder::new(&openapi)
    }

    /// What a [lenient](HaloBuilder::lenient) build left out of the document or repaired,
    /// in document order; empty when built strictly.
    ///
    /// ```
    /// use halo_axum::HaloBuilder;
    /// use serde_json::json;
    ///
    /// let layer = HaloBuilder::from_openapi_json(json!({
    ///     "openapi": "3.1.0", "info": {"title": "Vendor", "version": "1"},
    ///     "paths": {"/pets/{id}": {"get": {"operationId": "get_pet", "responses": {}}}}
    /// }))
    /// .lenient()
    /// .build()?;
    /// for skipped in layer.skipped() {
    ///     let what = if skipped.is_repaired() { "repaired" } else { "left out" };
    ///     println!("{} {} {what}: {}", skipped.method(), skipped.path(), skipped.reason());
    /// }
    /// assert!(layer.skipped()[0].is_repaired(), "`{{id}}` declared by no parameter");
    /// # Ok::<(), halo_axum::BuildError>(())
    /// ```
    #[must_use]
    pub fn skipped(&self) -> &[Skipped] {
        self.shared.discovery.registry.skipped()
    }
}

impl<S> Layer<S> for HaloLayer {
    type Service = Halo<S>;

    fn layer(&self, inner: S) -> Self::Service {
        Halo::new(inner, Arc::clone(&self.shared), self.catalogs.clone())
    }
}
