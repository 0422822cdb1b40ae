//! Extra request headers (jtest -n): N distinct fields of the names and sizes real clients and
//! the proxies in front of them add (tracing ids, forwarding, client hints, an API key), so a
//! proxy's header parsing, its header heap and its rules are loaded as in production. Ids
//! change with every request, as real ones do. None of them changes what a cache may store or
//! serve: no `Cookie` or `Authorization` (many caches will not store an answer to those), and
//! no `Accept-*` or `User-Agent`, which a `Vary` would key on. Past the table the fields are
//! `X-Extra-N`, each value 16 to 64 bytes.

use crate::rng::Rng;

/// How a field's value is made.
#[derive(Debug, Clone, Copy)]
enum Value {
    /// The same text on every request.
    Fixed(&'static str),
    /// This many random hexadecimal digits, new each request.
    Hex(usize),
    /// A UUID, new each request.
    Uuid,
    /// A W3C `traceparent`, new each request.
    TraceParent,
    /// A private IPv4 address, new each request.
    Address,
}

/// The fields, in the order they are added.
const FIELDS: &[(&str, Value)] = &[
    ("X-Request-Id", Value::Uuid),
    ("Traceparent", Value::TraceParent),
    ("X-Forwarded-For", Value::Address),
    ("X-Forwarded-Proto", Value::Fixed("https")),
    ("X-Real-IP", Value::Address),
    ("X-Correlation-Id", Value::Hex(16)),
    ("X-B3-TraceId", Value::Hex(32)),
    ("X-B3-SpanId", Value::Hex(16)),
    ("X-B3-Sampled", Value::Fixed("1")),
    ("X-Amzn-Trace-Id", Value::Hex(24)),
    ("Tracestate", Value::Fixed("congo=t61rcWkgMzE,rojo=00f067aa0ba902b7")),
    ("X-Client-Version", Value::Fixed("4.12.3 (build 20261102.7)")),
    ("X-Device-Id", Value::Uuid),
    ("X-Session-Id", Value::Hex(40)),
    ("X-Api-Key", Value::Hex(40)),
    ("Sec-Ch-Ua", Value::Fixed("\"Chromium\";v=\"131\", \"Not_A Brand\";v=\"24\"")),
    ("Sec-Ch-Ua-Mobile", Value::Fixed("?0")),
    ("Sec-Ch-Ua-Platform", Value::Fixed("\"Linux\"")),
    ("Sec-Fetch-Site", Value::Fixed("same-origin")),
    ("Sec-Fetch-Mode", Value::Fixed("no-cors")),
    ("Sec-Fetch-Dest", Value::Fixed("image")),
    ("DNT", Value::Fixed("1")),
    ("X-Requested-With", Value::Fixed("XMLHttpRequest")),
    ("X-Forwarded-Port", Value::Fixed("443")),
    ("Via", Value::Fixed("1.1 edge-proxy-07 (squid/6.10)")),
    ("X-Tenant", Value::Fixed("acme-production-eu-west-1")),
];

/// The most extra fields a request takes: past a few hundred every proxy refuses the head
/// anyway (nginx's default is 32 KiB in four buffers).
pub const MAX: usize = 1000;

const HEX: &[u8; 16] = b"0123456789abcdef";

/// Appends `n` extra fields, each a line ending in CRLF, made with `rng`.
pub fn extra(n: usize, rng: &mut Rng, out: &mut Vec<u8>) {
    for i in 0..n.min(MAX) {
        match FIELDS.get(i) {
            Some((name, value)) => {
                out.extend_from_slice(name.as_bytes());
                out.extend_from_slice(b": ");
                write_value(*value, rng, out);
            }
            None => {
                out.extend_from_slice(b"X-Extra-");
                crate::http::push_u64(out, (i - FIELDS.len() + 1) as u64);
                out.extend_from_slice(b": ");
                let len = 16 + (rng.next_u64() % 49) as usize;
                hex(len, rng, out);
            }
        }
        out.extend_from_slice(b"\r\n");
    }
}

fn write_value(value: Value, rng: &mut Rng, out: &mut Vec<u8>) {
    match value {
        Value::Fixed(text) => out.extend_from_slice(text.as_bytes()),
        Value::Hex(n) => hex(n, rng, out),
        Value::Uuid => {
            for (i, n) in [8, 4, 4, 4, 12].into_iter().enumerate() {
                if i > 0 {
                    out.push(b'-');
                }
                hex(n, rng, out);
            }
        }
        Value::TraceParent => {
            out.extend_from_slice(b"00-");
            hex(32, rng, out);
            out.push(b'-');
            hex(16, rng, out);
            out.extend_from_slice(b"-01");
        }
        Value::Address => {
            let r = rng.next_u64();
            out.extend_from_slice(b"10.");
            for (i, shift) in [0, 8, 16].into_iter().enumerate() {
                if i > 0 {
                    out.push(b'.');
                }
                crate::http::push_u64(out, (r >> shift) & 0xff);
            }
        }
    }
}

/// `n` random hexadecimal digits.
fn hex(n: usize, rng: &mut Rng, out: &mut Vec<u8>) {
    let mut bits = 0;
    let mut left = 0;
    for _ in 0..n {
        if left == 0 {
            bits = rng.next_u64();
            left = 16;
        }
        out.push(HEX[(bits & 0xf) as usize]);
        bits >>= 4;
        left -= 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields(n: usize, seed: u64) -> Vec<(String, String)> {
        let mut out = Vec::new();
        extra(n, &mut Rng::new(seed), &mut out);
        let text = String::from_utf8(out).unwrap();
        assert!(text.is_empty() || text.ends_with("\r\n"));
        text.split_terminator("\r\n")
            .map(|line| {
                let (name, value) = line.split_once(": ").unwrap();
                (name.to_string(), value.to_string())
            })
            .collect()
    }

    #[test]
    fn names_are_distinct_and_values_realistic() {
        let got = fields(40, 1);
        assert_eq!(got.len(), 40);
        let mut names: Vec<String> = got.iter().map(|(n, _)| n.to_ascii_lowercase()).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), 40, "distinct names");
        for forbidden in ["cookie", "authorization", "user-agent", "accept", "accept-encoding", "accept-language"] {
            assert!(!names.iter().any(|n| n == forbidden), "{forbidden}");
        }
        let value = |name: &str| got.iter().find(|(n, _)| n == name).unwrap().1.clone();
        assert_eq!(value("X-Request-Id").len(), 36);
        assert_eq!(value("X-Request-Id").matches('-').count(), 4);
        assert!(value("Traceparent").starts_with("00-") && value("Traceparent").len() == 55);
        assert_eq!(value("X-Forwarded-For").split('.').count(), 4);
        assert_eq!(got[FIELDS.len()].0, "X-Extra-1");
        for (_, v) in &got[FIELDS.len()..] {
            assert!((16..=64).contains(&v.len()) && v.bytes().all(|b| b.is_ascii_hexdigit()), "{v}");
        }
        // Ids change with the request; fixed values do not.
        let again = fields(40, 2);
        assert_ne!(value("X-Request-Id"), again[0].1);
        assert_eq!(value("DNT"), again.iter().find(|(n, _)| n == "DNT").unwrap().1);
        assert!(fields(0, 1).is_empty());
        assert_eq!(fields(MAX + 5, 1).len(), MAX);
    }
}
