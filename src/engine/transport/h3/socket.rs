//! The thread's UDP sockets, each shared by the QUIC connections from one local address: the
//! datagrams of all of them go out together, one `sendmmsg` for up to [`BATCH`] across
//! connections, and come in together, routed to their connection by the connection id strain
//! gave it (its first four bytes are the link's number).
//!
//! One connected socket per link left a batch holding about one datagram at `-m 1` (a link
//! has one packet to send per round trip), so a request cost two system calls; shared, a
//! loop turn's datagrams of every link go in one. An unconnected socket hears of an ICMP port
//! unreachable only through its error queue (IP_RECVERR), which names the refused peer.

use std::io;
use std::net::{IpAddr, SocketAddr};
use std::os::fd::AsRawFd;

use mio::{Interest, Registry, Token};

use super::batch::{self, BATCH};
use super::MAX_DATAGRAM;

/// Bytes of the connection ids strain chooses: the link's number, then random bytes.
pub(super) const SCID_LEN: usize = 16;
/// Receive and send buffer asked for each shared socket: a burst of every connection's
/// datagrams must fit (the kernel caps it at net.core.rmem_max / wmem_max).
const SOCKET_BUFFER: usize = 4 << 20;

/// One socket and the local address its connections are bound to.
struct Shared {
    socket: mio::net::UdpSocket,
    /// `--source-addr`'s address, if any.
    source: Option<IpAddr>,
    v6: bool,
    local: SocketAddr,
}

/// A thread's shared sockets and the datagrams waiting to go out on one of them.
pub(super) struct Sockets {
    shared: Vec<Shared>,
    /// Datagrams queued, one every [`MAX_DATAGRAM`] bytes.
    out: Vec<u8>,
    lens: [usize; BATCH],
    to: [SocketAddr; BATCH],
    queued: usize,
    /// The socket the queued datagrams go out on.
    on: usize,
    /// The token of socket 0; socket `k` has `first_token + k`.
    first_token: usize,
    /// The queued datagrams' addresses in the kernel's form (kept for its capacity).
    names: Vec<socket2::SockAddr>,
}

impl Sockets {
    /// No sockets yet; they will be registered from token `first_token` on.
    pub(super) fn new(first_token: usize) -> Sockets {
        let any = SocketAddr::from(([0, 0, 0, 0], 0));
        Sockets {
            shared: Vec::new(),
            out: vec![0; MAX_DATAGRAM * BATCH],
            lens: [0; BATCH],
            to: [any; BATCH],
            queued: 0,
            on: 0,
            first_token,
            names: Vec::with_capacity(BATCH),
        }
    }

    /// The socket, by number, for `token` if it is one of these sockets'.
    pub(super) fn of_token(&self, token: usize) -> Option<usize> {
        token.checked_sub(self.first_token).filter(|&k| k < self.shared.len())
    }

    /// The socket for a connection to `peer` from `source`, made and registered on first use:
    /// its number and local address.
    pub(super) fn for_peer(
        &mut self,
        registry: &Registry,
        peer: SocketAddr,
        source: Option<IpAddr>,
    ) -> io::Result<(usize, SocketAddr)> {
        let v6 = peer.is_ipv6();
        if let Some(k) = self.shared.iter().position(|s| s.source == source && s.v6 == v6) {
            return Ok((k, self.shared[k].local));
        }
        let mut socket = open(source, v6)?;
        let k = self.shared.len();
        registry.register(&mut socket, Token(self.first_token + k), Interest::READABLE)?;
        let local = socket.local_addr()?;
        self.shared.push(Shared { socket, source, v6, local });
        Ok((k, local))
    }

    /// Queues what `conn` has to send on socket `k`, sending a batch whenever one is full.
    pub(super) fn drain(&mut self, k: usize, conn: &mut quiche::Connection) {
        if self.queued > 0 && self.on != k {
            self.flush();
        }
        self.on = k;
        loop {
            let at = self.queued * MAX_DATAGRAM;
            match conn.send(&mut self.out[at..at + MAX_DATAGRAM]) {
                Ok((len, info)) => {
                    self.lens[self.queued] = len;
                    self.to[self.queued] = info.to;
                    self.queued += 1;
                    if self.queued == BATCH {
                        self.flush();
                    }
                }
                Err(_) => break,
            }
        }
    }

    /// Sends the queued datagrams. A full socket buffer loses those that did not go, and
    /// QUIC's loss recovery sends their frames again, as for datagrams lost on the way.
    pub(super) fn flush(&mut self) {
        let n = std::mem::take(&mut self.queued);
        if let Some(s) = self.shared.get(self.on).filter(|_| n > 0) {
            let _ = batch::send_batch(
                s.socket.as_raw_fd(),
                &self.out,
                MAX_DATAGRAM,
                &self.lens[..n],
                &self.to[..n],
                &mut self.names,
            );
        }
    }

    /// Receives a batch on socket `k` (see [`batch::recv_batch`]).
    pub(super) fn recv(
        &self,
        k: usize,
        buf: &mut [u8],
        lens: &mut [usize; BATCH],
        from: &mut [Option<SocketAddr>; BATCH],
    ) -> io::Result<usize> {
        match self.shared.get(k) {
            Some(s) => batch::recv_batch(s.socket.as_raw_fd(), buf, lens, from),
            None => Ok(0),
        }
    }

    /// The peers that refused datagrams from socket `k` (ICMP port unreachable).
    pub(super) fn refused(&self, k: usize) -> Vec<SocketAddr> {
        self.shared.get(k).map(|s| batch::refused(s.socket.as_raw_fd())).unwrap_or_default()
    }

    /// Socket `k`'s local address.
    pub(super) fn local(&self, k: usize) -> Option<SocketAddr> {
        self.shared.get(k).map(|s| s.local)
    }
}

/// A connection id for link `l`: its number, then random bytes (a new connection on the same
/// link gets new ones, so an old connection's late datagrams are not taken for the new one's).
pub(super) fn scid(l: usize) -> Result<[u8; SCID_LEN], String> {
    let mut id = [0u8; SCID_LEN];
    boring::rand::rand_bytes(&mut id[4..]).map_err(|_| "no random connection id".to_string())?;
    id[..4].copy_from_slice(&(l as u32).to_le_bytes());
    Ok(id)
}

/// The link a datagram from a server is for, from its destination connection id: a long
/// header gives the id's length, a short one has strain's own [`SCID_LEN`].
pub(super) fn link_of(datagram: &[u8]) -> Option<(usize, &[u8])> {
    let first = *datagram.first()?;
    let id = if first & 0x80 != 0 {
        let len = usize::from(*datagram.get(5)?);
        datagram.get(6..6 + len)?
    } else {
        datagram.get(1..1 + SCID_LEN)?
    };
    let l = u32::from_le_bytes(id.get(..4)?.try_into().ok()?);
    Some((l as usize, id))
}

/// A non-blocking, unconnected UDP socket from `source` (or any address of the family), with
/// ICMP errors queued (IP_RECVERR) and buffers for every connection's bursts.
fn open(source: Option<IpAddr>, v6: bool) -> io::Result<mio::net::UdpSocket> {
    use socket2::{Domain, Socket, Type};
    let local = match (source, v6) {
        (Some(ip), _) => SocketAddr::new(ip, 0),
        (None, false) => SocketAddr::from(([0, 0, 0, 0], 0)),
        (None, true) => SocketAddr::from(([0u16; 8], 0)),
    };
    let socket = Socket::new(Domain::for_address(local), Type::DGRAM, None)?;
    socket.set_nonblocking(true)?;
    // Best effort: a smaller buffer only drops more datagrams in a burst, which QUIC recovers.
    let _ = socket.set_recv_buffer_size(SOCKET_BUFFER);
    let _ = socket.set_send_buffer_size(SOCKET_BUFFER);
    let (level, name) = if v6 { (libc::SOL_IPV6, libc::IPV6_RECVERR) } else { (libc::SOL_IP, libc::IP_RECVERR) };
    let on: libc::c_int = 1;
    // SAFETY: the fd is open for the call, and the option value is a live c_int of the size given.
    let rc = unsafe {
        libc::setsockopt(
            socket.as_raw_fd(),
            level,
            name,
            (&on as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    socket.bind(&local.into())?;
    Ok(mio::net::UdpSocket::from_std(socket.into()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_datagram_finds_its_link_by_the_id_strain_gave_it() {
        let id = scid(7).unwrap();
        // A short header: the first byte, then the id.
        let mut short = vec![0x40];
        short.extend_from_slice(&id);
        short.extend_from_slice(b"payload");
        assert_eq!(link_of(&short), Some((7, &id[..])));
        // A long header: first byte, version, the id's length, the id.
        let mut long = vec![0xc0, 0, 0, 0, 1, SCID_LEN as u8];
        long.extend_from_slice(&id);
        assert_eq!(link_of(&long), Some((7, &id[..])));
        assert_eq!(link_of(&[0x40, 1, 2]), None);
        assert_eq!(link_of(&[0xc0, 0, 0, 0, 1, 2, 9, 9]), None);
        assert_eq!(link_of(&[]), None);
        assert_ne!(scid(7).unwrap(), id, "each connection gets new random bytes");
    }
}
