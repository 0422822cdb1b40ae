//! Requests (and response heads) as the field lists of the multiplexed protocols, HTTP/2 and
//! HTTP/3 (pseudo-headers first, names lowercase), made from the HTTP/1 bytes the rest of
//! strain builds (the rendered URL request, a script's `wrk.format`, a proxy test's document
//! request), so every way of making a request works unchanged over either.

/// A request of HTTP/2 or HTTP/3: its fields (pseudo-headers first) and body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldRequest {
    /// `:method`, `:scheme`, `:authority`, `:path`, then the other headers, names lowercase.
    pub fields: Vec<(Vec<u8>, Vec<u8>)>,
    /// The body, when the request has one.
    pub body: Option<Vec<u8>>,
}

/// Headers that belong to one HTTP/1 connection and must not appear in HTTP/2 (RFC 9113
/// 8.2.2, RFC 9114 4.2); `Host` becomes `:authority`.
const CONNECTION_SPECIFIC: [&str; 6] =
    ["connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade", "host"];

/// Converts one HTTP/1 request (head and `Content-Length` body) for `scheme` (`http` or
/// `https`); `authority` is used when the request has no `Host`.
pub fn from_http1(bytes: &[u8], scheme: &str, authority: &str) -> Result<FieldRequest, String> {
    let mut headers = [httparse::EMPTY_HEADER; crate::http::MAX_HEADERS];
    let mut req = httparse::Request::new(&mut headers);
    let head_len = match req.parse(bytes) {
        Ok(httparse::Status::Complete(n)) => n,
        Ok(httparse::Status::Partial) => return Err("the request head is incomplete".into()),
        Err(e) => return Err(format!("the request is not HTTP/1: {e}")),
    };
    let method = req.method.unwrap_or("GET");
    let path = req.path.unwrap_or("/");
    // A proxy's absolute-form target names its own authority and path.
    let (authority_from_target, path) = match path.split_once("://") {
        Some((_, rest)) => {
            let (auth, p) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
            (Some(auth.to_string()), if p.is_empty() { "/" } else { p })
        }
        None => (None, path),
    };
    let host = req
        .headers
        .iter()
        .find(|h| h.name.eq_ignore_ascii_case("host"))
        .map(|h| String::from_utf8_lossy(h.value).into_owned());
    let authority = authority_from_target.or(host).unwrap_or_else(|| authority.to_string());
    let mut fields: Vec<(Vec<u8>, Vec<u8>)> = vec![
        (b":method".to_vec(), method.as_bytes().to_vec()),
        (b":scheme".to_vec(), scheme.as_bytes().to_vec()),
        (b":authority".to_vec(), authority.into_bytes()),
        (b":path".to_vec(), path.as_bytes().to_vec()),
    ];
    let mut length = None;
    for h in req.headers.iter() {
        let name = h.name.to_ascii_lowercase();
        if name == "content-length" {
            length = Some(
                std::str::from_utf8(h.value)
                    .ok()
                    .and_then(|v| v.trim().parse::<usize>().ok())
                    .ok_or("a bad Content-Length")?,
            );
        }
        if name == "transfer-encoding" {
            return Err("chunked request bodies are not sent over HTTP/2: give a Content-Length".into());
        }
        if CONNECTION_SPECIFIC.contains(&name.as_str()) || (name == "te" && !h.value.eq_ignore_ascii_case(b"trailers"))
        {
            continue;
        }
        fields.push((name.into_bytes(), h.value.to_vec()));
    }
    let body = match length {
        Some(n) if n > 0 => {
            let b = bytes.get(head_len..head_len + n).ok_or("the body is shorter than its Content-Length")?;
            Some(b.to_vec())
        }
        _ => None,
    };
    if bytes.len() > head_len + length.unwrap_or(0) {
        return Err("one request at a time over HTTP/2 (streams replace pipelining): use -m".into());
    }
    Ok(FieldRequest { fields, body })
}

/// An HTTP/1 response head rendered by an HTTP/1 server (the origin's renderers) as HTTP/2 fields: `:status` from the
/// status line, then the header lines with their names lowercased (in place), connection
/// headers dropped.
pub fn response_fields(head: &mut [u8]) -> Vec<(&[u8], &[u8])> {
    for line in head.split_mut(|&b| b == b'\n').skip(1) {
        if let Some(colon) = line.iter().position(|&b| b == b':') {
            line[..colon].make_ascii_lowercase();
        }
    }
    let head: &[u8] = head;
    let mut lines = head.split(|&b| b == b'\n').map(|l| l.strip_suffix(b"\r").unwrap_or(l));
    let mut fields = Vec::with_capacity(8);
    // "HTTP/1.1 200 OK": the code is the second word.
    if let Some(status) = lines.next().and_then(|l| l.split(|&b| b == b' ').nth(1)) {
        fields.push((&b":status"[..], status));
    }
    for line in lines {
        let Some(colon) = line.iter().position(|&b| b == b':') else { continue };
        let (name, value) = (&line[..colon], line[colon + 1..].trim_ascii());
        if name != b"connection" && name != b"keep-alive" {
            fields.push((name, value));
        }
    }
    fields
}

#[cfg(test)]
mod tests {
    use super::*;

    fn field<'a>(r: &'a FieldRequest, name: &str) -> Option<&'a str> {
        r.fields.iter().find(|(n, _)| n == name.as_bytes()).map(|(_, v)| std::str::from_utf8(v).unwrap())
    }

    #[test]
    fn http1_requests_become_fields() {
        let r = from_http1(b"POST /a?b=1 HTTP/1.1\r\nHost: h:8080\r\nConnection: keep-alive\r\nX-Token: t\r\nContent-Length: 3\r\n\r\nabc", "http", "x").unwrap();
        assert_eq!(field(&r, ":method"), Some("POST"));
        assert_eq!(field(&r, ":authority"), Some("h:8080"));
        assert_eq!(field(&r, ":path"), Some("/a?b=1"));
        assert_eq!(field(&r, "x-token"), Some("t"));
        assert_eq!(field(&r, "connection"), None);
        assert_eq!(field(&r, "host"), None);
        assert_eq!(r.body.as_deref(), Some(&b"abc"[..]));
        let r = from_http1(b"GET http://o:1/d/2/3 HTTP/1.1\r\n\r\n", "http", "x").unwrap();
        assert_eq!((field(&r, ":authority"), field(&r, ":path")), (Some("o:1"), Some("/d/2/3")));
        assert!(from_http1(b"GET / HTTP/1.1\r\n\r\nGET / HTTP/1.1\r\n\r\n", "http", "x").unwrap_err().contains("-m"));
        assert!(from_http1(b"nonsense", "http", "x").is_err());
        assert!(from_http1(b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n", "http", "x").is_err());
    }
}
