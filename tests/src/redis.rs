//! A throwaway `redis-server` on a loopback port, for tests of the shared stores.
//!
//! Each [`RedisServer`] is a process of its own: bound to `127.0.0.1`, protected by a random
//! password, with its data in a fresh temporary folder (the append-only file, so that what it
//! acknowledged survives [`RedisServer::stop`] and [`RedisServer::start_again`]). The folder is
//! removed when the server is dropped.
//!
//! The binary is `HALO_REDIS_SERVER` when set, else `redis-server` on the `PATH` (`bash
//! .ci/test` installs it). A missing binary fails the test with a message that says so: a
//! test of the shared stores never passes without Redis.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::program::Program;

/// A `redis-server` process started for a test; shut down (and its folder removed) on drop.
#[derive(Debug)]
pub struct RedisServer {
    child: Option<Child>,
    port: u16,
    password: String,
    dir: PathBuf,
    /// Whether it runs as a node of a Redis Cluster.
    cluster: bool,
}

/// The Redis server, from Debian's `redis-server`.
const REDIS_SERVER: Program = Program {
    name: "redis-server",
    variable: "HALO_REDIS_SERVER",
    installed: None,
    package: "redis-server",
    needed_by: "Redis tests",
};

impl RedisServer {
    /// Starts a server on a free loopback port and waits until it answers.
    ///
    /// # Panics
    /// When `redis-server` cannot be found or does not start; the message says how to install
    /// it.
    #[must_use]
    pub fn start() -> Self {
        let port = free_port(|_| true);
        Self::start_on(port, None)
    }

    /// Starts a node of a Redis Cluster (not yet part of one) on `port`, whose cluster bus
    /// port (`port + 10000`) must be free too, with `password`.
    pub(crate) fn start_cluster_node(port: u16, password: &str) -> Self {
        Self::start_on(port, Some(password))
    }

    fn start_on(port: u16, cluster_password: Option<&str>) -> Self {
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |elapsed| elapsed.subsec_nanos());
        let dir =
            std::env::temp_dir().join(format!("halo-redis-{}-{port}-{nanos}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("a temporary folder for redis-server");
        let mut server = Self {
            child: None,
            port,
            password: cluster_password
                .map_or_else(|| format!("pw-{nanos:x}-{port}"), str::to_owned),
            dir,
            cluster: cluster_password.is_some(),
        };
        server.start_again();
        server
    }

    /// Starts the server again after [`stop`](Self::stop), on the same port and with the
    /// same data, and waits until it answers.
    ///
    /// # Panics
    /// As [`start`](Self::start).
    pub fn start_again(&mut self) {
        assert!(self.child.is_none(), "the Redis server is already running");
        let child = REDIS_SERVER.spawn(
            Command::new(REDIS_SERVER.path())
                .args(["--bind", "127.0.0.1", "--port", &self.port.to_string()])
                .arg("--dir")
                .arg(&self.dir)
                .args(["--requirepass", &self.password])
                .args([
                    "--appendonly",
                    "yes",
                    "--appendfsync",
                    "always",
                    "--save",
                    "",
                ])
                .args(["--daemonize", "no", "--protected-mode", "yes"])
                .args(if self.cluster {
                    // A node that others count as failed after 2 s, so that tests of an outage
                    // do not wait long; its view of the cluster kept in its folder, so that it
                    // rejoins when started again.
                    &[
                        "--cluster-enabled",
                        "yes",
                        "--cluster-config-file",
                        "nodes.conf",
                        "--cluster-node-timeout",
                        "2000",
                    ][..]
                } else {
                    &[][..]
                })
                .args(["--logfile", "redis.log"])
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::inherit()),
        );
        self.child = Some(child);
        let (port, password, dir) = (self.port, &self.password, &self.dir);
        let child = self.child.as_mut().expect("just started");
        let answered = crate::wait::until(Duration::from_secs(20), || {
            if let Some(status) = child.try_wait().ok().flatten() {
                panic!(
                    "redis-server exited at start ({status}); see {}",
                    dir.join("redis.log").display()
                );
            }
            command(port, password, &["PING"]).is_some_and(|reply| reply == "+PONG")
        });
        assert!(
            answered,
            "redis-server on port {} did not answer within 20 s",
            self.port
        );
    }

    /// Shuts the server down (its append-only file written out) and waits until it has
    /// exited; clients then get connection errors.
    pub fn stop(&mut self) {
        let Some(mut child) = self.child.take() else {
            return;
        };
        let _ = self.command(&["SHUTDOWN"]);
        let exited = crate::wait::until(Duration::from_secs(10), || {
            child.try_wait().ok().flatten().is_some()
        });
        if !exited {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Whether the server runs (it was not [`stop`](Self::stop)ped).
    #[must_use]
    pub fn is_running(&self) -> bool {
        self.child.is_some()
    }

    /// The server's port on `127.0.0.1`.
    #[must_use]
    pub fn port(&self) -> u16 {
        self.port
    }

    /// `redis://:<password>@127.0.0.1:<port>/`.
    #[must_use]
    pub fn url(&self) -> String {
        format!("redis://:{}@127.0.0.1:{}/", self.password, self.port)
    }

    /// The server's password, to check that it never shows up where it must not.
    #[must_use]
    pub fn password(&self) -> &str {
        &self.password
    }

    /// Sends one command (authenticated) and returns the first line of the reply (all of a
    /// bulk string, such as `CLUSTER INFO`'s), or `None` when the server cannot be reached.
    /// For checks like `DBSIZE` (`:3`).
    #[must_use]
    pub fn command(&self, args: &[&str]) -> Option<String> {
        command(self.port, &self.password, args)
    }
}

/// A free loopback port that `also` accepts.
pub(crate) fn free_port(also: impl Fn(u16) -> bool) -> u16 {
    loop {
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|listener| listener.local_addr())
            .map(|addr| addr.port())
            .expect("a free loopback port");
        if also(port) {
            return port;
        }
    }
}

/// Sends one command to the server on `port` (authenticated with `password`): the first line
/// of the reply (all of a bulk string), or `None` when the server cannot be reached.
pub(crate) fn command(port: u16, password: &str, args: &[&str]) -> Option<String> {
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let mut stream = TcpStream::connect_timeout(&addr, Duration::from_millis(200)).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
    let mut request = encode(&["AUTH", password]);
    request.extend(encode(args));
    stream.write_all(&request).ok()?;
    let mut reply = Vec::new();
    let mut buffer = [0_u8; 512];
    // The AUTH reply, then the command's first line.
    while reply.iter().filter(|b| **b == b'\n').count() < 2 {
        match stream.read(&mut buffer) {
            Ok(0) | Err(_) => break,
            Ok(read) => reply.extend_from_slice(&buffer[..read]),
        }
    }
    let text = String::from_utf8_lossy(&reply).into_owned();
    let mut lines = text.split("\r\n");
    if lines.next() != Some("+OK") {
        return None;
    }
    let first = lines.next()?.to_owned();
    // A bulk string: all of it.
    let Some(length) = first
        .strip_prefix('$')
        .and_then(|n| n.parse::<usize>().ok())
    else {
        return Some(first);
    };
    let start = "+OK\r\n".len() + first.len() + 2;
    while reply.len() < start + length {
        match stream.read(&mut buffer) {
            Ok(0) | Err(_) => return None,
            Ok(read) => reply.extend_from_slice(&buffer[..read]),
        }
    }
    Some(String::from_utf8_lossy(&reply[start..start + length]).into_owned())
}

/// A command in RESP.
fn encode(args: &[&str]) -> Vec<u8> {
    let mut out = format!("*{}\r\n", args.len()).into_bytes();
    for arg in args {
        out.extend(format!("${}\r\n{arg}\r\n", arg.len()).into_bytes());
    }
    out
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        self.stop();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
