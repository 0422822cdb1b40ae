//! The little YAML the manifest needs, written by hand rather than through a dependency: block
//! maps and lists, integers, booleans, and strings always double-quoted with JSON-style
//! escapes, so no argument (`-H 'X: "y"'`, `#`, `: `, `yes`, a line break) can change the
//! document's structure or type. Everything outside printable ASCII is escaped, so the output
//! is plain ASCII that any YAML 1.1 or 1.2 parser (kubectl's, PyYAML) reads back exactly.

/// A YAML value.
#[derive(Debug, Clone, PartialEq)]
pub enum Y {
    /// A string, always quoted.
    Str(String),
    /// A non-negative integer.
    Int(u64),
    /// true or false.
    Bool(bool),
    /// Keys in the order written (keys are the manifest's own, never user input).
    Map(Vec<(&'static str, Y)>),
    /// A sequence.
    List(Vec<Y>),
}

impl Y {
    /// A string value.
    pub fn str(s: &str) -> Y {
        Y::Str(s.to_string())
    }

    /// A map from its entries, in order.
    pub fn map<const N: usize>(entries: [(&'static str, Y); N]) -> Y {
        Y::Map(entries.into())
    }
}

/// Appends `y` (a map, as a document's root is) to `out`.
pub fn write(out: &mut String, y: &Y) {
    value(out, y, 0, false);
}

/// Writes `y` at `indent`. `inline`: the line is already started (after `- `), so the first
/// line of a map or list goes on it.
fn value(out: &mut String, y: &Y, indent: usize, inline: bool) {
    match y {
        Y::Map(entries) if !entries.is_empty() => {
            for (i, (key, v)) in entries.iter().enumerate() {
                if i > 0 || !inline {
                    out.push_str(&" ".repeat(indent));
                }
                out.push_str(&self::key(key));
                out.push(':');
                child(out, v, indent + 2);
            }
        }
        Y::List(items) if !items.is_empty() => {
            for (i, item) in items.iter().enumerate() {
                if i > 0 || !inline {
                    out.push_str(&" ".repeat(indent));
                }
                match item {
                    // A map item starts on the dash's line.
                    Y::Map(m) if !m.is_empty() => {
                        out.push_str("- ");
                        value(out, item, indent + 2, true);
                    }
                    _ => {
                        out.push('-');
                        child(out, item, indent + 2);
                    }
                }
            }
        }
        scalar => {
            out.push_str(&self::scalar(scalar));
            out.push('\n');
        }
    }
}

/// Writes the value after `key:` or `-`: a scalar on the same line, a map or list below.
fn child(out: &mut String, y: &Y, indent: usize) {
    match y {
        Y::Map(m) if !m.is_empty() => {
            out.push('\n');
            value(out, y, indent, false);
        }
        Y::List(l) if !l.is_empty() => {
            out.push('\n');
            value(out, y, indent, false);
        }
        _ => {
            out.push(' ');
            value(out, y, indent, true);
        }
    }
}

/// A key: plain when it is letters and digits, quoted otherwise (`app.kubernetes.io/name`).
fn key(k: &str) -> String {
    if !k.is_empty() && k.bytes().all(|b| b.is_ascii_alphanumeric()) {
        k.to_string()
    } else {
        quote(k)
    }
}

fn scalar(y: &Y) -> String {
    match y {
        Y::Str(s) => quote(s),
        Y::Int(n) => n.to_string(),
        Y::Bool(b) => b.to_string(),
        Y::Map(_) => "{}".into(),
        Y::List(_) => "[]".into(),
    }
}

/// `s` as a double-quoted scalar. YAML's double-quoted escapes include JSON's; a character
/// beyond the Basic Multilingual Plane takes YAML's `\U` (JSON's surrogate pairs are not YAML).
pub fn quote(s: &str) -> String {
    let mut q = String::with_capacity(s.len() + 2);
    q.push('"');
    for c in s.chars() {
        match c {
            '"' => q.push_str("\\\""),
            '\\' => q.push_str("\\\\"),
            '\n' => q.push_str("\\n"),
            '\t' => q.push_str("\\t"),
            '\r' => q.push_str("\\r"),
            ' '..='~' => q.push(c),
            c if u32::from(c) <= 0xFFFF => q.push_str(&format!("\\u{:04X}", u32::from(c))),
            c => q.push_str(&format!("\\U{:08X}", u32::from(c))),
        }
    }
    q.push('"');
    q
}
