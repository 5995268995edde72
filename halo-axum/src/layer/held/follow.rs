//! The layer follows its own approvals kept in Redis: an approval approved on another replica
//! runs here, where its request is held, and an expiry Redis found is recorded.

use std::sync::Arc;

use super::run;
use crate::approval::{Entry, Follower, Kept, RedisBook, Runner};
use crate::audit::Outcome;
use crate::layer::Shared;

impl Follower<Runner> for Shared {
    fn book(&self) -> Option<&RedisBook> {
        self.approvals.redis()
    }

    fn run(self: &Arc<Self>, entry: &Arc<Entry>, kept: Kept, by: &str) {
        run::start(self, entry, kept, by);
    }

    fn expired(&self, entry: &Entry) {
        run::note(self, entry, Outcome::ApprovalExpired, None);
    }
}
