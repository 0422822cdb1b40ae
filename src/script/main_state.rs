//! The main thread's Lua state: loads the script (failing early), runs `setup(thread)` for each
//! worker before the run and `done(summary, latency, requests)` after it.

use std::cell::RefCell;
use std::net::SocketAddr;
use std::rc::Rc;

use hdrhistogram::Histogram;
use mlua::{Lua, MetaMethod, UserData, UserDataFields, UserDataMethods, UserDataRef};

use super::api::{self, runtime, Addr};
use super::{ScriptError, ScriptSource, ThreadSetup, UrlParts, Value};
use crate::stats::{Distribution, ErrorKind, Summary};

/// One worker as `setup` and `done` see it.
#[derive(Debug)]
struct Shared {
    setup: ThreadSetup,
    addr: SocketAddr,
    /// The thread's globals when it ended (what `thread:get` reads in `done`).
    after: Option<Vec<(String, Value)>>,
}

/// The `thread` object of `setup(thread)`.
struct ThreadHandle(Rc<RefCell<Shared>>);

impl UserData for ThreadHandle {
    fn add_fields<F: UserDataFields<Self>>(fields: &mut F) {
        fields.add_field_method_get("addr", |_, this| {
            let s = this.0.borrow();
            Ok(Addr(s.setup.addr.unwrap_or(s.addr)))
        });
        fields.add_field_method_set("addr", |_, this, addr: UserDataRef<Addr>| {
            this.0.borrow_mut().setup.addr = Some(addr.0);
            Ok(())
        });
    }

    fn add_methods<M: UserDataMethods<Self>>(methods: &mut M) {
        methods.add_method("set", |_, this, (name, value): (String, mlua::Value)| {
            let v = api::export(&value, 0)
                .map_err(|why| mlua::Error::runtime(format!("thread:set('{name}', ...): {why}")))?;
            let mut s = this.0.borrow_mut();
            s.setup.values.retain(|(n, _)| *n != name);
            s.setup.values.push((name, v));
            Ok(())
        });
        methods.add_method("get", |lua, this, name: String| {
            let s = this.0.borrow();
            let values = s.after.as_ref().unwrap_or(&s.setup.values);
            match values.iter().find(|(n, _)| *n == name) {
                Some((_, v)) => api::import(lua, v),
                None => Ok(mlua::Value::Nil),
            }
        });
        methods.add_method("stop", |_, this, ()| {
            this.0.borrow_mut().setup.stopped = true;
            Ok(())
        });
    }
}

/// `latency` and `requests` in `done()`: wrk's statistics object.
struct Stats {
    h: Histogram<u64>,
    d: Distribution,
}

impl Stats {
    fn new(h: &Histogram<u64>) -> Stats {
        Stats { h: h.clone(), d: Distribution::of(h) }
    }

    /// The i-th (1-based) distinct recorded value and its count, as wrk's `latency(i)`.
    fn nth(&self, i: i64) -> (u64, u64) {
        if i < 1 {
            return (0, 0);
        }
        self.h
            .iter_recorded()
            .nth((i - 1) as usize)
            .map_or((0, 0), |v| (self.h.median_equivalent(v.value_iterated_to()), v.count_at_value()))
    }
}

impl UserData for Stats {
    fn add_methods<M: UserDataMethods<Self>>(methods: &mut M) {
        methods.add_meta_method(MetaMethod::Index, |lua, this, key: mlua::Value| match key {
            mlua::Value::String(s) => match &*s.to_str()? {
                "min" => Ok(mlua::Value::Number(this.d.min as f64)),
                "max" => Ok(mlua::Value::Number(this.d.max as f64)),
                "mean" => Ok(mlua::Value::Number(this.d.mean)),
                "stdev" => Ok(mlua::Value::Number(this.d.stdev)),
                "percentile" => {
                    Ok(mlua::Value::Function(lua.create_function(|_, (this, p): (UserDataRef<Stats>, f64)| {
                        Ok(if this.h.is_empty() { 0 } else { this.h.value_at_percentile(p.clamp(0.0, 100.0)) })
                    })?))
                }
                _ => Ok(mlua::Value::Nil),
            },
            // wrk2 also allows latency[i].
            mlua::Value::Integer(i) => Ok(mlua::Value::Number(this.nth(i).0 as f64)),
            mlua::Value::Number(i) => Ok(mlua::Value::Number(this.nth(i as i64).0 as f64)),
            _ => Ok(mlua::Value::Nil),
        });
        methods.add_meta_method(MetaMethod::Call, |_, this, i: i64| {
            let (v, n) = this.nth(i);
            Ok((v as f64, n as f64))
        });
        methods.add_meta_method(MetaMethod::Len, |_, this, ()| Ok(this.h.iter_recorded().count()));
    }
}

/// The main thread's script state.
pub struct MainScript {
    lua: Lua,
    threads: Vec<Rc<RefCell<Shared>>>,
}

impl MainScript {
    /// Loads and runs the script's top level; any error is `file:line: message`.
    pub fn load(source: &ScriptSource, url: &UrlParts) -> Result<MainScript, ScriptError> {
        let lua = Lua::new();
        api::install(&lua, url).map_err(|e| ScriptError::Load(api::describe(&e)))?;
        lua.load(&source.code)
            .set_name(source.chunk_name())
            .exec()
            .map_err(|e| ScriptError::Load(api::describe(&e)))?;
        Ok(MainScript { lua, threads: Vec::new() })
    }

    /// Calls `setup(thread)` for each worker (when defined) and returns what it decided.
    pub fn setup(&mut self, threads: usize, addr: SocketAddr) -> Result<Vec<ThreadSetup>, ScriptError> {
        let setup = api::hook(&self.lua, "setup").map_err(|e| runtime("setup", &e))?;
        self.threads = (0..threads)
            .map(|_| Rc::new(RefCell::new(Shared { setup: ThreadSetup::default(), addr, after: None })))
            .collect();
        if let Some(f) = setup {
            let ran = self.threads.iter().try_for_each(|t| f.call::<()>(ThreadHandle(t.clone())));
            api::flush_lua_output();
            ran.map_err(|e| runtime("setup", &e))?;
        }
        Ok(self.threads.iter().map(|t| t.borrow().setup.clone()).collect())
    }

    /// Hands over a finished thread's globals, for `thread:get` in `done`.
    pub fn thread_ended(&self, index: usize, globals: Vec<(String, Value)>) {
        if let Some(t) = self.threads.get(index) {
            t.borrow_mut().after = Some(globals);
        }
    }

    /// Calls `done(summary, latency, requests)` when the script defines it.
    pub fn done(&self, summary: &Summary) -> Result<(), ScriptError> {
        let Some(done) = api::hook(&self.lua, "done").map_err(|e| runtime("done", &e))? else { return Ok(()) };
        let call = || -> mlua::Result<()> {
            let lua = &self.lua;
            let s = lua.create_table()?;
            s.set("duration", summary.elapsed.as_micros() as f64)?;
            s.set("requests", summary.total.requests as f64)?;
            s.set("bytes", summary.total.bytes as f64)?;
            let errors = lua.create_table()?;
            errors.set("connect", summary.errors(ErrorKind::Connect) as f64)?;
            errors.set("read", (summary.errors(ErrorKind::Read) + summary.errors(ErrorKind::Parse)) as f64)?;
            errors.set("write", summary.errors(ErrorKind::Write) as f64)?;
            errors.set("status", summary.status_errors() as f64)?;
            errors.set("timeout", summary.errors(ErrorKind::Timeout) as f64)?;
            s.set("errors", errors)?;
            done.call::<()>((s, Stats::new(&summary.total.latency_us), Stats::new(&summary.total.rate_samples)))
        };
        let ran = call();
        api::flush_lua_output();
        ran.map_err(|e| runtime("done", &e))
    }
}
