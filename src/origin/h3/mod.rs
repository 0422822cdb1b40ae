//! HTTP/3 on the origin (`--tls --http3`): QUIC through quiche on the UDP port with the TCP
//! listener's number and address, with the TLS side's certificate. quiche is sans-I/O: this
//! module owns the UDP socket, hands quiche the datagrams that arrive, sends the ones it makes,
//! and calls it back when its timers are due; `session.rs` answers the requests.
//!
//! Choices, and why:
//! - **One socket, one thread.** The first server thread's event loop owns the UDP socket and
//!   every QUIC connection, registered in its poll set beside its TCP connections (token
//!   [`super::QUIC`]); the other threads serve TCP only. With `SO_REUSEPORT` sockets per
//!   thread the kernel would spread datagrams by address, which holds only while a client
//!   never changes address and needs a hand-off between threads when it does; one owner needs
//!   neither, and one core's worth of QUIC is plenty for an origin under test on one machine.
//! - **Routing by connection id.** A datagram goes to the connection whose id it names. Our id
//!   for a connection is an HMAC of the client's first destination id under a key made at
//!   start, so an Initial the client sends again before it learns our id finds the same
//!   connection instead of opening a second one.
//! - **No Retry.** Address validation by Retry protects a public server from floods with forged
//!   source addresses at the cost of a round trip per connection; an origin under test on
//!   loopback or a lab network does not face them, and quiche still holds an unvalidated client
//!   to three times the bytes it sent. Initials in datagrams under 1,200 bytes are dropped (RFC
//!   9000 14.1), and at most [`MAX_CONNS`] connections are kept.
//! - **Timers.** Each connection has one entry, at the earlier of quiche's timer and its next
//!   held answer (`--delay`, a service time), in a set ordered by time: quiche's timers move
//!   earlier and later as packets come and go, so the entry is replaced, not stacked as in a
//!   heap. The event loop sleeps no later than the first.
//! - **A full socket.** A datagram the socket does not take is kept and sent first on the next
//!   writable edge; connections that had more to send meanwhile wait in a list and are flushed
//!   after it. quiche keeps the rest, so nothing is lost and no datagram is dropped by us.
//!
//! Not carried over from TCP: the header and send timeouts (QUIC's idle timeout ends a silent
//! client, and quiche bounds what one may make the server hold).

mod config;
mod session;

use std::collections::{BTreeSet, HashMap};
use std::io;
use std::mem;
use std::net::SocketAddr;
use std::time::Instant;

use mio::{Interest, Registry, Token};
use quiche::h3::Header;

use super::respond::Site;
use super::{Ctx, Listener, OriginConfig, OriginError};
use session::Session;

/// Longest wait, at the end, for a send-blocked socket to take the connections' closes.
const CLOSE_WAIT: std::time::Duration = std::time::Duration::from_millis(200);

/// Most QUIC connections kept at once; Initials beyond it are dropped until some end.
const MAX_CONNS: usize = 65_536;
/// Smallest datagram that may carry a client's Initial (RFC 9000 14.1).
const MIN_INITIAL: usize = 1200;
/// Datagrams read before the connections they touched are answered and flushed.
const READ_BATCH: usize = 64;
/// Receive buffer: the largest UDP payload there is.
const RECV_BUF: usize = 65_535;
/// Socket buffers asked of the kernel (it caps them at `net.core.[rw]mem_max`): a burst of
/// many clients' datagrams should wait in the socket, not be dropped.
const SOCKET_BUF: usize = 4 << 20;
/// H3_NO_ERROR: the connections still open when the server stops are closed cleanly.
const NO_ERROR: u64 = 0x100;

/// One QUIC connection.
struct Peer {
    conn: quiche::Connection,
    /// HTTP/3, once the handshake is done.
    session: Option<Session>,
    /// Our connection id: its key in [`Quic::ids`].
    id: Box<[u8]>,
    /// Its entry in [`Quic::timers`], if any.
    timer: Option<Instant>,
    /// Listed in [`Quic::waiting`].
    waiting: bool,
}

/// The UDP socket and the QUIC connections of the thread that owns them.
pub(super) struct Quic {
    socket: mio::net::UdpSocket,
    /// The socket's address, for quiche's receive information.
    local: SocketAddr,
    config: quiche::Config,
    h3_config: quiche::h3::Config,
    /// Derives our connection ids (see the module's notes).
    id_key: [u8; 32],
    /// Slab of connections; `free` lists the empty slots.
    conns: Vec<Option<Box<Peer>>>,
    free: Vec<usize>,
    /// Connection id -> slot.
    ids: HashMap<Box<[u8]>, usize>,
    /// One entry per connection with a timer: (when, slot).
    timers: BTreeSet<(Instant, usize)>,
    /// A datagram (its length in `out`) the socket did not take, and where it goes.
    stalled: Option<(usize, SocketAddr)>,
    /// Connections with output behind the stalled datagram.
    waiting: Vec<usize>,
    /// The fixed response's head as HTTP/3 fields, converted once.
    fixed: Vec<Header>,
    recv_buf: Vec<u8>,
    out: Vec<u8>,
}

impl Quic {
    /// HTTP/3 on `udp`, or on the UDP port of `listener`'s address if the caller bound none,
    /// with every response over TCP now advertising it.
    pub(super) fn start(
        listener: &Listener,
        udp: Option<std::net::UdpSocket>,
        site: &mut Site,
        config: &OriginConfig,
    ) -> Result<Quic, OriginError> {
        let Some(addr) = listener.tcp_addr() else {
            return Err(OriginError::Invalid("HTTP/3 needs a TCP listener, not a Unix-domain socket".into()));
        };
        let addr = addr.map_err(|e| OriginError::Quic(format!("HTTP/3: cannot read the listener's address: {e}")))?;
        let Some(pem) = &site.pem else {
            return Err(OriginError::Invalid("HTTP/3 needs TLS (--tls)".into()));
        };
        let quic_config = config::server(pem)?;
        let udp = match udp {
            Some(udp) => Ok(udp),
            None => std::net::UdpSocket::bind(addr),
        };
        let socket = udp
            .and_then(prepare)
            .map_err(|e| OriginError::Quic(format!("cannot listen on UDP {addr} for HTTP/3: {e}")))?;
        // First, so that HTTP/3's own fixed response has the line too, as its documents do.
        site.advertise_h3(addr.port(), config)?;
        Quic::new(socket, quic_config, site)
    }

    /// Serves on `socket` with `config` and the answers of `site`.
    fn new(socket: mio::net::UdpSocket, config: quiche::Config, site: &Site) -> Result<Quic, OriginError> {
        let local = socket.local_addr().map_err(|e| OriginError::Quic(format!("HTTP/3: {e}")))?;
        let mut id_key = [0; 32];
        boring::rand::rand_bytes(&mut id_key)
            .map_err(|_| OriginError::Quic("HTTP/3: no random key for connection ids".into()))?;
        let fixed = site.h2_fixed.fields.iter().map(|(n, v)| Header::new(n, v)).collect();
        Ok(Quic {
            socket,
            local,
            config,
            h3_config: config::h3()?,
            id_key,
            conns: Vec::new(),
            free: Vec::new(),
            ids: HashMap::new(),
            timers: BTreeSet::new(),
            stalled: None,
            waiting: Vec::new(),
            fixed,
            recv_buf: vec![0; RECV_BUF],
            out: vec![0; config::MAX_DATAGRAM],
        })
    }

    /// Registers the socket with a thread's poller, both directions.
    pub(super) fn register(&mut self, registry: &Registry, token: Token) -> io::Result<()> {
        registry.register(&mut self.socket, token, Interest::READABLE | Interest::WRITABLE)
    }

    /// A readiness event on the socket.
    pub(super) fn ready(&mut self, readable: bool, writable: bool, ctx: &mut Ctx<'_>) {
        if writable {
            self.unstall(ctx);
        }
        if readable {
            self.read(ctx);
        }
    }

    /// When the earliest connection timer is due.
    pub(super) fn next_timer(&self) -> Option<Instant> {
        self.timers.first().map(|&(at, _)| at)
    }

    /// Drives the connections whose timer is due: quiche's (loss detection, acknowledgements,
    /// idle) and held answers.
    pub(super) fn fire_timers(&mut self, ctx: &mut Ctx<'_>) {
        let now = Instant::now();
        // Taken first, so a timer set again in the past waits for the next turn of the loop.
        let mut due = Vec::new();
        while let Some(&(at, idx)) = self.timers.first() {
            if at > now {
                break;
            }
            self.timers.pop_first();
            due.push(idx);
        }
        for idx in due {
            let Some(Some(p)) = self.conns.get_mut(idx) else { continue };
            p.timer = None;
            p.conn.on_timeout();
            self.settle(idx, ctx);
        }
    }

    /// Closes every connection (H3_NO_ERROR), so clients still running learn of it at once
    /// instead of waiting out their idle timeout.
    pub(super) fn close_all(&mut self, ctx: &mut Ctx<'_>) {
        for p in self.conns.iter_mut().flatten() {
            let _ = p.conn.close(true, NO_ERROR, b"");
        }
        // A socket that refused a datagram holds every flush back until a writable edge, and
        // the loop that would see one has ended: retry for a moment, or a busy connection's
        // close is never sent and its client waits out the idle timeout.
        let until = std::time::Instant::now() + CLOSE_WAIT;
        loop {
            self.unstall(ctx);
            for idx in 0..self.conns.len() {
                self.flush(idx, ctx);
            }
            if self.stalled.is_none() || std::time::Instant::now() >= until {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
    }

    /// Reads every waiting datagram, a batch at a time, answering and sending for the
    /// connections each batch touched before the next: a busy socket must not hold back the
    /// acknowledgements and answers its first datagrams call for.
    fn read(&mut self, ctx: &mut Ctx<'_>) {
        let mut buf = mem::take(&mut self.recv_buf);
        let mut touched = Vec::new();
        let mut drained = false;
        while !drained {
            for _ in 0..READ_BATCH {
                let (n, from) = match self.socket.recv_from(&mut buf) {
                    Ok(got) => got,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    // WouldBlock: drained. Anything else (an ICMP error reported on the socket)
                    // concerns one datagram sent earlier; the next edge reads on.
                    Err(_) => {
                        drained = true;
                        break;
                    }
                };
                ctx.counters.bytes_read.add(n as u64);
                if let Some(idx) = self.datagram(&mut buf[..n], from, ctx) {
                    if !touched.contains(&idx) {
                        touched.push(idx);
                    }
                }
            }
            for idx in touched.drain(..) {
                self.settle(idx, ctx);
            }
        }
        self.recv_buf = buf;
    }

    /// Hands one datagram to its connection (a new one for a client's first Initial); returns
    /// the connection's slot.
    fn datagram(&mut self, buf: &mut [u8], from: SocketAddr, ctx: &mut Ctx<'_>) -> Option<usize> {
        let len = buf.len();
        let (idx, new) = {
            let hdr = quiche::Header::from_slice(buf, quiche::MAX_CONN_ID_LEN).ok()?;
            match self.lookup(&hdr.dcid) {
                Some(idx) => (idx, false),
                None => (self.accept(&hdr, from, len, ctx)?, true),
            }
        };
        let p = self.conns.get_mut(idx)?.as_mut()?;
        // A packet quiche refuses is dropped; a fatal error closes the connection, which the
        // settling after the read notices.
        let took = p.conn.recv(buf, quiche::RecvInfo { from, to: self.local }).is_ok();
        if new {
            if !took {
                // An Initial that does not decrypt opens nothing: garbage must not hold a
                // connection until its idle timeout.
                self.remove(idx);
                return None;
            }
            ctx.counters.connections.add(1);
        }
        Some(idx)
    }

    /// The slot of the connection a destination id names: ours, or (for a client's repeated
    /// Initial) the client's first one.
    fn lookup(&self, dcid: &[u8]) -> Option<usize> {
        self.ids.get(dcid).or_else(|| self.ids.get(&self.derive(dcid)[..])).copied()
    }

    /// Our connection id for a client whose first destination id was `dcid`.
    fn derive(&self, dcid: &[u8]) -> [u8; quiche::MAX_CONN_ID_LEN] {
        // A keyed hash: ids a client cannot predict, the same for its repeated Initials.
        let mut h = boring::sha::Sha256::new();
        h.update(&self.id_key);
        h.update(dcid);
        let tag = h.finish();
        let mut id = [0; quiche::MAX_CONN_ID_LEN];
        id.copy_from_slice(&tag[..quiche::MAX_CONN_ID_LEN]);
        id
    }

    /// A new connection for a client's first Initial (counted once quiche takes the packet), or
    /// a version negotiation for a version quiche does not speak; `None` when the datagram opens
    /// nothing.
    fn accept(&mut self, hdr: &quiche::Header<'_>, from: SocketAddr, len: usize, ctx: &mut Ctx<'_>) -> Option<usize> {
        if hdr.ty != quiche::Type::Initial {
            return None;
        }
        if !quiche::version_is_supported(hdr.version) {
            if self.stalled.is_none() {
                if let Ok(n) = quiche::negotiate_version(&hdr.scid, &hdr.dcid, &mut self.out) {
                    if let Ok(sent) = self.socket.send_to(&self.out[..n], from) {
                        ctx.counters.bytes_written.add(sent as u64);
                    }
                }
            }
            return None;
        }
        if len < MIN_INITIAL || self.ids.len() >= MAX_CONNS {
            return None;
        }
        let id = self.derive(&hdr.dcid);
        let scid = quiche::ConnectionId::from_ref(&id);
        let conn = quiche::accept(&scid, None, self.local, from, &mut self.config).ok()?;
        let idx = self.free.pop().unwrap_or_else(|| {
            self.conns.push(None);
            self.conns.len() - 1
        });
        let id: Box<[u8]> = id.into();
        self.ids.insert(id.clone(), idx);
        self.conns[idx] = Some(Box::new(Peer { conn, session: None, id, timer: None, waiting: false }));
        Some(idx)
    }

    /// After a connection's input or timer: HTTP/3 starts once the handshake is done, requests
    /// are answered and held answers taken, the output is sent, the timer set again, and a
    /// closed connection dropped.
    fn settle(&mut self, idx: usize, ctx: &mut Ctx<'_>) {
        let Some(Some(p)) = self.conns.get_mut(idx) else { return };
        if p.session.is_none() && p.conn.is_established() {
            p.session = Session::new(&mut p.conn, &self.h3_config, ctx.site.byte_rate);
            if p.session.is_none() {
                let _ = p.conn.close(true, session::INTERNAL_ERROR, b"");
            }
        }
        if let Some(s) = p.session.as_mut() {
            s.events(&mut p.conn, &self.fixed, ctx);
            s.release(&mut p.conn, &self.fixed, ctx);
            s.progress(&mut p.conn, &self.fixed, ctx);
        }
        self.flush(idx, ctx);
        self.rearm(idx);
    }

    /// Sends what a connection has to send, then resets its cut streams (their bytes are out)
    /// and sends those frames too.
    fn flush(&mut self, idx: usize, ctx: &mut Ctx<'_>) {
        let Some(Some(p)) = self.conns.get_mut(idx) else { return };
        if self.stalled.is_some() {
            if !mem::replace(&mut p.waiting, true) {
                self.waiting.push(idx);
            }
            return;
        }
        loop {
            // Done, or a fatal error for which quiche has closed the connection.
            while let Ok((n, info)) = p.conn.send(&mut self.out) {
                match self.socket.send_to(&self.out[..n], info.to) {
                    Ok(sent) => ctx.counters.bytes_written.add(sent as u64),
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                        self.stalled = Some((n, info.to));
                        p.waiting = true;
                        self.waiting.push(idx);
                        return;
                    }
                    // Lost as on the way (an unreachable client): QUIC sends its frames again.
                    Err(_) => {}
                }
            }
            if !p.session.as_mut().is_some_and(|s| s.reset_cut(&mut p.conn)) {
                return;
            }
        }
    }

    /// On a writable edge: the datagram the socket refused, then the connections behind it.
    fn unstall(&mut self, ctx: &mut Ctx<'_>) {
        let Some((n, to)) = self.stalled else { return };
        match self.socket.send_to(&self.out[..n], to) {
            Ok(sent) => ctx.counters.bytes_written.add(sent as u64),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
            Err(_) => {}
        }
        self.stalled = None;
        for idx in mem::take(&mut self.waiting) {
            if let Some(Some(p)) = self.conns.get_mut(idx) {
                p.waiting = false;
                self.flush(idx, ctx);
                self.rearm(idx);
            }
        }
    }

    /// Sets a connection's timer to the earlier of quiche's and its next held answer, or drops
    /// the connection if quiche has closed it.
    fn rearm(&mut self, idx: usize) {
        let Some(Some(p)) = self.conns.get_mut(idx) else { return };
        if p.conn.is_closed() {
            return self.remove(idx);
        }
        let held = p.session.as_ref().and_then(Session::next_due);
        let at = match (p.conn.timeout_instant(), held) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        if at == p.timer {
            return;
        }
        if let Some(old) = mem::replace(&mut p.timer, at) {
            self.timers.remove(&(old, idx));
        }
        if let Some(at) = at {
            self.timers.insert((at, idx));
        }
    }

    /// Forgets a closed connection: its id, timer and slot.
    fn remove(&mut self, idx: usize) {
        let Some(p) = self.conns.get_mut(idx).and_then(Option::take) else { return };
        self.ids.remove(&p.id);
        if let Some(at) = p.timer {
            self.timers.remove(&(at, idx));
        }
        if p.waiting {
            self.waiting.retain(|&w| w != idx);
        }
        self.free.push(idx);
    }
}

/// A bound UDP socket made non-blocking, with large buffers.
fn prepare(socket: std::net::UdpSocket) -> io::Result<mio::net::UdpSocket> {
    let sock = socket2::SockRef::from(&socket);
    // Best effort: the defaults work, only with more drops under a burst.
    let _ = sock.set_recv_buffer_size(SOCKET_BUF);
    let _ = sock.set_send_buffer_size(SOCKET_BUF);
    socket.set_nonblocking(true)?;
    Ok(mio::net::UdpSocket::from_std(socket))
}
