//! Renders request heads the way wrk does, once per run: the hot path writes these bytes as they are.

/// One header field given by the user (`-H`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Header {
    /// Field name as given.
    pub name: String,
    /// Field value, surrounding whitespace removed.
    pub value: String,
}

/// The origin-form of a request target (RFC 9112 3.2): an absolute URL (a forward proxy's
/// request, a URL list's entry) loses its scheme and authority; the query stays.
pub fn origin_form(target: &str) -> &str {
    if target.starts_with('/') {
        return target;
    }
    match target.split_once("://") {
        Some((_, rest)) => rest.find('/').map_or("/", |i| &rest[i..]),
        None => target,
    }
}

/// Renders `METHOD path HTTP/1.1`, `Host` (unless the user gave one), the user's headers, and the
/// body with its Content-Length. wrk sends nothing else, and neither do we: servers see the same
/// bytes from both tools.
pub fn render(method: &str, path: &str, host: &str, headers: &[Header], body: Option<&[u8]>) -> Vec<u8> {
    let mut out = Vec::with_capacity(64 + path.len() + headers.len() * 32);
    out.extend_from_slice(method.as_bytes());
    out.push(b' ');
    out.extend_from_slice(path.as_bytes());
    out.extend_from_slice(b" HTTP/1.1\r\n");
    if !headers.iter().any(|h| h.name.eq_ignore_ascii_case("host")) {
        out.extend_from_slice(b"Host: ");
        out.extend_from_slice(host.as_bytes());
        out.extend_from_slice(b"\r\n");
    }
    for h in headers.iter().filter(|h| !(body.is_some() && h.name.eq_ignore_ascii_case("content-length"))) {
        out.extend_from_slice(h.name.as_bytes());
        out.extend_from_slice(b": ");
        out.extend_from_slice(h.value.as_bytes());
        out.extend_from_slice(b"\r\n");
    }
    if let Some(body) = body {
        out.extend_from_slice(format!("Content-Length: {}\r\n", body.len()).as_bytes());
    }
    out.extend_from_slice(b"\r\n");
    if let Some(body) = body {
        out.extend_from_slice(body);
    }
    out
}

/// Counts the complete requests in `bytes` (a script's `request()` may pipeline several);
/// explains what is wrong when the bytes are not whole HTTP/1 requests.
pub fn count_requests(bytes: &[u8]) -> Result<usize, String> {
    let mut rest = bytes;
    let mut count = 0;
    while !rest.is_empty() {
        let mut headers = [httparse::EMPTY_HEADER; super::MAX_HEADERS];
        let mut req = httparse::Request::new(&mut headers);
        let head = match req.parse(rest) {
            Ok(httparse::Status::Complete(n)) => n,
            Ok(httparse::Status::Partial) => return Err(format!("request {} is incomplete", count + 1)),
            Err(e) => return Err(format!("request {} is not valid HTTP/1: {e}", count + 1)),
        };
        let f = super::framing(req.headers).map_err(|e| format!("request {}: {e}", count + 1))?;
        let kind = f.request_body().map_err(|e| format!("request {}: {e}", count + 1))?;
        let mut body = super::body::BodyDecoder::new(kind);
        let used = body.feed(&rest[head..]).map_err(|e| format!("request {}: {e}", count + 1))?;
        if !body.is_done() {
            return Err(format!("request {} has a shorter body than it announces", count + 1));
        }
        rest = &rest[head + used..];
        count += 1;
    }
    if count == 0 {
        return Err("the request is empty".to_string());
    }
    Ok(count)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_pipelined_requests() {
        let one = "GET / HTTP/1.1\r\nHost: h\r\n\r\n";
        let post = "POST /p HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc";
        assert_eq!(count_requests(one.as_bytes()), Ok(1));
        assert_eq!(count_requests(format!("{one}{post}{one}").as_bytes()), Ok(3));
        assert_eq!(count_requests(b""), Err("the request is empty".into()));
        assert_eq!(count_requests(b"GET / HTTP/1.1\r\n"), Err("request 1 is incomplete".into()));
        assert!(count_requests(b"POST / HTTP/1.1\r\nContent-Length: 9\r\n\r\nab").is_err());
        assert!(count_requests(b"NOT HTTP\r\n\r\n").is_err());
    }

    fn h(name: &str, value: &str) -> Header {
        Header { name: name.into(), value: value.into() }
    }

    #[test]
    fn renders_exact_bytes() {
        /// (method, path, headers, body, expected bytes)
        type Row<'a> = (&'a str, &'a str, Vec<Header>, Option<&'a [u8]>, &'a str);
        let rows: &[Row] = &[
            // The plain wrk request: request line and Host only.
            ("GET", "/", vec![], None, "GET / HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n\r\n"),
            // A user Host replaces ours; other headers keep their order.
            (
                "GET",
                "/a?b=1",
                vec![h("Host", "example"), h("X-A", "1")],
                None,
                "GET /a?b=1 HTTP/1.1\r\nHost: example\r\nX-A: 1\r\n\r\n",
            ),
            // A body gets its length; a user Content-Length is replaced by the true one.
            (
                "POST",
                "/p",
                vec![h("Content-Length", "99")],
                Some(b"{}"),
                "POST /p HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nContent-Length: 2\r\n\r\n{}",
            ),
        ];
        for (method, path, headers, body, want) in rows {
            let got = render(method, path, "127.0.0.1:8080", headers, *body);
            assert_eq!(String::from_utf8(got).unwrap(), *want);
        }
    }
}
