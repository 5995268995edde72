//! The shared store of a test, either one [`RedisServer`] or a [`RedisCluster`], so that one
//! test runs on both.

use crate::redis::RedisServer;
use crate::redis_cluster::RedisCluster;

/// One Redis server or a three-node Redis Cluster.
#[derive(Debug)]
pub enum SharedRedis {
    /// One server.
    Server(RedisServer),
    /// A cluster.
    Cluster(RedisCluster),
}

impl SharedRedis {
    /// A server, started.
    #[must_use]
    pub fn server() -> Self {
        Self::Server(RedisServer::start())
    }

    /// A cluster, started and `ok`.
    #[must_use]
    pub fn cluster() -> Self {
        Self::Cluster(RedisCluster::start())
    }

    /// The URL of the server, or of every node of the cluster.
    #[must_use]
    pub fn urls(&self) -> Vec<String> {
        match self {
            Self::Server(server) => vec![server.url()],
            Self::Cluster(cluster) => cluster.urls(),
        }
    }

    /// The password (every node's, for a cluster).
    #[must_use]
    pub fn password(&self) -> &str {
        match self {
            Self::Server(server) => server.password(),
            Self::Cluster(cluster) => cluster.password(),
        }
    }

    /// Stops the server, or the cluster's node that holds `key` (clients then get errors for
    /// the keys of its slots, and for every key once the others count it as failed).
    pub fn stop_holder_of(&mut self, key: &str) {
        match self {
            Self::Server(server) => server.stop(),
            Self::Cluster(cluster) => {
                let holder = cluster.holder_of(key);
                cluster.node(holder).stop();
            }
        }
    }

    /// Stops the server, or every node of the cluster.
    pub fn stop(&mut self) {
        match self {
            Self::Server(server) => server.stop(),
            Self::Cluster(cluster) => {
                for index in 0..RedisCluster::NODES {
                    cluster.node(index).stop();
                }
            }
        }
    }

    /// Starts again what [`stop`](Self::stop) or [`stop_holder_of`](Self::stop_holder_of)
    /// stopped, with its data, and waits until it (the whole cluster) answers.
    pub fn start_again(&mut self) {
        match self {
            Self::Server(server) => server.start_again(),
            Self::Cluster(cluster) => cluster.start_stopped(),
        }
    }

    /// Runs `args` on the server, or on the node holding `key`: the first line of the reply.
    #[must_use]
    pub fn command_for(&self, key: &str, args: &[&str]) -> Option<String> {
        match self {
            Self::Server(server) => server.command(args),
            Self::Cluster(cluster) => cluster.command_for(key, args),
        }
    }
}
