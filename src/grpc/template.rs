//! Placeholders in a request message's string fields, filled in per call: `{{n}}` the call's
//! number (0-based), `{{uuid}}` a random UUID v4, `{{rand:N}}` N random letters and digits,
//! `{{now}}` the time as RFC 3339 UTC with milliseconds, `{{unix_ms}}` milliseconds since the
//! epoch. `{{{{` is a literal `{{` (a lone `}}` needs no escape); spaces inside the braces are
//! allowed (`{{ n }}`). Anything else between `{{` and `}}`, or a `{{` never closed, is an error
//! when the messages load, so rendering cannot fail.
//!
//! [`message`](super::message) parses each string once at load; a render asks a template its
//! length first (an enclosing message's length prefix needs it) and then writes it, both from
//! one [`Context`], so the two always agree.

use std::time::{SystemTime, UNIX_EPOCH};

use crate::rng::Rng;

/// The longest `{{rand:N}}`: a typo of a few more digits should not make megabyte strings.
pub const MAX_RAND: usize = 65_536;

/// Why a string's placeholders do not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TemplateError {
    /// A placeholder strain does not know.
    #[error(
        "unknown template {{{{{0}}}}} (known: {{{{n}}}}, {{{{uuid}}}}, {{{{rand:N}}}}, {{{{now}}}}, {{{{unix_ms}}}}; \
         {{{{{{{{ is a literal {{{{)"
    )]
    Unknown(String),
    /// `{{rand:N}}` with an N that is not a count from 1 to [`MAX_RAND`].
    #[error("{{{{rand:{0}}}}}: N must be a whole number from 1 to {MAX_RAND}")]
    RandLength(String),
    /// A `{{` with no `}}` after it.
    #[error("a {{{{ without its }}}} (write {{{{{{{{ for a literal {{{{)")]
    Unclosed,
}

/// One piece of a template.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Part {
    /// Text as is.
    Text(String),
    /// `{{n}}`.
    Call,
    /// `{{uuid}}`.
    Uuid,
    /// `{{rand:N}}`.
    Rand(usize),
    /// `{{now}}`.
    Now,
    /// `{{unix_ms}}`.
    UnixMs,
}

/// A string field's text, parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Template {
    parts: Vec<Part>,
}

/// Length of `{{now}}`'s text: `2024-05-01T12:34:56.789Z`.
const NOW_LEN: usize = 24;
/// Length of a UUID's text.
const UUID_LEN: usize = 36;

impl Template {
    /// Parses `text`.
    pub fn parse(text: &str) -> Result<Template, TemplateError> {
        let mut parts = Vec::new();
        let mut literal = String::new();
        let mut rest = text;
        while let Some(open) = rest.find("{{") {
            literal.push_str(&rest[..open]);
            let after = &rest[open + 2..];
            if let Some(more) = after.strip_prefix("{{") {
                literal.push_str("{{");
                rest = more;
                continue;
            }
            let close = after.find("}}").ok_or(TemplateError::Unclosed)?;
            let part = placeholder(after[..close].trim_matches(' '))?;
            if !literal.is_empty() {
                parts.push(Part::Text(std::mem::take(&mut literal)));
            }
            parts.push(part);
            rest = &after[close + 2..];
        }
        literal.push_str(rest);
        if !literal.is_empty() {
            parts.push(Part::Text(literal));
        }
        Ok(Template { parts })
    }

    /// The text, when it has no placeholder (escapes resolved): it never changes.
    pub fn fixed(&self) -> Option<String> {
        let mut text = String::new();
        for part in &self.parts {
            match part {
                Part::Text(t) => text.push_str(t),
                _ => return None,
            }
        }
        Some(text)
    }

    /// Bytes [`Template::write`] will write with `cx`.
    pub fn len(&self, cx: &mut Context<'_>) -> usize {
        self.parts
            .iter()
            .map(|part| match part {
                Part::Text(t) => t.len(),
                Part::Call => digits(cx.call),
                Part::Uuid => UUID_LEN,
                Part::Rand(n) => *n,
                Part::Now => NOW_LEN,
                Part::UnixMs => digits(cx.unix_ms()),
            })
            .sum()
    }

    /// Appends the text for `cx`'s call to `out`.
    pub fn write(&self, cx: &mut Context<'_>, out: &mut Vec<u8>) {
        for part in &self.parts {
            match part {
                Part::Text(t) => out.extend_from_slice(t.as_bytes()),
                Part::Call => push_u64(out, cx.call),
                Part::Uuid => uuid(cx.rng, out),
                Part::Rand(n) => rand(cx.rng, *n, out),
                Part::Now => {
                    let ms = cx.unix_ms();
                    now(ms, out);
                }
                Part::UnixMs => {
                    let ms = cx.unix_ms();
                    push_u64(out, ms);
                }
            }
        }
    }
}

fn placeholder(name: &str) -> Result<Part, TemplateError> {
    Ok(match name {
        "n" => Part::Call,
        "uuid" => Part::Uuid,
        "now" => Part::Now,
        "unix_ms" => Part::UnixMs,
        _ => match name.strip_prefix("rand:") {
            Some(n) => match n.parse::<usize>() {
                Ok(len) if (1..=MAX_RAND).contains(&len) && n.bytes().all(|b| b.is_ascii_digit()) => Part::Rand(len),
                _ => return Err(TemplateError::RandLength(n.to_string())),
            },
            None => return Err(TemplateError::Unknown(name.to_string())),
        },
    })
}

/// What one render's placeholders draw on: the call number, the thread's generator, and the
/// clock, read at most once so `{{now}}` and `{{unix_ms}}` agree within a message.
#[derive(Debug)]
pub struct Context<'a> {
    call: u64,
    rng: &'a mut Rng,
    unix_ms: Option<u64>,
}

impl<'a> Context<'a> {
    /// A render of call number `call`.
    pub fn new(call: u64, rng: &'a mut Rng) -> Context<'a> {
        Context { call, rng, unix_ms: None }
    }

    /// A render at a given time (tests).
    #[cfg(test)]
    pub fn at(call: u64, rng: &'a mut Rng, unix_ms: u64) -> Context<'a> {
        Context { call, rng, unix_ms: Some(unix_ms) }
    }

    fn unix_ms(&mut self) -> u64 {
        *self.unix_ms.get_or_insert_with(|| {
            // A clock before 1970 is a broken clock; the epoch stands in rather than failing.
            SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
        })
    }
}

/// Decimal digits of `n`.
fn digits(n: u64) -> usize {
    n.checked_ilog10().map_or(1, |l| l as usize + 1)
}

fn push_u64(out: &mut Vec<u8>, n: u64) {
    let mut buf = [0u8; 20];
    let mut at = buf.len();
    let mut n = n;
    loop {
        at -= 1;
        buf[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out.extend_from_slice(&buf[at..]);
}

/// A random UUID v4 (RFC 9562): 122 random bits, the version nibble 4, the variant bits 10.
fn uuid(rng: &mut Rng, out: &mut Vec<u8>) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let hi = (rng.next_u64() & !0xF000) | 0x4000;
    let lo = (rng.next_u64() & !(0b11 << 62)) | (0b10 << 62);
    let bytes = (u128::from(hi) << 64 | u128::from(lo)).to_be_bytes();
    for (i, b) in bytes.iter().enumerate() {
        if matches!(i, 4 | 6 | 8 | 10) {
            out.push(b'-');
        }
        out.push(HEX[usize::from(b >> 4)]);
        out.push(HEX[usize::from(b & 0xF)]);
    }
}

/// The alphabet of `{{rand:N}}`: safe in URLs, headers, file names and JSON alike.
const ALPHANUMERIC: &[u8; 62] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";

fn rand(rng: &mut Rng, n: usize, out: &mut Vec<u8>) {
    out.reserve(n);
    for _ in 0..n {
        out.push(ALPHANUMERIC[rng.below(62) as usize]);
    }
}

/// The largest time RFC 3339's four-digit year can write (9999-12-31T23:59:59.999Z): later
/// clocks are held there, so `{{now}}` keeps its length.
const LAST_MS: u64 = 253_402_300_799_999;

/// `unix_ms` as `2024-05-01T12:34:56.789Z`.
fn now(unix_ms: u64, out: &mut Vec<u8>) {
    let ms = unix_ms.min(LAST_MS);
    let secs = ms / 1000;
    let (year, month, day) = crate::http::date::civil_from_days(secs / 86_400);
    let time = secs % 86_400;
    out.extend_from_slice(&[
        b'0' + (year / 1000 % 10) as u8,
        b'0' + (year / 100 % 10) as u8,
        b'0' + (year / 10 % 10) as u8,
        b'0' + (year % 10) as u8,
        b'-',
    ]);
    let fields = [(month, b'-'), (day, b'T'), (time / 3600, b':'), (time / 60 % 60, b':'), (time % 60, b'.')];
    for (n, sep) in fields {
        out.extend_from_slice(&[b'0' + (n / 10 % 10) as u8, b'0' + (n % 10) as u8, sep]);
    }
    let milli = ms % 1000;
    out.extend_from_slice(&[
        b'0' + (milli / 100) as u8,
        b'0' + (milli / 10 % 10) as u8,
        b'0' + (milli % 10) as u8,
        b'Z',
    ]);
}

#[cfg(test)]
mod tests;
