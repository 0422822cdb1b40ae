//! Message body framing, shared by the client (responses) and the origin (requests).
//!
//! Bodies are skipped, not stored: the decoder only tells how many of the offered bytes belong to
//! the body and whether the body has ended. The chunked decoder is a hand-written byte state
//! machine because it runs on every chunked byte the generator reads, and it must keep its place
//! across reads that split a chunk header anywhere.

use super::ParseError;

/// Largest chunk-size line (hex digits plus extensions) accepted, a guard against garbage input.
pub(crate) const MAX_CHUNK_LINE: u32 = 4096;
/// Largest trailer section accepted.
pub(crate) const MAX_TRAILERS: u32 = 64 * 1024;

/// How a message body is delimited, decided from the head.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BodyKind {
    /// No body at all (HEAD, 1xx, 204, 304, or a request without length).
    Empty,
    /// Exactly this many bytes.
    Length(u64),
    /// Transfer-Encoding: chunked.
    Chunked,
    /// Everything until the peer closes the connection.
    UntilClose,
}

/// Where the chunked decoder is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Chunk {
    /// Reading hex digits of the chunk size.
    Size { size: u64, digits: u32 },
    /// After the digits: whitespace, then an extension after `;`, until the line ends; `seen`
    /// counts the line's bytes after the digits.
    SizeLine { size: u64, seen: u32, ext: bool },
    /// A CR ended the chunk-size line; LF must follow.
    SizeCr { size: u64 },
    /// Inside chunk data.
    Data(u64),
    /// Expecting CR then LF after chunk data.
    DataEnd { cr: bool },
    /// In the trailer section; `line_len` counts bytes of the current line before its line
    /// end, `total` the section's bytes so far, `cr` that the last byte was a CR.
    Trailer { line_len: u32, total: u32, cr: bool },
}

/// Incremental body decoder.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BodyDecoder {
    /// Bytes left of a Content-Length body.
    Length(u64),
    /// A chunked body in progress.
    Chunked(ChunkedState),
    /// A body that ends when the connection closes.
    UntilClose,
    /// The body is complete.
    Done,
}

/// Opaque progress of a chunked body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChunkedState(Chunk);

impl BodyDecoder {
    /// A decoder for a body of the given kind.
    pub fn new(kind: BodyKind) -> Self {
        match kind {
            BodyKind::Empty | BodyKind::Length(0) => BodyDecoder::Done,
            BodyKind::Length(n) => BodyDecoder::Length(n),
            BodyKind::Chunked => BodyDecoder::Chunked(ChunkedState(Chunk::Size { size: 0, digits: 0 })),
            BodyKind::UntilClose => BodyDecoder::UntilClose,
        }
    }

    /// True once the body has ended.
    pub fn is_done(&self) -> bool {
        matches!(self, BodyDecoder::Done)
    }

    /// Consumes body bytes from `data`; returns how many belong to the body.
    /// When the decoder is done afterwards, the rest of `data` belongs to the next message.
    pub fn feed(&mut self, data: &[u8]) -> Result<usize, ParseError> {
        self.feed_into(data, None)
    }

    /// Like [`BodyDecoder::feed`], also appending the body's content (without chunk framing)
    /// to `sink` when one is given (a script's `response()` wants the body).
    pub fn feed_into(&mut self, data: &[u8], mut sink: Option<&mut Vec<u8>>) -> Result<usize, ParseError> {
        match self {
            BodyDecoder::Done => Ok(0),
            BodyDecoder::UntilClose => {
                if let Some(sink) = sink {
                    sink.extend_from_slice(data);
                }
                Ok(data.len())
            }
            BodyDecoder::Length(left) => {
                let take = (*left).min(data.len() as u64);
                if let Some(sink) = sink.as_mut() {
                    sink.extend_from_slice(&data[..take as usize]);
                }
                *left -= take;
                if *left == 0 {
                    *self = BodyDecoder::Done;
                }
                Ok(take as usize)
            }
            BodyDecoder::Chunked(ChunkedState(state)) => {
                let (used, done) = feed_chunked(state, data, sink)?;
                if done {
                    *self = BodyDecoder::Done;
                }
                Ok(used)
            }
        }
    }
}

fn hex_value(b: u8) -> Option<u64> {
    match b {
        b'0'..=b'9' => Some((b - b'0') as u64),
        b'a'..=b'f' => Some((b - b'a' + 10) as u64),
        b'A'..=b'F' => Some((b - b'A' + 10) as u64),
        _ => None,
    }
}

/// Runs the chunked state machine over `data`; returns bytes used and whether the body ended.
/// A line may end in LF or CRLF; a CR anywhere else in a size line or trailer is an error, so
/// no two readers of the same bytes can disagree on where a line ends. One function, a little
/// over the usual length: it is the hot path of chunked bodies, and its states read as one
/// match better than spread over helpers that would each take the whole state.
fn feed_chunked(state: &mut Chunk, data: &[u8], mut sink: Option<&mut Vec<u8>>) -> Result<(usize, bool), ParseError> {
    let mut i = 0;
    while i < data.len() {
        match *state {
            Chunk::Size { size, digits } => {
                let b = data[i];
                if let Some(v) = hex_value(b) {
                    if digits >= 16 {
                        return Err(ParseError::ChunkSize);
                    }
                    *state = Chunk::Size { size: size * 16 + v, digits: digits + 1 };
                    i += 1;
                } else if digits == 0 {
                    return Err(ParseError::ChunkSize);
                } else {
                    *state = Chunk::SizeLine { size, seen: 0, ext: false };
                }
            }
            Chunk::SizeLine { size, seen, ext } => {
                let b = data[i];
                i += 1;
                if b == b'\n' {
                    *state = end_of_size_line(size);
                    continue;
                }
                if seen >= MAX_CHUNK_LINE {
                    return Err(ParseError::ChunkSize);
                }
                *state = match b {
                    b'\r' => Chunk::SizeCr { size },
                    // An extension's content is skipped unread.
                    _ if ext => Chunk::SizeLine { size, seen: seen + 1, ext },
                    // Before an extension only whitespace may follow the digits: "5 6" is
                    // not a size of 5.
                    b' ' | b'\t' => Chunk::SizeLine { size, seen: seen + 1, ext },
                    b';' => Chunk::SizeLine { size, seen: seen + 1, ext: true },
                    _ => return Err(ParseError::ChunkSize),
                };
            }
            Chunk::SizeCr { size } => {
                i += 1;
                if data[i - 1] != b'\n' {
                    return Err(ParseError::ChunkSize);
                }
                *state = end_of_size_line(size);
            }
            Chunk::Data(left) => {
                let take = left.min((data.len() - i) as u64);
                if let Some(sink) = sink.as_mut() {
                    sink.extend_from_slice(&data[i..i + take as usize]);
                }
                i += take as usize;
                *state = if take == left { Chunk::DataEnd { cr: false } } else { Chunk::Data(left - take) };
            }
            Chunk::DataEnd { cr } => {
                let b = data[i];
                i += 1;
                match (cr, b) {
                    (false, b'\r') => *state = Chunk::DataEnd { cr: true },
                    (_, b'\n') => *state = Chunk::Size { size: 0, digits: 0 },
                    _ => return Err(ParseError::ChunkSize),
                }
            }
            Chunk::Trailer { line_len, total, cr } => {
                let b = data[i];
                i += 1;
                if total >= MAX_TRAILERS {
                    return Err(ParseError::HeadTooLarge);
                }
                let total = total + 1;
                *state = match (cr, b) {
                    (_, b'\n') if line_len == 0 => return Ok((i, true)),
                    (_, b'\n') => Chunk::Trailer { line_len: 0, total, cr: false },
                    (true, _) => return Err(ParseError::ChunkSize),
                    (false, b'\r') => Chunk::Trailer { line_len, total, cr: true },
                    (false, _) => Chunk::Trailer { line_len: line_len + 1, total, cr: false },
                };
            }
        }
    }
    Ok((i, false))
}

/// What follows a chunk-size line: the data, or the trailer section after the last chunk.
fn end_of_size_line(size: u64) -> Chunk {
    if size == 0 {
        Chunk::Trailer { line_len: 0, total: 0, cr: false }
    } else {
        Chunk::Data(size)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Feeds `input` in pieces of `step` bytes; returns total used and whether it ended.
    fn run(kind: BodyKind, input: &[u8], step: usize) -> Result<(usize, bool), ParseError> {
        let mut d = BodyDecoder::new(kind);
        let mut used = 0;
        for piece in input.chunks(step) {
            let n = d.feed(piece)?;
            used += n;
            if d.is_done() {
                break;
            }
            assert_eq!(n, piece.len(), "an unfinished body takes the whole piece");
        }
        Ok((used, d.is_done()))
    }

    #[test]
    fn bodies_end_where_they_should_at_any_split() {
        let chunked = b"5\r\nhello\r\n3;ext=1\r\nabc\r\n0\r\nX-Trailer: yes\r\n\r\nNEXT";
        let rows: &[(BodyKind, &[u8], usize, bool)] = &[
            // Content-Length stops exactly at its length and leaves the next message alone.
            (BodyKind::Length(5), b"helloGET", 5, true),
            // Zero length and no body are done before any byte.
            (BodyKind::Length(0), b"GET", 0, true),
            (BodyKind::Empty, b"GET", 0, true),
            // Chunked with an extension and a trailer ends before NEXT.
            (BodyKind::Chunked, chunked, chunked.len() - 4, true),
            // A bare LF line ending is tolerated.
            (BodyKind::Chunked, b"2\nhi\n0\n\n", 8, true),
            // Until-close never ends by itself.
            (BodyKind::UntilClose, b"anything", 8, false),
            // A chunked body cut short is not done.
            (BodyKind::Chunked, b"a\r\nhello", 8, false),
        ];
        for &(kind, input, used, done) in rows {
            for step in 1..=input.len().max(1) {
                assert_eq!(run(kind, input, step), Ok((used, done)), "{kind:?} step {step}");
            }
        }
    }

    #[test]
    fn content_is_captured_without_framing() {
        let chunked = b"5\r\nhello\r\n6;x\r\n world\r\n0\r\n\r\n";
        for step in 1..chunked.len() {
            let mut d = BodyDecoder::new(BodyKind::Chunked);
            let mut body = Vec::new();
            for piece in chunked.chunks(step) {
                d.feed_into(piece, Some(&mut body)).unwrap();
            }
            assert_eq!(body, b"hello world", "step {step}");
        }
        let mut d = BodyDecoder::new(BodyKind::Length(3));
        let mut body = Vec::new();
        assert_eq!(d.feed_into(b"abcdef", Some(&mut body)), Ok(3));
        assert_eq!(body, b"abc");
    }

    #[test]
    fn malformed_chunk_sizes_are_errors() {
        let rows: &[&[u8]] = &[
            b"zz\r\n",                // not hex
            b"\r\n",                  // no digits
            b"12345678901234567\r\n", // more than 64 bits
            b"5\r\nhelloXX",          // data not followed by CRLF
            b"5x\r\n",                // junk straight after the digits
            b"5 6\r\n",               // a second number after whitespace
            b"5\rx\n",                // a CR that does not end the line
            b"0\r\nT: 1\rx\n\r\n",    // the same in a trailer
        ];
        for (i, input) in rows.iter().enumerate() {
            assert_eq!(run(BodyKind::Chunked, input, input.len()), Err(ParseError::ChunkSize), "row {i}");
        }
    }
}
