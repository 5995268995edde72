//! A Prometheus text endpoint for the layer's metrics (feature `prometheus`).

use std::convert::Infallible;
use std::fmt;
use std::future::{Ready, ready};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::Body;
use axum::response::Response;
use http::header::{ALLOW, CACHE_CONTROL, CONTENT_TYPE};
use http::{HeaderValue, Method, Request, StatusCode};
use metrics_exporter_prometheus::{BuildError, Matcher, PrometheusBuilder, PrometheusHandle};
use tower_service::Service;

use super::{DURATION_BUCKETS, TOOL_CALL_DURATION, describe};
use crate::problem;

/// The Prometheus text exposition format.
const TEXT_FORMAT: HeaderValue =
    HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8");
const NO_STORE: HeaderValue = HeaderValue::from_static("no-store");
const GET_HEAD: HeaderValue = HeaderValue::from_static("GET, HEAD");

/// How often histogram samples are folded in when nobody scrapes.
const UPKEEP: Duration = Duration::from_secs(5);

/// The process's metrics in the Prometheus text format, served wherever the application
/// mounts it (feature `prometheus`).
///
/// [`Prometheus::install`] installs a Prometheus recorder as the global recorder of the
/// [`metrics`](https://docs.rs/metrics) facade, so it receives the layer's metrics (see
/// [`HaloBuilder::metrics`](crate::HaloBuilder::metrics)) and any other the application
/// records. The value is a tower service answering `GET` and `HEAD` with the text (any other
/// method gets `405`); [`render`](Self::render) gives the same text to serve some other way.
/// There is no HTTP listener of its own: put it behind the authentication your other
/// internal routes have, or on a port only your scraper reaches.
///
/// ```
/// use axum::Router;
/// use axum::routing::get;
/// use halo_axum::{HaloLayer, Prometheus};
/// # use utoipa_axum::{router::OpenApiRouter, routes};
/// # /// Ping.
/// # #[utoipa::path(get, path = "/ping", responses((status = 200)))]
/// # async fn ping() {}
/// # let (router, api) = OpenApiRouter::new().routes(routes!(ping)).split_for_parts();
///
/// let prometheus = Prometheus::install().expect("no other metrics recorder");
/// let layer = HaloLayer::builder(api).metrics(true).build().expect("valid HALO metadata");
/// let app: Router = router
///     .layer(layer)
///     .route_service("/metrics", prometheus); // not described, so not a tool
/// # let _ = app;
/// ```
#[derive(Debug, Clone)]
pub struct Prometheus {
    handle: PrometheusHandle,
}

impl Prometheus {
    /// Installs a Prometheus recorder as the process's global `metrics` recorder, with
    /// histogram buckets for the layer's call durations (other histograms are rendered as
    /// summaries), and a thread that keeps its memory bounded between scrapes.
    ///
    /// # Errors
    /// Another global recorder is installed already: a process has at most one.
    pub fn install() -> Result<Self, PrometheusError> {
        let handle = PrometheusBuilder::new()
            .set_buckets_for_metric(
                Matcher::Full(TOOL_CALL_DURATION.to_owned()),
                &DURATION_BUCKETS,
            )
            .and_then(PrometheusBuilder::install_recorder)
            .map_err(PrometheusError)?;
        describe();
        let upkeep = handle.clone();
        let started = std::thread::Builder::new()
            .name("halo-metrics-upkeep".to_owned())
            .spawn(move || {
                loop {
                    std::thread::sleep(UPKEEP);
                    upkeep.run_upkeep();
                }
            });
        if let Err(error) = started {
            // Each scrape does the same work, so this only matters if nobody scrapes.
            tracing::warn!(target: "halo_axum::metrics", "no metrics upkeep thread: {error}");
        }
        Ok(Self { handle })
    }

    /// The current metrics in the Prometheus text exposition format.
    #[must_use]
    pub fn render(&self) -> String {
        self.handle.render()
    }

    fn respond(&self, method: &Method) -> Response {
        if method != Method::GET && method != Method::HEAD {
            let mut response = problem::response(
                StatusCode::METHOD_NOT_ALLOWED,
                "the metrics are read with GET",
            );
            response.headers_mut().insert(ALLOW, GET_HEAD);
            return response;
        }
        let mut response = Response::new(Body::from(self.render()));
        let headers = response.headers_mut();
        headers.insert(CONTENT_TYPE, TEXT_FORMAT);
        headers.insert(CACHE_CONTROL, NO_STORE);
        response
    }
}

impl<B> Service<Request<B>> for Prometheus {
    type Response = Response;
    type Error = Infallible;
    type Future = Ready<Result<Response, Infallible>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request<B>) -> Self::Future {
        ready(Ok(self.respond(request.method())))
    }
}

/// [`Prometheus::install`] failed: another global `metrics` recorder is installed already.
#[derive(Debug)]
pub struct PrometheusError(BuildError);

impl fmt::Display for PrometheusError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(
            "the Prometheus recorder could not be installed (is another metrics recorder installed?)",
        )
    }
}

impl std::error::Error for PrometheusError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.0)
    }
}
