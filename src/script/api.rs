//! The `wrk` table both kinds of state share: URL fields, `wrk.format`, `wrk.lookup`,
//! `wrk.connect`, the address type, and value transfer between states. Where wrk's own
//! `wrk.lua` or `script.c` fixes a detail a script can observe (the port is a string, an
//! address prints as `ip:port`, `wrk.request()` exists only in a worker's state), this follows it.

use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::time::Duration;

use mlua::{Lua, MetaMethod, Table, UserData, UserDataMethods};

use super::{ScriptError, UrlParts, Value};

/// How long `wrk.connect` waits for a TCP connection.
const CONNECT_PROBE_TIMEOUT: Duration = Duration::from_secs(2);
/// Deepest table nesting copied between states (a guard against cycles).
const MAX_DEPTH: usize = 32;

/// `wrk.format`, written in Lua because scripts call it in Lua and it builds Lua strings.
const FORMAT_LUA: &str = r#"
local wrk = wrk
function wrk.format(method, path, headers, body)
  method = method or wrk.method
  path = path or wrk.path
  headers = headers or wrk.headers
  body = body or wrk.body
  local lines = { method .. " " .. path .. " HTTP/1.1" }
  if headers["Host"] == nil and wrk.headers["Host"] ~= nil then
    lines[#lines + 1] = "Host: " .. wrk.headers["Host"]
  end
  for name, value in pairs(headers) do
    if name ~= "Content-Length" then
      lines[#lines + 1] = name .. ": " .. tostring(value)
    end
  end
  if body ~= nil then
    lines[#lines + 1] = "Content-Length: " .. string.len(body)
  end
  lines[#lines + 1] = ""
  lines[#lines + 1] = body or ""
  return table.concat(lines, "\r\n")
end
"#;

/// `wrk.request()` in a worker's state: the request `wrk.format()` builds from the `wrk` table
/// as `init` left it, rendered once (wrk's `wrk.init` does the same).
const REQUEST_LUA: &str = r#"
local req = wrk.format()
wrk.request = function()
  return req
end
"#;

/// Service names `wrk.lookup` accepts besides port numbers: what wrk passes when the URL has
/// no port (`wrk.port or "http"` in wrk's examples).
const SERVICES: [(&str, u16); 2] = [("http", 80), ("https", 443)];

/// A resolved address, as `wrk.lookup` returns and `thread.addr` holds.
#[derive(Debug, Clone, Copy)]
pub struct Addr(pub SocketAddr);

impl UserData for Addr {
    fn add_methods<M: UserDataMethods<Self>>(methods: &mut M) {
        // wrk prints getnameinfo's numeric host and service joined by ':', IPv6 without brackets.
        methods.add_meta_method(MetaMethod::ToString, |_, this, ()| Ok(format!("{}:{}", this.0.ip(), this.0.port())));
    }
}

/// Installs the `wrk` global for `url`.
pub fn install(lua: &Lua, url: &UrlParts) -> mlua::Result<()> {
    let wrk = lua.create_table()?;
    wrk.set("scheme", url.scheme.as_str())?;
    wrk.set("host", url.host.as_str())?;
    // A string, as wrk takes it from the URL.
    wrk.set("port", url.port.map(|p| p.to_string()))?;
    wrk.set("method", "GET")?;
    wrk.set("path", url.path.as_str())?;
    let headers = lua.create_table()?;
    for (name, value) in &url.headers {
        headers.set(name.as_str(), value.as_str())?;
    }
    if !url.headers.iter().any(|(n, _)| n.eq_ignore_ascii_case("host")) {
        headers.set("Host", url.host_header.as_str())?;
    }
    wrk.set("headers", headers)?;
    wrk.set("body", mlua::Nil)?;
    wrk.set(
        "lookup",
        lua.create_function(|lua, (host, service): (String, mlua::Value)| {
            let service = match service {
                mlua::Value::Integer(n) => n.to_string(),
                mlua::Value::Number(n) => (n as i64).to_string(),
                mlua::Value::String(s) => s.to_str()?.to_string(),
                _ => return Err(mlua::Error::runtime("wrk.lookup(host, service): service must be a port")),
            };
            let port = service_port(&service)
                .ok_or_else(|| mlua::Error::runtime(format!("wrk.lookup: unknown service '{service}'")))?;
            let addrs = (host.as_str(), port)
                .to_socket_addrs()
                .map_err(|e| mlua::Error::runtime(format!("wrk.lookup: cannot resolve {host}:{service}: {e}")))?;
            let list = lua.create_table()?;
            for (i, a) in addrs.enumerate() {
                list.set(i + 1, Addr(a))?;
            }
            Ok(list)
        })?,
    )?;
    wrk.set(
        "connect",
        lua.create_function(|_, addr: mlua::UserDataRef<Addr>| {
            Ok(TcpStream::connect_timeout(&addr.0, CONNECT_PROBE_TIMEOUT).is_ok())
        })?,
    )?;
    lua.globals().set("wrk", wrk)?;
    lua.load(FORMAT_LUA).set_name("=wrk.format").exec()
}

/// Defines `wrk.request()` from the `wrk` table as it stands now (after `init`).
pub fn install_request(lua: &Lua) -> mlua::Result<()> {
    lua.load(REQUEST_LUA).set_name("=wrk.request").exec()
}

/// The port a `wrk.lookup` service names: a number, or `http`/`https`.
fn service_port(service: &str) -> Option<u16> {
    service.parse().ok().or_else(|| SERVICES.iter().find(|(name, _)| *name == service).map(|&(_, port)| port))
}

/// Writes out what Lua's `print` and `io.write` left in C's stdout buffer, so a script's output
/// keeps its place among strain's own lines (wrk prints both through the same buffer).
pub fn flush_lua_output() {
    // SAFETY: fflush(NULL) flushes every C output stream; it takes no pointer from us.
    unsafe {
        libc::fflush(std::ptr::null_mut());
    }
}

/// The global function `name`, if the script defines one.
pub fn hook(lua: &Lua, name: &str) -> mlua::Result<Option<mlua::Function>> {
    match lua.globals().get::<mlua::Value>(name)? {
        mlua::Value::Function(f) => Ok(Some(f)),
        _ => Ok(None),
    }
}

/// Copies a Lua value out as plain data; functions, userdata and threads are refused.
pub fn export(v: &mlua::Value, depth: usize) -> Result<Value, String> {
    Ok(match v {
        mlua::Value::Nil => Value::Nil,
        mlua::Value::Boolean(b) => Value::Bool(*b),
        mlua::Value::Integer(n) => Value::Number(*n as f64),
        mlua::Value::Number(n) => Value::Number(*n),
        mlua::Value::String(s) => Value::Str(s.as_bytes().to_vec()),
        mlua::Value::Table(t) => {
            if depth >= MAX_DEPTH {
                return Err("tables nested too deep (a cycle?)".to_string());
            }
            let mut pairs = Vec::new();
            for pair in t.pairs::<mlua::Value, mlua::Value>() {
                let (k, v) = pair.map_err(|e| e.to_string())?;
                pairs.push((export(&k, depth + 1)?, export(&v, depth + 1)?));
            }
            Value::Table(pairs)
        }
        other => return Err(format!("a {} cannot be passed between threads", other.type_name())),
    })
}

/// Recreates plain data as a Lua value in `lua`.
pub fn import(lua: &Lua, v: &Value) -> mlua::Result<mlua::Value> {
    Ok(match v {
        Value::Nil => mlua::Value::Nil,
        Value::Bool(b) => mlua::Value::Boolean(*b),
        Value::Number(n) => mlua::Value::Number(*n),
        Value::Str(s) => mlua::Value::String(lua.create_string(s)?),
        Value::Table(pairs) => {
            let t: Table = lua.create_table()?;
            for (k, v) in pairs {
                t.raw_set(import(lua, k)?, import(lua, v)?)?;
            }
            mlua::Value::Table(t)
        }
    })
}

/// A hook's failure as a [`ScriptError`].
pub fn runtime(hook: &'static str, e: &mlua::Error) -> ScriptError {
    ScriptError::Runtime { hook, message: describe(e) }
}

/// The text of a Lua error for messages: syntax errors are already `file:line: message`;
/// runtime errors carry their traceback.
pub fn describe(e: &mlua::Error) -> String {
    match e {
        mlua::Error::SyntaxError { message, .. } => message.clone(),
        mlua::Error::RuntimeError(message) => message.clone(),
        mlua::Error::CallbackError { traceback, cause } => format!("{}\n{traceback}", describe(cause)),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url() -> UrlParts {
        UrlParts {
            scheme: "http".into(),
            host: "127.0.0.1".into(),
            port: Some(8080),
            path: "/a?b".into(),
            host_header: "127.0.0.1:8080".into(),
            headers: vec![],
        }
    }

    #[test]
    fn lookup_services_are_ports_or_http_names() {
        for (service, port) in [("80", Some(80)), ("8080", Some(8080)), ("http", Some(80)), ("https", Some(443))] {
            assert_eq!(service_port(service), port, "{service}");
        }
        // wrk asks getaddrinfo; strain knows only the names URLs use.
        for service in ["ftp", "", "65536", "-1"] {
            assert_eq!(service_port(service), None, "{service}");
        }
    }

    #[test]
    fn addresses_print_as_wrk_prints_them() {
        let lua = Lua::new();
        for (addr, printed) in [("127.0.0.1:80", "127.0.0.1:80"), ("[::1]:8080", "::1:8080")] {
            lua.globals().set("a", Addr(addr.parse().unwrap())).unwrap();
            assert_eq!(lua.load("return tostring(a)").eval::<String>().unwrap(), printed);
        }
    }

    #[test]
    fn the_port_is_a_string_and_wrk_request_keeps_the_table_as_it_was() {
        let lua = Lua::new();
        install(&lua, &url()).unwrap();
        assert_eq!(lua.load("return type(wrk.port) .. ' ' .. wrk.port").eval::<String>().unwrap(), "string 8080");
        lua.load("wrk.method = 'PUT'; wrk.body = 'xy'").exec().unwrap();
        install_request(&lua).unwrap();
        lua.load("wrk.method = 'DELETE'").exec().unwrap();
        let req = lua.load("return wrk.request()").eval::<String>().unwrap();
        assert_eq!(req, "PUT /a?b HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nContent-Length: 2\r\n\r\nxy");
    }
}
