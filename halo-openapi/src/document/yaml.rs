//! YAML documents, read with `serde-saphyr` within budgets (see [`Document`](super::Document)
//! for why that crate), by the YAML 1.2 core schema, into JSON.

use serde_json::Value;
use serde_saphyr::options::{DuplicateKeyPolicy, NonFiniteFloatPolicy};
use serde_saphyr::{Budget, Options};

use super::{MAX_BYTES, MAX_DEPTH, ReadError};

/// How many nodes (scalars, sequences, mappings) a document may have, aliases' expansions
/// included: OpenAI's document, 3 MB of YAML, has 110,000.
const MAX_NODES: usize = 5_000_000;

/// How many aliases (`*name`) a document may use, and how many events their expansions
/// may replay in all: OpenAPI documents seldom use any, and a billion laughs needs many.
const MAX_ALIASES: usize = 10_000;
const MAX_REPLAYED: usize = 100_000;

/// The JSON value of the YAML document `bytes`.
pub(super) fn parse(bytes: &[u8]) -> Result<Value, ReadError> {
    serde_saphyr::from_slice_with_options(bytes, options()).map_err(|error| {
        let bare = error.without_snippet().to_string();
        // "error: line L column C: message"; the place is said once, by the error made here.
        let message = bare.strip_prefix("error: ").unwrap_or(&bare);
        let message = message
            .strip_prefix("line ")
            .and_then(|rest| rest.split_once(": "))
            .map_or(message, |(_, message)| message);
        if message.contains("budget breached")
            || message.contains("limit exceeded")
            || message.contains("recursion limit")
        {
            return ReadError::limit(format!(
                "the YAML document passes a bound on what reading may take (nested deeper \
                 than {MAX_DEPTH}, more than {MAX_NODES} nodes, or aliases that expand too \
                 far): {message}"
            ));
        }
        match error.location() {
            Some(at) => ReadError::syntax(
                "YAML",
                usize::try_from(at.line()).unwrap_or(usize::MAX),
                usize::try_from(at.column()).unwrap_or(usize::MAX),
                message,
            ),
            None => {
                ReadError::malformed(format!("the document is not well-formed YAML: {message}"))
            }
        }
    })
}

/// YAML 1.2's core schema (no `yes` booleans, no octal or underscored numbers, no
/// infinities: such scalars stay strings), a key given twice keeping its last value as a JSON reader does, and the
/// bounds.
fn options() -> Options {
    let mut budget = Budget::default();
    budget.max_reader_input_bytes = Some(MAX_BYTES);
    budget.max_depth = MAX_DEPTH;
    budget.max_nodes = MAX_NODES;
    budget.max_events = 4 * MAX_NODES;
    budget.max_aliases = MAX_ALIASES;
    budget.max_recorded_anchor_events = MAX_REPLAYED;
    let mut options = Options::default();
    options.budget = Some(budget);
    options.alias_limits.max_total_replayed_events = MAX_REPLAYED;
    options.strict_booleans = true;
    options.leading_zero_numbers_as_strings = true;
    options.underscored_numbers_as_strings = true;
    options.duplicate_keys = DuplicateKeyPolicy::LastWins;
    // JSON has no infinity: `.inf` stays the string it is written as.
    options.non_finite_float_policy = NonFiniteFloatPolicy::AsString;
    options
}
