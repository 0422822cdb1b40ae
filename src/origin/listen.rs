//! Where the origin listens: a TCP port (with, for HTTP/3, the UDP port of the same number), or
//! a Unix-domain socket (`--listen unix:PATH`). Each server thread accepts on its own clone;
//! what it accepts becomes a [`ServerStream`].

use std::io;

use mio::net::{TcpListener, UnixListener};
use mio::{Interest, Registry, Token};

use super::tls::{ServerStream, ServerTls};

/// A bound listening socket.
#[derive(Debug)]
pub enum Listener {
    /// TCP.
    Tcp(std::net::TcpListener),
    /// A Unix-domain socket (plain HTTP only).
    Unix(std::os::unix::net::UnixListener),
    /// TCP, and a UDP socket bound to the same address for HTTP/3 ([`super::OriginConfig::http3`];
    /// without it the UDP socket is closed). Bound by the caller with the TCP one, so that a
    /// client's first datagrams wait in it until the server runs instead of being refused.
    TcpAndUdp(std::net::TcpListener, std::net::UdpSocket),
}

impl From<std::net::TcpListener> for Listener {
    fn from(l: std::net::TcpListener) -> Listener {
        Listener::Tcp(l)
    }
}

impl Listener {
    /// The listener alone, and the UDP socket that came with it.
    pub(super) fn split_udp(self) -> (Listener, Option<std::net::UdpSocket>) {
        match self {
            Listener::TcpAndUdp(tcp, udp) => (Listener::Tcp(tcp), Some(udp)),
            other => (other, None),
        }
    }

    /// Non-blocking accepts (O_NONBLOCK is on the shared file description: it covers every
    /// clone).
    pub(super) fn set_nonblocking(&self) -> io::Result<()> {
        match self {
            Listener::Tcp(l) | Listener::TcpAndUdp(l, _) => l.set_nonblocking(true),
            Listener::Unix(l) => l.set_nonblocking(true),
        }
    }

    /// The address of a TCP listener, where HTTP/3 listens too; `None` for a Unix-domain socket.
    pub(super) fn tcp_addr(&self) -> Option<io::Result<std::net::SocketAddr>> {
        match self {
            Listener::Tcp(l) | Listener::TcpAndUdp(l, _) => Some(l.local_addr()),
            Listener::Unix(_) => None,
        }
    }

    /// A clone for one server thread.
    pub(super) fn for_thread(&self) -> io::Result<ThreadListener> {
        Ok(match self {
            Listener::Tcp(l) | Listener::TcpAndUdp(l, _) => ThreadListener::Tcp(TcpListener::from_std(l.try_clone()?)),
            Listener::Unix(l) => ThreadListener::Unix(UnixListener::from_std(l.try_clone()?)),
        })
    }
}

/// One server thread's listener.
pub(super) enum ThreadListener {
    Tcp(TcpListener),
    Unix(UnixListener),
}

impl ThreadListener {
    /// Registers for accepts with a thread's poller.
    pub(super) fn register(&mut self, registry: &Registry, token: Token) -> io::Result<()> {
        match self {
            ThreadListener::Tcp(l) => registry.register(l, token, Interest::READABLE),
            ThreadListener::Unix(l) => registry.register(l, token, Interest::READABLE),
        }
    }

    /// Accepts one connection, registered with `registry` as `token` (both directions), as a
    /// stream speaking TLS with `tls`; `Ok(None)` when it had to be dropped (it could not be
    /// registered, or a TLS session could not be started).
    pub(super) fn accept(
        &mut self,
        registry: &Registry,
        token: Token,
        tls: Option<&ServerTls>,
    ) -> io::Result<Option<ServerStream>> {
        let interest = Interest::READABLE | Interest::WRITABLE;
        match self {
            ThreadListener::Tcp(l) => {
                let (mut s, _) = l.accept()?;
                // Nagle would hold a small response until the previous one is acknowledged.
                let _ = s.set_nodelay(true);
                Ok(registry.register(&mut s, token, interest).ok().and_then(|()| ServerStream::new(s, tls)))
            }
            ThreadListener::Unix(l) => {
                let (mut s, _) = l.accept()?;
                Ok(registry.register(&mut s, token, interest).ok().map(|()| ServerStream::Unix(s)))
            }
        }
    }
}
