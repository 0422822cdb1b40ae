//! An editions `.proto` file said in proto2's grammar, so protox's parser (proto2 and proto3
//! only) reads it: `edition = "2023";` becomes `syntax = "proto2";` and each field declared
//! without a label (editions have none) gets `optional `. Everything else, `features` options
//! included, is the same grammar in both. proto2 rather than proto3 because editions files may
//! say what only proto2 allows (defaults, closed enums whose first value is not zero,
//! extension ranges); the compiled descriptor is then marked as the edition it was and lowered
//! like any other (see the parent module).
//!
//! Lines are never added, so an error's line is the source's; the column is mapped back
//! through [`Rewritten::original`].

/// A rewritten source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rewritten {
    /// The text protox parses.
    pub text: String,
    /// The edition the source declared (`2023`, `2024`).
    pub edition: String,
    /// Where the text differs in length from the source: (offset in the text after the
    /// change, bytes the text gained there).
    shifts: Vec<(usize, isize)>,
}

impl Rewritten {
    /// The source's byte offset of the text's byte offset `at`.
    pub fn original(&self, at: usize) -> usize {
        let gained: isize = self.shifts.iter().filter(|(after, _)| *after <= at).map(|(_, n)| *n).sum();
        (at as isize - gained).max(0) as usize
    }
}

/// A token: its kind and where it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tok {
    Word,
    Text,
    Number,
    Punct(u8),
}

/// The tokens of `src` (comments and white space left out), with their byte ranges.
fn tokens(src: &str) -> Vec<(Tok, usize, usize)> {
    let b = src.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        let start = i;
        if c.is_ascii_whitespace() {
            i += 1;
        } else if b[i..].starts_with(b"//") {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
        } else if b[i..].starts_with(b"/*") {
            i += 2;
            while i < b.len() && !b[i..].starts_with(b"*/") {
                i += 1;
            }
            i = (i + 2).min(b.len());
        } else if c == b'"' || c == b'\'' {
            i += 1;
            while i < b.len() && b[i] != c && b[i] != b'\n' {
                i += if b[i] == b'\\' { 2 } else { 1 };
            }
            i = (i + 1).min(b.len());
            out.push((Tok::Text, start, i));
        } else if c.is_ascii_alphabetic() || c == b'_' {
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                i += 1;
            }
            out.push((Tok::Word, start, i));
        } else if c.is_ascii_digit() || (c == b'.' && b.get(i + 1).is_some_and(u8::is_ascii_digit)) {
            // Numbers take letters, dots and an exponent's sign (`1e-5`, `0x1F`, `inf` is a word).
            while i < b.len()
                && (b[i].is_ascii_alphanumeric()
                    || b[i] == b'.'
                    || ((b[i] == b'-' || b[i] == b'+') && matches!(b[i - 1], b'e' | b'E')))
            {
                i += 1;
            }
            out.push((Tok::Number, start, i));
        } else {
            i += 1;
            out.push((Tok::Punct(c), start, i));
        }
    }
    out
}

/// What a body between braces holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Body {
    /// A message or an `extend` block: its fields need labels in proto2.
    Fields,
    /// A oneof: its fields have none in proto2 too.
    Oneof,
    /// Anything else (an enum, a service, a method, an option's value).
    Other,
}

/// Words that open a statement in a message that is not a field.
const NOT_FIELDS: [&str; 14] = [
    "option",
    "message",
    "enum",
    "extend",
    "oneof",
    "reserved",
    "extensions",
    "map",
    "repeated",
    "optional",
    "required",
    "group",
    "export",
    "local",
];

/// `src` rewritten in proto2's grammar when it is an editions file; `None` when it is not one
/// (its first statement is not `edition = "..."`).
pub fn rewrite(src: &str) -> Option<Rewritten> {
    let toks = tokens(src);
    let word = |k: usize| toks.get(k).filter(|t| t.0 == Tok::Word).map(|t| &src[t.1..t.2]);
    // `edition = "2023";` opens the file.
    let (Some("edition"), Some((Tok::Punct(b'='), ..)), Some((Tok::Text, vs, ve)), Some((Tok::Punct(b';'), _, end))) =
        (word(0), toks.get(1), toks.get(2), toks.get(3))
    else {
        return None;
    };
    let edition = src[vs + 1..ve.saturating_sub(1).max(vs + 1)].to_string();
    let mut text = String::with_capacity(src.len() + 256);
    let mut shifts = Vec::new();
    let declared = "syntax = \"proto2\";";
    text.push_str(&src[..toks[0].1]);
    text.push_str(declared);
    shifts.push((text.len(), declared.len() as isize - (end - toks[0].1) as isize));
    let mut copied = *end;
    // The bodies open around the token being read, and whether it starts a statement.
    let mut bodies: Vec<Body> = Vec::new();
    let mut at_start = true;
    // The statement's first words, which say what a `{` opens.
    let mut head: Vec<&str> = Vec::new();
    let mut brackets = 0usize;
    for &(tok, start, end) in toks.iter().skip(4) {
        if at_start && brackets == 0 && bodies.last() == Some(&Body::Fields) {
            let is_field = match tok {
                Tok::Word => !NOT_FIELDS.contains(&&src[start..end]),
                // A fully qualified type: `.pkg.Type name = 1;`.
                Tok::Punct(b'.') => true,
                _ => false,
            };
            if is_field {
                text.push_str(&src[copied..start]);
                text.push_str("optional ");
                shifts.push((text.len(), "optional ".len() as isize));
                copied = start;
            }
        }
        match tok {
            Tok::Punct(b'[') => brackets += 1,
            Tok::Punct(b']') => brackets = brackets.saturating_sub(1),
            _ => {}
        }
        match tok {
            Tok::Punct(b'{') => {
                let opened = if brackets > 0 {
                    Body::Other
                } else {
                    let kind = head.iter().find(|w| !matches!(**w, "export" | "local")).copied();
                    match kind {
                        Some("message" | "extend") if !head.contains(&"option") => Body::Fields,
                        Some("oneof") => Body::Oneof,
                        _ => Body::Other,
                    }
                };
                bodies.push(opened);
                at_start = opened != Body::Other;
                head.clear();
            }
            Tok::Punct(b'}') => {
                bodies.pop();
                at_start = bodies.last().is_none_or(|b| *b != Body::Other);
                head.clear();
            }
            Tok::Punct(b';') if brackets == 0 && bodies.last().is_none_or(|b| *b != Body::Other) => {
                at_start = true;
                head.clear();
            }
            Tok::Punct(b';') => {}
            _ => {
                at_start = false;
                if tok == Tok::Word && head.len() < 2 {
                    head.push(&src[start..end]);
                }
            }
        }
    }
    text.push_str(&src[copied..]);
    Some(Rewritten { text, edition, shifts })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_get_a_label_and_nothing_else_changes() {
        let src = "// routes\nedition = \"2023\";\noption features.field_presence = IMPLICIT;\npackage p;\n\
                   message M {\n  int32 a = 1;\n  repeated string b = 2;\n  map<string, int32> c = 3;\n  \
                   .p.N d = 4 [features.message_encoding = DELIMITED, default = 5];\n  oneof o { string e = 5; }\n  \
                   message N { option (x) = { a: 1; b: 2 }; bool f = 1; }\n  enum E { A = 1; }\n  reserved 9;\n}\n\
                   extend M { int32 g = 10; }\nservice S { rpc R(M) returns (M) { option deprecated = true; } }\n";
        let r = rewrite(src).unwrap();
        assert_eq!(r.edition, "2023");
        assert_eq!(
            r.text,
            "// routes\nsyntax = \"proto2\";\noption features.field_presence = IMPLICIT;\npackage p;\n\
             message M {\n  optional int32 a = 1;\n  repeated string b = 2;\n  map<string, int32> c = 3;\n  \
             optional .p.N d = 4 [features.message_encoding = DELIMITED, default = 5];\n  oneof o { string e = 5; }\n  \
             message N { option (x) = { a: 1; b: 2 }; optional bool f = 1; }\n  enum E { A = 1; }\n  reserved 9;\n}\n\
             extend M { optional int32 g = 10; }\nservice S { rpc R(M) returns (M) { option deprecated = true; } }\n"
        );
        assert_eq!(r.text.lines().count(), src.lines().count());
    }

    #[test]
    fn offsets_map_back_to_the_source() {
        let src = "edition = \"2024\";\nmessage M { int32 a = 1; }";
        let r = rewrite(src).unwrap();
        // `a` in the text and in the source.
        let at = r.text.find(" a ").unwrap() + 1;
        assert_eq!(r.original(at), src.find(" a ").unwrap() + 1);
        assert_eq!(r.original(0), 0);
    }

    #[test]
    fn only_an_editions_file_is_rewritten() {
        for src in ["syntax = \"proto3\";\nmessage M {}", "", "edition", "message M { int32 edition = 1; }"] {
            assert_eq!(rewrite(src), None, "{src:?}");
        }
    }

    #[test]
    fn strings_and_comments_hide_their_braces() {
        let src =
            "edition = \"2023\";\nmessage M {\n  // }\n  /* { */ string a = 1 [default = \"};{\"];\n  int32 b = 2;\n}";
        let text = rewrite(src).unwrap().text;
        assert!(text.contains("/* { */ optional string a = 1 [default = \"};{\"];\n  optional int32 b = 2;"), "{text}");
    }
}
