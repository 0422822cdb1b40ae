//! wrk-compatible Lua scripting (`-s FILE`), on an embedded LuaJIT (what wrk runs).
//!
//! Like wrk, there is one Lua state for the main thread ([`MainScript`]: `setup` before the
//! run, `done` after it) and one per worker thread ([`ThreadScript`]: `init`, `delay`,
//! `request`, `response`). Hooks are probed once: one that is not defined is never called, and
//! a script that only sets `wrk.method`, `wrk.headers` or `wrk.body` has its request rendered
//! once per thread, so it costs nothing per request.
//!
//! Values cross between states only as plain data ([`Value`]): `thread:set` in `setup` becomes a
//! global of that thread's state, and the thread's globals are copied back when it ends, so
//! `thread:get` in `done` reads what the thread left. No Lua state is shared between threads.
//!
//! Lua's `print` and `io.write` go through C's stdout buffer, strain's report through Rust's;
//! the C buffer is flushed after `setup`, `init`, a thread's end and `done`, so a script's
//! output keeps the place it has in wrk's output.
//!
//! Where strain differs from wrk: a script that does not load stops strain before any load
//! (`file:line: message`); a runtime error in a hook is reported once, with its traceback, and
//! ends the run cleanly with its summary.

mod api;
mod main_state;
mod thread_state;

pub use main_state::MainScript;
pub use thread_state::ThreadScript;

use std::net::SocketAddr;
use std::path::PathBuf;

/// Why a script cannot run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ScriptError {
    /// The file cannot be read.
    #[error("cannot read script {path}: {why}")]
    Read {
        /// The path given with `-s`.
        path: String,
        /// The OS error.
        why: String,
    },
    /// The script does not compile, or its top level fails: `file:line: message`.
    #[error("{0}")]
    Load(String),
    /// A hook failed while running; the message carries the Lua traceback.
    #[error("script error in {hook}(): {message}")]
    Runtime {
        /// The hook that failed.
        hook: &'static str,
        /// Lua's message and traceback.
        message: String,
    },
}

/// A script and what it is run with, shared read-only by every thread.
#[derive(Debug, Clone)]
pub struct ScriptSource {
    /// The file, for messages.
    pub path: PathBuf,
    /// Its text.
    pub code: String,
    /// `args[0]` (the URL) and the words after `--`.
    pub args: Vec<String>,
}

impl ScriptSource {
    /// Reads the script file.
    pub fn read(path: PathBuf, args: Vec<String>) -> Result<ScriptSource, ScriptError> {
        let code = std::fs::read_to_string(&path)
            .map_err(|e| ScriptError::Read { path: path.display().to_string(), why: e.to_string() })?;
        Ok(ScriptSource { path, code, args })
    }

    /// Lua's chunk name: `@path` makes messages read `path:line: message`.
    fn chunk_name(&self) -> String {
        format!("@{}", self.path.display())
    }
}

/// A value that can cross from one Lua state to another.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// nil.
    Nil,
    /// A boolean.
    Bool(bool),
    /// A number.
    Number(f64),
    /// A string (bytes).
    Str(Vec<u8>),
    /// A table of transferable keys and values.
    Table(Vec<(Value, Value)>),
}

/// What `setup(thread)` decided for one worker thread.
#[derive(Debug, Clone, Default)]
pub struct ThreadSetup {
    /// `thread.addr = ...`: the address this thread loads instead of the URL's.
    pub addr: Option<SocketAddr>,
    /// `thread:set(name, value)`: globals of the thread's state before `init`.
    pub values: Vec<(String, Value)>,
    /// `thread:stop()` was called in setup: the thread sends nothing.
    pub stopped: bool,
}

/// The URL's parts, as the `wrk` table shows them.
#[derive(Debug, Clone)]
pub struct UrlParts {
    /// `http` or `https`.
    pub scheme: String,
    /// Host without brackets.
    pub host: String,
    /// The port when the URL names one.
    pub port: Option<u16>,
    /// Path and query.
    pub path: String,
    /// The `Host` header value.
    pub host_header: String,
    /// `-H` headers, in order.
    pub headers: Vec<(String, String)>,
}
