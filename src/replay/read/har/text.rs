//! The text encodings recordings come in: UTF-8 with or without a byte-order mark, and UTF-16
//! (little or big endian) with one, which Windows tools write (Fiddler, PowerShell's
//! `Out-File`). UTF-16 is decoded to UTF-8 as it is read, a buffer at a time, so a large
//! capture stays out of memory; a lone surrogate or a last odd byte becomes U+FFFD rather
//! than an error, since one bad character in a header must not lose the whole file.

use std::io::{self, BufRead, Cursor, Read};

/// How a file's bytes are encoded, from its byte-order mark.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    /// UTF-8 (a mark, if any, is dropped).
    Utf8,
    /// UTF-16, little endian.
    Utf16Le,
    /// UTF-16, big endian.
    Utf16Be,
}

/// The encoding `head` (a file's first bytes) marks, and how long its mark is.
pub fn mark(head: &[u8]) -> (Encoding, usize) {
    match head {
        [0xEF, 0xBB, 0xBF, ..] => (Encoding::Utf8, 3),
        [0xFF, 0xFE, ..] => (Encoding::Utf16Le, 2),
        [0xFE, 0xFF, ..] => (Encoding::Utf16Be, 2),
        _ => (Encoding::Utf8, 0),
    }
}

/// `head` as UTF-8 without its mark: decoded when it is marked UTF-16 (an odd last byte, as
/// a head cut at any length may have, is dropped), borrowed otherwise.
pub fn utf8_head(head: &[u8]) -> std::borrow::Cow<'_, [u8]> {
    match mark(head) {
        (Encoding::Utf8, n) => std::borrow::Cow::Borrowed(head.get(n..).unwrap_or_default()),
        (utf16, n) => {
            let body = head.get(n..).unwrap_or_default();
            let even = body.get(..body.len() - body.len() % 2).unwrap_or_default();
            let mut out = Vec::with_capacity(even.len());
            let mut decoder = Utf16 { big_endian: utf16 == Encoding::Utf16Be, odd: None, high: None };
            decoder.push(even, &mut out);
            std::borrow::Cow::Owned(out)
        }
    }
}

/// Reads `input` as UTF-8 whatever its mark says: the mark is read and dropped, UTF-16 is
/// decoded as it streams.
pub fn utf8_reader<'a>(input: &'a mut dyn BufRead) -> io::Result<Box<dyn BufRead + 'a>> {
    // A decompressor may hand out a single byte per read: gather the whole mark first.
    let mut head = Vec::with_capacity(3);
    while head.len() < 3 {
        let buf = input.fill_buf()?;
        let Some(&b) = buf.first() else { break };
        head.push(b);
        input.consume(1);
    }
    let (encoding, len) = mark(&head);
    let rest = Cursor::new(head.split_off(len));
    Ok(match encoding {
        Encoding::Utf8 => Box::new(rest.chain(input)),
        utf16 => Box::new(io::BufReader::with_capacity(
            64 * 1024,
            Utf16Reader {
                inner: Box::new(rest.chain(input)),
                decoder: Utf16 { big_endian: utf16 == Encoding::Utf16Be, odd: None, high: None },
                out: Vec::new(),
                at: 0,
                done: false,
            },
        )),
    })
}

/// A UTF-16 decoder's state between buffers: a byte waiting for its pair, a high surrogate
/// waiting for its low one.
struct Utf16 {
    big_endian: bool,
    odd: Option<u8>,
    high: Option<u16>,
}

impl Utf16 {
    /// Decodes `bytes` onto `out`.
    fn push(&mut self, bytes: &[u8], out: &mut Vec<u8>) {
        for &b in bytes {
            let Some(first) = self.odd.take() else {
                self.odd = Some(b);
                continue;
            };
            let unit = if self.big_endian { u16::from_be_bytes([first, b]) } else { u16::from_le_bytes([first, b]) };
            self.unit(unit, out);
        }
    }

    /// Decodes one code unit.
    fn unit(&mut self, unit: u16, out: &mut Vec<u8>) {
        let c = match (self.high.take(), unit) {
            (Some(high), 0xDC00..=0xDFFF) => {
                let scalar = 0x10000 + ((u32::from(high) - 0xD800) << 10) + (u32::from(unit) - 0xDC00);
                char::from_u32(scalar).unwrap_or(char::REPLACEMENT_CHARACTER)
            }
            (high, 0xD800..=0xDBFF) => {
                if high.is_some() {
                    put(char::REPLACEMENT_CHARACTER, out);
                }
                self.high = Some(unit);
                return;
            }
            (high, unit) => {
                if high.is_some() {
                    put(char::REPLACEMENT_CHARACTER, out);
                }
                char::from_u32(u32::from(unit)).unwrap_or(char::REPLACEMENT_CHARACTER)
            }
        };
        put(c, out);
    }

    /// The input ended: what is left half-read becomes U+FFFD.
    fn finish(&mut self, out: &mut Vec<u8>) {
        if self.high.take().is_some() {
            put(char::REPLACEMENT_CHARACTER, out);
        }
        if self.odd.take().is_some() {
            put(char::REPLACEMENT_CHARACTER, out);
        }
    }
}

/// Appends `c` as UTF-8.
fn put(c: char, out: &mut Vec<u8>) {
    let mut buf = [0u8; 4];
    out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
}

/// A UTF-16 stream read as UTF-8.
struct Utf16Reader<'a> {
    inner: Box<dyn Read + 'a>,
    decoder: Utf16,
    /// Decoded bytes not yet handed out, from `at` on.
    out: Vec<u8>,
    at: usize,
    done: bool,
}

impl Read for Utf16Reader<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        while self.at == self.out.len() {
            if self.done {
                return Ok(0);
            }
            self.out.clear();
            self.at = 0;
            let mut raw = [0u8; 16 * 1024];
            let n = match self.inner.read(&mut raw) {
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            if n == 0 {
                self.done = true;
                self.decoder.finish(&mut self.out);
            } else {
                self.decoder.push(raw.get(..n).unwrap_or_default(), &mut self.out);
            }
        }
        let pending = self.out.get(self.at..).unwrap_or_default();
        let n = pending.len().min(buf.len());
        buf[..n].copy_from_slice(&pending[..n]);
        self.at += n;
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `text` in UTF-16 with its mark.
    fn utf16(text: &str, big_endian: bool) -> Vec<u8> {
        let mut out = if big_endian { vec![0xFE, 0xFF] } else { vec![0xFF, 0xFE] };
        for unit in text.encode_utf16() {
            out.extend(if big_endian { unit.to_be_bytes() } else { unit.to_le_bytes() });
        }
        out
    }

    fn read_all(bytes: &[u8]) -> Vec<u8> {
        let mut input = bytes;
        let mut out = Vec::new();
        utf8_reader(&mut input).unwrap().read_to_end(&mut out).unwrap();
        out
    }

    #[test]
    fn every_mark_reads_as_utf8() {
        let text = "{\"a\": \"é 😀 ✓\"}";
        assert_eq!(read_all(text.as_bytes()), text.as_bytes());
        assert_eq!(read_all(format!("\u{feff}{text}").as_bytes()), text.as_bytes());
        assert_eq!(read_all(&utf16(text, false)), text.as_bytes());
        assert_eq!(read_all(&utf16(text, true)), text.as_bytes());
        assert_eq!(read_all(b""), b"");
        assert_eq!(read_all(b"{"), b"{");
        assert_eq!(read_all(b"\xEF\xBB"), b"\xEF\xBB");
    }

    #[test]
    fn a_long_utf16_stream_decodes_across_buffers() {
        // Long enough to cross the reader's buffers mid-pair and mid-surrogate.
        let text: String = (0..20_000).map(|i| if i % 3 == 0 { "😀" } else { "ab" }).collect();
        assert_eq!(read_all(&utf16(&text, false)), text.as_bytes());
        assert_eq!(read_all(&utf16(&text, true)), text.as_bytes());
    }

    #[test]
    fn broken_utf16_becomes_replacement_characters() {
        // A lone low surrogate, a high one followed by a letter, and an odd last byte.
        let bytes = [0xFF, 0xFE, 0x00, 0xDC, 0x3D, 0xD8, b'a', 0, b'b'];
        assert_eq!(String::from_utf8(read_all(&bytes)).unwrap(), "\u{fffd}\u{fffd}a\u{fffd}");
    }

    #[test]
    fn a_head_is_decoded_for_detection() {
        let text = "{\"log\": {";
        let mut cut = utf16(text, false);
        cut.push(b'"');
        assert_eq!(&*utf8_head(&cut), text.as_bytes());
        assert_eq!(&*utf8_head(&utf16(text, true)), text.as_bytes());
        assert_eq!(&*utf8_head(format!("\u{feff}{text}").as_bytes()), text.as_bytes());
        assert_eq!(&*utf8_head(text.as_bytes()), text.as_bytes());
    }
}
