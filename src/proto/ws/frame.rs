//! WebSocket frames (RFC 6455 section 5), written and read in place.
//!
//! Framing is by hand rather than through tungstenite: tungstenite owns the socket and makes a
//! `Message` (an allocation) per frame, while a load generator's hot path writes a frame into a
//! connection's buffer and reads frames out of the thread's one read buffer without copying
//! payloads it only counts. The format is small and fully specified; [`Parser`] is fuzzed by the
//! unit tests with arbitrary input and never panics.

/// Continuation of a fragmented message.
pub const CONTINUATION: u8 = 0x0;
/// A text message.
pub const TEXT: u8 = 0x1;
/// A binary message.
pub const BINARY: u8 = 0x2;
/// Close.
pub const CLOSE: u8 = 0x8;
/// Ping.
pub const PING: u8 = 0x9;
/// Pong.
pub const PONG: u8 = 0xA;

/// Largest control-frame payload (section 5.5).
pub const MAX_CONTROL: usize = 125;

/// Why a peer's bytes are not WebSocket frames.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum FrameError {
    /// An opcode the protocol does not define.
    #[error("unknown WebSocket opcode {0:#x}")]
    Opcode(u8),
    /// Reserved bits set without an extension that defines them.
    #[error("reserved bits set in a WebSocket frame")]
    Reserved,
    /// A control frame that is fragmented or longer than 125 bytes.
    #[error("malformed WebSocket control frame")]
    Control,
    /// A frame masked the wrong way for its direction (servers never mask, clients always do).
    #[error("WebSocket frame masked the wrong way")]
    Mask,
    /// A frame longer than the reader accepts.
    #[error("WebSocket frame of {0} bytes is over the limit")]
    TooLong(u64),
    /// A continuation with no message begun, or a new message inside a fragmented one.
    #[error("WebSocket fragments out of order")]
    Fragments,
}

/// A frame header, parsed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    /// The last frame of its message.
    pub fin: bool,
    /// RSV1: the message is compressed (permessage-deflate).
    pub rsv1: bool,
    /// The opcode.
    pub opcode: u8,
    /// The masking key, when masked.
    pub mask: Option<[u8; 4]>,
    /// Payload length.
    pub len: u64,
    /// Header length in bytes.
    pub header_len: usize,
}

impl Header {
    /// A control frame (close, ping, pong).
    pub fn is_control(&self) -> bool {
        self.opcode & 0x8 != 0
    }
}

/// Parses a frame header at the start of `data`: `Ok(None)` until it is all there. `masked`
/// is what the direction requires; `rsv1` whether an extension defines RSV1; `max` the
/// largest payload accepted.
pub fn parse_header(data: &[u8], masked: bool, rsv1: bool, max: u64) -> Result<Option<Header>, FrameError> {
    let [b0, b1, ..] = *data else { return Ok(None) };
    let fin = b0 & 0x80 != 0;
    let opcode = b0 & 0x0F;
    if !matches!(opcode, CONTINUATION | TEXT | BINARY | CLOSE | PING | PONG) {
        return Err(FrameError::Opcode(opcode));
    }
    let has_rsv1 = b0 & 0x40 != 0;
    if b0 & 0x30 != 0 || (has_rsv1 && !rsv1) {
        return Err(FrameError::Reserved);
    }
    if (b1 & 0x80 != 0) != masked {
        return Err(FrameError::Mask);
    }
    let (len, mut at) = match b1 & 0x7F {
        126 => match data.get(2..4) {
            Some(b) => (u64::from(u16::from_be_bytes([b[0], b[1]])), 4),
            None => return Ok(None),
        },
        127 => match data.get(2..10) {
            Some(b) => (u64::from_be_bytes(b.try_into().unwrap_or([0xFF; 8])), 10),
            None => return Ok(None),
        },
        n => (u64::from(n), 2),
    };
    let control = opcode & 0x8 != 0;
    if control && (!fin || len > MAX_CONTROL as u64) {
        return Err(FrameError::Control);
    }
    if len > max {
        return Err(FrameError::TooLong(len));
    }
    let mask = if masked {
        let Some(m) = data.get(at..at + 4) else { return Ok(None) };
        at += 4;
        Some([m[0], m[1], m[2], m[3]])
    } else {
        None
    };
    Ok(Some(Header { fin, rsv1: has_rsv1, opcode, mask, len, header_len: at }))
}

/// Appends a frame's header to `out`.
pub fn write_header(out: &mut Vec<u8>, fin: bool, rsv1: bool, opcode: u8, len: usize, mask: Option<[u8; 4]>) {
    out.push(u8::from(fin) << 7 | u8::from(rsv1) << 6 | opcode);
    let m = if mask.is_some() { 0x80 } else { 0 };
    if len < 126 {
        out.push(m | len as u8);
    } else if len <= usize::from(u16::MAX) {
        out.push(m | 126);
        out.extend_from_slice(&(len as u16).to_be_bytes());
    } else {
        out.push(m | 127);
        out.extend_from_slice(&(len as u64).to_be_bytes());
    }
    if let Some(k) = mask {
        out.extend_from_slice(&k);
    }
}

/// Appends a whole frame: header and payload, masked with `mask` when given (a client's).
pub fn write_frame(out: &mut Vec<u8>, opcode: u8, rsv1: bool, payload: &[u8], mask: Option<[u8; 4]>) {
    write_header(out, true, rsv1, opcode, payload.len(), mask);
    let start = out.len();
    out.extend_from_slice(payload);
    if let Some(k) = mask {
        apply_mask(&mut out[start..], k, 0);
    }
}

/// XORs `data` with the masking key, `offset` bytes into the payload (a payload read in
/// pieces). Eight bytes at a time: masking is per byte of every message a client sends.
pub fn apply_mask(data: &mut [u8], key: [u8; 4], offset: usize) {
    let mut k = [0u8; 8];
    for (j, b) in k.iter_mut().enumerate() {
        *b = key[(offset + j) % 4];
    }
    let wide = u64::from_ne_bytes(k);
    let mut chunks = data.chunks_exact_mut(8);
    for c in &mut chunks {
        let v = u64::from_ne_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]) ^ wide;
        c.copy_from_slice(&v.to_ne_bytes());
    }
    let rest = chunks.into_remainder();
    for (j, b) in rest.iter_mut().enumerate() {
        *b ^= k[j % 8];
    }
}

/// The payload of a close frame: the code (absent: 1005, "no status received") and the reason.
pub fn close_code(payload: &[u8]) -> u16 {
    match payload {
        [a, b, ..] => u16::from_be_bytes([*a, *b]),
        _ => 1005,
    }
}

/// What [`Parser::next`] found in the bytes it was given.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Item {
    /// More bytes are needed.
    Need,
    /// `n` payload bytes of the current data message (already unmasked in place when masked),
    /// at `at` in the input.
    Data {
        /// Where they are in the input.
        at: usize,
        /// How many.
        n: usize,
    },
    /// A data message ended: its opcode (text or binary), whether compressed, its length.
    End {
        /// TEXT or BINARY.
        opcode: u8,
        /// Compressed (RSV1 on its first frame).
        compressed: bool,
        /// Payload bytes in all its frames.
        len: u64,
    },
    /// A whole control frame; its payload is [`Parser::control_payload`].
    Control {
        /// CLOSE, PING or PONG.
        opcode: u8,
    },
}

/// Reads frames as they arrive in any pieces. Data payloads are handed out as they come (a
/// counter of bytes need not wait for a message's end); control frames, at most 125 bytes, are
/// gathered whole.
#[derive(Debug, Default)]
pub struct Parser {
    /// The frame being read: its header, and payload bytes still to come.
    frame: Option<(Header, u64)>,
    /// The data message being read (opcode, compressed, bytes so far), across fragments.
    message: Option<(u8, bool, u64)>,
    /// A partial header or control frame carried over between inputs.
    carry: Vec<u8>,
    /// Payload bytes of the current frame already unmasked (the mask's phase).
    offset: usize,
}

/// Frames are read from a server (`masked` false) or from a client (true).
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Frames must be masked (a server reading a client).
    pub masked: bool,
    /// RSV1 is allowed (permessage-deflate was agreed).
    pub rsv1: bool,
    /// Largest frame payload accepted.
    pub max_frame: u64,
}

impl Parser {
    /// Whether the data message being read is compressed (RSV1 on its first frame).
    pub fn compressed_message(&self) -> bool {
        self.message.is_some_and(|m| m.1)
    }

    /// The next item from `input[*pos..]`, advancing `*pos` past what it used. Data payloads
    /// are unmasked in place.
    pub fn next(&mut self, input: &mut [u8], pos: &mut usize, limits: Limits) -> Result<Item, FrameError> {
        loop {
            if let Some((h, left)) = self.frame {
                if h.is_control() {
                    // Gather the whole control frame in `carry` (at most 125 bytes).
                    let take = (left as usize).min(input.len() - *pos);
                    self.carry.extend_from_slice(&input[*pos..*pos + take]);
                    *pos += take;
                    if take < left as usize {
                        self.frame = Some((h, left - take as u64));
                        return Ok(Item::Need);
                    }
                    self.frame = None;
                    if let Some(k) = h.mask {
                        apply_mask(&mut self.carry, k, 0);
                    }
                    return Ok(Item::Control { opcode: h.opcode });
                }
                if left == 0 {
                    self.frame = None;
                    if h.fin {
                        let (opcode, compressed, len) = self.message.take().unwrap_or((h.opcode, h.rsv1, 0));
                        return Ok(Item::End { opcode, compressed, len });
                    }
                    continue;
                }
                let avail = input.len() - *pos;
                if avail == 0 {
                    return Ok(Item::Need);
                }
                let n = (left as usize).min(avail);
                let at = *pos;
                if let Some(k) = h.mask {
                    apply_mask(&mut input[at..at + n], k, self.offset);
                }
                self.offset += n;
                *pos += n;
                self.frame = Some((h, left - n as u64));
                if let Some(m) = &mut self.message {
                    m.2 += n as u64;
                }
                return Ok(Item::Data { at, n });
            }
            // A header: from the carry if one is partly read, else straight from the input.
            let header = if self.carry.is_empty() {
                let Some(h) = parse_header(&input[*pos..], limits.masked, limits.rsv1, limits.max_frame)? else {
                    let rest = &input[*pos..];
                    self.carry.extend_from_slice(rest);
                    *pos = input.len();
                    return Ok(Item::Need);
                };
                *pos += h.header_len;
                h
            } else {
                let had = self.carry.len();
                let want = (14 - had).min(input.len() - *pos);
                self.carry.extend_from_slice(&input[*pos..*pos + want]);
                match parse_header(&self.carry, limits.masked, limits.rsv1, limits.max_frame)? {
                    None => {
                        *pos += want;
                        return Ok(Item::Need);
                    }
                    Some(h) => {
                        *pos += h.header_len - had;
                        self.carry.clear();
                        h
                    }
                }
            };
            self.offset = 0;
            match header.opcode {
                _ if header.is_control() => {}
                CONTINUATION if self.message.is_none() => return Err(FrameError::Fragments),
                CONTINUATION => {}
                _ if self.message.is_some() => return Err(FrameError::Fragments),
                op => self.message = Some((op, header.rsv1, 0)),
            }
            self.frame = Some((header, header.len));
        }
    }

    /// The payload of the control frame [`Parser::next`] just returned.
    pub fn control_payload(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.carry)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SERVER: Limits = Limits { masked: false, rsv1: false, max_frame: 1 << 20 };
    const CLIENT: Limits = Limits { masked: true, rsv1: false, max_frame: 1 << 20 };

    /// Every item of `input` fed in pieces of `step` bytes: data bytes joined.
    fn read_all(input: &[u8], step: usize, limits: Limits) -> Result<Vec<(u8, Vec<u8>)>, FrameError> {
        let mut p = Parser::default();
        let mut out = Vec::new();
        let mut data = Vec::new();
        for piece in input.chunks(step) {
            let mut buf = piece.to_vec();
            let mut pos = 0;
            loop {
                match p.next(&mut buf, &mut pos, limits)? {
                    Item::Need => break,
                    Item::Data { at, n } => data.extend_from_slice(&buf[at..at + n]),
                    Item::End { opcode, .. } => out.push((opcode, std::mem::take(&mut data))),
                    Item::Control { opcode } => out.push((opcode, p.control_payload())),
                }
            }
        }
        Ok(out)
    }

    #[test]
    fn the_rfc_examples_read() {
        // RFC 6455 5.7: unmasked "Hello", masked "Hello", fragmented "Hel" "lo", ping "Hello".
        assert_eq!(
            read_all(&[0x81, 0x05, 0x48, 0x65, 0x6c, 0x6c, 0x6f], 100, SERVER).unwrap(),
            vec![(TEXT, b"Hello".to_vec())]
        );
        let masked = [0x81, 0x85, 0x37, 0xfa, 0x21, 0x3d, 0x7f, 0x9f, 0x4d, 0x51, 0x58];
        for step in 1..=masked.len() {
            assert_eq!(read_all(&masked, step, CLIENT).unwrap(), vec![(TEXT, b"Hello".to_vec())], "step {step}");
        }
        let frag = [0x01, 0x03, 0x48, 0x65, 0x6c, 0x80, 0x02, 0x6c, 0x6f];
        assert_eq!(read_all(&frag, 2, SERVER).unwrap(), vec![(TEXT, b"Hello".to_vec())]);
        let ping = [0x89, 0x05, 0x48, 0x65, 0x6c, 0x6c, 0x6f];
        assert_eq!(read_all(&ping, 3, SERVER).unwrap(), vec![(PING, b"Hello".to_vec())]);
    }

    #[test]
    fn written_frames_read_back_at_every_length_class() {
        for len in [0usize, 1, 125, 126, 65535, 65536, 70000] {
            let payload: Vec<u8> = (0..len).map(|i| (i * 7) as u8).collect();
            let mut out = Vec::new();
            write_frame(&mut out, BINARY, false, &payload, Some([1, 2, 3, 4]));
            assert_eq!(read_all(&out, 1000, CLIENT).unwrap(), vec![(BINARY, payload.clone())], "len {len}");
            let mut out = Vec::new();
            write_frame(&mut out, BINARY, false, &payload, None);
            assert_eq!(read_all(&out, 4096, SERVER).unwrap(), vec![(BINARY, payload)], "len {len}");
        }
    }

    #[test]
    fn a_control_frame_between_fragments_is_allowed() {
        let mut out = Vec::new();
        write_header(&mut out, false, false, TEXT, 2, None);
        out.extend_from_slice(b"ab");
        write_frame(&mut out, PING, false, b"p", None);
        write_header(&mut out, true, false, CONTINUATION, 1, None);
        out.push(b'c');
        assert_eq!(read_all(&out, 1, SERVER).unwrap(), vec![(PING, b"p".to_vec()), (TEXT, b"abc".to_vec())]);
    }

    #[test]
    fn bad_frames_are_refused() {
        assert_eq!(read_all(&[0x83, 0x00], 10, SERVER), Err(FrameError::Opcode(3)));
        assert_eq!(read_all(&[0xC1, 0x00], 10, SERVER), Err(FrameError::Reserved));
        assert_eq!(read_all(&[0x81, 0x80, 0, 0, 0, 0], 10, SERVER), Err(FrameError::Mask));
        assert_eq!(read_all(&[0x81, 0x00], 10, CLIENT), Err(FrameError::Mask));
        assert_eq!(read_all(&[0x09, 0x00], 10, SERVER), Err(FrameError::Control));
        assert_eq!(read_all(&[0x89, 0x7E, 0x00, 0x80], 10, SERVER), Err(FrameError::Control));
        assert_eq!(read_all(&[0x80, 0x00], 10, SERVER), Err(FrameError::Fragments));
        assert_eq!(read_all(&[0x01, 0x00, 0x81, 0x00], 10, SERVER), Err(FrameError::Fragments));
        let long = [0x82, 0x7F, 0x7F, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF];
        assert!(matches!(read_all(&long, 3, SERVER), Err(FrameError::TooLong(_))));
    }

    #[test]
    fn arbitrary_input_never_panics() {
        let mut rng = crate::rng::Rng::new(7);
        for _ in 0..20_000 {
            let len = (rng.next_u64() % 40) as usize;
            let input: Vec<u8> = (0..len).map(|_| rng.next_u64() as u8).collect();
            let step = 1 + (rng.next_u64() % 8) as usize;
            let _ = read_all(&input, step, SERVER);
            let _ = read_all(&input, step, CLIENT);
        }
    }

    #[test]
    fn masking_matches_byte_by_byte_at_any_offset() {
        let key = [0x37, 0xfa, 0x21, 0x3d];
        for offset in 0..4 {
            for len in 0..20 {
                let mut a: Vec<u8> = (0..len as u8).collect();
                let b: Vec<u8> = a.iter().enumerate().map(|(i, x)| x ^ key[(i + offset) % 4]).collect();
                apply_mask(&mut a, key, offset);
                assert_eq!(a, b);
            }
        }
        assert_eq!(close_code(&[0x03, 0xE8, b'x']), 1000);
        assert_eq!(close_code(&[]), 1005);
    }
}
