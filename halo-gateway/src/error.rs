//! The gateway's errors: a configuration that cannot be read, and a gateway that cannot be
//! built from one.

use std::fmt;

/// A configuration that cannot be used. The message names the key at fault (and the
/// environment variable, for an unset one), never a secret's value.
#[derive(Debug)]
pub struct ConfigError {
    kind: ConfigKind,
    message: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ConfigKind {
    Io,
    Syntax,
    Invalid,
}

impl ConfigError {
    pub(crate) fn io(message: impl Into<String>) -> Self {
        Self::new(ConfigKind::Io, message)
    }

    pub(crate) fn syntax(message: impl Into<String>) -> Self {
        Self::new(ConfigKind::Syntax, message)
    }

    pub(crate) fn invalid(message: impl Into<String>) -> Self {
        Self::new(ConfigKind::Invalid, message)
    }

    fn new(kind: ConfigKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
        }
    }

    /// The same error, its message rewritten by `rewrite` (the configuration keeps values
    /// read from the environment out of it).
    pub(crate) fn rewritten(self, rewrite: impl FnOnce(String) -> String) -> Self {
        Self {
            kind: self.kind,
            message: rewrite(self.message),
        }
    }

    /// Whether the file could not be read.
    #[must_use]
    pub fn is_io(&self) -> bool {
        self.kind == ConfigKind::Io
    }

    /// Whether the text is not YAML or JSON (or too large, or too deeply nested).
    #[must_use]
    pub fn is_syntax(&self) -> bool {
        self.kind == ConfigKind::Syntax
    }

    /// Whether a key is unknown, a value has the wrong shape, or settings cannot work
    /// together.
    #[must_use]
    pub fn is_invalid(&self) -> bool {
        self.kind == ConfigKind::Invalid
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ConfigError {}

/// A gateway that could not be built: an upstream whose description could not be fetched
/// or read, a name two upstreams' tools share, or settings the layer refused.
#[derive(Debug)]
pub struct Error {
    kind: Kind,
    message: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Config,
    Upstream,
    Collision,
    Layer,
}

impl Error {
    pub(crate) fn upstream(name: &str, message: impl fmt::Display) -> Self {
        Self {
            kind: Kind::Upstream,
            message: format!("upstream `{name}`: {message}"),
        }
    }

    pub(crate) fn collision(message: impl Into<String>) -> Self {
        Self {
            kind: Kind::Collision,
            message: message.into(),
        }
    }

    pub(crate) fn layer(message: impl fmt::Display) -> Self {
        Self {
            kind: Kind::Layer,
            message: message.to_string(),
        }
    }

    /// Whether the configuration could not be read.
    #[must_use]
    pub fn is_config(&self) -> bool {
        self.kind == Kind::Config
    }

    /// Whether an upstream's description could not be fetched, read or compiled.
    #[must_use]
    pub fn is_upstream(&self) -> bool {
        self.kind == Kind::Upstream
    }

    /// Whether two tools would be served under one name.
    #[must_use]
    pub fn is_collision(&self) -> bool {
        self.kind == Kind::Collision
    }
}

impl From<ConfigError> for Error {
    fn from(error: ConfigError) -> Self {
        Self {
            kind: Kind::Config,
            message: error.message,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {}
