//! A non-blocking client stream, plain or TLS, with one interface for the engine.
//!
//! An enum rather than a trait object: the engine calls `read`/`write` on every request and the
//! match is cheaper and clearer than dynamic dispatch. TLS is driven by hand over mio's socket
//! (rustls is sans-I/O), so the handshake is part of connecting and latency never includes it.

use std::io::{self, Read, Write};
use std::net::SocketAddr;

use mio::net::TcpStream;
use rustls::ClientConnection;

use super::tls::{self, TlsSetup};

/// Why a connection could not be established.
#[derive(Debug, thiserror::Error)]
pub enum ConnectError {
    /// The TCP connect failed (refused, unreachable, reset).
    #[error("{0}")]
    Io(#[from] io::Error),
    /// The TLS handshake failed.
    #[error("{}", tls::describe(.0))]
    Tls(rustls::Error),
    /// The peer closed during the TLS handshake.
    #[error("connection closed during the TLS handshake")]
    ClosedInHandshake,
}

/// A client connection to the target.
#[derive(Debug)]
pub enum Stream {
    /// Plain TCP.
    Plain(TcpStream),
    /// TLS over TCP.
    Tls(Box<TlsStream>),
}

/// TCP plus a rustls client session.
#[derive(Debug)]
pub struct TlsStream {
    sock: TcpStream,
    tls: ClientConnection,
    tcp_up: bool,
}

impl Stream {
    /// Starts a non-blocking connect; completion is reported by [`Stream::poll_connect`].
    pub fn connect(addr: SocketAddr, tls: Option<&TlsSetup>) -> Result<Stream, ConnectError> {
        let sock = TcpStream::connect(addr)?;
        // Requests are small and latency matters more than packet count.
        sock.set_nodelay(true)?;
        Ok(match tls {
            None => Stream::Plain(sock),
            Some(setup) => {
                let tls = ClientConnection::new(setup.config.clone(), setup.server_name.clone())
                    .map_err(ConnectError::Tls)?;
                Stream::Tls(Box::new(TlsStream { sock, tls, tcp_up: false }))
            }
        })
    }

    /// The socket, for registering with the poller.
    pub fn socket(&mut self) -> &mut TcpStream {
        match self {
            Stream::Plain(s) => s,
            Stream::Tls(t) => &mut t.sock,
        }
    }

    /// Advances connecting on any event: `Ok(true)` once requests may be sent.
    pub fn poll_connect(&mut self) -> Result<bool, ConnectError> {
        match self {
            Stream::Plain(s) => tcp_connected(s),
            Stream::Tls(t) => {
                if !t.tcp_up {
                    t.tcp_up = tcp_connected(&t.sock)?;
                    if !t.tcp_up {
                        return Ok(false);
                    }
                }
                t.handshake()
            }
        }
    }

    /// Whether a read shorter than the buffer proves the socket is drained (plain TCP: yes;
    /// TLS: no, rustls may hold back a partial record).
    pub fn short_read_drains(&self) -> bool {
        matches!(self, Stream::Plain(_))
    }

    /// Reads plaintext; `Ok(0)` is end of stream.
    pub fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Stream::Plain(s) => s.read(buf),
            Stream::Tls(t) => t.read(buf),
        }
    }

    /// Writes plaintext; for TLS the bytes are accepted into rustls and [`Stream::flush`] must
    /// report them sent.
    pub fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        match self {
            Stream::Plain(s) => s.write(data),
            Stream::Tls(t) => {
                let n = t.tls.writer().write(data)?;
                t.flush()?;
                Ok(n)
            }
        }
    }

    /// Sends buffered ciphertext; `Ok(true)` when nothing is left to send.
    pub fn flush(&mut self) -> io::Result<bool> {
        match self {
            Stream::Plain(_) => Ok(true),
            Stream::Tls(t) => t.flush(),
        }
    }
}

fn tcp_connected(s: &TcpStream) -> Result<bool, ConnectError> {
    if let Some(e) = s.take_error()? {
        return Err(e.into());
    }
    match s.peer_addr() {
        Ok(_) => Ok(true),
        Err(e) if e.kind() == io::ErrorKind::NotConnected => Ok(false),
        Err(e) => Err(e.into()),
    }
}

fn would_block(e: &io::Error) -> bool {
    e.kind() == io::ErrorKind::WouldBlock
}

impl TlsStream {
    fn flush(&mut self) -> io::Result<bool> {
        while self.tls.wants_write() {
            match self.tls.write_tls(&mut self.sock) {
                Ok(_) => {}
                Err(e) if would_block(&e) => return Ok(false),
                Err(e) => return Err(e),
            }
        }
        Ok(true)
    }

    fn handshake(&mut self) -> Result<bool, ConnectError> {
        loop {
            self.flush()?;
            if !self.tls.is_handshaking() {
                return Ok(true);
            }
            if !self.tls.wants_read() {
                return Ok(false);
            }
            match self.tls.read_tls(&mut self.sock) {
                Ok(0) => return Err(ConnectError::ClosedInHandshake),
                Ok(_) => {
                    if let Err(e) = self.tls.process_new_packets() {
                        // Tell the server why (best effort) before giving up.
                        let _ = self.flush();
                        return Err(ConnectError::Tls(e));
                    }
                }
                Err(e) if would_block(&e) => return Ok(false),
                Err(e) => return Err(e.into()),
            }
        }
    }

    /// Drains the socket into rustls until plaintext is available or the socket would block.
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            match self.tls.reader().read(buf) {
                Ok(n) => return Ok(n),
                Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(0),
                Err(e) if would_block(&e) => {}
                Err(e) => return Err(e),
            }
            let eof = self.tls.read_tls(&mut self.sock)? == 0;
            self.tls.process_new_packets().map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
            // Post-handshake messages (tickets, key updates) may need answers.
            self.flush()?;
            if eof {
                return match self.tls.reader().read(buf) {
                    Ok(n) => Ok(n),
                    Err(e) if would_block(&e) || e.kind() == io::ErrorKind::UnexpectedEof => Ok(0),
                    Err(e) => Err(e),
                };
            }
        }
    }
}
