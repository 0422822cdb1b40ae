//! The server under test as a URL names it: scheme, host, port, path, and the Host header.

use super::ConfigError;

/// Transport of the target.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scheme {
    /// Plain TCP.
    Http,
    /// TLS over TCP.
    Https,
}

impl Scheme {
    /// `https` over TLS, `http` without.
    pub fn of_tls(tls: bool) -> Scheme {
        if tls {
            Scheme::Https
        } else {
            Scheme::Http
        }
    }

    /// Its name in a URL (and HTTP/2's `:scheme`): the one place it is spelled.
    pub fn name(self) -> &'static str {
        match self {
            Scheme::Http => "http",
            Scheme::Https => "https",
        }
    }
}

/// The server under test, from the URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// The URL as the user wrote it (printed in the report).
    pub url: String,
    /// http or https.
    pub scheme: Scheme,
    /// Host name or address literal, without IPv6 brackets.
    pub host: String,
    /// Port to connect to (the scheme's default when the URL names none).
    pub port: u16,
    /// Whether the URL named the port (wrk then puts it in `Host`).
    pub explicit_port: bool,
    /// Path and query, `/` when the URL has none.
    pub path: String,
    /// The URL is `ws://` (over http) or `wss://` (over https): a WebSocket endpoint.
    pub websocket: bool,
}

impl Target {
    /// Parses `http[s]://host[:port][/path][?query]` (or `ws[s]://`, WebSocket's, over the
    /// same schemes), with IPv6 literals in brackets.
    pub fn parse(url: &str) -> Result<Target, ConfigError> {
        let bad = |why| ConfigError::Url { url: url.to_string(), why };
        let prefixes = [
            ("http://", Scheme::Http, false),
            ("https://", Scheme::Https, false),
            ("ws://", Scheme::Http, true),
            ("wss://", Scheme::Https, true),
        ];
        let found = prefixes.iter().find_map(|(p, s, ws)| strip_prefix_ci(url, p).map(|rest| (*s, rest, *ws)));
        let (scheme, rest, websocket) = if let Some(f) = found {
            f
        } else if url.contains("://") {
            return Err(bad("only http://, https://, ws:// and wss:// are supported"));
        } else {
            return Err(bad("it must start with http:// or https://"));
        };
        let split = rest.find(['/', '?', '#']).unwrap_or(rest.len());
        let (authority, tail) = rest.split_at(split);
        if authority.contains('@') {
            return Err(bad("user information in the URL is not supported"));
        }
        let (host, port) = if let Some(v6) = authority.strip_prefix('[') {
            let end = v6.find(']').ok_or_else(|| bad("unclosed '[' in IPv6 address"))?;
            let host = &v6[..end];
            if host.parse::<std::net::Ipv6Addr>().is_err() {
                return Err(bad("invalid IPv6 address"));
            }
            let after = &v6[end + 1..];
            let port = match after.strip_prefix(':') {
                Some(p) => Some(p),
                None if after.is_empty() => None,
                None => return Err(bad("unexpected text after IPv6 address")),
            };
            (host, port)
        } else {
            match authority.rsplit_once(':') {
                Some((h, p)) => (h, Some(p)),
                None => (authority, None),
            }
        };
        if host.is_empty() {
            return Err(bad("missing host"));
        }
        if host.contains(':') && !authority.starts_with('[') {
            return Err(bad("IPv6 addresses must be in brackets"));
        }
        let default_port = match scheme {
            Scheme::Http => 80,
            Scheme::Https => 443,
        };
        let port_num = match port {
            Some(p) => match p.parse::<u16>() {
                Ok(n) if n > 0 => n,
                _ => return Err(bad("invalid port")),
            },
            None => default_port,
        };
        // A fragment is never sent on the wire.
        let tail = tail.split('#').next().unwrap_or("");
        let path = match tail {
            "" => "/".to_string(),
            t if t.starts_with('?') => format!("/{t}"),
            t => t.to_string(),
        };
        if path.bytes().any(|b| b <= b' ' || b == 0x7f) {
            return Err(bad("spaces and control characters must be percent-encoded"));
        }
        Ok(Target {
            url: url.to_string(),
            scheme,
            host: host.to_string(),
            port: port_num,
            explicit_port: port.is_some(),
            path,
            websocket,
        })
    }

    /// The TLS client for this server, offering `alpn`: none over http (and ws).
    pub fn tls(
        &self,
        insecure: bool,
        alpn: &[&[u8]],
    ) -> Result<Option<crate::net::tls::TlsSetup>, crate::net::tls::TlsError> {
        match self.scheme {
            Scheme::Http => Ok(None),
            Scheme::Https => crate::net::tls::TlsSetup::new(&self.host, insecure, alpn).map(Some),
        }
    }

    /// Whether `other` is the same server (scheme, host and port).
    pub fn same_origin(&self, other: &Target) -> bool {
        (self.scheme, &self.host, self.port) == (other.scheme, &other.host, other.port)
    }

    /// `scheme://host:port`, naming the server in messages.
    pub fn origin(&self) -> String {
        let scheme = self.scheme.name();
        let host = if self.host.contains(':') { format!("[{}]", self.host) } else { self.host.clone() };
        format!("{scheme}://{host}:{}", self.port)
    }

    /// The same server at `path` (a path and query, starting with `/`), its URL written so.
    pub fn at_path(&self, path: &str) -> Target {
        let base = self.url.strip_suffix(self.path.as_str()).unwrap_or(&self.url).trim_end_matches('/');
        Target { url: format!("{base}{path}"), path: path.to_owned(), ..self.clone() }
    }

    /// The `Host` header value wrk sends: brackets for IPv6, `:port` when the URL named one.
    pub fn host_header(&self) -> String {
        let host = if self.host.contains(':') { format!("[{}]", self.host) } else { self.host.clone() };
        if self.explicit_port {
            format!("{host}:{}", self.port)
        } else {
            host
        }
    }
}

fn strip_prefix_ci<'a>(s: &'a str, prefix: &str) -> Option<&'a str> {
    let head = s.get(..prefix.len())?;
    head.eq_ignore_ascii_case(prefix).then(|| &s[prefix.len()..])
}
