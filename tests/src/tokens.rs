//! Token counts with a real tokenizer: OpenAI's `cl100k_base`, bundled in `tiktoken-rs` (no
//! network), for the token figures of tests and benchmarks.

use std::sync::LazyLock;

use tiktoken_rs::CoreBPE;

static CL100K: LazyLock<CoreBPE> =
    LazyLock::new(|| tiktoken_rs::cl100k_base().expect("cl100k_base is bundled in tiktoken-rs"));

/// How many `cl100k_base` tokens `text` is.
#[must_use]
pub fn cl100k(text: &str) -> usize {
    CL100K.encode_ordinary(text).len()
}

/// How many `cl100k_base` tokens a JSON value is, serialised compactly.
#[must_use]
pub fn cl100k_json(value: &serde_json::Value) -> usize {
    cl100k(&value.to_string())
}
