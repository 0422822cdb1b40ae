//! What BoringSSL reads from and writes to for a non-blocking TLS connection, client or
//! server: the socket behind a buffer each way.
//!
//! Written by hand for speed and memory. BoringSSL reads a TLS record by asking its BIO for
//! exactly the 5 bytes of the header, then exactly the body: straight over a socket that is two
//! `read` system calls per record and a third to learn the socket is drained. Here one `read`
//! fills a buffer and BoringSSL's asks are served from it. That buffer is the thread's, shared
//! by all its connections ([`SCRATCH`]): a call into a session ([`call`]) reads what it needs,
//! and only bytes it left unread (part of the next record) move to the connection's own buffer,
//! so a thousand idle connections hold no read buffer. Writes are taken whole into the out
//! buffer, as a session's plaintext is accepted whole, and the owner sends them with
//! [`Wire::flush`]: the engine's writes never half-finish a record.

use std::cell::RefCell;
use std::io::{self, Read, Write};

use boring::ssl::{ErrorCode, SslStream};

/// The most read from the socket at once: a full TLS record (16 KiB of plaintext and its
/// framing) and more.
const READ_CHUNK: usize = 17 * 1024;

thread_local! {
    /// The read buffer every connection of the thread reads its socket into, during one
    /// [`call`] at a time.
    static SCRATCH: RefCell<Vec<u8>> = RefCell::new(vec![0; READ_CHUNK]);
}

/// A socket with a read buffer and a write buffer.
#[derive(Debug)]
pub struct Wire<S> {
    /// The socket.
    pub sock: S,
    /// Bytes read and not yet taken, `taken..filled`: in [`SCRATCH`] while `lent`, else here.
    kept: Vec<u8>,
    taken: usize,
    filled: usize,
    lent: bool,
    /// The last read of the socket returned less than it asked for: drained as of then.
    short: bool,
    /// Bytes to send, from `sent` on.
    outbuf: Vec<u8>,
    sent: usize,
}

/// Runs `f` on `tls` (a read, a write, a handshake step), then keeps what it left unread of
/// the thread's buffer: every call into a session over a [`Wire`] goes through here.
pub fn call<S: Read + Write, R>(tls: &mut SslStream<Wire<S>>, f: impl FnOnce(&mut SslStream<Wire<S>>) -> R) -> R {
    let r = f(tls);
    tls.get_mut().settle();
    r
}

impl<S: Read + Write> Wire<S> {
    /// `sock` with empty buffers.
    pub fn new(sock: S) -> Wire<S> {
        Wire { sock, kept: Vec::new(), taken: 0, filled: 0, lent: false, short: false, outbuf: Vec::new(), sent: 0 }
    }

    /// Sends what the out buffer holds: `Ok(true)` when all of it is sent, `Ok(false)` when
    /// the socket is full first.
    pub fn flush(&mut self) -> io::Result<bool> {
        while self.sent < self.outbuf.len() {
            match self.sock.write(&self.outbuf[self.sent..]) {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(n) => self.sent += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(false),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        if self.outbuf.capacity() > READ_CHUNK {
            // A large body's records: not held while the connection waits.
            self.outbuf = Vec::new();
        } else {
            self.outbuf.clear();
        }
        self.sent = 0;
        Ok(true)
    }

    /// Whether the socket was drained when last read and every byte read since was taken: as
    /// a plain socket's short read, it means epoll reports the next arrival.
    pub fn drained(&self) -> bool {
        self.short && self.taken == self.filled
    }

    /// Whether bytes wait to be sent.
    pub fn pending(&self) -> bool {
        self.sent < self.outbuf.len()
    }

    /// Moves the bytes not yet taken out of the thread's buffer into the connection's own.
    fn settle(&mut self) {
        if std::mem::take(&mut self.lent) && self.taken < self.filled {
            self.kept.clear();
            SCRATCH.with_borrow(|s| self.kept.extend_from_slice(&s[self.taken..self.filled]));
            (self.taken, self.filled) = (0, self.kept.len());
            // Kept bytes are taken by a later call (a server's first data read with its
            // handshake, taken once the engine reads): the socket may have more by then, and
            // its arrival's edge may be the one that call answers.
            self.short = false;
        }
        if self.taken == self.filled && self.kept.capacity() > 0 {
            // Rare (a record split across reads): not held while the connection waits.
            self.kept = Vec::new();
            (self.taken, self.filled) = (0, 0);
        }
    }
}

impl<S: Read> Read for Wire<S> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.taken == self.filled {
            if buf.len() >= READ_CHUNK {
                // Room enough: straight into the caller's buffer.
                let n = self.sock.read(buf)?;
                self.short = n < buf.len();
                return Ok(n);
            }
            let sock = &mut self.sock;
            let n = SCRATCH.with_borrow_mut(|s| sock.read(s))?;
            (self.taken, self.filled, self.lent, self.short) = (0, n, true, n < READ_CHUNK);
        }
        let n = buf.len().min(self.filled - self.taken);
        let from = self.taken..self.taken + n;
        if self.lent {
            SCRATCH.with_borrow(|s| buf[..n].copy_from_slice(&s[from]));
        } else {
            buf[..n].copy_from_slice(&self.kept[from]);
        }
        self.taken += n;
        Ok(n)
    }
}

impl<S> Write for Wire<S> {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        self.outbuf.extend_from_slice(data);
        Ok(data.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Encrypts all of `data` into `tls`'s wire, which takes every record whole: BoringSSL
/// writes a record a call (the partial-write mode its contexts are made with).
pub fn encrypt<S: Read + Write>(tls: &mut SslStream<Wire<S>>, mut data: &[u8]) -> Result<(), boring::ssl::Error> {
    while !data.is_empty() {
        let n = call(tls, |t| t.ssl_write(data))?;
        data = &data[n..];
    }
    Ok(())
}

/// Reads plaintext from `tls` as a socket does: `Ok(0)` at the peer's close_notify or at its
/// close without one, `WouldBlock` when the socket has nothing more. A post-handshake message
/// read in passing (a ticket, a key update) may leave an answer to send: it is sent.
pub fn read<S: Read + Write>(tls: &mut SslStream<Wire<S>>, buf: &mut [u8]) -> io::Result<usize> {
    let read = match call(tls, |t| t.ssl_read(buf)) {
        Ok(n) => Ok(n),
        Err(e) if e.code() == ErrorCode::ZERO_RETURN => Ok(0),
        Err(e) if e.code() == ErrorCode::SYSCALL && e.io_error().is_none() => Ok(0),
        Err(e) if blocked(&e) => Err(io::ErrorKind::WouldBlock.into()),
        Err(e) => Err(io_error(e)),
    };
    if tls.get_ref().pending() {
        tls.get_mut().flush()?;
    }
    read
}

/// A TLS failure as an I/O error: the socket's own, or BoringSSL's verdict as invalid data.
pub fn io_error(e: boring::ssl::Error) -> io::Error {
    e.into_io_error().unwrap_or_else(|e| io::Error::new(io::ErrorKind::InvalidData, e))
}

/// Whether BoringSSL stopped because the socket would block (not for a failure).
pub fn blocked(e: &boring::ssl::Error) -> bool {
    matches!(e.code(), ErrorCode::WANT_READ | ErrorCode::WANT_WRITE)
        && e.io_error().is_none_or(|io| io.kind() == io::ErrorKind::WouldBlock)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A socket that hands out its bytes in the sizes given, then blocks; takes `room` bytes.
    struct Sock {
        reads: Vec<Vec<u8>>,
        calls: usize,
        room: usize,
        got: Vec<u8>,
    }

    impl Read for Sock {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            self.calls += 1;
            if self.reads.is_empty() {
                return Err(io::ErrorKind::WouldBlock.into());
            }
            let r = self.reads.remove(0);
            buf[..r.len()].copy_from_slice(&r);
            Ok(r.len())
        }
    }

    impl Write for Sock {
        fn write(&mut self, data: &[u8]) -> io::Result<usize> {
            let n = data.len().min(self.room);
            if n == 0 {
                return Err(io::ErrorKind::WouldBlock.into());
            }
            self.room -= n;
            self.got.extend_from_slice(&data[..n]);
            Ok(n)
        }

        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn small_asks_are_served_from_one_socket_read() {
        let sock = Sock { reads: vec![b"hellorecord".to_vec()], calls: 0, room: 0, got: vec![] };
        let mut w = Wire::new(sock);
        let mut head = [0u8; 5];
        assert_eq!(w.read(&mut head).unwrap(), 5);
        assert!(!w.drained(), "bytes wait in the buffer");
        let mut body = [0u8; 6];
        assert_eq!(w.read(&mut body).unwrap(), 6);
        assert_eq!((&head, &body), (b"hello", b"record"));
        assert_eq!(w.sock.calls, 1);
        // A short read, all taken: drained, as a plain socket's short read is.
        assert!(w.drained());
        w.settle();
        assert_eq!(w.kept.capacity(), 0, "nothing held between calls");
        assert_eq!(w.read(&mut body).unwrap_err().kind(), io::ErrorKind::WouldBlock);
    }

    #[test]
    fn bytes_left_unread_by_a_call_are_kept_when_another_connection_reads() {
        let mut a = Wire::new(Sock { reads: vec![b"headNEXT".to_vec()], calls: 0, room: 0, got: vec![] });
        let mut b = Wire::new(Sock { reads: vec![b"other bytes".to_vec()], calls: 0, room: 0, got: vec![] });
        let mut four = [0u8; 4];
        assert_eq!(a.read(&mut four).unwrap(), 4);
        a.settle();
        let mut eleven = [0u8; 11];
        assert_eq!(b.read(&mut eleven).unwrap(), 11);
        b.settle();
        assert!(!a.drained(), "kept bytes say nothing of the socket now");
        assert_eq!(a.read(&mut four).unwrap(), 4);
        assert_eq!(&four, b"NEXT");
        assert!(!a.drained());
        a.settle();
        assert_eq!(a.kept.capacity(), 0);
    }

    #[test]
    fn writes_are_taken_whole_and_sent_as_the_socket_takes_them() {
        let sock = Sock { reads: vec![], calls: 0, room: 4, got: vec![] };
        let mut w = Wire::new(sock);
        assert_eq!(w.write(b"abcdefgh").unwrap(), 8);
        assert!(!w.flush().unwrap());
        assert!(w.pending());
        w.sock.room = 10;
        assert!(w.flush().unwrap());
        assert!(!w.pending());
        assert_eq!(w.sock.got, b"abcdefgh");
    }

    #[test]
    fn the_end_of_the_stream_reads_zero() {
        let sock = Sock { reads: vec![vec![]], calls: 0, room: 0, got: vec![] };
        let mut w = Wire::new(sock);
        assert_eq!(w.read(&mut [0u8; 5]).unwrap(), 0);
    }
}
