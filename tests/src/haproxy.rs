//! A throwaway HAProxy in front of several HTTP servers on loopback: round robin, no
//! stickiness, each answer saying which server gave it (`x-replica: r<index>`).
//!
//! The binary is `HALO_HAPROXY` when set, else `haproxy` on the `PATH` or in `/usr/sbin`
//! (`bash .ci/test` installs Debian's). A missing binary fails the test with a message that
//! says so.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use crate::program::Program;

/// An `haproxy` process balancing over backends; stopped (and its folder removed) on drop.
#[derive(Debug)]
pub struct Haproxy {
    child: Child,
    port: u16,
    dir: PathBuf,
}

/// HAProxy, from Debian's `haproxy`.
const HAPROXY: Program = Program {
    name: "haproxy",
    variable: "HALO_HAPROXY",
    installed: Some("/usr/sbin/haproxy"),
    package: "haproxy",
    needed_by: "replica tests",
};

impl Haproxy {
    /// Starts HAProxy on a free loopback port in front of `backends` (`host:port` each, in
    /// that order: `r0`, `r1`, ...), and waits until it accepts connections.
    ///
    /// Each request is balanced on its own (round robin, no stickiness, connections to
    /// the backends not kept), streamed answers pass through as they come, and every answer
    /// carries `x-replica` naming the server that gave it.
    ///
    /// # Panics
    /// When `haproxy` cannot be found or does not start.
    #[must_use]
    pub fn start(backends: &[String]) -> Self {
        let port = crate::redis::free_port(|_| true);
        let dir = std::env::temp_dir().join(format!("halo-haproxy-{}-{port}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("a temporary folder for haproxy");
        let servers: String = backends
            .iter()
            .enumerate()
            .map(|(index, backend)| format!("  server r{index} {backend}\n"))
            .collect();
        let config = format!(
            "global\n  maxconn 1024\n\
             defaults\n  mode http\n  timeout connect 2s\n  timeout client 120s\n  \
             timeout server 120s\n  option http-server-close\n\
             frontend front\n  bind 127.0.0.1:{port}\n  default_backend replicas\n\
             backend replicas\n  balance roundrobin\n  \
             http-response set-header x-replica %s\n{servers}"
        );
        let path = dir.join("haproxy.cfg");
        std::fs::write(&path, config).expect("haproxy.cfg");
        let child = HAPROXY.spawn(
            Command::new(HAPROXY.path())
                .arg("-db")
                .arg("-f")
                .arg(&path)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::inherit()),
        );
        let mut proxy = Self { child, port, dir };
        let up = crate::wait::until(Duration::from_secs(20), || {
            if let Some(status) = proxy.child.try_wait().ok().flatten() {
                panic!("haproxy exited at start ({status})");
            }
            std::net::TcpStream::connect(("127.0.0.1", proxy.port)).is_ok()
        });
        assert!(
            up,
            "haproxy on port {} did not listen within 20 s",
            proxy.port
        );
        proxy
    }

    /// `http://127.0.0.1:<port><path>`.
    #[must_use]
    pub fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }
}

impl Drop for Haproxy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
