//! The programs from Debian that tests start (`redis-server`, `haproxy`): where each is, and
//! starting one with a message that says how to install it when it cannot be started.

use std::path::PathBuf;
use std::process::{Child, Command};

/// A program a test needs: its name, the variable that may name its path, where Debian puts
/// it, and the package that brings it.
pub(crate) struct Program {
    /// The program's name, as logs and messages call it.
    pub(crate) name: &'static str,
    /// The environment variable that names its path, when set and not empty.
    pub(crate) variable: &'static str,
    /// Where Debian installs it, when that is outside `PATH` for some users (`/usr/sbin`).
    pub(crate) installed: Option<&'static str>,
    /// The Debian package that brings it.
    pub(crate) package: &'static str,
    /// Which tests need it, for the message.
    pub(crate) needed_by: &'static str,
}

impl Program {
    /// Its path: the variable's, else Debian's place when it exists there, else the name
    /// (looked up in `PATH`).
    pub(crate) fn path(&self) -> PathBuf {
        if let Some(path) = std::env::var_os(self.variable).filter(|path| !path.is_empty()) {
            return PathBuf::from(path);
        }
        self.installed
            .map(PathBuf::from)
            .filter(|path| path.exists())
            .unwrap_or_else(|| PathBuf::from(self.name))
    }

    /// Starts `command` (made with [`path`](Self::path)).
    ///
    /// # Panics
    /// When it cannot be started, with a message saying how to install it.
    pub(crate) fn spawn(&self, command: &mut Command) -> Child {
        command.spawn().unwrap_or_else(|error| {
            panic!(
                "cannot start {} ({error}): the {} need {}; install it (`apt-get install {}`, \
                 which `bash .ci/test` does) or set {} to its path",
                command.get_program().to_string_lossy(),
                self.needed_by,
                self.name,
                self.package,
                self.variable,
            )
        })
    }
}
