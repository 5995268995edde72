//! Pinning: accepting the tools the `pinned` MCP upstreams list now, written to the pins file
//! the configuration names (`halo gateway pin CONFIG`), and reading that file when a gateway
//! is built.

use std::sync::Arc;

use crate::config::Config;
use crate::error::{ConfigError, Error};
use crate::upstream::mcp::{PinChanges, Pins};
use crate::upstream::mcp_connect;

/// Connects to every `pinned` upstream of `config`, and pins the tools each lists now in the
/// configuration's `pins` file (written whole, in place of the old one): what changed, per
/// upstream. A gateway serving the configuration serves them after its next reload (it
/// watches the pins file as it does the configuration).
///
/// # Errors
/// No upstream is `pinned`; an upstream cannot be reached or does not list its tools; the
/// pins file cannot be read or written. Nothing is written then.
pub async fn pin(config: &Config) -> Result<Vec<(String, PinChanges)>, Error> {
    let Some(path) = &config.pins else {
        return Err(ConfigError::invalid(
            "pins: no upstream is `pinned`, so there is nothing to pin",
        )
        .into());
    };
    let mut pins = Pins::read(path).map_err(ConfigError::io)?;
    let mut changes = Vec::new();
    for spec in config.upstreams.iter().filter(|spec| spec.pinned) {
        let (_server, tools) = mcp_connect(spec, Arc::default()).await?;
        changes.push((spec.name.clone(), pins.pin(&spec.name, &tools)));
    }
    if changes.is_empty() {
        return Err(ConfigError::invalid(
            "pins: no upstream is `pinned`, so there is nothing to pin",
        )
        .into());
    }
    pins.write(path).map_err(ConfigError::io)?;
    Ok(changes)
}

/// The pins of `config`'s `pinned` upstreams, when it has any.
pub(crate) fn read(config: &Config) -> Result<Option<Pins>, Error> {
    match &config.pins {
        Some(path) if config.upstreams.iter().any(|spec| spec.pinned) => Pins::read(path)
            .map(Some)
            .map_err(|message| ConfigError::io(message).into()),
        _ => Ok(None),
    }
}
