//! A large request kept in a memory file, so the kernel sends it by reference (`sendfile`)
//! instead of copying it from user memory on every send.
//!
//! A 1 MB upload copied into the socket costs the generator a memcpy of 1 MB per request, most
//! of its CPU; `sendfile` from a memfd hands the file's pages to TCP, which keeps them until the
//! peer has them. The file is written once and never changed, so a page in flight cannot change
//! under the receiver (what `vmsplice` of the request's heap memory could not promise) and no
//! completion has to be tracked (what `MSG_ZEROCOPY` needs, and on loopback it copies anyway).

use std::fs::File;
use std::io::{self, Write};
use std::os::fd::{AsRawFd, FromRawFd};

/// Requests at least this big are sent from a memory file. Below it the copy is cheaper than
/// the page references `sendfile` takes (measured in docs/benchmarks.md, "Large uploads").
pub const MIN_BYTES: usize = 64 * 1024;

/// Bytes held in an anonymous memory file.
#[derive(Debug)]
pub struct Pages {
    file: File,
    len: usize,
}

impl Pages {
    /// `bytes` in a new memory file, or `None` when they are too small to gain or the file
    /// cannot be made (the caller then writes from memory as before).
    pub fn of(bytes: &[u8]) -> Option<Pages> {
        if bytes.len() < MIN_BYTES {
            return None;
        }
        Pages::new(bytes).ok()
    }

    fn new(bytes: &[u8]) -> io::Result<Pages> {
        // SAFETY: the name is a NUL-terminated literal; the call only reads it.
        let fd = unsafe { libc::memfd_create(c"strain-request".as_ptr(), libc::MFD_CLOEXEC) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `fd` was just returned open by memfd_create and nothing else owns it.
        let mut file = unsafe { File::from_raw_fd(fd) };
        file.write_all(bytes)?;
        Ok(Pages { file, len: bytes.len() })
    }

    /// The number of bytes held.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether no bytes are held.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Sends bytes `from..` to the socket `to` (non-blocking): how many went, or the error
    /// (`WouldBlock` when the socket's buffer is full).
    pub fn send(&self, to: &impl AsRawFd, from: usize) -> io::Result<usize> {
        let mut offset = from as libc::off_t;
        let count = self.len.saturating_sub(from);
        // SAFETY: both fds are open for the call, and `offset` is a live off_t the kernel
        // updates; the file's position is not used, so threads may share it.
        let n = unsafe { libc::sendfile(to.as_raw_fd(), self.file.as_raw_fd(), &mut offset, count) };
        if n < 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(n as usize)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    #[test]
    fn small_requests_stay_in_memory() {
        assert!(Pages::of(&[b'x'; MIN_BYTES - 1]).is_none());
        assert_eq!(Pages::of(&vec![b'x'; MIN_BYTES]).map(|p| p.len()), Some(MIN_BYTES));
    }

    #[test]
    fn sends_the_bytes_from_any_offset_to_a_socket() {
        let bytes: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
        let pages = Pages::of(&bytes).expect("memfd");
        let (a, mut b) = std::os::unix::net::UnixStream::pair().unwrap();
        let reader = std::thread::spawn(move || {
            let mut got = Vec::new();
            b.read_to_end(&mut got).unwrap();
            got
        });
        let mut sent = 1000;
        while sent < pages.len() {
            sent += pages.send(&a, sent).unwrap();
        }
        drop(a);
        assert_eq!(reader.join().unwrap(), &bytes[1000..]);
    }
}
