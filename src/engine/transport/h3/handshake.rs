//! Starting a QUIC connection: the thread's client configuration, the connection, and
//! why a handshake failed, in one line a user can act on.

use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use crate::engine::EngineError;
use crate::stats::ConnectCause;

/// First TLS alert code inside QUIC's CRYPTO_ERROR range (RFC 9001 4.8).
const CRYPTO_ERROR: u64 = 0x100;
/// TLS alert no_application_protocol: the server speaks none of the ALPN protocols offered.
const NO_APPLICATION_PROTOCOL: u64 = 120;

/// A thread's QUIC client configuration: ALPN h3, certificates checked unless `insecure`, and
/// room for the server's control and QPACK streams and for `streams` responses at once; a slow
/// reader's `window` per stream instead when given.
pub(super) fn client_config(
    insecure: bool,
    streams: usize,
    window: Option<usize>,
) -> Result<quiche::Config, EngineError> {
    let e = |e: quiche::Error| EngineError::Quic(e.to_string());
    let ctx = crate::net::tls::client_context(insecure).map_err(|e| EngineError::Quic(e.to_string()))?;
    let mut c = quiche::Config::with_boring_ssl_ctx_builder(quiche::PROTOCOL_VERSION, ctx).map_err(e)?;
    c.set_application_protos(quiche::h3::APPLICATION_PROTOCOL).map_err(e)?;
    c.verify_peer(!insecure);
    c.set_max_idle_timeout(super::IDLE_TIMEOUT_MS);
    c.set_max_recv_udp_payload_size(super::MAX_DATAGRAM);
    c.set_max_send_udp_payload_size(super::MAX_DATAGRAM);
    // Windows large enough that a response of a megabyte per stream never waits on them; quiche
    // widens them as the body is read. A slow reader's stay small, as its TCP receive buffer
    // does, so the server's bytes wait at the server, not in a window that makes it look fast.
    let per_stream = window.unwrap_or(1 << 20);
    if let Some(w) = window {
        c.set_max_stream_window(w as u64);
        c.set_max_connection_window((w * streams.max(10)) as u64);
    }
    c.set_initial_max_data((per_stream * streams.max(10)) as u64);
    c.set_initial_max_stream_data_bidi_local(per_stream as u64);
    c.set_initial_max_stream_data_bidi_remote(per_stream as u64);
    c.set_initial_max_stream_data_uni(per_stream as u64);
    c.set_initial_max_streams_bidi(0);
    c.set_initial_max_streams_uni(16);
    c.set_disable_active_migration(true);
    Ok(c)
}

/// A client connection to `peer` for `host`, with the connection id `scid`.
pub(super) fn connect(
    host: &str,
    scid: &[u8],
    local: SocketAddr,
    peer: SocketAddr,
    config: &mut quiche::Config,
) -> Result<quiche::Connection, String> {
    let scid = quiche::ConnectionId::from_ref(scid);
    // An address as host is sent without SNI (RFC 6066 allows only names there).
    let name = host.parse::<IpAddr>().is_err().then_some(host);
    quiche::connect(name, &scid, local, peer, config).map_err(|e| format!("QUIC connect: {e}"))
}

/// Why a QUIC handshake failed: the causes are counted, so they and their names are the
/// stats module's; telling which one a connection met is the engine's.
pub use crate::stats::HandshakeFailure as Failure;

impl Failure {
    /// Why `conn`, closed during its handshake, failed.
    pub(super) fn of(conn: &quiche::Connection) -> Failure {
        if conn.is_timed_out() {
            return Failure::timed_out(conn);
        }
        let Some(e) = conn.local_error().or(conn.peer_error()) else { return Failure::Other };
        match e.error_code.checked_sub(CRYPTO_ERROR) {
            _ if e.is_app => Failure::Other,
            Some(NO_APPLICATION_PROTOCOL) => Failure::Alpn,
            // bad_certificate (42) to unknown_ca (48), and certificate_required (116).
            Some(42..=48 | 116) => Failure::Certificate,
            _ => Failure::Other,
        }
    }

    /// `conn` ran out of time: was anything heard from the server at all?
    pub(super) fn timed_out(conn: &quiche::Connection) -> Failure {
        match conn.stats().recv {
            0 => Failure::NoAnswer,
            _ => Failure::Timeout,
        }
    }

    /// The cause connect errors are counted under.
    pub(super) fn cause(self) -> ConnectCause {
        match self {
            Failure::NoAnswer | Failure::Timeout => ConnectCause::TimedOut,
            Failure::PortUnreachable => ConnectCause::Refused,
            Failure::Certificate | Failure::Alpn | Failure::Version => ConnectCause::Tls,
            Failure::Other => ConnectCause::Other,
        }
    }

    /// The one line a user reads about it.
    pub(super) fn describe(self, peer: SocketAddr, timeout: Duration) -> String {
        let port = peer.port();
        let t = humantime::format_duration(timeout);
        match self {
            Failure::NoAnswer => format!("no QUIC answer from {peer} within {t}; is UDP port {port} open?"),
            Failure::PortUnreachable => {
                format!("no QUIC answer from {peer} (ICMP port unreachable); is UDP port {port} open?")
            }
            Failure::Timeout => format!("the QUIC handshake with {peer} did not finish within {t}"),
            Failure::Certificate => {
                "TLS certificate rejected in the QUIC handshake; for a self-signed or private test server, use --insecure"
                    .into()
            }
            Failure::Alpn => "the server does not speak HTTP/3 (it refused ALPN h3)".into(),
            Failure::Version => "the server speaks no QUIC version strain speaks (version 1)".into(),
            Failure::Other => "the QUIC handshake failed".into(),
        }
    }
}
