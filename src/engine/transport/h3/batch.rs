//! Datagrams in and out in batches: `sendmmsg` and `recvmmsg`, one system call for up to
//! [`BATCH`] datagrams. quiche puts each request stream in a packet of its own, so with `-m`
//! streams a connection makes that many datagrams per round trip; one `send` each made the
//! kernel's side of a request (system call and socket entry) cost more than all of strain's
//! and quiche's work on it (`strace -c`: one `sendto` and 1.3 `recvfrom` per request).
//! Neither std nor mio batch datagrams, hence libc.

use std::io;
use std::os::fd::RawFd;

/// Datagrams moved per system call at most.
pub(super) const BATCH: usize = 32;
/// Room for one received datagram: larger than any strain lets a server send (it advertises a
/// smaller max_udp_payload_size), so a datagram that fills it was cut and is dropped.
pub(super) const SLOT: usize = 2048;

/// Sends the datagrams `lens` cuts `buf` into (each starting at a multiple of `stride`), on a
/// connected socket: how many went (the rest met a full socket buffer, and QUIC's loss
/// recovery sends their frames again).
pub(super) fn send_batch(fd: RawFd, buf: &[u8], stride: usize, lens: &[usize]) -> io::Result<usize> {
    let n = lens.len().min(BATCH);
    if n == 0 {
        return Ok(0);
    }
    // SAFETY: zeroed iovec and mmsghdr are valid values (null pointers, zero lengths).
    let mut iov: [libc::iovec; BATCH] = unsafe { std::mem::zeroed() };
    let mut msgs: [libc::mmsghdr; BATCH] = unsafe { std::mem::zeroed() };
    for k in 0..n {
        let at = k * stride;
        let len = lens[k].min(buf.len().saturating_sub(at));
        iov[k] = libc::iovec { iov_base: buf[at..].as_ptr() as *mut libc::c_void, iov_len: len };
        msgs[k].msg_hdr.msg_iov = &mut iov[k];
        msgs[k].msg_hdr.msg_iovlen = 1;
    }
    let mut sent = 0;
    while sent < n {
        // SAFETY: msgs[sent..n] point at iovecs that point into `buf`, all alive for the call;
        // the kernel only reads them (and writes msg_len).
        let r = unsafe { libc::sendmmsg(fd, msgs[sent..].as_mut_ptr(), (n - sent) as u32, libc::MSG_DONTWAIT) };
        if r < 0 {
            let e = io::Error::last_os_error();
            return match e.kind() {
                io::ErrorKind::Interrupted => continue,
                io::ErrorKind::WouldBlock if sent > 0 => Ok(sent),
                _ => Err(e),
            };
        }
        sent += r as usize;
    }
    Ok(sent)
}

/// Receives up to [`BATCH`] datagrams into `buf`, datagram `k` at `k * SLOT`; their lengths go
/// to `lens` (a datagram cut short by its slot gets length 0). `Ok(0)`: nothing waiting.
pub(super) fn recv_batch(fd: RawFd, buf: &mut [u8], lens: &mut [usize; BATCH]) -> io::Result<usize> {
    let n = (buf.len() / SLOT).min(BATCH);
    // SAFETY: zeroed iovec and mmsghdr are valid values (null pointers, zero lengths).
    let mut iov: [libc::iovec; BATCH] = unsafe { std::mem::zeroed() };
    let mut msgs: [libc::mmsghdr; BATCH] = unsafe { std::mem::zeroed() };
    for k in 0..n {
        iov[k] = libc::iovec { iov_base: buf[k * SLOT..].as_mut_ptr() as *mut libc::c_void, iov_len: SLOT };
        msgs[k].msg_hdr.msg_iov = &mut iov[k];
        msgs[k].msg_hdr.msg_iovlen = 1;
    }
    loop {
        // SAFETY: each iovec points at its own SLOT bytes of `buf`, which outlives the call;
        // a null timeout with MSG_DONTWAIT returns at once.
        let r = unsafe { libc::recvmmsg(fd, msgs.as_mut_ptr(), n as u32, libc::MSG_DONTWAIT, std::ptr::null_mut()) };
        if r < 0 {
            let e = io::Error::last_os_error();
            match e.kind() {
                io::ErrorKind::Interrupted => continue,
                io::ErrorKind::WouldBlock => return Ok(0),
                _ => return Err(e),
            }
        }
        let got = r as usize;
        for k in 0..got {
            let cut = msgs[k].msg_hdr.msg_flags & libc::MSG_TRUNC != 0;
            lens[k] = if cut { 0 } else { msgs[k].msg_len as usize };
        }
        return Ok(got);
    }
}
