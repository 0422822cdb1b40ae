//! A worker thread's own Lua state: `init(args)` once, then `delay()`, `request()` and
//! `response(status, headers, body)` as the worker needs them.

use std::cell::Cell;
use std::net::SocketAddr;
use std::rc::Rc;

use mlua::{Function, Lua, UserData, UserDataFields, UserDataMethods};

use super::api::{self, runtime, Addr};
use super::{ScriptError, ScriptSource, ThreadSetup, UrlParts, Value};
use crate::http::response::Captured;

/// Globals that belong to Lua or to strain, never copied back for `thread:get`.
const BUILTIN_GLOBALS: [&str; 16] = [
    "_G",
    "_VERSION",
    "wrk",
    "string",
    "table",
    "math",
    "io",
    "os",
    "coroutine",
    "debug",
    "package",
    "bit",
    "jit",
    "ffi",
    "arg",
    "module",
];

/// `wrk.thread` inside a worker's state.
struct WorkerThread {
    stop: Rc<Cell<bool>>,
    addr: SocketAddr,
}

impl UserData for WorkerThread {
    fn add_fields<F: UserDataFields<Self>>(fields: &mut F) {
        fields.add_field_method_get("addr", |_, this| Ok(Addr(this.addr)));
    }

    fn add_methods<M: UserDataMethods<Self>>(methods: &mut M) {
        methods.add_method("stop", |_, this, ()| {
            this.stop.set(true);
            Ok(())
        });
        methods.add_method("get", |lua, _, name: String| lua.globals().get::<mlua::Value>(name));
        methods.add_method("set", |lua, _, (name, value): (String, mlua::Value)| lua.globals().set(name, value));
    }
}

/// One worker's script.
pub struct ThreadScript {
    lua: Lua,
    request: Option<Function>,
    delay: Option<Function>,
    response: Option<Function>,
    stop: Rc<Cell<bool>>,
    /// The request rendered once after `init`, when the script has no `request()`.
    fixed: Option<Vec<u8>>,
}

impl ThreadScript {
    /// Loads the script into a new state, applies `setup`'s values and runs `init(args)`.
    pub fn new(
        source: &ScriptSource,
        url: &UrlParts,
        setup: &ThreadSetup,
        addr: SocketAddr,
    ) -> Result<ThreadScript, ScriptError> {
        let lua = Lua::new();
        let load = |e: mlua::Error| ScriptError::Load(api::describe(&e));
        api::install(&lua, url).map_err(load)?;
        lua.load(&source.code).set_name(source.chunk_name()).exec().map_err(load)?;
        let stop = Rc::new(Cell::new(setup.stopped));
        let init = || -> mlua::Result<()> {
            for (name, v) in &setup.values {
                lua.globals().set(name.as_str(), api::import(&lua, v)?)?;
            }
            let wrk: mlua::Table = lua.globals().get("wrk")?;
            wrk.set("thread", WorkerThread { stop: stop.clone(), addr })?;
            if let Some(init) = api::hook(&lua, "init")? {
                let args = lua.create_table()?;
                for (i, a) in source.args.iter().enumerate() {
                    args.raw_set(i, a.as_str())?;
                }
                init.call::<()>(args)?;
            }
            Ok(())
        };
        let ran = init().map_err(|e| runtime("init", &e));
        api::flush_lua_output();
        ran?;
        // wrk renders the request once here, whether or not the script has request().
        api::install_request(&lua).map_err(|e| runtime("init", &e))?;
        let hooks = |name| api::hook(&lua, name).map_err(|e| runtime("init", &e));
        let (request, delay, response) = (hooks("request")?, hooks("delay")?, hooks("response")?);
        let fixed = match request {
            Some(_) => None,
            None => Some(render(&lua).map_err(|e| runtime("request", &e))?),
        };
        Ok(ThreadScript { lua, request, delay, response, stop, fixed })
    }

    /// The request to send every time, when the script has no `request()`.
    pub fn fixed_request(&self) -> Option<&[u8]> {
        self.fixed.as_deref()
    }

    /// Whether `request()` builds each request.
    pub fn builds_requests(&self) -> bool {
        self.request.is_some()
    }

    /// Whether `delay()` is defined.
    pub fn has_delay(&self) -> bool {
        self.delay.is_some()
    }

    /// Whether `response()` is defined (and so responses must be kept for it).
    pub fn wants_responses(&self) -> bool {
        self.response.is_some()
    }

    /// Calls `request()`, replacing `out` with the bytes to send.
    pub fn request(&self, out: &mut Vec<u8>) -> Result<(), ScriptError> {
        let Some(f) = &self.request else { return Ok(()) };
        let s: mlua::String = f.call(()).map_err(|e| runtime("request", &e))?;
        out.clear();
        out.extend_from_slice(&s.as_bytes());
        Ok(())
    }

    /// Calls `delay()`: milliseconds to wait before the next request.
    pub fn delay_ms(&self) -> Result<f64, ScriptError> {
        let Some(f) = &self.delay else { return Ok(0.0) };
        let ms: Option<f64> = f.call(()).map_err(|e| runtime("delay", &e))?;
        Ok(ms.filter(|m| m.is_finite() && *m > 0.0).unwrap_or(0.0))
    }

    /// Calls `response(status, headers, body)`.
    pub fn response(&self, status: u16, captured: Option<&Captured>) -> Result<(), ScriptError> {
        let Some(f) = &self.response else { return Ok(()) };
        let call = || -> mlua::Result<()> {
            let headers = self.lua.create_table()?;
            let mut body = None;
            if let Some(c) = captured {
                for (name, value) in &c.headers {
                    headers.set(self.lua.create_string(name)?, self.lua.create_string(value)?)?;
                }
                body = Some(self.lua.create_string(&c.body)?);
            }
            f.call::<()>((status, headers, body))
        };
        call().map_err(|e| runtime("response", &e))
    }

    /// Whether the script called `wrk.thread:stop()` (or `thread:stop()` in setup).
    pub fn stop_requested(&self) -> bool {
        self.stop.get()
    }

    /// The script's own globals that can be copied, for `thread:get` in `done`.
    pub fn globals(&self) -> Vec<(String, Value)> {
        let mut out = Vec::new();
        for (k, v) in self.lua.globals().pairs::<mlua::Value, mlua::Value>().flatten() {
            let mlua::Value::String(k) = k else { continue };
            let Ok(name) = k.to_str().map(|s| s.to_string()) else { continue };
            if BUILTIN_GLOBALS.contains(&name.as_str()) || matches!(v, mlua::Value::Function(_)) {
                continue;
            }
            if let Ok(v) = api::export(&v, 0) {
                out.push((name, v));
            }
        }
        out
    }
}

impl Drop for ThreadScript {
    fn drop(&mut self) {
        // What the hooks printed reaches stdout before the report, as in wrk.
        api::flush_lua_output();
    }
}

/// `wrk.request()`: the request rendered after `init`.
fn render(lua: &Lua) -> mlua::Result<Vec<u8>> {
    let wrk: mlua::Table = lua.globals().get("wrk")?;
    let request: Function = wrk.get("request")?;
    let s: mlua::String = request.call(())?;
    Ok(s.as_bytes().to_vec())
}
