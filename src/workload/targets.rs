//! A targets file (`--targets FILE`), in either of vegeta's formats: HTTP (a `METHOD URL`
//! line, header lines, an optional `@path` body line, a blank line between targets; `#`
//! starts a comment) or JSON lines (`{"method", "url", "header": {name: [values]}, "body"}`,
//! the body base64). A malformed file is one error naming the line.

use std::path::Path;

use serde::Deserialize;

use crate::config::Target as Url;
use crate::http::request::Header;

/// One request of a targets file (the type lives with the configuration that holds it).
pub use crate::config::TargetRequest as Target;

/// Why a targets file cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum TargetsError {
    /// The file could not be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The file.
        path: String,
        /// The OS error.
        source: std::io::Error,
    },
    /// A line is not what the format wants.
    #[error("{path}:{line}: {why}")]
    Line {
        /// The file.
        path: String,
        /// 1-based.
        line: usize,
        /// What is wrong.
        why: String,
    },
    /// No target at all.
    #[error("{path}: no targets")]
    Empty {
        /// The file.
        path: String,
    },
}

/// Reads the targets file at `path`; `@path` bodies are read relative to the working
/// directory, as vegeta reads them.
pub fn read(path: &Path) -> Result<Vec<Target>, TargetsError> {
    let name = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|source| TargetsError::Read { path: name.clone(), source })?;
    parse(&name, &text, &|body: &str| std::fs::read(body))
}

/// Parses targets from `text` (named `name` in errors), reading `@path` bodies with `body`.
pub fn parse(
    name: &str,
    text: &str,
    body: &dyn Fn(&str) -> std::io::Result<Vec<u8>>,
) -> Result<Vec<Target>, TargetsError> {
    let bad = |line: usize, why: String| TargetsError::Line { path: name.to_string(), line, why };
    let first = text.lines().map(str::trim).find(|l| !l.is_empty() && !l.starts_with('#'));
    let targets = if first.is_some_and(|l| l.starts_with('{')) {
        json_lines(text, &bad)?
    } else {
        http_format(text, &bad, body)?
    };
    if targets.is_empty() {
        return Err(TargetsError::Empty { path: name.to_string() });
    }
    Ok(targets)
}

/// Checks a target's method and parses its URL.
fn checked(method: &str, url: &str) -> Result<(String, Url), String> {
    if method.is_empty() || !method.bytes().all(|b| b.is_ascii_alphabetic() || b == b'-' || b == b'_') {
        return Err(format!("invalid method '{method}'"));
    }
    let target = Url::parse(url).map_err(|e| e.to_string())?;
    if target.websocket {
        return Err(format!("{url}: a WebSocket server is loaded with strain ws, not as a target"));
    }
    Ok((method.to_ascii_uppercase(), target))
}

fn http_format(
    text: &str,
    bad: &dyn Fn(usize, String) -> TargetsError,
    read_body: &dyn Fn(&str) -> std::io::Result<Vec<u8>>,
) -> Result<Vec<Target>, TargetsError> {
    let mut out: Vec<Target> = Vec::new();
    // Whether the current target takes more header lines (false after its body line).
    let mut open = false;
    for (i, raw) in text.lines().enumerate() {
        let n = i + 1;
        let line = raw.trim();
        if line.starts_with('#') {
            continue;
        }
        if line.is_empty() {
            open = false;
            continue;
        }
        // As vegeta, a request line may follow the one before without a blank line (a header
        // name has no space, so `METHOD URL` cannot be a header).
        if !open || starts_request(line) {
            let Some((method, url)) = line.split_once(' ') else {
                return Err(bad(n, format!("expected 'METHOD URL', found '{line}'")));
            };
            let (method, target) = checked(method, url.trim()).map_err(|why| bad(n, why))?;
            out.push(Target { method, target, headers: Vec::new(), body: None });
            open = true;
            continue;
        }
        let Some(t) = out.last_mut() else { continue };
        if let Some(path) = line.strip_prefix('@') {
            let body = read_body(path.trim()).map_err(|e| bad(n, format!("cannot read body {}: {e}", path.trim())))?;
            t.body = Some(body);
            open = false;
            continue;
        }
        let Some((name, value)) = line.split_once(':') else {
            return Err(bad(n, format!("expected a header 'Name: value' or '@body', found '{line}'")));
        };
        if name.trim().is_empty() || name.contains(char::is_whitespace) {
            return Err(bad(n, format!("invalid header name '{}'", name.trim())));
        }
        t.headers.push(Header { name: name.trim().to_string(), value: value.trim().to_string() });
    }
    Ok(out)
}

/// Whether `line` is `METHOD URL`: an upper-case word, a space, an http(s) URL.
fn starts_request(line: &str) -> bool {
    line.split_once(' ').is_some_and(|(m, url)| {
        !m.is_empty()
            && m.bytes().all(|b| b.is_ascii_uppercase())
            && ["http://", "https://"]
                .iter()
                .any(|s| url.trim_start().get(..s.len()).is_some_and(|p| p.eq_ignore_ascii_case(s)))
    })
}

/// A JSON line, as vegeta writes it.
#[derive(Deserialize)]
struct JsonTarget {
    method: String,
    url: String,
    #[serde(default)]
    header: std::collections::BTreeMap<String, Vec<String>>,
    #[serde(default)]
    body: Option<String>,
}

fn json_lines(text: &str, bad: &dyn Fn(usize, String) -> TargetsError) -> Result<Vec<Target>, TargetsError> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let n = i + 1;
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        let t: JsonTarget = serde_json::from_str(line).map_err(|e| bad(n, format!("not a JSON target: {e}")))?;
        let (method, target) = checked(&t.method, &t.url).map_err(|why| bad(n, why))?;
        let body = match t.body.as_deref() {
            None | Some("") => None,
            Some(b) => Some(crate::b64::decode(b).ok_or_else(|| bad(n, "the body is not base64".into()))?),
        };
        let headers = t
            .header
            .into_iter()
            .flat_map(|(name, values)| values.into_iter().map(move |value| Header { name: name.clone(), value }))
            .collect();
        out.push(Target { method, target, headers, body });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn no_files(path: &str) -> std::io::Result<Vec<u8>> {
        match path {
            "thing.json" => Ok(b"{\"a\":1}".to_vec()),
            _ => Err(std::io::Error::from(std::io::ErrorKind::NotFound)),
        }
    }

    fn h(name: &str, value: &str) -> Header {
        Header { name: name.into(), value: value.into() }
    }

    #[test]
    fn vegeta_http_format_reads_targets_headers_and_bodies() {
        let text = "# a comment\nGET http://a.test:8080/x?y=1\nX-Account: 8675309\n\n\
                    delete http://b.test/remove\nConfirmation-Token: 90215\nAuthorization: Token DEADBEEF\n\n\
                    POST http://a.test:8080/things\nContent-Type: application/json\n@thing.json\n";
        let t = parse("t.txt", text, &no_files).unwrap();
        assert_eq!(t.len(), 3);
        assert_eq!((t[0].method.as_str(), t[0].target.url.as_str()), ("GET", "http://a.test:8080/x?y=1"));
        assert_eq!(t[0].headers, [h("X-Account", "8675309")]);
        assert_eq!(t[1].method, "DELETE");
        assert_eq!(t[1].headers, [h("Confirmation-Token", "90215"), h("Authorization", "Token DEADBEEF")]);
        assert_eq!(t[2].body.as_deref(), Some(b"{\"a\":1}".as_slice()));
        assert_eq!(t[2].headers, [h("Content-Type", "application/json")]);
        // Request lines one after another, as vegeta takes them.
        let t = parse("t.txt", "GET http://a.test/1\nPOST http://b.test/2\nX-A: 1\nGET http://a.test/3\n", &no_files)
            .unwrap();
        let got: Vec<_> = t.iter().map(|t| (t.method.as_str(), t.target.url.as_str(), t.headers.len())).collect();
        assert_eq!(got, [("GET", "http://a.test/1", 0), ("POST", "http://b.test/2", 1), ("GET", "http://a.test/3", 0)]);
    }

    #[test]
    fn json_lines_read_as_vegeta_writes_them() {
        let text = "{\"method\":\"POST\",\"url\":\"http://a.test/p\",\"header\":{\"X-A\":[\"1\",\"2\"]},\"body\":\"aGVsbG8=\"}\n\
                    {\"method\":\"GET\",\"url\":\"http://a.test/g\"}\n";
        let t = parse("t.jsonl", text, &no_files).unwrap();
        assert_eq!(t[0].headers, [h("X-A", "1"), h("X-A", "2")]);
        assert_eq!(t[0].body.as_deref(), Some(b"hello".as_slice()));
        assert_eq!((t[1].method.as_str(), t[1].body.as_ref()), ("GET", None));
    }

    #[test]
    fn a_malformed_file_names_its_line() {
        let rows = [
            ("GET\n", "t:1: expected 'METHOD URL', found 'GET'"),
            (
                "GET http://a.test/\nno colon here\n",
                "t:2: expected a header 'Name: value' or '@body', found 'no colon here'",
            ),
            ("GET http://a.test/\n\nG=T http://a.test/\n", "t:3: invalid method 'G=T'"),
            (
                "GET ftp://a.test/\n",
                "t:1: invalid URL 'ftp://a.test/': only http://, https://, ws:// and wss:// are supported",
            ),
            ("POST http://a.test/\n@missing.json\n", "t:2: cannot read body missing.json: entity not found"),
            ("{\"method\":\"GET\"}\n", "t:1: not a JSON target: missing field `url`"),
            ("{\"method\":\"GET\",\"url\":\"http://a.test/\",\"body\":\"!!\"}\n", "t:1: the body is not base64"),
            ("# only a comment\n\n", "t: no targets"),
        ];
        for (text, want) in rows {
            let e = parse("t", text, &no_files).unwrap_err().to_string();
            assert!(e.starts_with(want), "{text:?}: {e}");
        }
    }
}
