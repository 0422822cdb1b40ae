//! What a transport with a connection of its own per slot may share beyond [`super::PerSlot`]:
//! connects opened at a pace ([`Pace`]: WebSocket's `--connect-rate`, Server-Sent Events' `-R`)
//! and a connection's queued bytes written out ([`write_out`]).

use std::collections::VecDeque;
use std::io;

use crate::net::stream::Stream;

/// Connects spread evenly in time, this thread's share of a rate; the slots wait their turn
/// in order.
#[derive(Debug, Default)]
pub struct Pace {
    /// A connect every this many microseconds (0: at once)...
    every_us: u64,
    /// ...the next at this time...
    next_us: u64,
    /// ...and these slots wait for their turn.
    waiting: VecDeque<usize>,
}

impl Pace {
    /// `per_s` connects a second in all (`None`: at once), of which thread takes its share
    /// of `threads`.
    pub fn new(per_s: Option<f64>, threads: usize) -> Pace {
        let every_us = per_s.map_or(0, |r| (threads.max(1) as f64 * 1e6 / r.max(1e-6)).round().max(1.0) as u64);
        Pace { every_us, ..Pace::default() }
    }

    /// Whether slot `i` may connect `now`; if not, it waits its turn.
    pub fn admit(&mut self, now: u64, i: usize) -> bool {
        if self.every_us == 0 {
            return true;
        }
        if !self.waiting.is_empty() || now < self.next_us {
            self.waiting.push_back(i);
            return false;
        }
        self.next_us = now + self.every_us;
        true
    }

    /// When the next waiting slot's turn comes, if one waits.
    pub fn next_deadline(&self) -> Option<u64> {
        (!self.waiting.is_empty()).then_some(self.next_us)
    }

    /// The next waiting slot whose turn came by `now`.
    pub fn due(&mut self, now: u64) -> Option<usize> {
        if self.waiting.is_empty() || now < self.next_us {
            return None;
        }
        self.next_us += self.every_us;
        self.waiting.pop_front()
    }
}

/// Writes `out` from `*written` on to `stream` until it is all out or the socket is full;
/// false if the socket failed.
pub fn write_out(stream: &mut Stream, out: &[u8], written: &mut usize) -> bool {
    while *written < out.len() {
        match stream.write(&out[*written..]) {
            Ok(0) => return false,
            Ok(n) => *written += n,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return true,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => return false,
        }
    }
    stream.flush().is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connects_wait_their_turn_in_order() {
        // 1,000 a second over 2 threads: this thread's every 2 ms.
        let mut p = Pace::new(Some(1000.0), 2);
        assert!(p.admit(0, 0));
        assert!(!p.admit(100, 1));
        assert!(!p.admit(100, 2));
        assert_eq!(p.next_deadline(), Some(2_000));
        assert_eq!(p.due(1_999), None);
        assert_eq!(p.due(2_000), Some(1));
        assert_eq!(p.due(3_000), None);
        assert_eq!(p.due(4_000), Some(2));
        assert_eq!(p.next_deadline(), None);
        assert!(Pace::new(None, 2).admit(0, 7), "no rate: at once");
    }
}
