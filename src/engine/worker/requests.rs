//! What a worker sends: the request of each send (fixed bytes, a script's `request()`, a proxy
//! test's next document) and the script's hooks around it (`delay`, `response`, `thread:stop`).
//! The mode is a [`Requests`] value settled when the worker is made; the loop only asks it for
//! bytes.

use std::cmp::Reverse;
use std::sync::atomic::Ordering;

use super::browse::{Browsing, Claim};
use super::schedule::When;
use super::Core;
use crate::engine::judged::Judge;
use crate::engine::proxy::{ProxyClient, Sent};
use crate::engine::slot::State;
use crate::engine::transport::{Op, Part};
use crate::engine::{EngineError, Plan, RequestSource};
use crate::http::response::Captured;
use crate::net::pages::Pages;
use crate::script::{ScriptError, ThreadScript};
use crate::stats::Recorder;

/// What this thread sends, and the hooks that come with it.
pub(super) enum Requests<'a> {
    /// The rendered request, the same every time, and when it is large and goes over plain
    /// HTTP/1.1, its bytes in a memory file to send by reference.
    Fixed(Vec<u8>, Option<Pages>),
    /// A wrk Lua script.
    Script(Scripted),
    /// A proxy test's document chooser.
    Proxy(Proxied<'a>),
    /// Whole pages: each browser's page, then what it embeds.
    Pages(Box<Browsing<'a>>),
    /// A targets file's requests.
    Targets(Targeted<'a>),
    /// A replay's requests.
    Replay(Replayed),
    /// A workload that judges its own answers (gRPC's calls).
    Judged(Box<dyn Judge + 'a>),
}

/// A replay's requests: per slot, the bytes of the one it sends now (copied from the feed's
/// batch, into a buffer the slot keeps) and its path's number (counted per path, as a
/// targets file's requests are per target).
pub(super) struct Replayed {
    bytes: Vec<Vec<u8>>,
    path: Vec<u16>,
    /// `--trace`: where each slot's request was recorded (empty when not traced).
    notes: Vec<Option<Box<str>>>,
}

/// A targets file's requests: the one each slot sends now, and this thread's place in the
/// round-robin sequence (position `j` is target `j mod len`). Thread `t` of segment `s` takes
/// position `s + N t`, then every `N T`-th, as it takes a paced schedule's requests, and the
/// thread's connections take its positions in order, so the mix is exact over the run and
/// over `-n`. A position's target names its server: with several, a request waits for a
/// connection to its own (see [`When::Ordered`]). `--targets-order random` keeps each
/// position's server and draws the target among that server's, so each server's share stays
/// exact either way.
pub(super) struct Targeted<'a> {
    all: &'a [Vec<u8>],
    /// Each target's origin.
    origin: &'a [u16],
    /// Each origin's targets, for random draws.
    by_origin: Vec<Vec<u32>>,
    /// Per slot: the target of its current request.
    current: Vec<u32>,
    next: u64,
    stride: u64,
    /// `--targets-order random`.
    rng: Option<crate::rng::Rng>,
}

impl Targeted<'_> {
    /// The target at the next position.
    fn at_next(&self) -> usize {
        (self.next % self.all.len().max(1) as u64) as usize
    }

    /// The origin of target `k`.
    fn origin_of(&self, k: usize) -> usize {
        self.origin.get(k).map_or(0, |&o| usize::from(o))
    }

    /// The origin the next request goes to.
    fn next_origin(&self) -> usize {
        self.origin_of(self.at_next())
    }

    /// Takes the next position; its target.
    fn take(&mut self) -> usize {
        let k = self.at_next();
        self.next += self.stride;
        match (&mut self.rng, self.by_origin.get(self.origin.get(k).map_or(0, |&o| usize::from(o)))) {
            (Some(rng), Some(on)) if !on.is_empty() => on[rng.below(on.len() as u64) as usize] as usize,
            _ => k,
        }
    }
}

/// A thread's script: its Lua state and how its requests are made.
pub(super) struct Scripted {
    /// The thread's Lua state.
    pub(super) lua: ThreadScript,
    /// The request written each time when the script has no `request()`.
    fixed: Vec<u8>,
    /// That request in a memory file, when it is large and goes over plain HTTP/1.1.
    pages: Option<Pages>,
    /// What `request()` built for each slot (empty when the script has none).
    built: Vec<Vec<u8>>,
    /// The request `request()` returned when its pipeline depth was measured: sent first, so
    /// the script sees no call wasted.
    first: Option<Vec<u8>>,
}

/// A proxy test's chooser, and the request in flight on each slot.
pub(super) struct Proxied<'a> {
    pub(super) client: ProxyClient<'a>,
    /// Per slot: the request bytes and what they asked for.
    built: Vec<(Vec<u8>, Sent)>,
}

impl<'a> Requests<'a> {
    /// This thread's sending mode for `slots` slots, and the responses to expect per write.
    pub(super) fn new(
        plan: &'a Plan,
        index: usize,
        slots: usize,
        script: Option<ThreadScript>,
    ) -> Result<(Requests<'a>, u32), EngineError> {
        match (&plan.send, script) {
            (RequestSource::Script(_), Some(lua)) => {
                let fixed = lua.fixed_request().map_or_else(|| plan.request.clone(), <[u8]>::to_vec);
                let (pipeline, first) = pipeline_depth(&lua, &fixed)?;
                let built = if lua.builds_requests() { (0..slots).map(|_| Vec::new()).collect() } else { Vec::new() };
                let pages = if lua.builds_requests() { None } else { pages_for(plan, &fixed) };
                Ok((Requests::Script(Scripted { lua, fixed, pages, built, first }), pipeline))
            }
            (RequestSource::Targets(t), _) => {
                let n = plan.segment.count.max(1) as u64;
                let mut by_origin = vec![Vec::new(); t.origins.max(1)];
                for (k, &o) in t.origin.iter().enumerate() {
                    if let Some(on) = by_origin.get_mut(usize::from(o)) {
                        on.push(k as u32);
                    }
                }
                let targeted = Targeted {
                    all: &t.requests,
                    origin: &t.origin,
                    by_origin,
                    current: vec![0; slots],
                    next: u64::from(plan.segment.index) + n * index as u64,
                    stride: n * plan.threads.max(1) as u64,
                    rng: t.random.map(|seed| crate::rng::Rng::for_thread(seed ^ u64::from(plan.segment.index), index)),
                };
                Ok((Requests::Targets(targeted), 1))
            }
            (RequestSource::Judged(j), _) => Ok((Requests::Judged(j.thread(plan, index, slots)), 1)),
            (RequestSource::Replay, _) => Ok((
                Requests::Replay(Replayed { bytes: vec![Vec::new(); slots], path: vec![0; slots], notes: Vec::new() }),
                1,
            )),
            (RequestSource::Pages(p), _) => {
                Ok((Requests::Pages(Box::new(Browsing::new(p, &plan.request, plan.https(), index, slots))), 1))
            }
            (RequestSource::Proxy(p), _) => {
                let client = ProxyClient::for_thread(p, index);
                let built = (0..slots).map(|_| (Vec::new(), Sent::default())).collect();
                Ok((Requests::Proxy(Proxied { client, built }), 1))
            }
            _ => Ok((Requests::Fixed(plan.request.clone(), pages_for(plan, &plan.request)), 1)),
        }
    }

    /// The Lua state, when running a script.
    pub(super) fn lua(&self) -> Option<&ThreadScript> {
        match self {
            Requests::Script(s) => Some(&s.lua),
            _ => None,
        }
    }

    /// Whether responses are kept whole for a hook or a content check.
    pub(super) fn captures(&self) -> bool {
        match self {
            Requests::Fixed(..) => false,
            Requests::Script(s) => s.lua.wants_responses(),
            Requests::Proxy(p) => p.client.checks_content(),
            Requests::Targets(_) | Requests::Replay(_) => false,
            // A page's references are read from its body.
            Requests::Pages(_) => true,
            // Such answers are judged by what they hold (a gRPC call's status is in its
            // trailers, and its messages are counted).
            Requests::Judged(_) => true,
        }
    }

    /// The origin the next paced request goes to (0 but with targets on several servers).
    pub(super) fn next_origin(&self) -> usize {
        match self {
            Requests::Targets(t) => t.next_origin(),
            _ => 0,
        }
    }

    /// The target slot `i`'s current request is (targets files).
    pub(super) fn target_of(&self, i: usize) -> Option<usize> {
        match self {
            Requests::Targets(t) => t.current.get(i).map(|&k| k as usize),
            Requests::Replay(r) => r.path.get(i).map(|&k| usize::from(k)),
            _ => None,
        }
    }

    /// Slot `i`'s current request as HTTP/1 bytes.
    pub(super) fn bytes(&self, i: usize) -> &[u8] {
        self.built(i).unwrap_or(match self {
            Requests::Fixed(r, _) => r,
            _ => &[],
        })
    }

    /// The fixed request in a memory file, when it is large (slots sending it send it from there).
    pub(super) fn pages(&self) -> Option<&Pages> {
        match self {
            Requests::Fixed(_, pages) => pages.as_ref(),
            Requests::Script(s) => s.pages.as_ref(),
            _ => None,
        }
    }

    /// Slot `i`'s current request when it is not the URL's fixed one (a script's or a proxy
    /// test's), as HTTP/1 bytes.
    pub(super) fn built(&self, i: usize) -> Option<&[u8]> {
        match self {
            Requests::Fixed(..) => None,
            Requests::Script(s) if s.built.is_empty() => Some(&s.fixed),
            Requests::Script(s) => s.built.get(i).map(Vec::as_slice),
            Requests::Proxy(p) => p.built.get(i).map(|b| b.0.as_slice()),
            Requests::Targets(t) => t.current.get(i).and_then(|&k| t.all.get(k as usize)).map(Vec::as_slice),
            Requests::Replay(r) => r.bytes.get(i).map(Vec::as_slice),
            Requests::Judged(j) => j.built(i),
            Requests::Pages(b) => b.request(i),
        }
    }

    /// A replay: slot `i` sends `bytes` next, a request for path number `path`, recorded where
    /// `note` says (when the run is traced).
    pub(super) fn load(&mut self, i: usize, bytes: &[u8], path: u16, note: Option<&str>) {
        if let Requests::Replay(r) = self {
            if let (Some(buf), Some(p)) = (r.bytes.get_mut(i), r.path.get_mut(i)) {
                buf.clear();
                buf.extend_from_slice(bytes);
                *p = path;
            }
            if let Some(note) = note {
                r.notes.resize(r.bytes.len(), None);
                r.notes[i] = Some(note.into());
            } else if let Some(n) = r.notes.get_mut(i) {
                *n = None;
            }
        }
    }

    /// Where slot `i`'s replayed request was recorded, when the run is traced.
    pub(super) fn recorded(&self, i: usize) -> Option<&str> {
        match self {
            Requests::Replay(r) => r.notes.get(i).and_then(|n| n.as_deref()),
            _ => None,
        }
    }

    /// Whether slot `i`'s response is to be walked away from once its body starts
    /// (`--client-abort-rate`).
    pub(super) fn aborts(&self, i: usize) -> bool {
        self.proxied(i).is_some_and(|(_, sent)| sent.abort)
    }

    /// A proxy test's client and what slot `i`'s request asked of it (documents, or whole
    /// pages of them).
    fn proxied(&self, i: usize) -> Option<(&ProxyClient<'a>, &Sent)> {
        match self {
            Requests::Proxy(p) => p.built.get(i).map(|b| (&p.client, &b.1)),
            Requests::Pages(b) => b.proxy().zip(b.sent(i)),
            _ => None,
        }
    }

    /// A proxy test's `--keepalive`: responses a connection carries before it is replaced
    /// (0: no limit, and for every other mode).
    pub(super) fn keepalive(&self) -> u64 {
        match self {
            Requests::Proxy(p) => p.client.keepalive(),
            Requests::Pages(b) => b.proxy().map_or(0, ProxyClient::keepalive),
            _ => 0,
        }
    }

    /// Which part of an answer's arrival is timed as its first bytes, if any: a proxy test's
    /// head; what a judging workload says (a server-streaming call's first message).
    pub(super) fn first_timed(&self) -> Option<Part> {
        match self {
            Requests::Proxy(_) => Some(Part::Head),
            Requests::Pages(b) => b.proxy().map(|_| Part::Head),
            Requests::Judged(j) => j.first_timed(),
            _ => None,
        }
    }

    /// Slot `i`'s complete answer judged as its workload judges one (a proxy test by its
    /// content, a judging workload by its own rules), and counted in `rec`.
    pub(super) fn judge(&mut self, i: usize, status: u16, captured: Option<&Captured>, rec: &mut Recorder) {
        match self {
            Requests::Proxy(_) | Requests::Pages(_) => {
                let Some((client, sent)) = self.proxied(i) else { return };
                if let Some(why) = client.check(sent, status, captured) {
                    rec.content_error(why);
                }
            }
            // A failed answer is a status error; one whose HTTP status is above 399 was
            // counted so when it was recorded.
            Requests::Judged(j) => rec.status_errors += u64::from(!j.judge(i, status, captured) && status < 400),
            _ => {}
        }
    }

    /// Slot `i`'s exchange, whose answers were recorded one by one, ended with `status` and
    /// `trailers`: judged and counted in `rec`.
    pub(super) fn judge_stream(&mut self, status: u16, trailers: &Captured, rec: &mut Recorder) {
        if let Requests::Judged(j) = self {
            rec.status_errors += u64::from(!j.judge_stream(status, trailers));
        }
    }

    /// Streamed exchanges: a request message of `bytes` went out.
    pub(super) fn stream_sent(&mut self, bytes: u64) {
        if let Requests::Judged(j) = self {
            j.sent(bytes);
        }
    }

    /// Streamed exchanges: an answer message of `bytes` arrived.
    pub(super) fn stream_received(&mut self, bytes: u64) {
        if let Requests::Judged(j) = self {
            j.received(bytes);
        }
    }

    /// Streamed exchanges: the answers were not well framed.
    pub(super) fn stream_broken(&mut self) {
        if let Requests::Judged(j) = self {
            j.broken();
        }
    }

    /// A judging workload's answers so far by outcome, for the intervals.
    pub(super) fn outcomes(&self, out: &mut Vec<(&'static str, u64)>) {
        if let Requests::Judged(j) = self {
            j.outcomes(out);
        }
    }

    /// Measuring starts: a judging workload's or the pages' counts start again.
    pub(super) fn restart_counts(&mut self) {
        match self {
            Requests::Judged(j) => j.restart_counts(),
            Requests::Pages(b) => b.restart_counts(),
            _ => {}
        }
    }

    /// Whether every request this mode started is done with: no page under way.
    pub(super) fn settled(&self) -> bool {
        match self {
            Requests::Pages(b) => b.settled(),
            _ => true,
        }
    }

    /// A judging workload's counts, as the result's section (`first`: the times to first
    /// bytes it asked for).
    pub(super) fn counts(
        &self,
        first: &hdrhistogram::Histogram<u64>,
    ) -> Option<Box<dyn crate::stats::section::Section>> {
        match self {
            Requests::Judged(j) => Some(j.counts(first)),
            Requests::Pages(b) => Some(b.section()),
            _ => None,
        }
    }

    /// Builds slot `i`'s next request; returns whether it is a HEAD.
    pub(super) fn build(&mut self, i: usize) -> Result<bool, ScriptError> {
        match self {
            Requests::Fixed(r, _) => Ok(r.starts_with(b"HEAD ")),
            Requests::Targets(t) => {
                let k = t.take();
                if let Some(c) = t.current.get_mut(i) {
                    *c = k as u32;
                }
                Ok(t.all.get(k).is_some_and(|r| r.starts_with(b"HEAD ")))
            }
            Requests::Replay(r) => Ok(r.bytes.get(i).is_some_and(|b| b.starts_with(b"HEAD "))),
            Requests::Judged(j) => {
                j.build(i);
                Ok(false)
            }
            Requests::Proxy(p) => {
                let Some((req, sent)) = p.built.get_mut(i) else { return Ok(false) };
                *sent = p.client.build(req);
                Ok(false)
            }
            // The slot's request was written when it claimed its work.
            Requests::Pages(_) => Ok(false),
            Requests::Script(s) => {
                let Some(req) = s.built.get_mut(i) else { return Ok(s.fixed.starts_with(b"HEAD ")) };
                match s.first.take() {
                    Some(first) => *req = first,
                    None => s.lua.request(req)?,
                }
                Ok(req.starts_with(b"HEAD "))
            }
        }
    }
}

impl Core<'_> {
    /// Slot `i` is ready for another request: closed loop sends it at once (after a script's
    /// `delay()`); rate mode parks it until a request comes due.
    pub(super) fn request_next(&mut self, i: usize) {
        if self.draining {
            return self.ask(Op::Close(i as u32));
        }
        if self.redirect_request(i).is_some() {
            // A redirect's next hop, after its connection was opened again.
            return self.resend(i);
        }
        if let Requests::Pages(b) = &mut self.requests {
            let now = self.clock.now_us();
            match b.claim(i, now, self.budget != Some(0)) {
                Claim::Wait => {
                    self.slots[i].state = State::Idle;
                    return;
                }
                Claim::Page => {
                    // -n counts pages.
                    if let Some(left) = &mut self.budget {
                        *left = left.saturating_sub(1);
                    }
                }
                Claim::Object => {}
            }
            return self.send(i, u64::MAX);
        }
        if let When::Paced(p) = &mut self.when {
            // A session's request that waited for this slot goes first.
            if let Some(h) = p.held.get_mut(i).and_then(std::collections::VecDeque::pop_front) {
                self.requests.load(i, &h.bytes, h.path, h.note.as_deref());
                return self.send(i, h.due);
            }
        }
        if matches!(self.when, When::Paced(_) | When::Ordered(_)) {
            self.park(i);
            let now = self.clock.now_us();
            return self.dispatch(now);
        }
        let delay_ms = match self.requests.lua().filter(|s| s.has_delay()).map(|s| s.delay_ms()) {
            None => 0.0,
            Some(Ok(ms)) => ms,
            Some(Err(e)) => return self.script_failed(e),
        };
        if delay_ms > 0.0 {
            let now = self.clock.now_us();
            let s = &mut self.slots[i];
            s.state = State::Delayed;
            s.bump();
            self.due.timers.push(Reverse((now + (delay_ms * 1000.0) as u64, i as u32, s.generation)));
        } else {
            // Intended now: `send` reads the clock once for both (a clock read per request
            // fewer, which counts at a few hundred thousand requests a second).
            self.send(i, u64::MAX);
        }
    }

    /// Starts the next request on slot `i`; it should have started at `intended_us` (or now,
    /// when that is later). The protocol puts it on the wire when it settles ([`Op::Submit`]).
    pub(super) fn send(&mut self, i: usize, intended_us: u64) {
        if let Some(left) = self.budget.as_mut().filter(|_| !matches!(self.requests, Requests::Pages(_))) {
            // -n: this thread's count is sent; the loop drains and ends.
            let Some(rest) = left.checked_sub(u64::from(self.pipeline)) else {
                *left = 0;
                return self.ask(Op::Close(i as u32));
            };
            *left = rest;
        }
        let now = self.clock.now_us();
        self.paced_send(i, intended_us, now);
        // A script may send HEAD, whose responses have no body whatever they announce.
        let head = match self.requests.build(i) {
            Ok(head) => head,
            Err(e) => return self.script_failed(e),
        };
        let s = &mut self.slots[i];
        s.bump();
        s.sent_us = now;
        s.intended_us = intended_us.min(now);
        s.pending = self.pipeline;
        s.first_byte = false;
        s.state = State::Writing;
        self.meter.rec.sent += u64::from(self.pipeline);
        self.due.deadlines.push(crate::engine::deadlines::Deadline {
            at_us: now + self.plan.timeout_us,
            conn: i as u32,
            generation: s.generation,
        });
        self.ask(Op::Submit { slot: i as u32, head });
    }

    /// Slot `i`'s request ended, answered with `status` (`captured` when kept) or failed: a
    /// browser goes on with its page, its idle slots fetching the objects the page named.
    pub(super) fn page_ended(&mut self, i: usize, status: Option<u16>, captured: Option<&Captured>) {
        let Requests::Pages(b) = &mut self.requests else { return };
        let Some(wake) = b.ended(i, status, captured, self.clock.now_us()) else { return };
        for j in wake {
            if j != i && self.slots[j].state == State::Idle {
                self.request_next(j);
            }
        }
    }

    /// Slot `i`'s request is on a later hop of its redirect chain, if it is: what it sends.
    pub(super) fn redirect_request(&self, i: usize) -> Option<&[u8]> {
        self.redirects.as_ref()?.request(i)
    }

    /// Whether the answer `status` on slot `i` is a redirect the slot follows (its next hop
    /// then ready); counts the chain's end otherwise.
    pub(super) fn redirected(&mut self, i: usize, status: u16, captured: Option<&Captured>) -> bool {
        let o = self.link_of[i] as usize % self.addrs.len();
        let tls = || self.plan.origins.get(o).is_some_and(|x| x.tls.is_some());
        let Some(r) = self.redirects.as_mut() else { return false };
        self.pipeline == 1 && r.answered(i, status, captured, self.requests.bytes(i), tls)
    }

    /// Sends slot `i`'s next hop: the same request to its new place, its send times kept so
    /// the chain's latency is the whole chain's.
    pub(super) fn resend(&mut self, i: usize) {
        let head = self.redirect_request(i).is_some_and(|r| r.starts_with(b"HEAD "));
        let s = &mut self.slots[i];
        s.bump();
        s.pending = 1;
        s.first_byte = false;
        s.state = State::Writing;
        let deadline = crate::engine::deadlines::Deadline {
            at_us: self.clock.now_us() + self.plan.timeout_us,
            conn: i as u32,
            generation: s.generation,
        };
        self.due.deadlines.push(deadline);
        self.ask(Op::Submit { slot: i as u32, head });
    }

    /// The first byte of slot `i`'s response arrived: timed in proxy tests.
    pub(super) fn time_first_byte(&mut self, i: usize) {
        let s = &mut self.slots[i];
        if s.first_byte || self.requests.first_timed().is_none() {
            return;
        }
        s.first_byte = true;
        let ttfb = self.clock.now_us().saturating_sub(s.sent_us).clamp(1, crate::stats::MAX_LATENCY_US);
        self.meter.rec.ttfb_us.saturating_record(ttfb);
        self.meter.interval.ttfb_us.saturating_record(ttfb);
    }

    /// A response completed on slot `i` (`captured` when kept whole): the script's
    /// `response()` hook; false when the thread must stop sending.
    pub(super) fn run_response_hook(&mut self, _i: usize, status: u16, captured: Option<&Captured>) -> bool {
        let Some(lua) = self.requests.lua().filter(|s| s.wants_responses()) else { return true };
        if let Err(e) = lua.response(status, captured) {
            self.script_failed(e);
            return false;
        }
        if lua.stop_requested() && !self.draining {
            // wrk.thread:stop(): this thread sends nothing more; the run ends once all have stopped.
            self.start_drain();
        }
        true
    }

    /// Slot `i`'s stream was reset by the server with `code`: when its workload takes a reset
    /// as an answer (a gRPC call ends with the status the reset stands for), it is recorded
    /// and counted so, with its latency; false when the reset is a failed request.
    pub(super) fn reset_answered(&mut self, i: usize, code: u32) -> bool {
        let Requests::Judged(j) = &mut self.requests else { return false };
        let now = self.clock.now_us();
        let s = &self.slots[i];
        let latency = now.saturating_sub(s.intended_us);
        let uncorrected = matches!(self.when, When::Paced(_)).then(|| now.saturating_sub(s.sent_us));
        let Some(ok) = j.reset(i, code, now.saturating_sub(s.sent_us)) else { return false };
        self.meter.rec.status_errors += u64::from(!ok);
        self.record_answer(None, latency, uncorrected);
        true
    }

    /// A hook failed: remember the first error and end the whole run.
    pub(super) fn script_failed(&mut self, e: ScriptError) {
        self.script_error.get_or_insert(e);
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// Thread `index`'s script state, its `init` run (called on the worker's own thread: a Lua
/// state stays on the thread that made it).
pub fn thread_script(plan: &Plan, index: usize) -> Result<Option<ThreadScript>, ScriptError> {
    let RequestSource::Script(s) = &plan.send else { return Ok(None) };
    let setup = s.setups.get(index).cloned().unwrap_or_default();
    let addr = setup.addr.unwrap_or(plan.addr());
    ThreadScript::new(&s.source, &s.url, &setup, addr).map(Some)
}

/// Responses to expect per write: the number of requests in the script's request bytes
/// (wrk counts them once, from the first request). Returns the first built request too.
fn pipeline_depth(script: &ThreadScript, fixed: &[u8]) -> Result<(u32, Option<Vec<u8>>), EngineError> {
    let mut sample = Vec::new();
    let bytes = if script.builds_requests() {
        script.request(&mut sample)?;
        &sample
    } else {
        fixed
    };
    let n = crate::http::request::count_requests(bytes).map_err(|why| {
        EngineError::Script(ScriptError::Runtime {
            hook: "request",
            message: format!("the request is not HTTP/1: {why}"),
        })
    })?;
    let first = script.builds_requests().then(|| sample.clone());
    Ok((n.min(u32::MAX as usize) as u32, first))
}

/// `request` in a memory file to send by reference, when it is large and goes over plain
/// HTTP/1.1 (HTTP/2 and HTTP/3 frame the body, TLS encrypts it: both copy it anyway).
fn pages_for(plan: &Plan, request: &[u8]) -> Option<Pages> {
    if plan.protocol == crate::config::Protocol::Http1 && !plan.https() {
        Pages::of(request)
    } else {
        None
    }
}
