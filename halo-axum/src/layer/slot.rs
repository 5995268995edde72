//! Where a layer keeps the app it wraps, when something of the layer's must send a request
//! into the app itself (features `redis` and `ws`): the app that runs approved calls whose
//! holder stopped (`HaloLayer::take_over_with`), and the app that WebSocket calls are sent
//! into (`HaloLayer::websocket_app`).

use std::convert::Infallible;
use std::sync::{Arc, OnceLock, Weak};
use std::task::{Context, Poll};

use axum::Router;
use axum::body::Body;
use axum::response::Response;
use http::Request;
use tower_service::Service;

/// An app the layer sends requests into. Held weakly: the app holds the layer, whose shared
/// state holds this slot, and a strong hold would keep both alive for ever. The router
/// [`hold`](Self::hold) gives back holds it instead, for as long as it is served.
#[derive(Debug, Default)]
pub(crate) struct Slot(OnceLock<Weak<Router>>);

impl Slot {
    /// Whether the layer was given an app.
    #[cfg(feature = "redis")]
    pub(crate) fn is_set(&self) -> bool {
        self.0.get().is_some()
    }

    /// Keeps `app` (the first app given wins) and gives back the router to serve in its
    /// place, which holds it while it is served.
    pub(crate) fn hold(&self, app: Router) -> Router {
        let app = Arc::new(app);
        let _ = self.0.set(Arc::downgrade(&app));
        Router::new().fallback_service(Holds {
            app: (*app).clone(),
            _held: app,
        })
    }

    /// The app, while it is served.
    pub(crate) fn app(&self) -> Option<Router> {
        self.0.get()?.upgrade().map(|app| (*app).clone())
    }
}

/// The app, served, and what keeps it reachable from its slot.
#[derive(Clone)]
struct Holds {
    app: Router,
    _held: Arc<Router>,
}

impl Service<Request<Body>> for Holds {
    type Response = Response;
    type Error = Infallible;
    type Future = <Router as Service<Request<Body>>>::Future;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Service::<Request<Body>>::poll_ready(&mut self.app, cx)
    }

    fn call(&mut self, request: Request<Body>) -> Self::Future {
        self.app.call(request)
    }
}
