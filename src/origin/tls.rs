//! HTTPS for the origin (`--tls`): the server context (a self-signed certificate for
//! 127.0.0.1 and localhost made at start, or PEM files), choosing ALPN `h2` or `http/1.1`, and
//! the connection's byte stream, plain or TLS, behind one small interface for [`super::conn`]
//! and [`super::h2`]. The same certificate and key are kept as PEM ([`Pem`]) for HTTP/3, whose
//! TLS (the same BoringSSL, inside quiche) is configured apart.
//!
//! TLS runs over the socket behind a [`Wire`]'s buffers, as the client's does in
//! [`crate::net::stream`]. Which protocol a TLS connection speaks needs no look at ALPN: an h2
//! client sends the HTTP/2 preface first, which the connection recognises as it does for h2c.
//! An enum rather than a trait object keeps the plain path a predictable branch.

use std::io::{self, IoSlice, Read, Write};
use std::net::Shutdown;
use std::path::PathBuf;

use boring::pkey::PKey;
use boring::ssl::{select_next_proto, AlpnError, SslAcceptor, SslMethod, SslStream};
use boring::x509::X509;
use mio::net::TcpStream;

use super::OriginError;
use crate::net::wire::{self, blocked, Wire};

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

/// The origin's TLS server context, shared by its threads.
#[derive(Clone)]
pub(super) struct ServerTls(SslAcceptor);

impl std::fmt::Debug for ServerTls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ServerTls")
    }
}

/// ALPN's choices, in the server's order of preference (wire format).
const ALPN: &[u8] = b"\x02h2\x08http/1.1";

/// The server context `source` asks for, choosing ALPN `h2` then `http/1.1`, and the same
/// certificate and key as PEM.
pub(super) fn server_config(source: &TlsSource) -> Result<(ServerTls, Pem), OriginError> {
    let fail = |what: String| OriginError::Tls(what);
    let mut b =
        SslAcceptor::mozilla_intermediate_v5(SslMethod::tls()).map_err(|e| fail(format!("cannot set up TLS: {e}")))?;
    let pem = match source {
        TlsSource::SelfSigned => {
            let made = crate::net::tls::self_signed(&SELF_SIGNED_NAMES)
                .map_err(|e| fail(format!("cannot make a self-signed certificate: {e}")))?;
            let cert = X509::from_pem(made.cert.as_bytes());
            let key = PKey::private_key_from_pem(made.key.as_bytes());
            cert.and_then(|c| b.set_certificate(&c))
                .and(key)
                .and_then(|k| b.set_private_key(&k))
                .map_err(|e| fail(format!("cannot use the self-signed certificate: {e}")))?;
            Pem::Text { cert: made.cert, key: made.key }
        }
        TlsSource::Pem { cert, key } => {
            let text = std::fs::read(cert)
                .map_err(|e| fail(format!("cannot read certificates from {}: {e}", cert.display())))?;
            let chain = X509::stack_from_pem(&text).unwrap_or_default();
            let Some((leaf, rest)) = chain.split_first() else {
                return Err(fail(format!("no certificate in {}", cert.display())));
            };
            b.set_certificate(leaf).map_err(|e| fail(format!("unusable certificate in {}: {e}", cert.display())))?;
            for c in rest {
                b.add_extra_chain_cert(c.clone())
                    .map_err(|e| fail(format!("unusable certificate in {}: {e}", cert.display())))?;
            }
            let text = std::fs::read(key)
                .map_err(|e| fail(format!("cannot read a private key from {}: {e}", key.display())))?;
            let der = PKey::private_key_from_pem(&text).map_err(|_| {
                fail(format!("cannot read a private key from {}: no PEM private key in it", key.display()))
            })?;
            b.set_private_key(&der).map_err(|e| fail(format!("unusable key in {}: {e}", key.display())))?;
            Pem::Files { cert: cert.clone(), key: key.clone() }
        }
    };
    b.check_private_key().map_err(|_| fail("unusable certificate or key: the key is not the certificate's".into()))?;
    // A client offering neither is refused with TLS's no_application_protocol alert.
    b.set_alpn_select_callback(|_, offered| select_next_proto(ALPN, offered).ok_or(AlpnError::ALERT_FATAL));
    Ok((ServerTls(b.build()), pem))
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

/// TCP plus a BoringSSL server session.
pub(super) struct TlsConn {
    tls: SslStream<Wire<TcpStream>>,
    /// The handshake is done.
    up: bool,
    /// Plaintext written before the handshake was done, sent once it is.
    early: Vec<u8>,
}

/// The most plaintext a TLS record carries: slices written together up to this are joined
/// into one record.
const RECORD: usize = 16 * 1024;

thread_local! {
    /// Where a write's small slices are joined: the thread's, so no connection holds one.
    static JOINED: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

impl ServerStream {
    /// The stream for an accepted (and registered) socket: TLS with `config`; `None` if a
    /// session cannot be started.
    pub(super) fn new(sock: TcpStream, config: Option<&ServerTls>) -> Option<ServerStream> {
        match config {
            None => Some(ServerStream::Plain(sock)),
            Some(config) => {
                let ssl = boring::ssl::Ssl::new(config.0.context()).ok()?;
                crate::net::tls::shed_config(&ssl);
                let tls = SslStream::new(ssl, Wire::new(sock)).ok()?;
                Some(ServerStream::Tls(Box::new(TlsConn { tls, up: false, early: Vec::new() })))
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
            ServerStream::Tls(t) => t.flush().map(drop),
        }
    }

    /// Ends our sending side (after a TLS close_notify).
    pub(super) fn shutdown(&mut self, how: Shutdown) -> io::Result<()> {
        match self {
            ServerStream::Plain(s) => s.shutdown(how),
            ServerStream::Unix(s) => s.shutdown(how),
            ServerStream::Tls(t) => {
                // Best effort: the peer learns of the end from the FIN too.
                if t.up {
                    let _ = wire::call(&mut t.tls, SslStream::shutdown);
                    let _ = t.flush();
                }
                t.tls.get_ref().sock.shutdown(how)
            }
        }
    }
}

impl TlsConn {
    /// Sends buffered TLS records: `Ok(true)` when none is left.
    fn flush(&mut self) -> io::Result<bool> {
        self.tls.get_mut().flush()
    }

    /// Moves the handshake on; `Ok(true)` once it is done (and what was written early is sent).
    fn handshake(&mut self) -> io::Result<bool> {
        let step = wire::call(&mut self.tls, SslStream::accept);
        // The handshake's answer, or the alert of a failure, goes out either way.
        let flushed = self.flush();
        match step {
            Ok(()) => self.up = true,
            Err(e) if blocked(&e) => return flushed.map(|_| false),
            Err(e) => return Err(wire::io_error(e)),
        }
        if !self.early.is_empty() {
            let early = std::mem::take(&mut self.early);
            write_all(&mut self.tls, &early)?;
            self.flush()?;
        }
        Ok(true)
    }

    /// Accepts plaintext once earlier records are out; `WouldBlock` while they are not.
    fn send(&mut self, bufs: &[IoSlice<'_>]) -> io::Result<usize> {
        if !self.flush()? {
            return Err(io::ErrorKind::WouldBlock.into());
        }
        let n = bufs.iter().map(|b| b.len()).sum();
        if !self.up {
            // Before the handshake is done (an h2 server's SETTINGS): kept, and sent when it is.
            bufs.iter().for_each(|b| self.early.extend_from_slice(b));
            return Ok(n);
        }
        match bufs {
            [one] => write_all(&mut self.tls, one)?,
            _ if n <= RECORD => JOINED.with_borrow_mut(|joined| {
                // A response's head and body in one record, as one write of theirs would be.
                joined.clear();
                bufs.iter().for_each(|b| joined.extend_from_slice(b));
                write_all(&mut self.tls, joined)
            })?,
            _ => bufs.iter().try_for_each(|b| write_all(&mut self.tls, b))?,
        }
        // What the socket does not take now goes out with the next write or writable edge.
        self.flush()?;
        Ok(n)
    }
}

/// Encrypts all of `data` into the wire's buffer.
fn write_all(tls: &mut SslStream<Wire<TcpStream>>, data: &[u8]) -> io::Result<()> {
    wire::encrypt(tls, data).map_err(wire::io_error)
}

impl Read for ServerStream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let t = match self {
            ServerStream::Plain(s) => return s.read(buf),
            ServerStream::Unix(s) => return s.read(buf),
            ServerStream::Tls(t) => t,
        };
        if !t.up && !t.handshake()? {
            return Err(io::ErrorKind::WouldBlock.into());
        }
        wire::read(&mut t.tls, buf)
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
