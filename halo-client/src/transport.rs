//! [`Transport`]: how a streamed call's events travel from the server.

use std::fmt;
use std::str::FromStr;

/// How a streamed call's events travel ([`ClientBuilder::stream_transport`]): the same
/// events, ids and resumption either way.
///
/// [`ClientBuilder::stream_transport`]: crate::ClientBuilder::stream_transport
///
/// ```
/// use halo_client::Transport;
///
/// assert_eq!(Transport::default(), Transport::Sse);
/// assert_eq!("sse".parse::<Transport>(), Ok(Transport::Sse));
/// assert!("carrier-pigeon".parse::<Transport>().is_err());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum Transport {
    /// Server-Sent Events: the call's own request, answered with `text/event-stream`
    /// (the default).
    #[default]
    Sse,
    /// WebSocket (feature `ws`): a `GET` upgrade on the operation's path offering the
    /// `halo-stream.v1` subprotocol, the arguments in the first message, each event a text
    /// message. Dropping the stream before its end closes the socket normally, which cancels
    /// the call.
    #[cfg(feature = "ws")]
    #[cfg_attr(docsrs, doc(cfg(feature = "ws")))]
    WebSocket,
}

impl fmt::Display for Transport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Sse => "sse",
            #[cfg(feature = "ws")]
            Self::WebSocket => "ws",
        })
    }
}

/// A name that is not a [`Transport`] (of this build).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{0}` is not a stream transport (sse or ws)")]
pub struct UnknownTransport(String);

impl FromStr for Transport {
    type Err = UnknownTransport;

    /// `sse`, or `ws` / `websocket` (with the feature `ws`).
    fn from_str(name: &str) -> Result<Self, Self::Err> {
        match name.to_ascii_lowercase().as_str() {
            "sse" => Ok(Self::Sse),
            #[cfg(feature = "ws")]
            "ws" | "websocket" => Ok(Self::WebSocket),
            _ => Err(UnknownTransport(name.to_owned())),
        }
    }
}
