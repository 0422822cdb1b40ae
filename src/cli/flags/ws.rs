//! Flags of `strain ws`: the message sent, what the upgrade offers, and what happens to a lost
//! connection. The rest of the command line is every protocol's ([`super::protocol`]).

use std::path::PathBuf;

use clap::Args;

use super::protocol::{ProtocolCmd, ProtocolFlags};

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
    #[arg(long = "message-size", value_name = "BYTES", value_parser = crate::cli::units::count)]
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
    #[arg(long = "rate-per-conn", value_name = "N", value_parser = crate::cli::units::rate)]
    pub rate_per_conn: Option<f64>,
    /// Open connections at N per second (all at once by default); replacements too.
    #[arg(long = "connect-rate", value_name = "N", value_parser = crate::cli::units::rate)]
    pub connect_rate: Option<f64>,
    /// Ping every connection every T and measure the pong's round trip.
    #[arg(long = "ping", value_name = "T", value_parser = crate::cli::units::dur)]
    pub ping: Option<crate::cli::units::Dur>,
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
