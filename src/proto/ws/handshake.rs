//! The opening handshake (RFC 6455 section 4): the client's upgrade request, the server's
//! `101 Switching Protocols` checked, and the accept value both sides compute.


/// The GUID the accept value is made with (section 1.3).
const GUID: &[u8] = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11";

/// Most bytes of a handshake response head read before it is refused.
pub const MAX_HEAD: usize = 16 * 1024;

/// `Sec-WebSocket-Accept` for `key`: base64 of the SHA-1 of the key and the GUID.
pub fn accept(key: &[u8]) -> String {
    let mut ctx = boring::sha::Sha1::new();
    ctx.update(key);
    ctx.update(GUID);
    crate::b64::encode(&ctx.finish())
}

/// A key for one connection: 16 random bytes, base64.
pub fn key(rng: &mut crate::rng::Rng) -> String {
    let mut bytes = [0u8; 16];
    bytes[..8].copy_from_slice(&rng.next_u64().to_le_bytes());
    bytes[8..].copy_from_slice(&rng.next_u64().to_le_bytes());
    crate::b64::encode(&bytes)
}

/// What a client asks for in its upgrade request.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Offer {
    /// The request target (path and query).
    pub path: String,
    /// The Host header's value.
    pub host: String,
    /// Subprotocols offered (`--subprotocol`), in order.
    pub subprotocols: Vec<String>,
    /// permessage-deflate is offered (`--deflate`).
    pub deflate: bool,
    /// More headers (`-H`), as `Name: value` lines.
    pub headers: Vec<(String, String)>,
}

impl Offer {
    /// The upgrade request with `key`.
    pub fn request(&self, key: &str) -> Vec<u8> {
        let mut r = format!(
            "GET {} HTTP/1.1\r\nHost: {}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n",
            self.path, self.host
        );
        if !self.subprotocols.is_empty() {
            r.push_str(&format!("Sec-WebSocket-Protocol: {}\r\n", self.subprotocols.join(", ")));
        }
        if self.deflate {
            r.push_str("Sec-WebSocket-Extensions: permessage-deflate; client_max_window_bits\r\n");
        }
        for (n, v) in &self.headers {
            r.push_str(&format!("{n}: {v}\r\n"));
        }
        r.push_str("\r\n");
        r.into_bytes()
    }
}

/// What the server agreed to.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Agreed {
    /// The subprotocol it chose, if any.
    pub subprotocol: Option<String>,
    /// permessage-deflate is on, with these parameters.
    pub deflate: Option<Deflate>,
}

/// permessage-deflate's parameters as the server answered them (RFC 7692).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Deflate {
    /// The server resets its compression context for each message.
    pub server_no_context_takeover: bool,
    /// The client must reset its context for each message.
    pub client_no_context_takeover: bool,
}

/// Why a server's answer to the upgrade is not a WebSocket.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HandshakeError {
    /// The server answered with another status.
    #[error("the server refused the WebSocket upgrade: HTTP {0}")]
    Refused(u16),
    /// Not HTTP, or a head over the limit.
    #[error("the server's answer to the WebSocket upgrade is not HTTP")]
    NotHttp,
    /// 101 without the headers that make it a WebSocket, or with the wrong accept value.
    #[error("the server's 101 is not a WebSocket handshake ({0})")]
    Invalid(&'static str),
    /// Subprotocols were asked for and the server chose none, or one not offered.
    #[error("the server refused the subprotocol {0}")]
    Subprotocol(String),
    /// An extension the client did not offer.
    #[error("the server answered with an extension not offered: {0}")]
    Extension(String),
}

/// Reads the server's answer at the start of `data`: `Ok(None)` until its head is all there,
/// else what was agreed and the head's length (frames may follow in the same bytes).
pub fn answer(data: &[u8], key: &str, offer: &Offer) -> Result<Option<(Agreed, usize)>, HandshakeError> {
    let mut headers = [httparse::EMPTY_HEADER; 64];
    let mut resp = httparse::Response::new(&mut headers);
    let len = match resp.parse(data) {
        Ok(httparse::Status::Complete(n)) => n,
        Ok(httparse::Status::Partial) if data.len() <= MAX_HEAD => return Ok(None),
        _ => return Err(HandshakeError::NotHttp),
    };
    let status = resp.code.unwrap_or(0);
    if status != 101 {
        return Err(HandshakeError::Refused(status));
    }
    let get = |name: &str| resp.headers.iter().find(|h| h.name.eq_ignore_ascii_case(name)).map(|h| h.value);
    let text = |v: &[u8]| String::from_utf8_lossy(v).trim().to_string();
    if !get("upgrade").is_some_and(|v| text(v).eq_ignore_ascii_case("websocket")) {
        return Err(HandshakeError::Invalid("no Upgrade: websocket"));
    }
    if !get("connection").is_some_and(|v| text(v).split(',').any(|t| t.trim().eq_ignore_ascii_case("upgrade"))) {
        return Err(HandshakeError::Invalid("no Connection: Upgrade"));
    }
    if get("sec-websocket-accept").map(text).as_deref() != Some(accept(key.as_bytes()).as_str()) {
        return Err(HandshakeError::Invalid("wrong Sec-WebSocket-Accept"));
    }
    let subprotocol = get("sec-websocket-protocol").map(text);
    match &subprotocol {
        Some(p) if !offer.subprotocols.contains(p) => return Err(HandshakeError::Subprotocol(p.clone())),
        None if !offer.subprotocols.is_empty() => {
            return Err(HandshakeError::Subprotocol(offer.subprotocols.join(", ")))
        }
        _ => {}
    }
    let mut deflate = None;
    for ext in resp.headers.iter().filter(|h| h.name.eq_ignore_ascii_case("sec-websocket-extensions")) {
        for one in text(ext.value).split(',').map(str::trim).filter(|e| !e.is_empty()) {
            let mut params = one.split(';').map(str::trim);
            let name = params.next().unwrap_or("");
            if name != "permessage-deflate" || !offer.deflate || deflate.is_some() {
                return Err(HandshakeError::Extension(one.to_string()));
            }
            let mut d = Deflate::default();
            for p in params {
                match p.split('=').next().unwrap_or("").trim() {
                    "server_no_context_takeover" => d.server_no_context_takeover = true,
                    "client_no_context_takeover" => d.client_no_context_takeover = true,
                    // Window bits below 15 only shrink what a side may refer back to; strain
                    // decompresses with a full window and compresses without context, which
                    // satisfies any client_max_window_bits.
                    "server_max_window_bits" | "client_max_window_bits" => {}
                    _ => return Err(HandshakeError::Extension(one.to_string())),
                }
            }
            deflate = Some(d);
        }
    }
    Ok(Some((Agreed { subprotocol, deflate }, len)))
}

/// Why the upgrade checked before the load failed.
#[derive(Debug, thiserror::Error)]
pub enum ProbeError {
    /// No connection (or no TLS session) to the server.
    #[error("cannot connect to {addr}: {why}")]
    Connect {
        /// The server.
        addr: std::net::SocketAddr,
        /// What failed.
        why: String,
    },
    /// The server's answer is not a WebSocket, or refuses what was offered.
    #[error("{0}")]
    Handshake(#[from] HandshakeError),
}

/// Upgrades one connection as `offer` asks, checks the server's answer and closes: before any
/// load, so a refused upgrade or subprotocol is one clear line and nothing is sent.
pub fn probe(
    addr: std::net::SocketAddr,
    tls: Option<&crate::net::tls::TlsSetup>,
    offer: &Offer,
    timeout: std::time::Duration,
) -> Result<Agreed, ProbeError> {
    use std::io::{Read, Write};
    let failed = |e: std::io::Error| ProbeError::Connect { addr, why: e.to_string() };
    let mut conn = crate::net::tls::connect_blocking(addr, tls, timeout).map_err(failed)?;
    let key = key(&mut crate::rng::Rng::new(std::process::id().into()));
    conn.write_all(&offer.request(&key)).map_err(failed)?;
    let mut head = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let n = conn.read(&mut buf).map_err(failed)?;
        if n == 0 {
            return Err(failed(std::io::Error::other("the server closed before answering the WebSocket upgrade")));
        }
        head.extend_from_slice(&buf[..n]);
        if let Some((agreed, _)) = answer(&head, &key, offer)? {
            let mut bye = Vec::new();
            crate::proto::ws::frame::write_frame(
                &mut bye,
                crate::proto::ws::frame::CLOSE,
                false,
                &1000u16.to_be_bytes(),
                Some([0; 4]),
            );
            let _ = conn.write_all(&bye);
            return Ok(agreed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rfc_accept_value() {
        assert_eq!(accept(b"dGhlIHNhbXBsZSBub25jZQ=="), "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
    }

    fn ok_head(key: &str, extra: &str) -> Vec<u8> {
        format!(
            "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: {}\r\n{extra}\r\n",
            accept(key.as_bytes())
        )
        .into_bytes()
    }

    #[test]
    fn answers_are_read_and_checked() {
        let key = "dGhlIHNhbXBsZSBub25jZQ==";
        let offer = Offer { path: "/".into(), host: "h".into(), ..Offer::default() };
        let head = ok_head(key, "");
        assert_eq!(answer(&head[..head.len() - 1], key, &offer), Ok(None));
        let mut with_frame = head.clone();
        with_frame.extend_from_slice(&[0x81, 0x00]);
        assert_eq!(answer(&with_frame, key, &offer), Ok(Some((Agreed::default(), head.len()))));
        assert_eq!(answer(b"HTTP/1.1 403 Forbidden\r\n\r\n", key, &offer), Err(HandshakeError::Refused(403)));
        assert_eq!(answer(b"SSH-2.0\r\n\r\n", key, &offer), Err(HandshakeError::NotHttp));
        assert!(matches!(answer(&ok_head("other", ""), key, &offer), Err(HandshakeError::Invalid(_))));
        let asked = Offer { subprotocols: vec!["chat".into()], ..offer.clone() };
        assert_eq!(answer(&head, key, &asked), Err(HandshakeError::Subprotocol("chat".into())));
        let chose = ok_head(key, "Sec-WebSocket-Protocol: chat\r\n");
        assert_eq!(answer(&chose, key, &asked).unwrap().unwrap().0.subprotocol.as_deref(), Some("chat"));
        assert_eq!(answer(&chose, key, &offer), Err(HandshakeError::Subprotocol("chat".into())));
        let deflate = ok_head(key, "Sec-WebSocket-Extensions: permessage-deflate; server_no_context_takeover\r\n");
        assert!(matches!(answer(&deflate, key, &offer), Err(HandshakeError::Extension(_))));
        let on = Offer { deflate: true, ..offer.clone() };
        let d = answer(&deflate, key, &on).unwrap().unwrap().0.deflate.unwrap();
        assert!(d.server_no_context_takeover && !d.client_no_context_takeover);
    }

    #[test]
    fn the_request_carries_the_offer() {
        let offer = Offer {
            path: "/chat?x=1".into(),
            host: "127.0.0.1:9".into(),
            subprotocols: vec!["a".into(), "b".into()],
            deflate: true,
            headers: vec![("X-Test".into(), "1".into())],
        };
        let r = String::from_utf8(offer.request("KEY")).unwrap();
        assert!(r.starts_with("GET /chat?x=1 HTTP/1.1\r\nHost: 127.0.0.1:9\r\n"));
        for line in ["Sec-WebSocket-Key: KEY", "Sec-WebSocket-Protocol: a, b", "permessage-deflate", "X-Test: 1"] {
            assert!(r.contains(line), "{line}");
        }
        assert!(r.ends_with("\r\n\r\n"));
    }
}
