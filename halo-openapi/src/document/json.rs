//! JSON documents, read with `serde_json` (which nests at most 128 deep).

use serde_json::Value;
use serde_json::error::Category;

use super::ReadError;

/// The JSON value of `bytes`.
pub(super) fn parse(bytes: &[u8]) -> Result<Value, ReadError> {
    serde_json::from_slice(bytes).map_err(|error| {
        let message = error.to_string();
        // `serde_json` says "… at line L column C"; the place is said once, first.
        let bare = message
            .rsplit_once(" at line ")
            .map_or(message.as_str(), |(bare, _)| bare);
        if error.classify() == Category::Syntax && bare == "recursion limit exceeded" {
            return ReadError::limit(format!(
                "the document nests deeper than {} (line {}, column {})",
                super::MAX_DEPTH,
                error.line(),
                error.column()
            ));
        }
        ReadError::syntax("JSON", error.line(), error.column(), bare)
    })
}
