//! `halo stream`'s command line: the call (as `halo call` takes it) and the transport its
//! events come over (`--transport sse|ws`).

use clap::{Args, ValueEnum};
use halo_client::Transport;

use super::CallArgs;

/// The call to stream and how (`stream`).
#[derive(Debug, Args)]
pub(crate) struct StreamArgs {
    #[command(flatten)]
    pub(crate) call: CallArgs,
    /// How the events come: `sse` (Server-Sent Events, the default) or `ws` (a WebSocket
    /// upgrade on the operation's path, the arguments in its first message). Either way the
    /// same events, resumed the same way; over `ws`, Ctrl-C also closes the socket.
    #[arg(long, value_enum, default_value_t = TransportArg::Sse, value_name = "sse|ws")]
    pub(crate) transport: TransportArg,
}

/// The transports `--transport` names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum TransportArg {
    /// Server-Sent Events.
    Sse,
    /// WebSocket.
    #[value(alias = "websocket")]
    Ws,
}

impl From<TransportArg> for Transport {
    fn from(transport: TransportArg) -> Self {
        match transport {
            TransportArg::Sse => Self::Sse,
            TransportArg::Ws => Self::WebSocket,
        }
    }
}
