//! What BoringSSL reads from and writes to for a non-blocking TLS connection, client or
//! server: the socket behind a buffer each way.
//!
//! Written by hand for speed. BoringSSL reads a TLS record by asking its BIO for exactly the
//! 5 bytes of the header, then exactly the body: straight over a socket that is two `read`
//! system calls per record and a third to learn the socket is drained. Here one `read` fills
//! the buffer and BoringSSL's asks are served from it. Writes are taken
//! whole into the out buffer, as a session's plaintext is accepted whole, and the owner sends
//! them with [`Wire::flush`]: the engine's writes never half-finish a record.

use std::io::{self, Read, Write};

/// The read buffer's first size: small responses fit, and a thousand idle connections hold
/// little.
const FIRST_READ: usize = 4 * 1024;
/// Its size once a read filled it: a full TLS record (16 KiB of plaintext and its framing).
const FULL_READ: usize = 17 * 1024;

/// A socket with a read buffer and a write buffer.
#[derive(Debug)]
pub struct Wire<S> {
    /// The socket.
    pub sock: S,
    /// The read buffer (zeroed once, when it grows); bytes `taken..filled` wait to be taken.
    inbuf: Vec<u8>,
    taken: usize,
    filled: usize,
    /// Bytes to send, from `sent` on.
    outbuf: Vec<u8>,
    sent: usize,
}

impl<S: Read + Write> Wire<S> {
    /// `sock` with empty buffers (allocated when first used).
    pub fn new(sock: S) -> Wire<S> {
        Wire { sock, inbuf: Vec::new(), taken: 0, filled: 0, outbuf: Vec::new(), sent: 0 }
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
        self.outbuf.clear();
        self.sent = 0;
        Ok(true)
    }

    /// Whether bytes wait to be sent.
    pub fn pending(&self) -> bool {
        self.sent < self.outbuf.len()
    }
}

impl<S: Read> Read for Wire<S> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.taken == self.filled {
            if buf.len() >= FULL_READ {
                // Room enough: straight into the caller's buffer.
                return self.sock.read(buf);
            }
            if self.inbuf.is_empty() {
                self.inbuf.resize(FIRST_READ, 0);
            }
            let n = self.sock.read(&mut self.inbuf)?;
            (self.taken, self.filled) = (0, n);
            if n == 0 {
                return Ok(0);
            }
            if n == self.inbuf.len() && n < FULL_READ {
                // More may wait: the next read takes a whole record.
                self.inbuf.resize(FULL_READ, 0);
            }
        }
        let n = buf.len().min(self.filled - self.taken);
        buf[..n].copy_from_slice(&self.inbuf[self.taken..self.taken + n]);
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
        let mut body = [0u8; 6];
        assert_eq!(w.read(&mut body).unwrap(), 6);
        assert_eq!((&head, &body), (b"hello", b"record"));
        assert_eq!(w.sock.calls, 1);
        assert_eq!(w.read(&mut body).unwrap_err().kind(), io::ErrorKind::WouldBlock);
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
