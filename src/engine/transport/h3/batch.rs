//! Datagrams in and out in batches: `sendmmsg` and `recvmmsg`, one system call for up to
//! [`BATCH`] datagrams, each with its own address (the thread's socket is shared by its
//! connections, so one call carries datagrams of many). quiche puts each request stream in a
//! packet of its own; one `send` each made the kernel's side of a request (system call and
//! socket entry) cost more than all of strain's and quiche's work on it. Neither std nor mio
//! batch datagrams, nor read a socket's error queue, hence libc.

use std::io;
use std::net::SocketAddr;
use std::os::fd::RawFd;

use socket2::SockAddr;

/// Datagrams moved per system call at most.
pub(super) const BATCH: usize = 32;
/// Room for one received datagram: larger than any strain lets a server send (it advertises a
/// smaller max_udp_payload_size), so a datagram that fills it was cut and is dropped.
pub(super) const SLOT: usize = 2048;

/// Sends the datagrams `lens` cuts `buf` into (each starting at a multiple of `stride`), datagram
/// `k` to `to[k]`: how many went (the rest met a full socket buffer, and QUIC's loss recovery
/// sends their frames again). `names` is room for the addresses in the kernel's form, kept by
/// the caller so a send allocates nothing.
pub(super) fn send_batch(
    fd: RawFd,
    buf: &[u8],
    stride: usize,
    lens: &[usize],
    to: &[SocketAddr],
    names: &mut Vec<SockAddr>,
) -> io::Result<usize> {
    let n = lens.len().min(to.len()).min(BATCH);
    if n == 0 {
        return Ok(0);
    }
    names.clear();
    names.extend(to[..n].iter().map(|&a| SockAddr::from(a)));
    // SAFETY: zeroed iovec and mmsghdr are valid values (null pointers, zero lengths).
    let mut iov: [libc::iovec; BATCH] = unsafe { std::mem::zeroed() };
    let mut msgs: [libc::mmsghdr; BATCH] = unsafe { std::mem::zeroed() };
    for k in 0..n {
        let at = k * stride;
        let len = lens[k].min(buf.len().saturating_sub(at));
        iov[k] = libc::iovec { iov_base: buf[at..].as_ptr() as *mut libc::c_void, iov_len: len };
        msgs[k].msg_hdr.msg_iov = &mut iov[k];
        msgs[k].msg_hdr.msg_iovlen = 1;
        msgs[k].msg_hdr.msg_name = names[k].as_ptr() as *mut libc::c_void;
        msgs[k].msg_hdr.msg_namelen = names[k].len();
    }
    let mut sent = 0;
    while sent < n {
        // SAFETY: msgs[sent..n] point at iovecs that point into `buf` and at addresses in
        // `names`, all alive for the call; the kernel only reads them (and writes msg_len).
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
/// to `lens` (a datagram cut short by its slot gets length 0) and their senders to `from`.
/// `Ok(0)`: nothing waiting.
pub(super) fn recv_batch(
    fd: RawFd,
    buf: &mut [u8],
    lens: &mut [usize; BATCH],
    from: &mut [Option<SocketAddr>; BATCH],
) -> io::Result<usize> {
    let n = (buf.len() / SLOT).min(BATCH);
    // SAFETY: zeroed iovec and mmsghdr are valid values (null pointers, zero lengths).
    let mut iov: [libc::iovec; BATCH] = unsafe { std::mem::zeroed() };
    let mut msgs: [libc::mmsghdr; BATCH] = unsafe { std::mem::zeroed() };
    // Left unset (4 KiB a call, a visible share of a wake-up's cost): the kernel writes each
    // name it returns, and only those are read.
    let mut names = [std::mem::MaybeUninit::<libc::sockaddr_storage>::uninit(); BATCH];
    for k in 0..n {
        iov[k] = libc::iovec { iov_base: buf[k * SLOT..].as_mut_ptr() as *mut libc::c_void, iov_len: SLOT };
        msgs[k].msg_hdr.msg_iov = &mut iov[k];
        msgs[k].msg_hdr.msg_iovlen = 1;
        msgs[k].msg_hdr.msg_name = names[k].as_mut_ptr().cast();
        msgs[k].msg_hdr.msg_namelen = std::mem::size_of::<libc::sockaddr_storage>() as libc::socklen_t;
    }
    loop {
        // SAFETY: each iovec points at its own SLOT bytes of `buf` and each name at its own
        // storage, all outliving the call; a null timeout with MSG_DONTWAIT returns at once.
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
            // SAFETY: the kernel wrote msg_namelen bytes of this name (the datagram's sender).
            from[k] = unsafe { address(names[k].as_ptr(), msgs[k].msg_hdr.msg_namelen) };
        }
        return Ok(got);
    }
}

/// The addresses datagrams were refused at (ICMP port unreachable), from the socket's error
/// queue (IP_RECVERR): an unconnected socket learns which of its peers refused only there.
pub(super) fn refused(fd: RawFd) -> Vec<SocketAddr> {
    let mut out = Vec::new();
    // At most this many errors are read per call: each is one datagram that was refused.
    for _ in 0..BATCH {
        let mut data = [0u8; 64];
        let mut control = [0u64; 64];
        // SAFETY: zeroed sockaddr_storage and msghdr are valid values.
        let mut name: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
        let mut iov = libc::iovec { iov_base: data.as_mut_ptr().cast(), iov_len: data.len() };
        let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
        msg.msg_name = (&mut name as *mut libc::sockaddr_storage).cast();
        msg.msg_namelen = std::mem::size_of::<libc::sockaddr_storage>() as libc::socklen_t;
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = control.as_mut_ptr().cast();
        msg.msg_controllen = std::mem::size_of_val(&control);
        // SAFETY: every pointer in `msg` points at a live local of the size given.
        let r = unsafe { libc::recvmsg(fd, &mut msg, libc::MSG_ERRQUEUE | libc::MSG_DONTWAIT) };
        if r < 0 {
            break;
        }
        // SAFETY: the kernel filled `control` up to msg_controllen with well-formed cmsgs; the
        // CMSG macros walk them within that length.
        let mut cmsg = unsafe { libc::CMSG_FIRSTHDR(&msg) };
        while !cmsg.is_null() {
            // SAFETY: `cmsg` is non-null and within `control` (see above).
            let (level, kind) = unsafe { ((*cmsg).cmsg_level, (*cmsg).cmsg_type) };
            let is_err = (level == libc::SOL_IP && kind == libc::IP_RECVERR)
                || (level == libc::SOL_IPV6 && kind == libc::IPV6_RECVERR);
            if is_err {
                // SAFETY: a RECVERR cmsg carries a sock_extended_err; read unaligned.
                let ee: libc::sock_extended_err =
                    unsafe { std::ptr::read_unaligned(libc::CMSG_DATA(cmsg).cast::<libc::sock_extended_err>()) };
                if ee.ee_errno == libc::ECONNREFUSED as u32 {
                    // SAFETY: `name` is initialized storage the kernel filled.
                    out.extend(unsafe { address(&name, msg.msg_namelen) });
                }
            }
            // SAFETY: as above.
            cmsg = unsafe { libc::CMSG_NXTHDR(&msg, cmsg) };
        }
    }
    out
}

/// The socket address at `name` (`len` bytes), if it is IPv4 or IPv6.
///
/// # Safety
/// `name` must point at a sockaddr_storage whose first `len` bytes are initialized.
unsafe fn address(name: *const libc::sockaddr_storage, len: libc::socklen_t) -> Option<SocketAddr> {
    let len = len as usize;
    if len < std::mem::size_of::<libc::sa_family_t>() {
        return None;
    }
    // Only the bytes the family's own struct holds are read, each within `len`.
    match i32::from(std::ptr::read_unaligned(name.cast::<libc::sa_family_t>())) {
        libc::AF_INET if len >= std::mem::size_of::<libc::sockaddr_in>() => {
            let a = std::ptr::read_unaligned(name.cast::<libc::sockaddr_in>());
            let ip = std::net::Ipv4Addr::from(u32::from_be(a.sin_addr.s_addr));
            Some(SocketAddr::from((ip, u16::from_be(a.sin_port))))
        }
        libc::AF_INET6 if len >= std::mem::size_of::<libc::sockaddr_in6>() => {
            let a = std::ptr::read_unaligned(name.cast::<libc::sockaddr_in6>());
            let ip = std::net::Ipv6Addr::from(a.sin6_addr.s6_addr);
            Some(SocketAddr::V6(std::net::SocketAddrV6::new(
                ip,
                u16::from_be(a.sin6_port),
                a.sin6_flowinfo,
                a.sin6_scope_id,
            )))
        }
        _ => None,
    }
}
