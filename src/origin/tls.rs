//! HTTPS for the origin (`--tls`): the server configuration (a self-signed certificate for
//! 127.0.0.1 and localhost made at start, or PEM files), offering ALPN `h2` and `http/1.1`, and
//! the connection's byte stream, plain or TLS, behind one small interface for [`super::conn`]
//! and [`super::h2`]. The same certificate and key are kept as PEM ([`Pem`]) for HTTP/3, whose
//! TLS (BoringSSL, inside quiche) reads PEM and not rustls's parsed form.
//!
//! rustls is sans-I/O, so TLS is driven by hand over mio's socket, as the client does in
//! [`crate::net::stream`]. Which protocol a TLS connection speaks needs no look at ALPN: an h2
//! client sends the HTTP/2 preface first, which the connection recognises as it does for h2c.
//! An enum rather than a trait object keeps the plain path a predictable branch.

use std::io::{self, IoSlice, Read, Write};
use std::net::Shutdown;
use std::path::PathBuf;
use std::sync::Arc;

use mio::net::TcpStream;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use rustls::{ServerConfig, ServerConnection};

use super::OriginError;

/// Where the origin's certificate comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TlsSource {
    /// Made at start, for `127.0.0.1` and `localhost` (clients need `-k`).
    SelfSigned,
    /// A certificate chain and its private key, PEM files.
    Pem {
        /// The certificate chain, leaf first.
        cert: PathBuf,
        /// The private key (PKCS#8, PKCS#1 or SEC1).
        key: PathBuf,
    },
}

impl TlsSource {
    /// Reads PEM files now, so a bad one is refused before the server says it listens.
    pub fn check(&self) -> Result<(), OriginError> {
        match self {
            TlsSource::SelfSigned => Ok(()),
            TlsSource::Pem { .. } => server_config(self).map(drop),
        }
    }
}

/// The names a self-signed certificate is made for.
const SELF_SIGNED_NAMES: [&str; 2] = ["127.0.0.1", "localhost"];

/// The certificate and key of a server, as PEM, for HTTP/3's TLS.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Pem {
    /// The files `--cert` and `--key` named.
    Files { cert: PathBuf, key: PathBuf },
    /// A certificate made at start, which exists nowhere else.
    Text { cert: String, key: String },
}

/// The server configuration `source` asks for, offering ALPN `h2` then `http/1.1`, and the same
/// certificate and key as PEM.
pub(super) fn server_config(source: &TlsSource) -> Result<(Arc<ServerConfig>, Pem), OriginError> {
    let fail = |what: String| OriginError::Tls(what);
    let (certs, key, pem) = match source {
        TlsSource::SelfSigned => {
            let names: Vec<String> = SELF_SIGNED_NAMES.iter().map(|n| n.to_string()).collect();
            let made = rcgen::generate_simple_self_signed(names)
                .map_err(|e| fail(format!("cannot make a self-signed certificate: {e}")))?;
            let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(made.key_pair.serialize_der()));
            let pem = Pem::Text { cert: made.cert.pem(), key: made.key_pair.serialize_pem() };
            (vec![made.cert.der().clone()], key, pem)
        }
        TlsSource::Pem { cert, key } => {
            let certs = CertificateDer::pem_file_iter(cert)
                .and_then(|certs| certs.collect::<Result<Vec<_>, _>>())
                .map_err(|e| fail(format!("cannot read certificates from {}: {e}", cert.display())))?;
            if certs.is_empty() {
                return Err(fail(format!("no certificate in {}", cert.display())));
            }
            let der = PrivateKeyDer::from_pem_file(key)
                .map_err(|e| fail(format!("cannot read a private key from {}: {e}", key.display())))?;
            (certs, der, Pem::Files { cert: cert.clone(), key: key.clone() })
        }
    };
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .and_then(|b| b.with_no_client_auth().with_single_cert(certs, key))
        .map_err(|e| fail(format!("unusable certificate or key: {e}")))?;
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok((Arc::new(config), pem))
}

/// An accepted connection's bytes, plain or TLS.
pub(super) enum ServerStream {
    /// Plain TCP.
    Plain(TcpStream),
    /// TLS over TCP.
    Tls(Box<TlsConn>),
    /// A Unix-domain socket (`--listen unix:PATH`), plain.
    Unix(mio::net::UnixStream),
}

/// TCP plus a rustls server session.
pub(super) struct TlsConn {
    sock: TcpStream,
    tls: ServerConnection,
}

impl ServerStream {
    /// The stream for an accepted (and registered) socket: TLS with `config`; `None` if rustls
    /// cannot start a session.
    pub(super) fn new(sock: TcpStream, config: Option<&Arc<ServerConfig>>) -> Option<ServerStream> {
        match config {
            None => Some(ServerStream::Plain(sock)),
            Some(config) => {
                let tls = ServerConnection::new(config.clone()).ok()?;
                Some(ServerStream::Tls(Box::new(TlsConn { sock, tls })))
            }
        }
    }

    /// Whether a read shorter than the buffer means the socket is drained. Not over TLS: the
    /// plaintext of one read can be short while more records wait in the socket.
    #[inline]
    pub(super) fn short_read_drains(&self) -> bool {
        matches!(self, ServerStream::Plain(_) | ServerStream::Unix(_))
    }

    /// Writes TLS records left over from an earlier write that the socket did not take.
    #[inline]
    pub(super) fn flush_pending(&mut self) -> io::Result<()> {
        match self {
            ServerStream::Plain(_) | ServerStream::Unix(_) => Ok(()),
            ServerStream::Tls(t) => match t.write_tls() {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(()),
                other => other,
            },
        }
    }

    /// Ends our sending side (after a TLS close_notify).
    pub(super) fn shutdown(&mut self, how: Shutdown) -> io::Result<()> {
        match self {
            ServerStream::Plain(s) => s.shutdown(how),
            ServerStream::Unix(s) => s.shutdown(how),
            ServerStream::Tls(t) => {
                t.tls.send_close_notify();
                // Best effort: the peer learns of the end from the FIN too.
                let _ = t.write_tls();
                t.sock.shutdown(how)
            }
        }
    }
}

impl TlsConn {
    /// Writes every pending TLS record; `WouldBlock` if the socket is full first.
    fn write_tls(&mut self) -> io::Result<()> {
        while self.tls.wants_write() {
            if self.tls.write_tls(&mut self.sock)? == 0 {
                return Err(io::ErrorKind::WriteZero.into());
            }
        }
        Ok(())
    }

    /// Accepts plaintext once earlier records are out; `WouldBlock` while they are not.
    fn send(&mut self, bufs: &[IoSlice<'_>]) -> io::Result<usize> {
        self.write_tls()?;
        let n = self.tls.writer().write_vectored(bufs)?;
        if n == 0 {
            // Only while handshaking with the plaintext buffer full: the client's next
            // handshake message (a readable edge) lets it move.
            return Err(io::ErrorKind::WouldBlock.into());
        }
        // What the socket does not take now goes out with the next write or writable edge.
        match self.write_tls() {
            Err(e) if e.kind() != io::ErrorKind::WouldBlock => Err(e),
            _ => Ok(n),
        }
    }
}

impl Read for ServerStream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let t = match self {
            ServerStream::Plain(s) => return s.read(buf),
            ServerStream::Unix(s) => return s.read(buf),
            ServerStream::Tls(t) => t,
        };
        loop {
            match t.tls.reader().read(buf) {
                // Zero: the client's close_notify.
                Ok(n) => return Ok(n),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(e) => return Err(e),
            }
            if t.tls.read_tls(&mut t.sock)? == 0 {
                // The client closed without close_notify: an end all the same.
                return Ok(0);
            }
            let processed = t.tls.process_new_packets();
            // The handshake's answer, or the alert of a failure, goes out either way.
            let flushed = t.write_tls();
            if let Err(e) = processed {
                return Err(io::Error::new(io::ErrorKind::InvalidData, e));
            }
            if let Err(e) = flushed {
                if e.kind() != io::ErrorKind::WouldBlock {
                    return Err(e);
                }
            }
        }
    }
}

impl Write for ServerStream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            ServerStream::Plain(s) => s.write(buf),
            ServerStream::Unix(s) => s.write(buf),
            ServerStream::Tls(t) => t.send(&[IoSlice::new(buf)]),
        }
    }

    fn write_vectored(&mut self, bufs: &[IoSlice<'_>]) -> io::Result<usize> {
        match self {
            ServerStream::Plain(s) => s.write_vectored(bufs),
            ServerStream::Unix(s) => s.write_vectored(bufs),
            ServerStream::Tls(t) => t.send(bufs),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        self.flush_pending()
    }
}
