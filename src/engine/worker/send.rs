//! What a worker sends: the request of each send (fixed bytes, a script's `request()`, a proxy
//! test's next document) and the script's hooks around it (`delay`, `response`, `thread:stop`).
//! The mode is a [`Send`] value settled when the worker is made; the loop in `mod.rs` only asks
//! it for bytes.

use super::*;

/// What this thread sends, and the hooks that come with it.
pub(super) enum Send<'a> {
    /// The rendered request, the same every time.
    Fixed(Vec<u8>),
    /// A wrk Lua script.
    Script(Scripted),
    /// A proxy test's document chooser.
    Proxy(ProxyClient<'a>),
}

/// A thread's script: its Lua state and how its requests are made.
pub(super) struct Scripted {
    /// The thread's Lua state.
    pub(super) lua: ThreadScript,
    /// The request written each time when the script has no `request()`.
    pub(super) fixed: Vec<u8>,
    /// `request()` builds each request into the connection's buffer.
    pub(super) builds: bool,
    /// The request `request()` returned when its pipeline depth was measured: sent first, so
    /// the script sees no call wasted.
    pub(super) first: Option<Vec<u8>>,
}

impl<'a> Send<'a> {
    /// This thread's sending mode, and the responses to expect per write.
    pub(super) fn new(
        plan: &'a Plan,
        index: usize,
        script: Option<ThreadScript>,
    ) -> Result<(Send<'a>, u32), EngineError> {
        match (&plan.send, script) {
            (SendPlan::Script(_), Some(lua)) => {
                let fixed = lua.fixed_request().map_or_else(|| plan.request.clone(), <[u8]>::to_vec);
                let (pipeline, first) = pipeline_depth(&lua, &fixed)?;
                let builds = lua.builds_requests();
                Ok((Send::Script(Scripted { lua, fixed, builds, first }), pipeline))
            }
            (SendPlan::Proxy(p), _) => Ok((Send::Proxy(ProxyClient::new(p, process_stream(index))), 1)),
            _ => Ok((Send::Fixed(plan.request.clone()), 1)),
        }
    }

    /// The Lua state, when running a script.
    pub(super) fn lua(&self) -> Option<&ThreadScript> {
        match self {
            Send::Script(s) => Some(&s.lua),
            _ => None,
        }
    }

    /// Whether responses are kept whole for a hook or a content check.
    pub(super) fn captures(&self) -> bool {
        match self {
            Send::Fixed(_) => false,
            Send::Script(s) => s.lua.wants_responses(),
            Send::Proxy(p) => p.checks_content(),
        }
    }
}

impl Worker<'_> {
    /// Connection `i` is ready for another request: closed loop sends it at once (after a
    /// script's `delay()`); rate mode parks it until a request comes due.
    pub(super) fn next_request(&mut self, i: usize) {
        if self.draining {
            return self.close(i);
        }
        let now = self.clock.now_us();
        if let When::Paced(p) = &mut self.when {
            self.conns[i].state = State::Idle;
            p.idle.push(i as u32);
            return self.dispatch(now);
        }
        let delay_ms = match self.send.lua().filter(|s| s.has_delay()).map(|s| s.delay_ms()) {
            None => 0.0,
            Some(Ok(ms)) => ms,
            Some(Err(e)) => return self.script_failed(e),
        };
        if delay_ms > 0.0 {
            let c = &mut self.conns[i];
            c.state = State::Delayed;
            c.generation = c.generation.wrapping_add(1);
            self.timers.push(Reverse((now + (delay_ms * 1000.0) as u64, i as u32, c.generation)));
        } else {
            self.send(i, now);
        }
    }

    /// Starts the next request on connection `i`; it should have started at `intended_us`.
    pub(super) fn send(&mut self, i: usize, intended_us: u64) {
        let now = self.clock.now_us();
        if let When::Paced(p) = &self.when {
            self.rec.pacing.sent(now.saturating_sub(intended_us), p.starved);
        }
        let built = match &mut self.send {
            Send::Fixed(_) => Ok(()),
            Send::Proxy(p) => {
                let c = &mut self.conns[i];
                c.sent = p.build(&mut c.req);
                Ok(())
            }
            Send::Script(s) => {
                // A script may send HEAD, whose responses have no body whatever they announce.
                let c = &mut self.conns[i];
                let built = match (s.builds, s.first.take()) {
                    (false, _) => Ok(()),
                    (true, Some(first)) => {
                        c.req = first;
                        Ok(())
                    }
                    (true, None) => s.lua.request(&mut c.req),
                };
                let req = if s.builds { &c.req } else { &s.fixed };
                c.parser.set_head_request(req.starts_with(b"HEAD "));
                built
            }
        };
        if let Err(e) = built {
            return self.script_failed(e);
        }
        let c = &mut self.conns[i];
        c.generation = c.generation.wrapping_add(1);
        c.sent_us = now;
        c.intended_us = intended_us.min(now);
        c.pending = self.pipeline;
        self.rec.sent += u64::from(self.pipeline);
        c.first_byte = false;
        c.written = 0;
        c.state = State::Writing;
        self.deadlines.push(Deadline { at_us: now + self.plan.timeout_us, conn: i as u32, generation: c.generation });
        match self.wire {
            Wire::H1 => self.write(i),
            Wire::H2(_) => self.h2_submit(i),
        }
    }

    /// A response completed on connection `i`: the script's `response()` hook; false when the
    /// thread must stop sending.
    pub(super) fn run_response_hook(&mut self, i: usize, status: u16) -> bool {
        let Some(lua) = self.send.lua().filter(|s| s.wants_responses()) else { return true };
        if let Err(e) = lua.response(status, self.captured(i)) {
            self.script_failed(e);
            return false;
        }
        if lua.stop_requested() && !self.draining {
            // wrk.thread:stop(): this thread sends nothing more; the run ends once all have stopped.
            self.start_drain();
        }
        true
    }

    /// A proxy test's checks of a complete response: its content, and the client keep-alive
    /// limit. False when the connection was replaced.
    pub(super) fn check_proxy_response(&mut self, i: usize, status: u16) -> bool {
        let Send::Proxy(p) = &self.send else { return true };
        if let Some(why) = p.check(&self.conns[i].sent, status, self.captured(i)) {
            self.rec.content_error(why);
        }
        let limit = p.keepalive();
        if let Wire::H2(_) = self.wire {
            // Over HTTP/2 the limit is the link's: it is replaced after that many responses.
            return self.h2_count_use(i, limit);
        }
        let c = &mut self.conns[i];
        c.uses += 1;
        if limit > 0 && c.uses >= limit {
            self.reopen(i);
            return false;
        }
        true
    }

    /// The response that just completed on slot `i`, kept whole (when capturing).
    pub(super) fn captured(&self, i: usize) -> Option<&crate::http::response::Captured> {
        match self.wire {
            Wire::H1 => self.conns[i].parser.captured(),
            Wire::H2(_) => self.conns[i].capture.as_deref(),
        }
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
    let SendPlan::Script(s) = &plan.send else { return Ok(None) };
    let setup = s.setups.get(index).cloned().unwrap_or_default();
    let addr = setup.addr.unwrap_or(plan.addr);
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

/// A stream number for thread `index` that differs between processes too, so proxy tests run
/// from several processes never repeat each other's misses.
fn process_stream(index: usize) -> u64 {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64);
    crate::workload::gen::mix(u64::from(std::process::id()) << 32 ^ nanos) ^ index as u64
}
