//! Synthetic documents: everything about a document follows from its URL path, so any number of
//! origin processes agree on every byte without sharing state, and a client can check that a
//! proxy returned the object it asked for.
//!
//! A document path is `/d/<id>/<len>`, optionally under a prefix (`/site/d/<id>/<len>`); the
//! body is exactly `len` bytes: the path itself, a newline, then a pattern that depends on the
//! id and the position, so a body from another document (a broken cache key) or a truncated or
//! shifted body (a broken transfer) is caught.

/// Why a body is not the document its URL names.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Mismatch {
    /// The body has the wrong length.
    #[error("length {got}, expected {want}")]
    Length {
        /// Bytes received.
        got: usize,
        /// Bytes the URL names.
        want: usize,
    },
    /// The body starts with another document's path.
    #[error("body belongs to {got}")]
    Path {
        /// The path embedded in the body received.
        got: String,
    },
    /// The pattern differs at this offset.
    #[error("pattern differs at byte {0}")]
    Pattern(usize),
}

/// What a document's URL ends with past its length (jtest -4): proxies choose remap rules and
/// caching policies by it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Extension {
    /// `/d/ID/LEN`.
    #[default]
    None,
    /// `/d/ID/LEN.html`.
    Html,
    /// `/d/ID/LEN.jpeg`.
    Jpeg,
    /// `/d/ID/LEN/`.
    Slash,
}

impl Extension {
    /// What the URL ends with.
    pub fn suffix(self) -> &'static str {
        match self {
            Extension::None => "",
            Extension::Html => ".html",
            Extension::Jpeg => ".jpeg",
            Extension::Slash => "/",
        }
    }

    /// The extension `path` (a document's, without its query) ends with.
    pub fn of(path: &str) -> Extension {
        [Extension::Html, Extension::Jpeg, Extension::Slash]
            .into_iter()
            .find(|e| path.ends_with(e.suffix()))
            .unwrap_or(Extension::None)
    }
}

/// A document's identity.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Doc {
    /// Document number.
    pub id: u64,
    /// Body length in bytes.
    pub len: u64,
}

impl Doc {
    /// The path of this document under `prefix` (`""` or `/something`).
    pub fn path(&self, prefix: &str) -> String {
        format!("{prefix}/d/{}/{}", self.id, self.len)
    }

    /// Reads `.../d/<id>/<len>`, with an [`Extension`] or none (a query string is ignored).
    pub fn parse(path: &str) -> Option<Doc> {
        let path = path.split('?').next()?;
        let path = &path[..path.len() - Extension::of(path).suffix().len()];
        let mut parts = path.rsplitn(4, '/');
        let len = parts.next()?.parse().ok()?;
        let id = parts.next()?.parse().ok()?;
        (parts.next()? == "d").then_some(Doc { id, len })
    }

    /// The document's `Last-Modified` time in Unix seconds: 2020-01-01 00:00:00 GMT plus `id`
    /// seconds; ids past the year 9999 wrap around, so the year keeps four digits.
    pub fn last_modified_secs(&self) -> u64 {
        const EPOCH_2020: u64 = 1_577_836_800;
        const SPAN: u64 = 253_402_300_799 - EPOCH_2020;
        EPOCH_2020 + self.id % SPAN
    }

    /// [`Doc::last_modified_secs`] as an HTTP-date.
    pub fn last_modified(&self) -> String {
        http_date(std::time::UNIX_EPOCH + std::time::Duration::from_secs(self.last_modified_secs()))
    }

    /// The pattern byte at `offset` (past the path line): printable, varying with id and offset.
    /// A page's filler uses it too ([`super::page::Page`]).
    #[inline]
    pub(crate) fn pattern(&self, offset: u64) -> u8 {
        let x = self.id.wrapping_mul(0x9E37_79B9_7F4A_7C15).wrapping_add(offset.wrapping_mul(31)) >> 7;
        b'a' + (x % 26) as u8
    }

    /// Appends bytes `[from, to)` of the body served at `path` to `out`.
    pub fn body_range(&self, path: &str, from: u64, to: u64, out: &mut Vec<u8>) {
        let head_len = path.len() as u64 + 1;
        for i in from..to.min(self.len) {
            out.push(if i < path.len() as u64 {
                path.as_bytes()[i as usize]
            } else if i + 1 == head_len {
                b'\n'
            } else {
                self.pattern(i)
            });
        }
    }

    /// The whole body served at `path`.
    pub fn body(&self, path: &str) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.len as usize);
        self.body_range(path, 0, self.len, &mut out);
        out
    }

    /// Checks a received body against the document asked for at `path`.
    pub fn check(&self, path: &str, body: &[u8]) -> Result<(), Mismatch> {
        if body.len() as u64 != self.len {
            return Err(Mismatch::Length { got: body.len(), want: self.len as usize });
        }
        let path_part = &path.as_bytes()[..path.len().min(body.len())];
        if !body.starts_with(path_part) {
            let end = body.iter().position(|&b| b == b'\n').unwrap_or(body.len().min(80));
            return Err(Mismatch::Path { got: String::from_utf8_lossy(&body[..end.min(200)]).into_owned() });
        }
        let mut want = Vec::with_capacity(body.len());
        self.body_range(path, 0, self.len, &mut want);
        match want.iter().zip(body).position(|(a, b)| a != b) {
            Some(at) => Err(Mismatch::Pattern(at)),
            None => Ok(()),
        }
    }
}

/// Formats a time as an IMF-fixdate (`Wed, 01 Jan 2020 00:00:00 GMT`).
pub fn http_date(t: std::time::SystemTime) -> String {
    let secs = t.duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let mut out = Vec::with_capacity(29);
    crate::http::date::write(secs, &mut out);
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_round_trip() {
        let rows = [
            ("/d/7/100", Some(Doc { id: 7, len: 100 })),
            ("/site/a/d/0/1", Some(Doc { id: 0, len: 1 })),
            ("/d/7/100?x=1", Some(Doc { id: 7, len: 100 })),
            // With a request extension (jtest -4).
            ("/d/7/100.html", Some(Doc { id: 7, len: 100 })),
            ("/d/7/100.jpeg?x=1", Some(Doc { id: 7, len: 100 })),
            ("/d/7/100/", Some(Doc { id: 7, len: 100 })),
            ("/d/7/100//", None),
            ("/d/7/100.gif", None),
            ("/x/7/100", None),
            ("/d/7", None),
            ("/d/seven/100", None),
            ("/", None),
        ];
        for (path, want) in rows {
            assert_eq!(Doc::parse(path), want, "{path}");
        }
        assert_eq!(Doc { id: 3, len: 9 }.path("/p"), "/p/d/3/9");
    }

    #[test]
    fn bodies_start_with_their_path_and_check_out() {
        let d = Doc { id: 42, len: 64 };
        let path = d.path("");
        let body = d.body(&path);
        assert_eq!(body.len(), 64);
        assert!(body.starts_with(b"/d/42/64\n"));
        assert!(body[9..].iter().all(|b| b.is_ascii_lowercase()));
        assert_eq!(d.check(&path, &body), Ok(()));
        // A body shorter than its own path is the path cut short.
        let tiny = Doc { id: 1, len: 4 };
        assert_eq!(tiny.body("/d/1/4"), b"/d/1");
        // Ranges concatenate to the whole body.
        let mut parts = Vec::new();
        d.body_range(&path, 0, 10, &mut parts);
        d.body_range(&path, 10, 64, &mut parts);
        assert_eq!(parts, body);
    }

    #[test]
    fn http_dates() {
        use std::time::{Duration, UNIX_EPOCH};
        let rows = [
            (0, "Thu, 01 Jan 1970 00:00:00 GMT"),
            (1_577_836_800, "Wed, 01 Jan 2020 00:00:00 GMT"),
            (951_782_400, "Tue, 29 Feb 2000 00:00:00 GMT"),
            (1_700_000_000, "Tue, 14 Nov 2023 22:13:20 GMT"),
        ];
        for (secs, want) in rows {
            assert_eq!(http_date(UNIX_EPOCH + Duration::from_secs(secs)), want);
        }
        assert_eq!(Doc { id: 61, len: 1 }.last_modified(), "Wed, 01 Jan 2020 00:01:01 GMT");
    }

    #[test]
    fn wrong_bodies_are_caught() {
        let a = Doc { id: 1, len: 50 };
        let b = Doc { id: 2, len: 50 };
        let (pa, pb) = (a.path(""), b.path(""));
        // Another document's body (a cache keyed on the host only).
        assert_eq!(a.check(&pa, &b.body(&pb)), Err(Mismatch::Path { got: "/d/2/50".into() }));
        // Truncated.
        assert_eq!(a.check(&pa, &a.body(&pa)[..40]), Err(Mismatch::Length { got: 40, want: 50 }));
        // Same length and path, corrupted pattern.
        let mut bad = a.body(&pa);
        bad[30] ^= 0x20;
        assert_eq!(a.check(&pa, &bad), Err(Mismatch::Pattern(30)));
    }
}
