//! Flags of `strain ws`: the message sent, what the upgrade offers, and what happens to a lost
//! connection (the rest of the command line is every protocol's,
//! [`crate::cli::flags::ProtocolCmd`]); and the flags `strain origin --ws` adds.

use std::path::PathBuf;

use clap::Args;

use crate::cli::flags::{ProtocolCmd, ProtocolFlags};
use crate::cli::unit::OriginFlags;
use crate::cli::{units, CliError};
use crate::origin::unit::Unit;

/// Flags of `strain ws`: one load of WebSocket messages, or (as a subcommand) a capacity
/// search or an A/B comparison of the same messages.
pub type WsFlags = ProtocolCmd<WsMessageFlags>;

impl ProtocolFlags for WsMessageFlags {
    const URL_HELP: &'static str = "The server: ws://host:port/path or wss://host:port/path";
}

/// What each connection's upgrade asks for and what each message is.
#[derive(Debug, Args)]
pub struct WsMessageFlags {
    /// Send this text as every message (default: "strain").
    #[arg(long = "message", value_name = "TEXT", conflicts_with_all = ["message_file", "message_size"])]
    pub message: Option<String>,
    /// Send this file's bytes as every message, in a binary frame.
    #[arg(long = "message-file", value_name = "FILE", conflicts_with = "message_size")]
    pub message_file: Option<PathBuf>,
    /// Send N bytes as every message, in a binary frame.
    #[arg(long = "message-size", value_name = "BYTES", value_parser = units::count)]
    pub message_size: Option<usize>,
    /// Offer this subprotocol in the upgrade (repeatable); the server must choose one.
    #[arg(long = "subprotocol", value_name = "NAME")]
    pub subprotocols: Vec<String>,
    /// Offer permessage-deflate: where the server agrees, messages go compressed.
    #[arg(long = "deflate")]
    pub deflate: bool,
    /// Do not replace a connection the server closed or lost (the default replaces it).
    #[arg(long = "no-reconnect")]
    pub no_reconnect: bool,
    /// Messages per second on each connection, on an absolute schedule (-R N x connections in
    /// total; one message is in flight per connection, so a rate above one per echo time is
    /// counted late).
    #[arg(long = "rate-per-conn", value_name = "N", value_parser = units::rate)]
    pub rate_per_conn: Option<f64>,
    /// Open connections at N per second (all at once by default); replacements too.
    #[arg(long = "connect-rate", value_name = "N", value_parser = units::rate)]
    pub connect_rate: Option<f64>,
    /// Ping every connection every T and measure the pong's round trip.
    #[arg(long = "ping", value_name = "T", value_parser = units::dur)]
    pub ping: Option<units::Dur>,
    /// Put an id in each message (16 hex digits and a space before the payload) and take only
    /// a message that starts with it as its answer: for servers that also send other messages
    /// (chat rooms, fan-out), which are counted as unsolicited.
    #[arg(long = "match", conflicts_with_all = ["deflate", "listen_only"])]
    pub match_ids: bool,
    /// Send nothing: hold the connections and count what the server sends (push, fan-out);
    /// each message's latency is the gap since the one before it on its connection, and a gap
    /// longer than --timeout counts as a timeout.
    #[arg(long = "listen-only", conflicts_with_all = ["message", "message_file", "message_size", "rate_per_conn"])]
    pub listen_only: bool,
    /// Add a header to the upgrade request, "Name: value" (repeatable).
    #[arg(short = 'H', long = "header", value_name = "H")]
    pub headers: Vec<String>,
}

/// What `strain origin --ws` adds.
#[derive(Debug, Args)]
#[command(next_help_heading = "WebSocket")]
pub struct WsOriginFlags {
    /// Serve WebSocket echo: a GET asking to upgrade (ws://, wss:// with --tls) is answered 101
    /// and every message comes back as it came; pings are answered, closes returned, and
    /// permessage-deflate is agreed when offered. Other requests are served as without it.
    #[arg(long = "ws", conflicts_with_all = ["grpc", "replay"])]
    pub ws: bool,
    /// With --ws: close each connection with 1000 after echoing N messages.
    #[arg(long = "ws-close-after", value_name = "N", requires = "ws")]
    pub ws_close_after: Option<u64>,
    /// With --ws: a subprotocol the server accepts (repeatable); the first the client offers
    /// that is accepted is chosen, and without one the server chooses none.
    #[arg(long = "ws-subprotocol", value_name = "NAME", requires = "ws")]
    pub ws_subprotocols: Vec<String>,
    /// With --ws: send every connection N messages per second ("broadcast SEQ"), beside the
    /// echoes (server push, fan-out).
    #[arg(long = "ws-broadcast", value_name = "N", value_parser = units::rate, requires = "ws")]
    pub ws_broadcast: Option<f64>,
    /// With --ws: the percentage of messages (e.g. 1%) that, instead of an echo, make the server
    /// drop the connection without a close frame.
    #[arg(long = "ws-drop-rate", value_name = "PCT", value_parser = units::percent, requires = "ws")]
    pub ws_drop_rate: Option<f64>,
}

impl OriginFlags for WsOriginFlags {
    fn unit(self, _shared: &crate::cli::unit::Shared) -> Result<Option<std::sync::Arc<dyn Unit>>, CliError> {
        Ok(self.ws.then(|| {
            std::sync::Arc::new(super::origin::WsConfig {
                close_after: self.ws_close_after.unwrap_or(0),
                subprotocols: self.ws_subprotocols,
                broadcast_per_s: self.ws_broadcast.unwrap_or(0.0),
                drop_rate: self.ws_drop_rate.unwrap_or(0.0),
            }) as std::sync::Arc<dyn Unit>
        }))
    }
}
