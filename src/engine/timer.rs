//! A microsecond wake-up for paced sends.
//!
//! `epoll_wait` sleeps in whole milliseconds, so a request due 200 µs from now would leave up
//! to a millisecond late and its (corrected) latency would carry our timer's slop. A timerfd in
//! the same epoll set wakes the loop on time; it is armed only when the next paced request is
//! less than a millisecond away and a connection is free to send it, so closed-loop runs never
//! touch it. This is the one place strain calls libc directly: neither std nor mio exposes
//! timerfd.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

/// A one-shot monotonic timer whose expiry makes its fd readable.
#[derive(Debug)]
pub struct Timer {
    fd: OwnedFd,
    /// The clock microsecond it is armed for, if any.
    armed_for: Option<u64>,
}

impl Timer {
    /// Creates a disarmed, non-blocking timer.
    pub fn new() -> io::Result<Timer> {
        // SAFETY: timerfd_create has no pointer arguments; a non-negative result is a new fd we own.
        let fd = unsafe { libc::timerfd_create(libc::CLOCK_MONOTONIC, libc::TFD_NONBLOCK | libc::TFD_CLOEXEC) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: fd is valid and owned by nobody else.
        Ok(Timer { fd: unsafe { OwnedFd::from_raw_fd(fd) }, armed_for: None })
    }

    /// Arms the timer to fire at clock time `at_us` (now is `now_us`), unless it already fires
    /// at or before then.
    pub fn arm(&mut self, at_us: u64, now_us: u64) -> io::Result<()> {
        if self.armed_for.is_some_and(|t| t <= at_us && t > now_us) {
            return Ok(());
        }
        let rel = at_us.saturating_sub(now_us).max(1);
        let spec = libc::itimerspec {
            it_interval: libc::timespec { tv_sec: 0, tv_nsec: 0 },
            it_value: libc::timespec {
                tv_sec: (rel / 1_000_000) as libc::time_t,
                tv_nsec: ((rel % 1_000_000) * 1000) as libc::c_long,
            },
        };
        // SAFETY: the fd is a timerfd we own; spec is a valid itimerspec; old value not wanted.
        if unsafe { libc::timerfd_settime(self.fd.as_raw_fd(), 0, &spec, std::ptr::null_mut()) } < 0 {
            return Err(io::Error::last_os_error());
        }
        self.armed_for = Some(at_us);
        Ok(())
    }

    /// Notes that the timer fired (re-arming resets its expiry count, so it need not be read).
    pub fn fired(&mut self) {
        self.armed_for = None;
    }

    /// The fd to register with the poller.
    pub fn raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}
