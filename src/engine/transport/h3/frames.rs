//! HTTP/3 framing (RFC 9114 7) on quiche's QUIC streams, written here rather than taken from
//! quiche's own `h3` module for two measured reasons: `quiche::h3` keeps every finished
//! request stream's state for the life of the connection (about 260 bytes a request: a
//! 12-second run on one connection grew from 23 to 63 MB), and it roughly doubles the CPU of
//! a request over raw streams. A load generator's side of HTTP/3 is small: it writes a request
//! (pre-encoded once when it never changes), reads HEADERS and DATA frames back, and watches the
//! server's control stream for GOAWAY. Field sections are encoded and decoded by quiche's QPACK
//! (static table and Huffman; strain advertises no dynamic table, so none is ever used).

use quiche::h3::NameValue;

/// HTTP/3 frame types (RFC 9114 7.2).
const DATA: u64 = 0x0;
const HEADERS: u64 = 0x1;
const GOAWAY: u64 = 0x7;
/// Frame types a server must not send on a request stream: CANCEL_PUSH, SETTINGS,
/// PUSH_PROMISE (no push was allowed), GOAWAY, MAX_PUSH_ID, and HTTP/2's reserved ones.
const NOT_ON_REQUESTS: [u64; 9] = [0x2, 0x3, 0x4, 0x5, 0x6, 0x7, 0x8, 0x9, 0xd];
/// Unidirectional stream types (RFC 9114 6.2).
pub(super) const CONTROL_STREAM: u64 = 0x0;
/// The client's control stream: its type, then an empty SETTINGS frame (every setting at its
/// default: no dynamic QPACK table, no blocked streams).
pub(super) const CONTROL_PREFACE: [u8; 3] = [0x0, 0x4, 0x0];
/// Largest field section strain accepts from a server.
const MAX_FIELD_SECTION: u64 = 64 * 1024;
/// Largest control frame strain keeps to read (GOAWAY holds one varint).
const MAX_CONTROL_FRAME: u64 = 64;

/// Something a server sent that HTTP/3 does not allow.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct FrameError(pub(super) &'static str);

/// A QUIC variable-length integer at the start of `b`: its value and length, or `None` when
/// `b` does not hold all of it yet.
pub(super) fn varint(b: &[u8]) -> Option<(u64, usize)> {
    let first = *b.first()?;
    let len = 1usize << (first >> 6);
    let bytes = b.get(..len)?;
    let mut v = u64::from(first & 0x3f);
    for &byte in &bytes[1..] {
        v = (v << 8) | u64::from(byte);
    }
    Some((v, len))
}

/// Appends `v` as a QUIC variable-length integer.
pub(super) fn put_varint(out: &mut Vec<u8>, v: u64) {
    match v {
        0..=0x3f => out.push(v as u8),
        0x40..=0x3fff => out.extend_from_slice(&(v as u16 | 0x4000).to_be_bytes()),
        0x4000..=0x3fff_ffff => out.extend_from_slice(&(v as u32 | 0x8000_0000).to_be_bytes()),
        _ => out.extend_from_slice(&(v | 0xc000_0000_0000_0000).to_be_bytes()),
    }
}

/// A request as it goes on its stream: a HEADERS frame (QPACK-encoded fields) and, with a
/// body, a DATA frame.
pub(super) fn encode_request(fields: &[(Vec<u8>, Vec<u8>)], body: Option<&[u8]>) -> Result<Vec<u8>, String> {
    let headers: Vec<quiche::h3::Header> = fields.iter().map(|(n, v)| quiche::h3::Header::new(n, v)).collect();
    // QPACK never makes a field longer than its name and value plus a few bytes of prefixes.
    let room = headers.iter().map(|h| h.name().len() + h.value().len() + 8).sum::<usize>() + 16;
    let mut block = vec![0; room];
    let n = quiche::h3::qpack::Encoder::new()
        .encode(&headers, &mut block)
        .map_err(|e| format!("cannot encode the request's fields: {e:?}"))?;
    let mut out = Vec::with_capacity(n + body.map_or(0, |b| b.len()) + 16);
    put_varint(&mut out, HEADERS);
    put_varint(&mut out, n as u64);
    out.extend_from_slice(&block[..n]);
    if let Some(body) = body.filter(|b| !b.is_empty()) {
        put_varint(&mut out, DATA);
        put_varint(&mut out, body.len() as u64);
        out.extend_from_slice(body);
    }
    Ok(out)
}

/// A response's status from its field section, without decoding the rest when the section
/// opens with `:status` as one of the static table's (what servers send for common codes).
pub(super) fn status(block: &[u8]) -> Result<u16, FrameError> {
    // Required Insert Count 0 and Base 0 (no dynamic table), then an indexed static field
    // line: 0b11 and a 6-bit index.
    if let [0, 0, line, ..] = block {
        let fast = match line {
            0xd8 => Some(103),
            0xd9 => Some(200),
            0xda => Some(304),
            0xdb => Some(404),
            0xdc => Some(503),
            _ => None,
        };
        if let Some(s) = fast {
            return Ok(s);
        }
    }
    let fields = decode(block)?;
    let value = fields.iter().find(|(n, _)| n == b":status").map(|(_, v)| v.as_slice());
    value
        .and_then(|v| std::str::from_utf8(v).ok())
        .and_then(|v| v.parse().ok())
        .filter(|s| (100..1000).contains(s))
        .ok_or(FrameError("a response without a valid :status"))
}

/// Header fields: names and values as sent, in order.
pub(super) type Fields = Vec<(Vec<u8>, Vec<u8>)>;

/// Every field of a field section.
pub(super) fn decode(block: &[u8]) -> Result<Fields, FrameError> {
    let fields = quiche::h3::qpack::Decoder::new()
        .decode(block, MAX_FIELD_SECTION)
        .map_err(|_| FrameError("a field section QPACK cannot decode"))?;
    Ok(fields.iter().map(|h| (h.name().to_vec(), h.value().to_vec())).collect())
}

/// What a stream's frames came to, as they are read.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Part<'a> {
    /// A complete HEADERS frame's field section.
    Headers(&'a [u8]),
    /// Some of a DATA frame's payload.
    Data(&'a [u8]),
    /// A control stream's GOAWAY, with its id.
    GoAway(u64),
}

/// Where a reader is in its stream's frames.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum At {
    /// Reading a frame's type and length.
    Head,
    /// Collecting a HEADERS frame's field section (or a control frame), `left` bytes to go.
    Block { ty: u64, left: u64 },
    /// Passing a DATA frame's payload through.
    Data { left: u64 },
    /// Skipping a frame strain has no use for.
    Skip { left: u64 },
}

/// Reads one stream's frames as its bytes arrive, in any pieces.
#[derive(Debug, Clone)]
pub(super) struct Reader {
    /// A frame head split between reads.
    head: [u8; 16],
    fill: usize,
    at: At,
    /// A request stream (HEADERS and DATA) or the server's control stream.
    control: bool,
    /// The frame being collected.
    block: Vec<u8>,
}

impl Default for Reader {
    fn default() -> Reader {
        Reader::request()
    }
}

impl Reader {
    /// A reader for a request stream's response.
    pub(super) fn request() -> Reader {
        Reader { head: [0; 16], fill: 0, at: At::Head, control: false, block: Vec::new() }
    }

    /// A reader for the server's control stream (after its type).
    pub(super) fn control() -> Reader {
        Reader { control: true, ..Reader::request() }
    }

    /// Starts over for the next response on a new stream, keeping the block's room.
    pub(super) fn reset(&mut self) {
        self.fill = 0;
        self.at = At::Head;
        self.block.clear();
    }

    /// Reads `input`, handing each part to `on`.
    pub(super) fn feed(&mut self, mut input: &[u8], on: &mut dyn FnMut(Part)) -> Result<(), FrameError> {
        while !input.is_empty() {
            match self.at {
                At::Head => {
                    let take = (self.head.len() - self.fill).min(input.len());
                    self.head[self.fill..self.fill + take].copy_from_slice(&input[..take]);
                    let have = self.fill + take;
                    let Some((ty, a)) = varint(&self.head[..have]) else {
                        self.fill = have;
                        return Ok(());
                    };
                    let Some((len, b)) = varint(&self.head[a..have]) else {
                        self.fill = have;
                        return Ok(());
                    };
                    // What of this read went past the frame head.
                    let used = (a + b).saturating_sub(self.fill);
                    input = &input[used..];
                    self.fill = 0;
                    self.at = self.frame(ty, len)?;
                    if let At::Block { left: 0, ty } = self.at {
                        self.done_block(ty, on)?;
                    }
                }
                At::Block { ty, left } => {
                    let n = (left as usize).min(input.len());
                    self.block.extend_from_slice(&input[..n]);
                    input = &input[n..];
                    self.at = At::Block { ty, left: left - n as u64 };
                    if left == n as u64 {
                        self.done_block(ty, on)?;
                    }
                }
                At::Data { left } => {
                    let n = (left as usize).min(input.len());
                    on(Part::Data(&input[..n]));
                    input = &input[n..];
                    self.at = if left == n as u64 { At::Head } else { At::Data { left: left - n as u64 } };
                }
                At::Skip { left } => {
                    let n = (left as usize).min(input.len());
                    input = &input[n..];
                    self.at = if left == n as u64 { At::Head } else { At::Skip { left: left - n as u64 } };
                }
            }
        }
        Ok(())
    }

    /// The stream ended: an error if it ended inside a frame.
    pub(super) fn end(&self) -> Result<(), FrameError> {
        match (self.at, self.fill) {
            (At::Head, 0) => Ok(()),
            _ => Err(FrameError("the stream ended inside a frame")),
        }
    }

    /// What to do with a frame of type `ty` and length `len`.
    fn frame(&mut self, ty: u64, len: u64) -> Result<At, FrameError> {
        self.block.clear();
        if self.control {
            return Ok(match ty {
                GOAWAY if len <= MAX_CONTROL_FRAME => At::Block { ty, left: len },
                DATA | HEADERS => return Err(FrameError("a DATA or HEADERS frame on the control stream")),
                _ => At::Skip { left: len },
            });
        }
        match ty {
            HEADERS if len > MAX_FIELD_SECTION => Err(FrameError("a field section over 64 KiB")),
            HEADERS => Ok(At::Block { ty, left: len }),
            DATA => Ok(if len == 0 { At::Head } else { At::Data { left: len } }),
            t if NOT_ON_REQUESTS.contains(&t) => Err(FrameError("a frame not allowed on a request stream")),
            // Unknown and reserved (grease) frame types are skipped (RFC 9114 9).
            _ => Ok(At::Skip { left: len }),
        }
    }

    /// A collected frame is complete.
    fn done_block(&mut self, ty: u64, on: &mut dyn FnMut(Part)) -> Result<(), FrameError> {
        self.at = At::Head;
        match ty {
            HEADERS => on(Part::Headers(&self.block)),
            _ => {
                let (id, _) = varint(&self.block).ok_or(FrameError("a GOAWAY without an id"))?;
                on(Part::GoAway(id));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parts(r: &mut Reader, input: &[u8], step: usize) -> Result<Vec<String>, FrameError> {
        let mut seen = Vec::new();
        for piece in input.chunks(step) {
            r.feed(piece, &mut |p| {
                seen.push(match p {
                    Part::Headers(b) => format!("H{}", b.len()),
                    Part::Data(d) => format!("D{}", d.len()),
                    Part::GoAway(id) => format!("G{id}"),
                })
            })?;
        }
        Ok(seen)
    }

    #[test]
    fn varints_round_trip_at_every_length() {
        for v in [0, 63, 64, 16_383, 16_384, 1_073_741_823, 1_073_741_824, (1 << 62) - 1] {
            let mut out = Vec::new();
            put_varint(&mut out, v);
            assert_eq!(varint(&out), Some((v, out.len())));
            assert_eq!(varint(&out[..out.len() - 1]), None);
        }
    }

    #[test]
    fn a_request_encodes_and_its_fields_decode_back() {
        let fields = vec![
            (b":method".to_vec(), b"POST".to_vec()),
            (b":scheme".to_vec(), b"https".to_vec()),
            (b":authority".to_vec(), b"localhost:8443".to_vec()),
            (b":path".to_vec(), b"/p?q=1".to_vec()),
            (b"x-long".to_vec(), vec![b'a'; 300]),
        ];
        let bytes = encode_request(&fields, Some(b"hello")).unwrap();
        let mut r = Reader::request();
        let mut block = Vec::new();
        let mut body = Vec::new();
        r.feed(&bytes, &mut |p| match p {
            Part::Headers(b) => block = b.to_vec(),
            Part::Data(d) => body.extend_from_slice(d),
            Part::GoAway(_) => panic!(),
        })
        .unwrap();
        assert_eq!(decode(&block).unwrap(), fields);
        assert_eq!(body, b"hello");
        assert_eq!(r.end(), Ok(()));
    }

    #[test]
    fn frames_are_read_from_any_split() {
        let mut input = Vec::new();
        let block = encode_request(&[(b":status".to_vec(), b"200".to_vec())], None).unwrap();
        input.extend_from_slice(&block);
        // A reserved (grease) frame type, skipped: 0x21 + 0x1f * 3, two bytes of payload.
        put_varint(&mut input, 0x21 + 0x1f * 3);
        put_varint(&mut input, 2);
        input.extend_from_slice(b"zz");
        put_varint(&mut input, DATA);
        put_varint(&mut input, 300);
        input.extend_from_slice(&[7; 300]);
        for step in [1, 2, 3, 7, 64, 1000] {
            let seen = parts(&mut Reader::request(), &input, step).unwrap();
            let data: usize =
                seen.iter().filter_map(|s| s.strip_prefix('D')).map(|n| n.parse::<usize>().unwrap()).sum();
            assert_eq!(seen[0], format!("H{}", block.len() - 2), "step {step}");
            assert_eq!(data, 300, "step {step}");
        }
    }

    #[test]
    fn statuses_read_fast_or_decoded() {
        for (code, line) in [(200u16, 0xd9u8), (404, 0xdb), (304, 0xda)] {
            assert_eq!(status(&[0, 0, line]), Ok(code));
        }
        for code in ["200", "204", "418", "500", "599"] {
            let bytes = encode_request(&[(b":status".to_vec(), code.as_bytes().to_vec())], None).unwrap();
            let mut block = Vec::new();
            Reader::request()
                .feed(&bytes, &mut |p| {
                    if let Part::Headers(b) = p {
                        block = b.to_vec()
                    }
                })
                .unwrap();
            assert_eq!(status(&block), Ok(code.parse().unwrap()));
        }
        assert!(status(&[0, 0]).is_err());
        assert!(status(&[0xff, 0xff, 0xff]).is_err());
    }

    #[test]
    fn the_control_stream_gives_goaway_and_refuses_requests_frames() {
        let mut input = vec![0x4, 0x2, 0x1, 0x0]; // SETTINGS with one setting
        input.extend_from_slice(&[0x7, 0x2, 0x40, 0x64]); // GOAWAY id 100 as a 2-byte varint
        assert_eq!(parts(&mut Reader::control(), &input, 1).unwrap(), vec!["G100"]);
        assert!(parts(&mut Reader::control(), &[0x1, 0x0], 1).is_err());
    }

    #[test]
    fn bad_frames_on_a_request_stream_are_errors() {
        assert!(parts(&mut Reader::request(), &[0x4, 0x0], 1).is_err());
        assert!(parts(&mut Reader::request(), &[0x1, 0x80, 0x02, 0x00, 0x00], 1).is_err());
        let mut r = Reader::request();
        parts(&mut r, &[0x0, 0x5, 1, 2], 1).unwrap();
        assert!(r.end().is_err());
    }
}
