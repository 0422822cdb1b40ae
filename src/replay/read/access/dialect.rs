//! Layouts as users write them, compiled into a [`LogFormat`]: nginx `log_format` (`$name`,
//! `${name}`), Apache `LogFormat` (`%h`, `%>s`, `%{Name}i`) and Apache Traffic Server
//! (`%<cqtq>`, `%<{Name}cqh>`). The dialect is told by its syntax, so a format pasted from a
//! config needs no flag. Each dialect only names its fields ([`Field`]); what a field means
//! once read is decided in [`super::fields`], for all three alike.

use super::fields::{strftime_spaces, Clock, Escape, Field, Span, When};
use super::{Kind, Layout, LogFormat, Name, Slot};

/// nginx's and Apache's `combined`. Written in Apache's dialect: the lines are the same, and
/// Apache's `%l` also takes the ident nginx writes as a literal `-`.
pub(super) const COMBINED: &str = r#"%h %l %u %t "%r" %>s %b "%{Referer}i" "%{User-Agent}i""#;
/// The common log format.
pub(super) const COMMON: &str = r#"%h %l %u %t "%r" %>s %b"#;
/// Apache Traffic Server's squid.log layout (doc/admin-guide/logging/examples.en.rst).
pub(super) const SQUID: &str =
    "%<cqtq> %<ttms> %<chi> %<crc>/%<pssc> %<psql> %<cqhm> %<pquc> %<caun> %<phr>/%<shn> %<psct>";
/// Apache httpd's `vhost_combined` (its Debian package's default): the virtual host and port,
/// then combined with `%O` (bytes sent, headers included) for `%b`.
pub(super) const VHOST_COMBINED: &str = r#"%v:%p %h %l %u %t "%r" %>s %O "%{Referer}i" "%{User-Agent}i""#;
/// Squid's own `squid` logformat, `%ts.%03tu %6tr %>a %Ss/%03>Hs %<st %rm %ru %[un %Sh/%<a %mt`
/// (in the built-in notation of [`builtin`]). Squid logs a transaction when it ends, and its
/// elapsed time is right-aligned in six columns: that padding tells it from ATS's squid.log,
/// whose fields are the same but whose time is the start.
pub(super) const SQUID_NATIVE: &str = "{end:epoch} {ms:6} {client} {-}/{status} {size} {method} {url} {-} {-}/{-} {-}";

/// Whose syntax a layout is written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Dialect {
    /// nginx `log_format`.
    Nginx,
    /// Apache httpd `LogFormat`.
    Apache,
    /// Apache Traffic Server `logging.yaml` formats.
    Ats,
}

/// A layout, before literals are merged: text to match, or a field.
#[derive(Debug, Clone)]
enum Piece {
    /// Text every line has.
    Literal(String),
    /// A field: what it holds, how the user wrote it (for errors), and the spaces its value
    /// always contains (a field usually ends at the next literal; `$time_local`'s space does not
    /// end it).
    Field { field: Field, label: String, spaces: u8, pad: u8 },
}

impl Piece {
    /// A field with no spaces in its value.
    fn field(field: Field, label: String) -> Piece {
        Piece::Field { field, label, spaces: 0, pad: 0 }
    }
}

/// A preset's name or a layout, as `--format` takes it.
pub(super) fn parse(spec: &str) -> Result<LogFormat, String> {
    let spec = unwrap_config(spec);
    if let Some(preset) = LogFormat::preset(&spec) {
        return Ok(preset);
    }
    if spec.trim().is_empty() {
        return Err("the log format is empty".into());
    }
    let dialect = tell(&spec);
    compile(Name::Dialect(dialect), dialect, &spec)
}

/// A preset's layout in `dialect`. Its text is a constant the tests compile, so it cannot fail here.
pub(super) fn compile_layout(dialect: Dialect, spec: &str) -> Layout {
    match compile(Name::Dialect(dialect), dialect, spec) {
        Ok(LogFormat { kind: Kind::Text(layout), .. }) => layout,
        other => panic!("a preset layout compiles: {other:?}"),
    }
}

/// `spec` in `dialect`, compiled.
pub(super) fn compile(name: Name, dialect: Dialect, spec: &str) -> Result<LogFormat, String> {
    let pieces = match dialect {
        Dialect::Nginx => nginx(spec)?,
        Dialect::Apache => apache(spec)?,
        Dialect::Ats => ats(spec)?,
    };
    // nginx and Apache escape a quote in a value, so a quoted field ends at the first bare
    // quote; ATS does not, so its fields end at the next text like any other.
    let escape = if dialect == Dialect::Ats { Escape::None } else { Escape::Backslash };
    Ok(LogFormat { name, kind: Kind::Text(assemble(escape, pieces)?) })
}

/// The dialect `spec` is written in: ATS's `%<field>` is unlike anything in the other two,
/// nginx's `$name` is in neither of them, and whatever else has `%` directives is Apache's.
fn tell(spec: &str) -> Dialect {
    let ats = spec.match_indices("%<").any(|(i, _)| {
        let rest = spec.get(i + 2..).unwrap_or_default();
        rest.split_once('>').is_some_and(|(inner, _)| {
            !inner.is_empty() && inner.bytes().all(|b| b.is_ascii_alphanumeric() || b"{}()[]*:_-".contains(&b))
        })
    });
    let nginx = spec
        .match_indices('$')
        .any(|(i, _)| spec.as_bytes().get(i + 1).is_some_and(|&b| b.is_ascii_alphabetic() || b == b'_' || b == b'{'));
    match (ats, nginx) {
        (true, _) => Dialect::Ats,
        (false, true) => Dialect::Nginx,
        (false, false) => Dialect::Apache,
    }
}

/// The layout inside a line pasted from a config: nginx's `log_format name 'a' 'b';`,
/// Apache's `LogFormat "…" nick`, ATS's `format: '…'`, or a string in quotes.
fn unwrap_config(spec: &str) -> String {
    let spec = spec.trim().trim_end_matches(';').trim_end();
    if let Some(rest) = word_after(spec, "log_format") {
        // The format's name, then maybe `escape=…`, then one or more strings, joined.
        let rest = rest.split_once(char::is_whitespace).map_or("", |(_, r)| r).trim_start();
        let rest = match rest.strip_prefix("escape=") {
            Some(r) => r.split_once(char::is_whitespace).map_or("", |(_, r)| r),
            None => rest,
        };
        return join_strings(rest);
    }
    if let Some(rest) = word_after(spec, "LogFormat").or_else(|| word_after(spec, "format:")) {
        return first_string(rest.trim_start()).unwrap_or(rest.trim()).to_owned();
    }
    match first_string(spec) {
        Some(inner) if inner.len() + 2 == spec.len() => inner.to_owned(),
        _ => spec.to_owned(),
    }
}

/// What follows `keyword` and whitespace at the start of `spec`.
fn word_after<'a>(spec: &'a str, keyword: &str) -> Option<&'a str> {
    let rest = spec.strip_prefix(keyword)?;
    (keyword.ends_with(':') || rest.starts_with(char::is_whitespace)).then_some(rest.trim_start())
}

/// The inside of the quoted string `s` starts with (`'…'` or `"…"`, backslash escapes kept).
fn first_string(s: &str) -> Option<&str> {
    let quote = s.bytes().next().filter(|b| matches!(b, b'"' | b'\''))?;
    let body = s.get(1..)?;
    let mut escaped = false;
    for (i, b) in body.bytes().enumerate() {
        match b {
            _ if escaped => escaped = false,
            b'\\' => escaped = true,
            _ if b == quote => return body.get(..i),
            _ => {}
        }
    }
    None
}

/// nginx's strings (`'…' "…" word`) joined into one, as nginx reads its config: a backslash
/// before a quote or backslash stands for it.
fn join_strings(s: &str) -> String {
    let mut out = String::new();
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\'' | '"' => {
                while let Some(inner) = chars.next() {
                    match inner {
                        '\\' if chars.peek().is_some_and(|&n| n == c || n == '\\') => {
                            out.extend(chars.next());
                        }
                        _ if inner == c => break,
                        _ => out.push(inner),
                    }
                }
            }
            c if c.is_whitespace() => {}
            c => out.push(c),
        }
    }
    out
}

/// nginx `$name` and `${name}` variables; any variable not known here is matched and ignored.
fn nginx(spec: &str) -> Result<Vec<Piece>, String> {
    let mut pieces = Vec::new();
    let mut rest = spec;
    while let Some((text, after)) = rest.split_once('$') {
        push_literal(&mut pieces, text);
        let (name, tail) = match after.strip_prefix('{') {
            Some(braced) => braced.split_once('}').ok_or("${ without its } in the nginx format")?,
            None => {
                after.split_at(after.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(after.len()))
            }
        };
        if name.is_empty() {
            // A `$` that starts no variable is text.
            push_literal(&mut pieces, "$");
        } else {
            pieces.push(nginx_variable(name));
        }
        rest = tail;
    }
    push_literal(&mut pieces, rest);
    Ok(merge_uri_args(pieces))
}

/// The field an nginx variable holds.
fn nginx_variable(name: &str) -> Piece {
    let label = format!("${name}");
    let field = match name {
        "remote_addr" => Field::Client,
        // nginx writes its line when the request is done: these are end times.
        "time_local" => return Piece::Field { field: Field::Time(Clock::Clf, When::End), label, spaces: 1, pad: 0 },
        "time_iso8601" => Field::Time(Clock::Iso8601, When::End),
        "msec" => Field::Time(Clock::SecondsFraction, When::End),
        "request_time" => Field::Duration(Span::SecondsFraction),
        "request" => return Piece::Field { field: Field::RequestLine, label, spaces: 2, pad: 0 },
        "request_method" => Field::Method,
        "request_uri" => Field::RequestUri,
        "uri" | "document_uri" => Field::Path,
        "args" | "query_string" => Field::Query,
        "host" => Field::Host,
        "status" => Field::Status,
        "body_bytes_sent" => Field::BodyBytes,
        "content_length" => Field::ContentLength,
        "connection" => Field::Connection,
        _ => match name.strip_prefix("http_") {
            Some(header) => header_field(header_name(header)),
            None => Field::Opaque,
        },
    };
    Piece::field(field, label)
}

/// `$uri$is_args$args`, nginx's way to write a path and its query, as one field: with no text
/// between them, the three could not be told apart.
fn merge_uri_args(pieces: Vec<Piece>) -> Vec<Piece> {
    let label = |p: Option<&Piece>| match p {
        Some(Piece::Field { label, .. }) => label.clone(),
        _ => String::new(),
    };
    let mut out = Vec::with_capacity(pieces.len());
    let mut i = 0;
    while let Some(piece) = pieces.get(i) {
        let (a, b, c) = (label(Some(piece)), label(pieces.get(i + 1)), label(pieces.get(i + 2)));
        if matches!(a.as_str(), "$uri" | "$document_uri")
            && b == "$is_args"
            && matches!(c.as_str(), "$args" | "$query_string")
        {
            out.push(Piece::field(Field::PathQuery, format!("{a}{b}{c}")));
            i += 3;
        } else {
            out.push(piece.clone());
            i += 1;
        }
    }
    out
}

/// `user_agent` as a header name, `User-Agent`.
fn header_name(snake: &str) -> String {
    let words = snake.split('_').filter(|w| !w.is_empty()).map(|w| {
        let mut chars = w.chars();
        chars.next().map(|c| c.to_ascii_uppercase().to_string() + &chars.as_str().to_ascii_lowercase())
    });
    words.flatten().collect::<Vec<_>>().join("-")
}

/// A request header field; Content-Length is the body's size, not a header to send again.
fn header_field(name: String) -> Field {
    if name.eq_ignore_ascii_case("content-length") {
        Field::ContentLength
    } else {
        Field::Header(name)
    }
}

/// Apache `%` directives, with their modifiers (`%>s`, `%!200,304{Referer}i`) and arguments.
fn apache(spec: &str) -> Result<Vec<Piece>, String> {
    let mut pieces = Vec::new();
    let mut text = String::new();
    let mut rest = spec;
    while let Some(c) = rest.chars().next() {
        rest = rest.get(c.len_utf8()..).unwrap_or_default();
        match c {
            // A format pasted from a config keeps the config's escapes.
            '\\' => match rest.chars().next() {
                Some(e @ ('"' | '\\' | 'n' | 't')) => {
                    text.push(match e {
                        'n' => '\n',
                        't' => '\t',
                        e => e,
                    });
                    rest = rest.get(1..).unwrap_or_default();
                }
                _ => text.push('\\'),
            },
            '%' => {
                let (piece, tail) = apache_directive(rest)?;
                rest = tail;
                match (piece, pieces.last_mut()) {
                    (Piece::Literal(t), _) => text.push_str(&t),
                    // `%U%q`, Apache's way to write a path and its query (`%q` starts with `?`).
                    (Piece::Field { field: Field::Query, .. }, Some(Piece::Field { field: path, label, .. }))
                        if text.is_empty() && *path == Field::Path =>
                    {
                        *path = Field::PathQuery;
                        label.push_str("%q");
                    }
                    // `%t` writes its own brackets: as text, they end the field before it.
                    (field @ Piece::Field { field: Field::Time(Clock::Clf, _), .. }, _) => {
                        text.push('[');
                        push_literal(&mut pieces, &std::mem::take(&mut text));
                        pieces.push(field);
                        text.push(']');
                    }
                    (field, _) => {
                        push_literal(&mut pieces, &std::mem::take(&mut text));
                        pieces.push(field);
                    }
                }
            }
            c => text.push(c),
        }
    }
    push_literal(&mut pieces, &text);
    Ok(pieces)
}

/// One Apache directive, `s` being what follows its `%`; and what follows the directive.
fn apache_directive(s: &str) -> Result<(Piece, &str), String> {
    let mut arg = None;
    let mut rest = s;
    let letter = loop {
        let c = rest.chars().next().ok_or("the Apache format ends inside a % directive")?;
        match c {
            // Conditions on the status (`%400,501{…}i`) and original/final (`%>s`) change
            // when a value is written, not what it is.
            '!' | '<' | '>' | ',' | '0'..='9' => rest = rest.get(1..).unwrap_or_default(),
            '{' => {
                let (inner, tail) = rest.get(1..).unwrap_or_default().split_once('}').ok_or("%{ without its }")?;
                arg = Some(inner);
                rest = tail;
            }
            '%' if arg.is_none() => return Ok((Piece::Literal("%".into()), rest.get(1..).unwrap_or_default())),
            '^' => {
                let name = rest.get(..3).ok_or("%^ needs two letters (%^ti, %^to, %^FB)")?;
                rest = rest.get(3..).unwrap_or_default();
                break name;
            }
            c => {
                let letter = rest.get(..c.len_utf8()).unwrap_or_default();
                rest = rest.get(c.len_utf8()..).unwrap_or_default();
                break letter;
            }
        }
    };
    let label = match arg {
        Some(a) => format!("%{{{a}}}{letter}"),
        None => format!("%{letter}"),
    };
    let spaced = |field, spaces| Ok((Piece::Field { field, label: label.clone(), spaces, pad: 0 }, rest));
    let field = match (letter, arg) {
        ("h" | "a", _) => Field::Client,
        ("t", None) => return spaced(Field::Time(Clock::Clf, When::Start), 1),
        ("t", Some(format)) => {
            let (field, spaces) = apache_time(format)?;
            return spaced(field, spaces);
        }
        ("r", _) => return spaced(Field::RequestLine, 2),
        ("m", _) => Field::Method,
        ("U", _) => Field::Path,
        ("q", _) => Field::Query,
        ("v" | "V", _) => Field::Host,
        ("s", _) => Field::Status,
        ("b" | "B", _) => Field::BodyBytes,
        ("D", _) => Field::Duration(Span::Micros),
        ("T", None | Some("s")) => Field::Duration(Span::Seconds),
        ("T", Some("ms")) => Field::Duration(Span::Millis),
        ("T", Some("us")) => Field::Duration(Span::Micros),
        ("T", Some(unit)) => return Err(format!("unknown unit {unit:?} in %{{{unit}}}T (s, ms or us)")),
        ("i", Some(name)) => header_field(name.to_owned()),
        ("i", None) => return Err("%i needs a header name, as in %{User-Agent}i".into()),
        (
            "A" | "C" | "c" | "e" | "f" | "H" | "I" | "k" | "l" | "L" | "n" | "o" | "O" | "p" | "P" | "R" | "S" | "u"
            | "X" | "x" | "^ti" | "^to" | "^FB",
            _,
        ) => Field::Opaque,
        (other, _) => return Err(format!("unknown Apache directive %{other}")),
    };
    spaced(field, 0)
}

/// Apache's `%{format}t`: `sec`, `msec`, `usec`, their `_frac`s, or a strftime format, each
/// maybe after `begin:` (the default: when the request arrived) or `end:`.
fn apache_time(format: &str) -> Result<(Field, u8), String> {
    let (when, format) = match format.split_once(':') {
        Some(("begin", f)) => (When::Start, f),
        Some(("end", f)) => (When::End, f),
        _ => (When::Start, format),
    };
    Ok(match format {
        "sec" => (Field::Time(Clock::Seconds, when), 0),
        "msec" => (Field::Time(Clock::Millis, when), 0),
        "usec" => (Field::Time(Clock::Micros, when), 0),
        "msec_frac" => (Field::Fraction(1000), 0),
        "usec_frac" => (Field::Fraction(1), 0),
        strftime => (Field::Time(Clock::Strftime(strftime.to_owned()), when), strftime_spaces(strftime)?),
    })
}

/// ATS `%<field>` and `%<{Name}field>` fields; a field not known here is matched and ignored.
fn ats(spec: &str) -> Result<Vec<Piece>, String> {
    let mut pieces = Vec::new();
    let mut rest = spec;
    while let Some((text, after)) = rest.split_once("%<") {
        push_literal(&mut pieces, text);
        let (inner, tail) = after.split_once('>').ok_or("%< without its > in the ATS format")?;
        pieces.push(ats_field(inner)?);
        rest = tail;
    }
    push_literal(&mut pieces, rest);
    Ok(pieces)
}

/// The field an ATS symbol holds (doc/admin-guide/logging/formatting.en.rst).
fn ats_field(inner: &str) -> Result<Piece, String> {
    let label = format!("%<{inner}>");
    if let Some(braced) = inner.strip_prefix('{') {
        let (name, symbol) = braced.split_once('}').ok_or_else(|| format!("{label}: {{ without its }}"))?;
        let field = if symbol == "cqh" { header_field(name.to_owned()) } else { Field::Opaque };
        return Ok(Piece::field(field, label));
    }
    let field = match inner {
        // "The time at which the client request was received": when the request started.
        "cqtq" => Field::Time(Clock::SecondsFraction, When::Start),
        "cqts" => Field::Time(Clock::Seconds, When::Start),
        "cqth" => Field::Time(Clock::HexSeconds, When::Start),
        "cqtn" => return Ok(Piece::Field { field: Field::Time(Clock::Clf, When::Start), label, spaces: 1, pad: 0 }),
        "ttms" => Field::Duration(Span::Millis),
        "ttmsf" => Field::Duration(Span::SecondsFraction),
        "ttmsh" => Field::Duration(Span::HexMillis),
        "tts" => Field::Duration(Span::Seconds),
        "chi" => Field::Client,
        "cqhm" => Field::Method,
        // `cqtx`, the request line, is gone from ATS 9's docs but still in older logs.
        "cqtx" => return Ok(Piece::Field { field: Field::RequestLine, label, spaces: 2, pad: 0 }),
        "cqu" | "pqu" | "cquc" | "pquc" | "cquuc" => Field::Url,
        "cqup" | "pqup" | "cquup" => Field::Path,
        "cquuh" => Field::Host,
        "cqcl" => Field::ContentLength,
        "pssc" => Field::Status,
        "pscl" => Field::BodyBytes,
        "psql" => Field::MessageBytes,
        _ => Field::Opaque,
    };
    Ok(Piece::field(field, label))
}

/// The notation the built-in layouts are written in (never a user's): `{name}` fields, `{-}`
/// for a field replay does not use, `{start:clock}` and `{end:clock}` times (`clf`, `iso`,
/// `epoch`), `{ms}` (`{ms:6}`: right-aligned in 6 columns), `{request}` (a request line),
/// `{client}` (`{client:port}`: with its port), `{status}`, `{bytes}` (the body's size), `{size}` (the response's, headers
/// included), `{method}`, `{url}`, `{host}`, and a header by its name (`{User-Agent}`).
fn builtin(spec: &str) -> Result<Vec<Piece>, String> {
    let mut pieces = Vec::new();
    let mut rest = spec;
    while let Some((text, after)) = rest.split_once('{') {
        push_literal(&mut pieces, text);
        let (inner, tail) = after.split_once('}').ok_or("{ without its }")?;
        let label = format!("{{{inner}}}");
        let (name, arg) = inner.split_once(':').unwrap_or((inner, ""));
        let (field, spaces, pad) = match (name, arg) {
            ("-", _) => (Field::Opaque, 0, 0),
            ("client", "port") => (Field::ClientPort, 0, 0),
            ("client", _) => (Field::Client, 0, 0),
            ("start" | "end", clock) => {
                let when = if name == "start" { When::Start } else { When::End };
                let clock = match clock {
                    "clf" => Clock::Clf,
                    "iso" => Clock::Iso8601,
                    "epoch" => Clock::SecondsFraction,
                    other => return Err(format!("unknown clock {other:?}")),
                };
                (Field::Time(clock, when), 0, 0)
            }
            ("ms", pad) => (Field::Duration(Span::Millis), 0, pad.parse().unwrap_or(0)),
            ("request", _) => (Field::RequestLine, 2, 0),
            ("status", _) => (Field::Status, 0, 0),
            ("bytes", _) => (Field::BodyBytes, 0, 0),
            ("size", _) => (Field::MessageBytes, 0, 0),
            ("method", _) => (Field::Method, 0, 0),
            ("url", _) => (Field::Url, 0, 0),
            ("host", _) => (Field::Host, 0, 0),
            (header, _) if header.starts_with(|c: char| c.is_ascii_uppercase()) => {
                (header_field(header.to_owned()), 0, 0)
            }
            (other, _) => return Err(format!("unknown built-in field {other:?}")),
        };
        pieces.push(Piece::Field { field, label, spaces, pad });
        rest = tail;
    }
    push_literal(&mut pieces, rest);
    Ok(pieces)
}

/// A built-in layout written in [`builtin`]'s notation, its values escaped `escape`'s way.
/// Its text is a constant the tests compile, so it cannot fail here.
pub(super) fn builtin_layout(spec: &str, escape: Escape) -> Layout {
    builtin(spec).and_then(|pieces| assemble(escape, pieces)).expect("a built-in layout compiles")
}

/// Appends text to the layout (nothing when empty).
fn push_literal(pieces: &mut Vec<Piece>, text: &str) {
    if !text.is_empty() {
        pieces.push(Piece::Literal(text.to_owned()));
    }
}

/// The pieces as a [`Layout`]: each field with the text after it, checked for what a replay
/// needs and for fields that could not be told apart.
fn assemble(escape: Escape, pieces: Vec<Piece>) -> Result<Layout, String> {
    let escaped = escape == Escape::Backslash;
    let mut lead = String::new();
    let mut slots: Vec<Slot> = Vec::new();
    let mut last_label = String::new();
    for piece in pieces {
        match piece {
            Piece::Literal(text) => match slots.last_mut() {
                Some(slot) => slot.after.push_str(&text),
                None => lead.push_str(&text),
            },
            Piece::Field { field, label, spaces, pad } => {
                let opened = match slots.last() {
                    Some(prev) if prev.after.is_empty() => {
                        return Err(format!(
                            "{last_label} and {label} have nothing between them, so a line cannot be split there"
                        ));
                    }
                    Some(prev) => prev.after.ends_with('"'),
                    None => lead.ends_with('"'),
                };
                last_label.clone_from(&label);
                slots.push(Slot { field, label, quoted: escaped && opened, spaces, pad, after: String::new() });
            }
        }
    }
    for slot in &mut slots {
        slot.quoted &= slot.after.starts_with('"');
    }
    let has = |f: fn(&Field) -> bool| slots.iter().any(|s| f(&s.field));
    if !has(|f| matches!(f, Field::Time(..))) {
        return Err(
            "the layout has no time ($time_local, $msec, %t, %<cqtq>…): replay needs when each request was made".into(),
        );
    }
    if !has(|f| matches!(f, Field::RequestLine | Field::RequestUri | Field::Path | Field::PathQuery | Field::Url)) {
        return Err(
            "the layout has no request ($request, $request_uri, %r, %U, %<pquc>…): replay needs what was asked".into(),
        );
    }
    let method_recorded = has(|f| matches!(f, Field::Method | Field::RequestLine));
    Ok(Layout { lead, slots, escape, method_recorded, rest_ignored: false, syslog: false })
}
