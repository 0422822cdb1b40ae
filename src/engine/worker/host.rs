//! The worker as its protocol sees it: [`Host`], implemented by [`Core`]. Every method is a
//! question the protocol may ask or a thing it says happened; what the worker asks back is
//! queued as an [`Op`] ([`Core::ask`]).

use std::cmp::Reverse;
use std::net::{IpAddr, SocketAddr};

use mio::{Interest, Token};

use super::requests::Requests;
use super::schedule::When;
use super::Core;
use crate::engine::slot::State;
use crate::engine::trace::Answer;
use crate::engine::transport::{Host, Op, Part};
use crate::http::response::Captured;
use crate::net::stream::{ConnectError, Made, Stream};
use crate::net::throttle::Throttles;
use crate::script::ScriptError;
use crate::stats::{ConnectCause, ErrorKind};

impl Host for Core<'_> {
    fn now(&self) -> u64 {
        self.clock.now_us()
    }

    fn timeout_us(&self) -> u64 {
        self.plan.timeout_us
    }

    fn https(&self) -> bool {
        self.plan.https()
    }

    fn draining(&self) -> bool {
        self.draining
    }

    fn spent(&self) -> bool {
        // Whole pages count pages: a counted page's objects still need their connections.
        self.budget == Some(0) && !matches!(self.requests, Requests::Pages(_))
    }

    fn arriving(&self) -> bool {
        matches!(self.when, When::Arrivals(_))
    }

    fn keepalive_limit(&self) -> u64 {
        // --drop-after-length: the connection closes after the response that is all in.
        if self.plan.slow.drop_after_length {
            1
        } else {
            self.requests.keepalive()
        }
    }

    fn connect(&mut self, n: usize, token: usize) -> Result<Stream, ConnectError> {
        let o = token % self.addrs.len();
        let pace = self.throttles(token);
        if let Some(t) = self.trace.as_deref_mut() {
            t.dialing(token);
        }
        let mut s = match &self.plan.unix_socket {
            Some(path) => Stream::connect_unix(path, pace)?,
            None => Stream::connect(self.addrs[o], self.source(n), self.plan.origins[o].tls.as_ref(), pace)?,
        };
        self.poll.registry().register(s.socket(), Token(token), Interest::READABLE | Interest::WRITABLE)?;
        Ok(s)
    }

    fn throttles(&self, token: usize) -> Option<Throttles> {
        let rates = self.plan.slow.rates;
        (!rates.none()).then(|| Throttles::new(rates, token, self.wakes.clone()))
    }

    fn peer(&self, n: usize) -> SocketAddr {
        self.addrs[n % self.addrs.len()]
    }

    fn source(&self, n: usize) -> Option<IpAddr> {
        let sources = &self.plan.source_addrs;
        (!sources.is_empty()).then(|| sources[(n + self.index) % sources.len()])
    }

    fn registry(&self) -> &mio::Registry {
        self.poll.registry()
    }

    fn connect_failed(&mut self, token: usize, cause: ConnectCause, why: String) {
        let to = match &self.plan.unix_socket {
            Some(path) => path.display().to_string(),
            None => self.addrs[token % self.addrs.len()].to_string(),
        };
        self.meter.rec.connect_error(cause, || format!("connect to {to} failed: {why}"));
    }

    fn connection_made(&mut self, link: usize, made: impl FnOnce() -> Made) {
        self.meter.rec.connections += 1;
        if let Some(t) = self.trace.as_deref_mut() {
            t.connected(link, made());
        }
    }

    fn tracing(&self) -> bool {
        self.trace.is_some()
    }

    fn trace_upgrade(&mut self, i: usize, request: Option<&[u8]>, head: &[u8]) {
        self.trace_with(i, request, Answer::Upgraded(head));
    }

    fn trace_message(&mut self, i: usize, shown: &[u8], bytes: u64) {
        self.trace_with(i, Some(b""), Answer::Message(shown, bytes));
    }

    fn opening_started(&mut self) {
        self.opening.started();
    }

    fn opening_ended(&mut self) {
        self.opening.ended();
    }

    fn opened(&mut self) {
        self.opening.ended();
        self.ask(Op::OpenQueued);
    }

    fn queue_open(&mut self, i: usize) {
        self.opening.queue.push_back(i as u32);
        self.ask(Op::OpenQueued);
    }

    fn replace(&mut self, i: usize) {
        if let When::Arrivals(a) = &mut self.when {
            // Arriving connections are not replaced: the slot waits for the next arrival.
            a.free.push(i as u32);
        } else if !self.draining {
            self.queue_open(i);
        }
    }

    fn retry_connect(&mut self, i: usize, failures: u32) {
        if let When::Arrivals(a) = &mut self.when {
            a.free.push(i as u32);
            return;
        }
        let backoff = crate::engine::transport::retry_backoff_us(failures);
        let at = self.clock.now_us() + backoff;
        self.due.timers.push(Reverse((at, i as u32, self.slots[i].generation)));
    }

    fn state(&self, i: usize) -> State {
        self.slots[i].state
    }

    fn connecting(&mut self, i: usize) {
        let s = &mut self.slots[i];
        s.bump();
        s.state = State::Connecting;
        self.opening.started();
        self.set_deadline(i);
    }

    fn written(&mut self, i: usize) {
        self.slots[i].state = State::Reading;
    }

    fn close_slot(&mut self, i: usize) {
        let s = &mut self.slots[i];
        s.state = State::Closed;
        s.bump();
    }

    fn resend(&mut self, i: usize) {
        let s = &mut self.slots[i];
        s.bump();
        s.state = State::Writing;
        self.meter.rec.sent += 1;
        self.set_deadline(i);
        self.ask(Op::Submit { slot: i as u32, head: false });
    }

    fn unsend(&mut self, i: usize) {
        self.close_slot(i);
        self.meter.rec.sent = self.meter.rec.sent.saturating_sub(1);
    }

    fn free(&mut self, i: usize, up: bool) {
        self.slots[i].bump();
        if up && !self.draining {
            self.next_request(i);
        } else {
            self.slots[i].state = State::Closed;
        }
    }

    fn in_flight(&self) -> usize {
        self.in_flight_now()
    }

    fn request(&self, i: usize) -> &[u8] {
        self.redirect_request(i).unwrap_or_else(|| self.requests.bytes(i))
    }

    fn request_pages(&self, i: usize) -> Option<&crate::net::pages::Pages> {
        self.redirect_request(i).is_none().then(|| self.requests.pages()).flatten()
    }

    fn built(&self, i: usize) -> Option<&[u8]> {
        self.redirect_request(i).or_else(|| self.requests.built(i))
    }

    fn aborts(&self, i: usize) -> bool {
        self.requests.aborts(i)
    }

    fn fail_run(&mut self, error: ScriptError) {
        self.script_failed(error);
    }

    fn read_bytes(&mut self, n: usize) {
        self.meter.rec.bytes += n as u64;
    }

    fn first_bytes(&mut self, i: usize, part: Part) {
        if self.requests.first_timed() == Some(part) {
            self.time_first_byte(i);
        }
        if let Some(t) = self.trace.as_deref_mut() {
            t.first_byte(i, self.clock.now_us());
        }
    }

    fn completed(&mut self, i: usize, status: u16, keep: bool, captured: Option<&Captured>) -> bool {
        self.trace(i, Answer::Response(status, captured));
        if self.redirects.is_some() && self.redirected(i, status, captured) {
            // The chain goes on: the same request, its latency still running.
            if !keep {
                self.ask(Op::Reopen(i as u32));
                return false;
            }
            self.resend(i);
            return true;
        }
        self.record_response(i, status);
        if !self.run_response_hook(i, status, captured) {
            return false;
        }
        self.requests.judge(i, status, captured, &mut self.meter.rec);
        self.page_ended(i, Some(status), captured);
        if !keep {
            self.ask(Op::Reopen(i as u32));
            return false;
        }
        self.next_request(i);
        true
    }

    fn pipelined(&mut self, i: usize, status: u16, captured: Option<&Captured>) -> Option<bool> {
        let s = &mut self.slots[i];
        s.pending = s.pending.saturating_sub(1);
        if s.pending == 0 {
            return None;
        }
        self.meter.rec.counted(status);
        self.trace(i, Answer::Response(status, captured));
        Some(self.run_response_hook(i, status, captured))
    }

    fn stream_sent(&mut self, _i: usize, bytes: u64) {
        self.requests.stream_sent(bytes);
    }

    fn stream_broken(&mut self, _i: usize) {
        self.requests.stream_broken();
    }

    fn stream_reply(&mut self, _i: usize, due_us: u64, sent_us: u64, bytes: u64) {
        self.requests.stream_received(bytes);
        let now = self.clock.now_us();
        // From its message's due time whatever the mode; from its send only in rate mode.
        let uncorrected = matches!(self.when, When::Paced(_)).then(|| now.saturating_sub(sent_us));
        self.record_answer(Some(200), now.saturating_sub(due_us), uncorrected);
    }

    fn stream_ended(&mut self, i: usize, status: u16, trailers: &Captured) {
        self.trace(i, Answer::Ended(status, trailers));
        self.requests.judge_stream(status, trailers, &mut self.meter.rec);
        self.next_request(i);
    }

    fn record(&mut self, i: usize, status: u16) {
        self.trace(i, Answer::Response(status, None));
        self.record_response(i, status);
        self.page_ended(i, Some(status), None);
    }

    fn failed(&mut self, i: usize, kind: ErrorKind) {
        self.trace(i, Answer::Failed(kind));
        if let Some(r) = self.redirects.as_mut() {
            r.end(i);
        }
        self.meter.rec.error(kind);
        if let Some(k) = self.requests.target_of(i) {
            self.meter.rec.target_failed(k);
        }
        self.page_ended(i, None, None);
    }

    fn server_reset(&mut self, i: usize, code: u32) {
        if !self.reset_answered(i, code) {
            self.failed(i, ErrorKind::Reset);
        }
        self.next_request(i);
    }

    fn aborted(&mut self) {
        self.meter.rec.aborted += 1;
    }

    fn next_request(&mut self, i: usize) {
        self.request_next(i);
    }

    fn take_op(&mut self) -> Option<Op> {
        self.ops.pop_front()
    }

    fn next_to_open(&mut self, start: bool) -> Option<usize> {
        let now = self.clock.now_us();
        self.opening.next(start, now, self.draining, |i| self.slots[i].state == State::Closed)
    }
}
