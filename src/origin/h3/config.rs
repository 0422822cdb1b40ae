//! The QUIC side's configuration: quiche's server [`quiche::Config`] with the TLS side's
//! certificate and key, ALPN `h3`, and flow-control windows for a load test; and the HTTP/3
//! settings.
//!
//! BoringSSL (inside quiche, vendored) loads certificates and keys only from files, and quiche
//! exposes no in-memory loader without the `boring` crate. A certificate made at start is
//! therefore written to an anonymous in-memory file (`memfd_create`) and named by its
//! `/proc/self/fd/N` path: the private key never reaches a disk or a shared temporary directory,
//! needs no clean-up, and vanishes when the descriptor is closed, right after loading.

use std::ffi::CStr;
use std::fs::File;
use std::io::{self, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

use super::super::tls::Pem;
use super::super::OriginError;

/// Largest UDP payload sent or accepted: the client's value (fits a 1,500-byte Ethernet MTU with
/// IPv6 and a tunnel's headers).
pub(super) const MAX_DATAGRAM: usize = 1350;
/// A connection that hears nothing this long is dropped: the client's value, so neither side
/// gives up first on an idle keep-alive link.
const IDLE_TIMEOUT_MS: u64 = 30_000;
/// Requests a client may have open at once on one connection; quiche raises the limit as they
/// end. Well above any `-m` a test uses.
const MAX_STREAMS: u64 = 1024;
/// Flow-control window per request stream (request bodies) and per unidirectional stream.
const STREAM_WINDOW: u64 = 1 << 20;
/// Connection-wide receive window.
const CONN_WINDOW: u64 = 16 << 20;

/// The server configuration: the certificate and key of `pem`, ALPN `h3`, no client
/// certificates, no migration.
pub(super) fn server(pem: &Pem) -> Result<quiche::Config, OriginError> {
    let fail = |what: &str, e: quiche::Error| OriginError::Quic(format!("HTTP/3: {what}: {e}"));
    // Not `quiche::Config::new`: it loads the default roots (`SSL_CERT_FILE`: about 1 MB of
    // parsed certificates) that a server asking no client certificate never reads.
    let ctx = boring::ssl::SslContextBuilder::new(boring::ssl::SslMethod::tls())
        .map_err(|e| OriginError::Quic(format!("HTTP/3: no TLS context: {e}")))?;
    let mut c = quiche::Config::with_boring_ssl_ctx_builder(quiche::PROTOCOL_VERSION, ctx)
        .map_err(|e| fail("no QUIC configuration", e))?;
    match pem {
        Pem::Files { cert, key } => {
            let (cert, key) = (utf8(cert)?, utf8(key)?);
            c.load_cert_chain_from_pem_file(cert).map_err(|e| fail(&format!("cannot load {cert}"), e))?;
            c.load_priv_key_from_pem_file(key).map_err(|e| fail(&format!("cannot load {key}"), e))?;
        }
        Pem::Text { cert, key } => {
            let mem = |name: &CStr, text: &str| {
                MemFile::new(name, text).map_err(|e| OriginError::Quic(format!("HTTP/3: no in-memory file: {e}")))
            };
            let (cert_file, key_file) = (mem(c"strain-cert", cert)?, mem(c"strain-key", key)?);
            c.load_cert_chain_from_pem_file(&cert_file.path())
                .map_err(|e| fail("cannot load the certificate (is /proc mounted?)", e))?;
            c.load_priv_key_from_pem_file(&key_file.path()).map_err(|e| fail("cannot load the key", e))?;
        }
    }
    c.set_application_protos(quiche::h3::APPLICATION_PROTOCOL).map_err(|e| fail("ALPN", e))?;
    c.verify_peer(false);
    c.set_max_idle_timeout(IDLE_TIMEOUT_MS);
    c.set_max_recv_udp_payload_size(MAX_DATAGRAM);
    c.set_max_send_udp_payload_size(MAX_DATAGRAM);
    c.set_initial_max_data(CONN_WINDOW);
    c.set_initial_max_stream_data_bidi_remote(STREAM_WINDOW);
    c.set_initial_max_stream_data_uni(STREAM_WINDOW);
    c.set_initial_max_streams_bidi(MAX_STREAMS);
    // The client's control and QPACK streams, and room for extensions' streams.
    c.set_initial_max_streams_uni(16);
    c.set_disable_active_migration(true);
    Ok(c)
}

/// The HTTP/3 settings: a request's field section is held to what an HTTP/1 head may be.
pub(super) fn h3() -> Result<quiche::h3::Config, OriginError> {
    let mut c = quiche::h3::Config::new().map_err(|e| OriginError::Quic(format!("HTTP/3: {e}")))?;
    c.set_max_field_section_size(crate::http::MAX_HEAD_BYTES as u64);
    Ok(c)
}

/// A path BoringSSL can read `cert` or `key` from: `Pem::Files` are loaded as they are.
fn utf8(path: &std::path::Path) -> Result<&str, OriginError> {
    path.to_str().ok_or_else(|| OriginError::Quic(format!("HTTP/3 needs a UTF-8 file name, not {}", path.display())))
}

/// Text in an anonymous in-memory file, readable by path while this lives.
struct MemFile(File);

impl MemFile {
    /// A new in-memory file called `name` (for /proc listings only) holding `text`.
    fn new(name: &CStr, text: &str) -> io::Result<MemFile> {
        // SAFETY: `name` is NUL-terminated and outlives the call; the flags are constants.
        let fd = unsafe { libc::memfd_create(name.as_ptr(), libc::MFD_CLOEXEC) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `fd` was just opened and nothing else owns it.
        let mut file = File::from(unsafe { OwnedFd::from_raw_fd(fd) });
        file.write_all(text.as_bytes())?;
        Ok(MemFile(file))
    }

    /// Its name for `open`: opening it again starts at the beginning of the text.
    fn path(&self) -> String {
        format!("/proc/self/fd/{}", self.0.as_raw_fd())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_in_memory_file_reads_back_by_path() {
        let file = MemFile::new(c"test", "hello\n").unwrap();
        assert_eq!(std::fs::read_to_string(file.path()).unwrap(), "hello\n");
    }

    #[test]
    fn a_made_certificate_loads_from_memory() {
        let made = crate::net::tls::self_signed(&["localhost"]).unwrap();
        let pem = Pem::Text { cert: made.cert, key: made.key };
        assert!(server(&pem).is_ok());
        let garbage = Pem::Text { cert: "not a certificate".into(), key: String::new() };
        assert!(matches!(server(&garbage), Err(OriginError::Quic(_))));
    }
}
