//! Request and connect deadlines: one per slot at most, in expiry order.
//!
//! Every deadline is "start + the one --timeout", and starts come in time order, so the order
//! in which deadlines are set is their expiry order: a list in setting order needs no heap.
//! The list is threaded through one node per slot (an intrusive doubly linked list): setting a
//! slot's deadline moves its node to the back. A queue of entries, with stale ones dropped when
//! they reach the front, grew with every request made while the oldest one was still out (at
//! 10,000 connections and a request a second old, a quarter of a million entries, 4 MB); the
//! nodes are allocated once, when the worker is made, and never grow.

/// One deadline.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Deadline {
    /// When it expires, in clock microseconds.
    pub at_us: u64,
    /// The slot it belongs to.
    pub conn: u32,
    /// The slot's generation when it was set: a slot that moved on since (response arrived,
    /// reconnected) no longer has this deadline.
    pub generation: u32,
}

/// No node.
const NIL: u32 = u32::MAX;

/// A slot's place in the list.
#[derive(Debug, Clone, Copy)]
struct Node {
    prev: u32,
    next: u32,
    at_us: u64,
    generation: u32,
    linked: bool,
}

/// Deadlines in expiry order, at most one per slot.
#[derive(Debug)]
pub struct Deadlines {
    nodes: Vec<Node>,
    head: u32,
    tail: u32,
}

impl Deadlines {
    /// Room for `slots` slots' deadlines (the only allocation).
    pub fn new(slots: usize) -> Deadlines {
        let free = Node { prev: NIL, next: NIL, at_us: 0, generation: 0, linked: false };
        Deadlines { nodes: vec![free; slots], head: NIL, tail: NIL }
    }

    /// Sets slot `d.conn`'s deadline, replacing the one it had; `at_us` must not be earlier
    /// than any set before.
    pub fn push(&mut self, d: Deadline) {
        let i = d.conn;
        if self.nodes.get(i as usize).is_none() {
            return;
        }
        self.unlink(i);
        debug_assert!(self.tail == NIL || self.nodes[self.tail as usize].at_us <= d.at_us);
        let tail = self.tail;
        self.nodes[i as usize] = Node { prev: tail, next: NIL, at_us: d.at_us, generation: d.generation, linked: true };
        match tail {
            NIL => self.head = i,
            t => self.nodes[t as usize].next = i,
        }
        self.tail = i;
    }

    /// Removes and returns the front deadline if `live` says it still matters and it has
    /// expired by `now_us`; stale front entries are discarded on the way.
    pub fn pop_expired(&mut self, now_us: u64, live: impl Fn(&Deadline) -> bool) -> Option<Deadline> {
        let front = self.front(&live)?;
        if front.at_us > now_us {
            return None;
        }
        self.unlink(front.conn);
        Some(front)
    }

    /// The earliest live deadline, dropping stale ones in front of it.
    pub fn next(&mut self, live: impl Fn(&Deadline) -> bool) -> Option<u64> {
        self.front(&live).map(|d| d.at_us)
    }

    /// The front deadline once stale ones are dropped.
    fn front(&mut self, live: &impl Fn(&Deadline) -> bool) -> Option<Deadline> {
        while self.head != NIL {
            let i = self.head;
            let n = self.nodes[i as usize];
            let d = Deadline { at_us: n.at_us, conn: i, generation: n.generation };
            if live(&d) {
                return Some(d);
            }
            self.unlink(i);
        }
        None
    }

    /// Takes slot `i`'s node out of the list, if it is in it.
    fn unlink(&mut self, i: u32) {
        let n = self.nodes[i as usize];
        if !n.linked {
            return;
        }
        match n.prev {
            NIL => self.head = n.next,
            p => self.nodes[p as usize].next = n.next,
        }
        match n.next {
            NIL => self.tail = n.prev,
            x => self.nodes[x as usize].prev = n.prev,
        }
        let node = &mut self.nodes[i as usize];
        node.linked = false;
        node.prev = NIL;
        node.next = NIL;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(at_us: u64, conn: u32, generation: u32) -> Deadline {
        Deadline { at_us, conn, generation }
    }

    #[test]
    fn expired_live_entries_come_out_in_order_and_stale_ones_vanish() {
        let mut q = Deadlines::new(3);
        for x in [d(10, 0, 1), d(20, 1, 1), d(40, 2, 1)] {
            q.push(x);
        }
        // Slot 0 is now in generation 2 with no deadline: its entry is stale.
        let live = |x: &Deadline| !(x.conn == 0 && x.generation == 1);
        assert_eq!(q.next(live), Some(20));
        assert_eq!(q.pop_expired(15, live), None);
        assert_eq!(q.pop_expired(45, live), Some(d(20, 1, 1)));
        assert_eq!(q.pop_expired(45, live), Some(d(40, 2, 1)));
        assert_eq!(q.pop_expired(45, live), None);
        assert_eq!(q.next(|_| false), None);
    }

    #[test]
    fn a_slot_set_again_moves_to_the_back_and_keeps_one_entry() {
        let mut q = Deadlines::new(3);
        q.push(d(10, 0, 1));
        q.push(d(20, 1, 1));
        q.push(d(30, 0, 2));
        q.push(d(40, 2, 1));
        q.push(d(50, 1, 2));
        let all = |_: &Deadline| true;
        let order: Vec<Deadline> = std::iter::from_fn(|| q.pop_expired(100, all)).collect();
        assert_eq!(order, [d(30, 0, 2), d(40, 2, 1), d(50, 1, 2)]);
        assert_eq!(q.next(all), None);
        // The list is whole again after emptying: it takes new deadlines in order.
        q.push(d(60, 2, 2));
        q.push(d(70, 0, 3));
        assert_eq!(q.pop_expired(65, all), Some(d(60, 2, 2)));
        assert_eq!(q.next(all), Some(70));
    }

    #[test]
    fn a_slot_outside_the_table_is_ignored() {
        let mut q = Deadlines::new(1);
        q.push(d(10, 5, 1));
        assert_eq!(q.next(|_| true), None);
    }
}
