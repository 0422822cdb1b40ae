//! One accepted connection: its socket side ([`Link`]: the stream, readiness, the byte rate and
//! the timers) and the protocol it speaks now ([`Proto`]), each protocol's driver in its own
//! file: HTTP/1 in [`h1`], HTTP/2 in [`super::h2`], a unit's (WebSocket's) in its own folder ([`super::unit`]). Every
//! connection starts as HTTP/1; its first bytes (the HTTP/2 preface) or an upgrade it asks for
//! hand it to another driver for the rest of its life.

mod h1;

use std::time::Instant;

use self::h1::{H1Conn, Switch};
use super::h2::H2Conn;
use super::link::{Expiry, Link, Next};
use super::respond::Site;
use super::tls::ServerStream;
use super::unit::{Driver, Io, Place};
use super::Ctx;
use crate::net::throttle::Throttle;

/// The protocol a connection speaks now. HTTP/1 is inline (most connections stay so); the
/// others are boxed, as few connections become them.
#[allow(clippy::large_enum_variant)] // HTTP/1 is inline on purpose: no allocation per accept.
enum Proto<'r> {
    /// HTTP/1.x requests and responses.
    H1(H1Conn<'r>),
    /// HTTP/2, after the preface or an `Upgrade: h2c`.
    H2(Box<H2Conn>),
    /// A unit's (WebSocket's, after an upgrade), and the unit's place.
    Unit(Box<dyn Driver>, Place),
}

/// One client connection owned by one worker thread.
pub(super) struct Conn<'r> {
    link: Link,
    proto: Proto<'r>,
    /// Identifies this connection in timers that outlive it (its slot may be reused).
    pub(super) generation: u64,
    /// The earliest timer the event loop has set for this connection and not yet fired.
    pub(super) armed: Option<Instant>,
}

impl<'r> Conn<'r> {
    /// A connection that has just been accepted and registered.
    pub(super) fn new(stream: ServerStream, byte_rate: Option<u64>, generation: u64) -> Self {
        let link = Link {
            stream,
            // The first event after registration reports what is there; assuming readable
            // costs at most one read that would block.
            readable: true,
            throttle: byte_rate.map(Throttle::new),
            wake: None,
            write_stalled: None,
        };
        Conn { link, proto: Proto::H1(H1Conn::default()), generation, armed: None }
    }

    /// Records a readiness edge for reading.
    pub(super) fn set_readable(&mut self) {
        self.link.readable = true;
    }

    /// Why the connection should just be dropped now, if it should: it lingered too long, a
    /// request head has been arriving for longer than the header timeout (slowloris), or the
    /// client has taken none of our output for longer than the send timeout.
    pub(super) fn expired(&self, now: Instant, site: &Site) -> Option<Expiry> {
        match &self.proto {
            Proto::H1(h1) => h1.expired(&self.link, now, site),
            _ if self.link.send_expired(now, site.send_timeout) => Some(Expiry::Send),
            _ => None,
        }
    }

    /// When to drive this connection again even without an event: its output waits for a
    /// response delay or the byte rate.
    pub(super) fn wake(&self) -> Option<Instant> {
        self.link.wake
    }

    /// Makes all the progress the socket and the clock allow: write, read, answer, repeat.
    pub(super) fn drive(&mut self, buf: &mut [u8], ctx: &mut Ctx<'r>) -> Next {
        let switch = match &mut self.proto {
            Proto::H1(h1) => match h1.drive(&mut self.link, buf, ctx) {
                Ok(next) => return next,
                Err(switch) => switch,
            },
            Proto::H2(h2) => return h2.drive(&mut self.link, buf, ctx),
            Proto::Unit(driver, place) => return driver.drive(&mut Io::new(&mut self.link, buf, ctx, *place)),
        };
        self.switch(switch, buf, ctx)
    }

    /// Hands the connection to the driver of the protocol it switched to, and drives it.
    #[cold]
    fn switch(&mut self, switch: Switch, buf: &mut [u8], ctx: &mut Ctx<'r>) -> Next {
        let proto = match switch {
            // The first `n` bytes of `buf` were read and are HTTP/2's preface.
            Switch::Preface(n) => {
                let Some(mut h2) = H2Conn::new(ctx.site) else { return Next::Close };
                if !h2.receive(&buf[..n], ctx) {
                    return Next::Close;
                }
                Proto::H2(h2)
            }
            // `101 Switching Protocols`, and the request is stream 1.
            Switch::H2c(upgrade) => match H2Conn::upgraded(*upgrade, ctx) {
                Some(h2) => Proto::H2(h2),
                None => return Next::Close,
            },
            Switch::Unit(driver, place) => Proto::Unit(driver, place),
        };
        self.proto = proto;
        self.drive(buf, ctx)
    }

    /// Queues the server's own message `seq` on a unit's connection and writes it; `None` if
    /// it is not one.
    pub(super) fn push(&mut self, seq: u64, buf: &mut [u8], ctx: &mut Ctx<'r>) -> Option<Next> {
        let Proto::Unit(driver, place) = &mut self.proto else { return None };
        let mut io = Io::new(&mut self.link, buf, ctx, *place);
        driver.push(seq, &mut io.serve);
        Some(driver.drive(&mut io))
    }
}
