//! Audit records kept in memory, for the test to read.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use halo_axum::{AuditRecord, AuditSink};

/// An audit sink that keeps every record.
#[derive(Clone, Debug, Default)]
pub struct Records(Arc<Mutex<Vec<AuditRecord>>>);

impl AuditSink for Records {
    fn record(&self, record: AuditRecord) {
        self.all().push(record);
    }
}

impl Records {
    /// The records so far, in order.
    pub fn all(&self) -> MutexGuard<'_, Vec<AuditRecord>> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The outcome of every record so far.
    pub fn outcomes(&self) -> Vec<String> {
        self.all()
            .iter()
            .map(|record| record.outcome.as_str().to_owned())
            .collect()
    }

    /// The outcome of the last record; empty when there is none.
    pub fn last_outcome(&self) -> String {
        self.outcomes().pop().unwrap_or_default()
    }
}
