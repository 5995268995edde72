//! What the agent-loop tests share: a provider of a scripted OpenAI-compatible server.

use halo_agent::{OpenAiProvider, OpenAiProviderBuilder};
use halo_tests::llm::ScriptedLlm;

/// A provider of `llm`'s endpoint asking for the model `scripted`, settings to add.
pub(crate) fn scripted(llm: &ScriptedLlm) -> OpenAiProviderBuilder {
    OpenAiProvider::builder()
        .base_url(llm.base_url())
        .model("scripted")
}
