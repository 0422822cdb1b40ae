//! Standard base64 (RFC 4648, with padding), for histograms carried in JSON: the hdrhistogram
//! crate encodes its interval logs with it but exports no decoder, and `strain report` must read
//! what `--json` wrote.

const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
/// The URL- and filename-safe alphabet (RFC 4648, section 5).
const URL_ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/// Encodes `data`.
pub fn encode(data: &[u8]) -> String {
    let mut out = String::with_capacity(data.len().div_ceil(3) * 4);
    for chunk in data.chunks(3) {
        let n = chunk.iter().enumerate().fold(0u32, |acc, (i, &b)| acc | u32::from(b) << (16 - 8 * i));
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ALPHABET[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// Decodes `text`; `None` if it is not base64.
pub fn decode(text: &str) -> Option<Vec<u8>> {
    decode_with(text, ALPHABET)
}

/// Decodes base64url, padded or not (HTTP/2's `HTTP2-Settings`); `None` if it is not that.
pub fn decode_url(text: &str) -> Option<Vec<u8>> {
    decode_with(text, URL_ALPHABET)
}

fn decode_with(text: &str, alphabet: &[u8; 64]) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(text.len() / 4 * 3);
    let (mut acc, mut bits) = (0u32, 0);
    for c in text.trim_end_matches('=').bytes() {
        let v = alphabet.iter().position(|&a| a == c)? as u32;
        acc = (acc << 6) | v;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_rfc_4648_vectors() {
        let rows: &[(&[u8], &str)] = &[
            (b"", ""),
            (b"f", "Zg=="),
            (b"fo", "Zm8="),
            (b"foo", "Zm9v"),
            (b"foob", "Zm9vYg=="),
            (b"fooba", "Zm9vYmE="),
            (b"foobar", "Zm9vYmFy"),
        ];
        for (data, text) in rows {
            assert_eq!(encode(data), *text);
            assert_eq!(decode(text).as_deref(), Some(*data));
        }
        assert_eq!(decode("Zm9v!"), None);
        // SETTINGS_MAX_CONCURRENT_STREAMS = 100, SETTINGS_INITIAL_WINDOW_SIZE = 65535.
        assert_eq!(decode_url("AAMAAABkAAQAAP__").as_deref(), Some(&[0, 3, 0, 0, 0, 100, 0, 4, 0, 0, 255, 255][..]));
        assert_eq!(decode_url("AP+/"), None, "not the URL alphabet");
    }
}
