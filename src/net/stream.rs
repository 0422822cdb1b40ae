//! A non-blocking client stream, plain or TLS, with one interface for the engine.
//!
//! An enum rather than a trait object: the engine calls `read`/`write` on every request and the
//! match is cheaper and clearer than dynamic dispatch. TLS (BoringSSL) runs over the socket
//! behind a [`Wire`]'s buffers, driven by the engine's events: the handshake is part of
//! connecting and latency never includes it.

use std::io::{self, Read, Write};
use std::net::{IpAddr, SocketAddr};
use std::os::fd::AsRawFd;
use std::time::Instant;

use boring::ssl::{ErrorCode, SslStream};
use mio::net::TcpStream;

use super::throttle::{Throttles, Way};
use super::tls::{TlsError, TlsSetup};
use super::wire::{self, blocked, Wire};

/// Why a connection could not be established.
#[derive(Debug, thiserror::Error)]
pub enum ConnectError {
    /// The TCP connect failed (refused, unreachable, reset).
    #[error("{0}")]
    Io(#[from] io::Error),
    /// The TLS handshake failed.
    #[error("{0}")]
    Tls(TlsError),
    /// The peer closed during the TLS handshake.
    #[error("connection closed during the TLS handshake")]
    ClosedInHandshake,
}

/// How a connection was made, as its transport knows it: what `--trace` shows of the
/// exchange that opened it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Made {
    /// TCP, and when its TLS handshake began (over TLS).
    Tcp(Option<Instant>),
    /// QUIC, whose handshake took this long, microseconds.
    Quic(u64),
}

/// A client connection to the target, and the slow client's throttles when it has them.
#[derive(Debug)]
pub struct Stream {
    io: Io,
    /// `--read-rate`, `--write-rate`: boxed, so a connection without them stays small.
    pace: Option<Box<Throttles>>,
}

/// The socket under a [`Stream`].
#[derive(Debug)]
enum Io {
    /// Plain TCP.
    Plain(TcpStream),
    /// TLS over TCP.
    Tls(Box<TlsStream>),
    /// A Unix-domain socket (`--unix-socket`), plain.
    Unix(mio::net::UnixStream),
}

/// TCP plus a BoringSSL client session.
#[derive(Debug)]
pub struct TlsStream {
    tls: SslStream<Wire<TcpStream>>,
    tcp_up: bool,
    /// When TCP came up and the handshake began.
    tcp_at: Option<Instant>,
}

impl Stream {
    /// Starts a non-blocking connect, from `source` when given, throttled by `pace` when
    /// given; completion is reported by [`Stream::poll_connect`].
    pub fn connect(
        addr: SocketAddr,
        source: Option<IpAddr>,
        tls: Option<&TlsSetup>,
        pace: Option<Throttles>,
    ) -> Result<Stream, ConnectError> {
        let recv_buffer = pace.as_ref().and_then(Throttles::recv_buffer);
        let sock = match (source, recv_buffer) {
            (None, None) => TcpStream::connect(addr)?,
            _ => connect_from(source, recv_buffer, addr)?,
        };
        // Requests are small and latency matters more than packet count.
        sock.set_nodelay(true)?;
        let io = match tls {
            None => Io::Plain(sock),
            Some(setup) => {
                let ssl = setup.session().map_err(ConnectError::Tls)?;
                let tls = SslStream::new(ssl, Wire::new(sock)).map_err(|e| ConnectError::Tls(e.into()))?;
                Io::Tls(Box::new(TlsStream { tls, tcp_up: false, tcp_at: None }))
            }
        };
        Ok(Stream { io, pace: pace.map(Box::new) })
    }

    /// Starts a non-blocking connect to the Unix-domain socket at `path`, throttled by `pace`
    /// when given.
    pub fn connect_unix(path: &std::path::Path, pace: Option<Throttles>) -> Result<Stream, ConnectError> {
        let io = Io::Unix(mio::net::UnixStream::connect(path)?);
        Ok(Stream { io, pace: pace.map(Box::new) })
    }

    /// The socket, for registering with the poller.
    pub fn socket(&mut self) -> &mut dyn mio::event::Source {
        match &mut self.io {
            Io::Plain(s) => s,
            Io::Tls(t) => &mut t.tls.get_mut().sock,
            Io::Unix(s) => s,
        }
    }

    /// Advances connecting on any event (`writable`: the event said so): `Ok(true)` once
    /// requests may be sent.
    pub fn poll_connect(&mut self, writable: bool) -> Result<bool, ConnectError> {
        match &mut self.io {
            Io::Plain(s) => tcp_connected(s, writable),
            Io::Unix(s) => unix_connected(s, writable),
            Io::Tls(t) => {
                if !t.tcp_up {
                    t.tcp_up = tcp_connected(&t.tls.get_ref().sock, writable)?;
                    if !t.tcp_up {
                        return Ok(false);
                    }
                    t.tcp_at = Some(Instant::now());
                }
                t.handshake()
            }
        }
    }

    /// When TCP came up and the TLS handshake began (TLS only): what `--trace` splits a
    /// connect's time at.
    pub fn tls_began(&self) -> Option<Instant> {
        match &self.io {
            Io::Tls(t) => t.tcp_at,
            _ => None,
        }
    }

    /// The protocol the server chose by ALPN (TLS only).
    pub fn alpn(&self) -> Option<&[u8]> {
        match &self.io {
            Io::Plain(_) | Io::Unix(_) => None,
            Io::Tls(t) => t.tls.ssl().selected_alpn_protocol(),
        }
    }

    /// Whether a read shorter than the buffer proves the socket is drained (plain TCP: yes;
    /// TLS: when the socket's last read was short and BoringSSL and the wire hold nothing
    /// unread, which spares a `read` that would see EAGAIN, as plain TCP's short read does).
    pub fn short_read_drains(&self) -> bool {
        match &self.io {
            Io::Plain(_) | Io::Unix(_) => true,
            Io::Tls(t) => t.tls.get_ref().drained() && t.tls.ssl().pending() == 0,
        }
    }

    /// Reads plaintext; `Ok(0)` is end of stream. A slow reader whose budget is spent reads
    /// nothing (`WouldBlock`) until its wake.
    pub fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let Some(pace) = self.pace.as_deref_mut().filter(|p| p.limits(Way::Read)) else {
            return self.io.read(buf);
        };
        let allowed = pace.allowance(Way::Read).ok_or(io::ErrorKind::WouldBlock)?;
        let len = allowed.min(buf.len());
        let n = self.io.read(&mut buf[..len])?;
        pace.spend(Way::Read, n);
        if n == allowed {
            // Spent: the wake is set now, since a short read ends the caller's loop before it
            // would ask again.
            pace.allowance(Way::Read);
        }
        Ok(n)
    }

    /// Writes plaintext; for TLS the bytes are accepted whole as records and [`Stream::flush`] must
    /// report them sent. A slow sender writes at most its budget, then nothing (`WouldBlock`)
    /// until its wake.
    pub fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        let Some(pace) = self.pace.as_deref_mut().filter(|p| p.limits(Way::Write)) else {
            return self.io.write(data);
        };
        let allowed = pace.allowance(Way::Write).ok_or(io::ErrorKind::WouldBlock)?;
        let n = self.io.write(&data[..allowed.min(data.len())])?;
        pace.spend(Way::Write, n);
        Ok(n)
    }

    /// Sends `pages` from byte `from` by reference; `None` over TLS, whose bytes must be
    /// encrypted, and for a slow sender, whose bytes go a budget at a time (the caller
    /// writes them instead).
    pub fn send_pages(&mut self, pages: &super::pages::Pages, from: usize) -> Option<io::Result<usize>> {
        if self.pace.as_ref().is_some_and(|p| p.limits(Way::Write)) {
            return None;
        }
        match &mut self.io {
            Io::Plain(s) => Some(pages.send(s, from)),
            Io::Unix(s) => Some(pages.send(s, from)),
            Io::Tls(_) => None,
        }
    }

    /// Sends buffered ciphertext; `Ok(true)` when nothing is left to send.
    pub fn flush(&mut self) -> io::Result<bool> {
        match &mut self.io {
            Io::Plain(_) | Io::Unix(_) => Ok(true),
            Io::Tls(t) => t.flush(),
        }
    }
}

impl Io {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Io::Plain(s) => s.read(buf),
            Io::Unix(s) => s.read(buf),
            Io::Tls(t) => t.read(buf),
        }
    }

    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        match self {
            Io::Plain(s) => s.write(data),
            Io::Unix(s) => s.write(data),
            Io::Tls(t) => t.write(data),
        }
    }
}

/// Connects from a chosen local address, or with a small receive buffer (a slow reader's,
/// set before the SYN so the window it offers is small from the start). The port is left to
/// `connect` (IP_BIND_ADDRESS_NO_PORT): a plain `bind` would reserve a port for every source
/// address, so each extra address would not add ports; this way a port is shared by every
/// 4-tuple that stays unique.
fn connect_from(source: Option<IpAddr>, recv_buffer: Option<usize>, addr: SocketAddr) -> io::Result<TcpStream> {
    use socket2::{Domain, Socket, Type};
    // socket2 sets close-on-exec itself.
    let sock = Socket::new(Domain::for_address(addr), Type::STREAM, None)?;
    sock.set_nonblocking(true)?;
    if let Some(size) = recv_buffer {
        sock.set_recv_buffer_size(size)?;
    }
    if let Some(ip) = source {
        bind_no_port(&sock, ip)?;
    }
    match sock.connect(&addr.into()) {
        Ok(()) => {}
        Err(e) if e.raw_os_error() == Some(libc::EINPROGRESS) => {}
        Err(e) => return Err(e),
    }
    Ok(TcpStream::from_std(sock.into()))
}

/// Binds `sock` to `ip`, its port chosen at connect.
fn bind_no_port(sock: &socket2::Socket, ip: IpAddr) -> io::Result<()> {
    if ip.is_ipv4() {
        let on: libc::c_int = 1;
        // SAFETY: the fd is open for the call, and the option value is a live c_int of the size given.
        let rc = unsafe {
            libc::setsockopt(
                sock.as_raw_fd(),
                libc::IPPROTO_IP,
                libc::IP_BIND_ADDRESS_NO_PORT,
                (&on as *const libc::c_int).cast(),
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            )
        };
        if rc != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    sock.bind(&SocketAddr::new(ip, 0).into())
}

fn tcp_connected(s: &TcpStream, writable: bool) -> Result<bool, ConnectError> {
    connected(s.take_error(), writable, || s.peer_addr().map(drop))
}

fn unix_connected(s: &mio::net::UnixStream, writable: bool) -> Result<bool, ConnectError> {
    connected(s.take_error(), writable, || s.peer_addr().map(drop))
}

/// Whether a connecting socket is connected: its pending error, the writable edge, or (without
/// one) whether it has a peer.
fn connected(
    error: io::Result<Option<io::Error>>,
    writable: bool,
    peer: impl FnOnce() -> io::Result<()>,
) -> Result<bool, ConnectError> {
    if let Some(e) = error? {
        return Err(e.into());
    }
    if writable {
        // A connecting socket turns writable once, when the handshake is done; a failure would
        // have been in SO_ERROR. Skipping the getpeername check saves a system call per
        // connection, which counts when every response closes its connection.
        return Ok(true);
    }
    match peer() {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == io::ErrorKind::NotConnected => Ok(false),
        Err(e) => Err(e.into()),
    }
}

impl TlsStream {
    fn flush(&mut self) -> io::Result<bool> {
        self.tls.get_mut().flush()
    }

    fn handshake(&mut self) -> Result<bool, ConnectError> {
        let done = match wire::call(&mut self.tls, SslStream::connect) {
            Ok(()) => true,
            Err(e) if blocked(&e) => false,
            Err(e) if e.ssl_error().is_some() => {
                // Tell the server why (best effort: its alert is in the buffer) before giving up.
                let _ = self.flush();
                return Err(ConnectError::Tls(TlsError::of(self.tls.ssl(), &e)));
            }
            Err(e) if e.code() == ErrorCode::SYSCALL && e.io_error().is_none() => {
                return Err(ConnectError::ClosedInHandshake);
            }
            Err(e) => {
                return Err(match e.into_io_error() {
                    Ok(io) => io.into(),
                    Err(e) => ConnectError::Tls(TlsError::Other(e.to_string())),
                })
            }
        };
        // The handshake's next flight, or the request later: what is left goes on the
        // writable edge.
        self.flush()?;
        Ok(done)
    }

    /// Takes `data` whole as TLS records and sends what the socket takes now.
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        wire::encrypt(&mut self.tls, data).map_err(wire::io_error)?;
        self.flush()?;
        Ok(data.len())
    }

    /// Reads plaintext until the socket would block.
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        wire::read(&mut self.tls, buf)
    }
}
