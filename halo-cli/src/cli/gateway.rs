//! `halo gateway`'s command line: serve a gateway, check its configuration, explain a tool's
//! policy, pin the MCP upstreams' tools, print the configuration's JSON Schema.

use std::path::PathBuf;

use clap::Subcommand;

/// What `halo gateway` does.
#[derive(Debug, Subcommand)]
pub(crate) enum GatewayCommand {
    /// Serve the gateway: prints `listening on http://ADDR` once it accepts calls.
    ///
    /// Every upstream is fetched and compiled first; a configuration or upstream that cannot
    /// be used stops it with a message naming the key or the upstream (exit 1).
    Run {
        /// The configuration file (YAML or JSON).
        config: PathBuf,
    },
    /// Build everything without serving: per upstream, its tools and every operation left
    /// out, with the reason.
    ///
    /// Exit status: 0 when the configuration is valid and every upstream built, 1 otherwise.
    Check {
        /// The configuration file (YAML or JSON).
        config: PathBuf,
        /// List every tool's name.
        #[arg(long)]
        tools: bool,
    },
    /// Print the effective policy of a tool: each field, and the rule that set it.
    Explain {
        /// The configuration file (YAML or JSON).
        config: PathBuf,
        /// The tool's name, as the gateway serves it or as its upstream gives it.
        tool: String,
    },
    /// Accept the tools the `pinned` MCP upstreams list now: writes them to the `pins` file
    /// (a serving gateway picks it up), and prints what is new, changed or gone.
    ///
    /// Exit status: 0 when pinned, 1 when nothing could be (no upstream is `pinned`, one
    /// cannot be reached, the file cannot be written).
    Pin {
        /// The configuration file (YAML or JSON).
        config: PathBuf,
    },
    /// Print the JSON Schema of the configuration file.
    Schema,
}
