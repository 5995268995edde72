//! What the agent-loop tests share: a provider of a scripted OpenAI-compatible server.

use std::time::Duration;

use halo_agent::{OpenAiProvider, OpenAiProviderBuilder};
use halo_tests::llm::ScriptedLlm;

/// A provider of `llm`'s endpoint asking for the model `scripted`, settings to add.
pub(crate) fn scripted(llm: &ScriptedLlm) -> OpenAiProviderBuilder {
    OpenAiProvider::builder()
        .base_url(llm.base_url())
        .model("scripted")
}

/// A provider of `llm`'s endpoint that retries a failed request after 10 ms, not seconds.
pub(crate) fn quick_to_retry(llm: &ScriptedLlm) -> OpenAiProvider {
    scripted(llm)
        .min_retry_delay(Duration::from_millis(10))
        .build()
        .unwrap()
}
