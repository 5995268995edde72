//! Where the store's Redis is: one server, or a Redis Cluster (Valkey, ElastiCache and
//! MemoryDB in cluster mode speak the same protocol); and the connection each gives, which
//! the store's scripts run on alike.
//!
//! A single server is reached through one multiplexed connection that is re-established when
//! it drops (redis-rs's `ConnectionManager`). A cluster is reached through redis-rs's cluster
//! client: it reads the slot map from any seed node that answers, sends each script to the
//! node that owns its keys' slot, follows `MOVED` and `ASK` redirections and reads the slot
//! map again after them, and reconnects to a node that comes back. Every script's keys share
//! one hash slot ([`keys`](super::keys)), so a script runs whole on one node.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use redis::aio::{ConnectionLike, ConnectionManager, ConnectionManagerConfig};
use redis::cluster::{ClusterClient, ClusterClientBuilder};
use redis::cluster_async::ClusterConnection;
use redis::cluster_routing::{RoutingInfo, SingleNodeRoutingInfo};
use redis::io::tcp::TcpSettings;
use redis::{Client, Cmd, IntoConnectionInfo, Pipeline, RedisFuture, Value};

/// The Redis a store talks to.
#[derive(Clone)]
pub(crate) enum Target {
    /// One server.
    Single(Client),
    /// A cluster, known by the URLs of its seed nodes (the client is made when connecting,
    /// with the store's timeout).
    Cluster(Arc<[String]>),
}

impl Target {
    /// One server at `url`.
    pub(crate) fn single(url: &str) -> redis::RedisResult<Self> {
        let info = url.into_connection_info()?.set_tcp_settings(tcp());
        Client::open(info).map(Self::Single)
    }

    /// A cluster known by the nodes at `urls` (one is enough; each that answers can tell
    /// the rest), if a client can be made for them.
    pub(crate) fn cluster(urls: &[&str]) -> redis::RedisResult<Self> {
        let urls: Arc<[String]> = urls.iter().map(|url| (*url).to_owned()).collect();
        cluster_client(&urls, Duration::from_secs(1))?;
        Ok(Self::Cluster(urls))
    }

    /// Whether keys are spread over the slots of several nodes.
    pub(crate) fn is_cluster(&self) -> bool {
        matches!(self, Self::Cluster(_))
    }

    /// The server's address (`host:port`), as logs name it (never a password); `None` for a
    /// cluster, whose node depends on the slot.
    pub(crate) fn server(&self) -> Option<String> {
        match self {
            Self::Single(client) => Some(client.get_connection_info().addr().to_string()),
            Self::Cluster(_) => None,
        }
    }

    /// A connection: made lazily for one server (it connects on first use), at once for a
    /// cluster (which reads its slot map first).
    pub(crate) async fn connect(&self, timeout: Duration) -> redis::RedisResult<Connection> {
        match self {
            Self::Single(client) => {
                let config = ConnectionManagerConfig::new()
                    .set_number_of_retries(1)
                    .set_min_delay(Duration::from_millis(50))
                    .set_max_delay(Duration::from_millis(500))
                    .set_connection_timeout(Some(timeout))
                    .set_response_timeout(Some(timeout));
                ConnectionManager::new_lazy_with_config(client.clone(), config)
                    .map(Connection::Single)
            }
            Self::Cluster(urls) => cluster_client(urls, timeout)?
                .get_async_connection()
                .await
                .map(|connection| Connection::Cluster(Box::new(connection))),
        }
    }
}

/// Each request and answer is one small write, sent at once (`TCP_NODELAY`, as Redis itself
/// and most clients set it), never held back for the previous one's acknowledgement.
fn tcp() -> TcpSettings {
    TcpSettings::default().set_nodelay(true)
}

/// A client of the cluster whose seed nodes are at `urls`; `timeout` bounds connecting to a
/// node and each answer.
fn cluster_client(urls: &[String], timeout: Duration) -> redis::RedisResult<ClusterClient> {
    ClusterClientBuilder::new(urls.iter().map(String::as_str))
        .tcp_settings(tcp())
        .connection_timeout(timeout)
        .response_timeout(timeout)
        // A redirection (`MOVED`, `ASK`) is a retry: two leave room for one after a
        // failover; the store's own timeout bounds the whole exchange.
        .retries(2)
        .min_retry_wait(10)
        .max_retry_wait(200)
        .build()
}

impl fmt::Debug for Target {
    // A client's connection info holds the password: never show it.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Single(_) => f.write_str("Single"),
            Self::Cluster(_) => f.write_str("Cluster"),
        }
    }
}

/// A connection to one server or to a cluster; cheap to clone (both are multiplexed).
#[derive(Clone)]
pub(crate) enum Connection {
    Single(ConnectionManager),
    Cluster(Box<ClusterConnection>),
}

impl ConnectionLike for Connection {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        match self {
            Self::Single(connection) => connection.req_packed_command(cmd),
            Self::Cluster(connection) => connection.req_packed_command(cmd),
        }
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        match self {
            Self::Single(connection) => connection.req_packed_commands(pipeline, offset, count),
            Self::Cluster(connection) => connection.req_packed_commands(pipeline, offset, count),
        }
    }

    fn get_db(&self) -> i64 {
        match self {
            Self::Single(connection) => connection.get_db(),
            Self::Cluster(connection) => connection.get_db(),
        }
    }
}

/// Whether the server, or every primary node of the cluster's slot map (asked of any
/// node), answers `PING`: a cluster is ready only while each of its slots can be reached.
pub(crate) async fn ping(connection: &mut Connection) -> redis::RedisResult<bool> {
    let pong = |answer: String| answer == "PONG";
    let cluster = match connection {
        Connection::Single(single) => {
            return redis::cmd("PING").query_async(single).await.map(pong);
        }
        Connection::Cluster(cluster) => cluster,
    };
    let map: Vec<Value> = redis::cmd("CLUSTER")
        .arg("SLOTS")
        .query_async(&mut **cluster)
        .await?;
    let mut primaries: Vec<(String, u16)> = map.iter().filter_map(primary).collect();
    primaries.sort_unstable();
    primaries.dedup();
    if primaries.is_empty() {
        return Ok(false);
    }
    for (host, port) in primaries {
        let route = RoutingInfo::SingleNode(SingleNodeRoutingInfo::ByAddress { host, port });
        let answer = cluster.route_command(redis::cmd("PING"), route).await?;
        if !matches!(answer, Value::SimpleString(ref text) if text == "PONG") {
            return Ok(false);
        }
    }
    Ok(true)
}

/// The node (`host:port`) that the cluster's slot map (`CLUSTER SLOTS`, asked of any node)
/// says holds `slot`.
pub(crate) async fn holder(connection: &mut Connection, slot: u16) -> Option<String> {
    let map: Vec<Value> = redis::cmd("CLUSTER")
        .arg("SLOTS")
        .query_async(connection)
        .await
        .ok()?;
    map.iter().find_map(|range| {
        let Value::Array(parts) = range else {
            return None;
        };
        let (first, last) = (number(parts.first()?)?, number(parts.get(1)?)?);
        let (host, port) = primary(range)?;
        (first..=last)
            .contains(&i64::from(slot))
            .then(|| format!("{host}:{port}"))
    })
}

/// The primary node (`host`, `port`) of one range of `CLUSTER SLOTS`'s answer.
fn primary(range: &Value) -> Option<(String, u16)> {
    let Value::Array(parts) = range else {
        return None;
    };
    let Value::Array(node) = parts.get(2)? else {
        return None;
    };
    let host = match node.first()? {
        Value::BulkString(bytes) => String::from_utf8_lossy(bytes).into_owned(),
        Value::SimpleString(text) => text.clone(),
        _ => return None,
    };
    Some((host, u16::try_from(number(node.get(1)?)?).ok()?))
}

fn number(value: &Value) -> Option<i64> {
    match value {
        Value::Int(n) => Some(*n),
        _ => None,
    }
}
