//! A throwaway three-node Redis Cluster on loopback ports, for tests of the shared stores
//! on a cluster: each node a [`RedisServer`] in cluster mode, a third of the hash slots
//! each, no replicas (a stopped node makes its slots, and with Redis's default full
//! coverage the whole cluster, unavailable until it is back).

use std::time::Duration;

use crate::redis::{RedisServer, command, free_port};

/// The hash slots of a cluster.
const SLOTS: u32 = 16_384;

/// A Redis Cluster of [`RedisCluster::NODES`] nodes; shut down on drop.
#[derive(Debug)]
pub struct RedisCluster {
    nodes: Vec<RedisServer>,
}

impl RedisCluster {
    /// How many nodes (all primaries).
    pub const NODES: usize = 3;

    /// Starts the nodes, gives each a third of the slots, introduces them to each other and
    /// waits until every node says the cluster is `ok`.
    ///
    /// # Panics
    /// When `redis-server` cannot be found, or the cluster does not form within 30 s.
    #[must_use]
    pub fn start() -> Self {
        let password = format!("cluster-pw-{}", free_port(|_| true));
        let nodes: Vec<RedisServer> = (0..Self::NODES)
            .map(|_| {
                // The cluster bus listens on the port + 10,000.
                let port = free_port(|port| {
                    port < 55_535
                        && std::net::TcpListener::bind(("127.0.0.1", port + 10_000)).is_ok()
                });
                RedisServer::start_cluster_node(port, &password)
            })
            .collect();
        let share = SLOTS / u32::try_from(Self::NODES).expect("a few nodes");
        for (index, node) in nodes.iter().enumerate() {
            let index = u32::try_from(index).expect("a few nodes");
            let first = index * share;
            let last = if index + 1 == u32::try_from(Self::NODES).expect("a few nodes") {
                SLOTS - 1
            } else {
                first + share - 1
            };
            let added = node.command(&[
                "CLUSTER",
                "ADDSLOTSRANGE",
                &first.to_string(),
                &last.to_string(),
            ]);
            assert_eq!(added.as_deref(), Some("+OK"), "slots {first}-{last}");
        }
        for node in &nodes[1..] {
            let met = nodes[0].command(&["CLUSTER", "MEET", "127.0.0.1", &node.port().to_string()]);
            assert_eq!(met.as_deref(), Some("+OK"), "CLUSTER MEET");
        }
        let cluster = Self { nodes };
        cluster.wait_until_ok(Duration::from_secs(30));
        cluster
    }

    /// The nodes' URLs (`redis://:<password>@127.0.0.1:<port>/`), every one.
    #[must_use]
    pub fn urls(&self) -> Vec<String> {
        self.nodes.iter().map(RedisServer::url).collect()
    }

    /// The password every node has.
    #[must_use]
    pub fn password(&self) -> &str {
        self.nodes[0].password()
    }

    /// Node `index`, for commands, or to stop and start again.
    #[must_use]
    pub fn node(&mut self, index: usize) -> &mut RedisServer {
        &mut self.nodes[index]
    }

    /// Starts every stopped node again (with its data and its view of the cluster) and waits
    /// until the cluster is `ok`.
    ///
    /// # Panics
    /// As [`start`](Self::start).
    pub fn start_stopped(&mut self) {
        for node in &mut self.nodes {
            if !node.is_running() {
                node.start_again();
            }
        }
        self.wait_until_ok(std::time::Duration::from_secs(30));
    }

    /// The node that holds `key`'s slot (`CLUSTER KEYSLOT`, then the slot map).
    ///
    /// # Panics
    /// When the cluster does not answer.
    #[must_use]
    pub fn holder_of(&self, key: &str) -> usize {
        let slot: u32 = self.nodes[0]
            .command(&["CLUSTER", "KEYSLOT", key])
            .and_then(|reply| reply.strip_prefix(':')?.parse().ok())
            .expect("CLUSTER KEYSLOT");
        let share = SLOTS / u32::try_from(Self::NODES).expect("a few nodes");
        usize::try_from(slot / share)
            .expect("a small index")
            .min(Self::NODES - 1)
    }

    /// Waits until every running node says the cluster is `ok` and knows every node.
    ///
    /// # Panics
    /// When that does not happen within `patience`.
    pub fn wait_until_ok(&self, patience: Duration) {
        let ok = crate::wait::until(patience, || {
            self.nodes.iter().all(|node| {
                command(node.port(), node.password(), &["CLUSTER", "INFO"]).is_some_and(|info| {
                    info.contains("cluster_state:ok")
                        && info.contains(&format!("cluster_known_nodes:{}", Self::NODES))
                })
            })
        });
        assert!(ok, "the Redis Cluster is not ok within {patience:?}");
    }

    /// Runs `args` on the node that holds `key` and gives the first line of its reply.
    #[must_use]
    pub fn command_for(&self, key: &str, args: &[&str]) -> Option<String> {
        self.nodes[self.holder_of(key)].command(args)
    }

    /// The number of keys on every node, summed.
    #[must_use]
    pub fn keys(&self) -> usize {
        self.nodes
            .iter()
            .filter_map(|node| node.command(&["DBSIZE"]))
            .filter_map(|reply| reply.strip_prefix(':')?.parse::<usize>().ok())
            .sum()
    }
}
