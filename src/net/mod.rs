//! Transport below HTTP: name resolution, TCP and TLS streams, process file limits.
//!
//! The engine asks [`resolve`] once before the threads start, builds one [`tls::TlsSetup`] for
//! the run, and opens every connection through [`stream::Stream`], which hides whether bytes
//! are encrypted.

pub mod stream;
pub mod tls;

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
    Tls(#[from] rustls::Error),
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

/// Raises the soft open-file limit to the hard limit, so thousands of connections fit.
/// Returns the limit now in force.
pub fn raise_file_limit() -> u64 {
    match rlimit::increase_nofile_limit(u64::MAX) {
        Ok(n) => n,
        Err(_) => rlimit::getrlimit(rlimit::Resource::NOFILE).map(|(soft, _)| soft).unwrap_or(1024),
    }
}
