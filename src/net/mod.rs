//! Transport below HTTP: name resolution, TCP and TLS streams, process file limits.
//!
//! The engine asks [`resolve`] once before the threads start, builds one [`tls::TlsSetup`] for
//! the run, and opens every connection through [`stream::Stream`], which hides whether bytes
//! are encrypted.

pub mod host;
pub mod pages;
pub mod stream;
pub mod throttle;
pub mod tls;
pub mod wire;

use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::time::Duration;

/// Why the target cannot be reached at all before the run starts.
#[derive(Debug, thiserror::Error)]
pub enum NetError {
    /// The host name does not resolve.
    #[error("cannot resolve '{host}': {source}")]
    Resolve {
        /// The name looked up.
        host: String,
        /// The resolver's error.
        source: std::io::Error,
    },
    /// The host name resolved to nothing.
    #[error("'{0}' resolved to no address")]
    NoAddress(String),
    /// The TLS client could not be set up.
    #[error("TLS setup failed: {0}")]
    Tls(#[from] tls::TlsError),
    /// A `--source-addr` cannot be connected from.
    #[error("cannot connect from source address {addr}: {why}")]
    Source {
        /// The address given.
        addr: std::net::IpAddr,
        /// Why not.
        why: String,
    },
}

/// Checks before the run that every source address can reach `target`'s family and is an
/// address of this machine, so a typo is one error line instead of a run of connect errors.
pub fn check_sources(sources: &[std::net::IpAddr], target: SocketAddr) -> Result<(), NetError> {
    for &addr in sources {
        if addr.is_ipv4() != target.is_ipv4() {
            let why = format!("the target {target} is {}", if target.is_ipv4() { "IPv4" } else { "IPv6" });
            return Err(NetError::Source { addr, why });
        }
        std::net::TcpListener::bind(SocketAddr::new(addr, 0))
            .map_err(|e| NetError::Source { addr, why: e.to_string() })?;
    }
    Ok(())
}

/// Resolves `host:port` and picks the address to load, as wrk does: the first one that accepts
/// a TCP connection within `timeout`, or else the first one (the run then counts connect errors,
/// since a server may come up while it runs).
pub fn resolve(host: &str, port: u16, timeout: Duration) -> Result<SocketAddr, NetError> {
    let addrs: Vec<SocketAddr> = (host, port)
        .to_socket_addrs()
        .map_err(|source| NetError::Resolve { host: host.to_string(), source })?
        .collect();
    let first = *addrs.first().ok_or_else(|| NetError::NoAddress(host.to_string()))?;
    if addrs.len() == 1 {
        return Ok(first);
    }
    Ok(addrs.iter().copied().find(|a| TcpStream::connect_timeout(a, timeout).is_ok()).unwrap_or(first))
}

/// The kernel's local port range for outgoing connections (Linux), if it can be read.
pub fn local_port_range() -> Option<(u32, u32)> {
    let text = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range").ok()?;
    let mut it = text.split_whitespace().map(|n| n.parse::<u32>().ok());
    Some((it.next()??, it.next()??))
}

/// Raises the soft open-file limit to the hard limit, so thousands of connections fit.
/// Returns the limit now in force.
pub fn raise_file_limit() -> u64 {
    match rlimit::increase_nofile_limit(u64::MAX) {
        Ok(n) => n,
        Err(_) => rlimit::getrlimit(rlimit::Resource::NOFILE).map(|(soft, _)| soft).unwrap_or(1024),
    }
}
