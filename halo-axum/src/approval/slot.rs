//! Where a layer keeps the app that runs approved calls whose holder stopped (feature
//! `redis`): set by `HaloLayer::take_over_with`, kept beside the book in the layer's shared
//! state (the book, halo-govern's, knows no app).

use std::sync::{OnceLock, Weak};

use axum::Router;

/// The app that runs approved calls whose holder stopped. Held weakly: the app holds the
/// layer, whose shared state holds this slot, and a strong hold would keep both alive for
/// ever. The router `HaloLayer::take_over_with` gives back holds it instead, for as long as
/// it is served.
#[derive(Debug, Default)]
pub(crate) struct Slot(OnceLock<Weak<Router>>);

impl Slot {
    /// Whether the layer was given an app to run such calls.
    pub(crate) fn is_set(&self) -> bool {
        self.0.get().is_some()
    }

    /// Sets the app, once: the first call wins.
    pub(crate) fn set(&self, app: Weak<Router>) {
        let _ = self.0.set(app);
    }

    /// The app, while it is served.
    pub(crate) fn app(&self) -> Option<Router> {
        self.0.get()?.upgrade().map(|app| (*app).clone())
    }
}
