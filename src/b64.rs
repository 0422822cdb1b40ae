//! Base64 (RFC 4648) as strain reads and writes it, from the `base64` crate hdrhistogram
//! already builds: histograms and request bodies in JSON (standard alphabet), HTTP/2's
//! `HTTP2-Settings` header (URL alphabet). Decoding takes padding or none, as peers differ.

use base64::alphabet;
use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
use base64::Engine;

const LENIENT: GeneralPurposeConfig = GeneralPurposeConfig::new()
    .with_decode_padding_mode(DecodePaddingMode::Indifferent)
    .with_decode_allow_trailing_bits(true);
const STANDARD: GeneralPurpose = GeneralPurpose::new(&alphabet::STANDARD, LENIENT);
const URL: GeneralPurpose = GeneralPurpose::new(&alphabet::URL_SAFE, LENIENT);

/// Encodes `data` (standard alphabet, padded).
pub fn encode(data: &[u8]) -> String {
    STANDARD.encode(data)
}

/// Decodes `text`; `None` if it is not base64.
pub fn decode(text: &str) -> Option<Vec<u8>> {
    STANDARD.decode(text).ok()
}

/// Decodes base64url, padded or not; `None` if it is not that.
pub fn decode_url(text: &str) -> Option<Vec<u8>> {
    URL.decode(text).ok()
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
        assert_eq!(decode("Zg").as_deref(), Some(&b"f"[..]), "unpadded");
        // SETTINGS_MAX_CONCURRENT_STREAMS = 100, SETTINGS_INITIAL_WINDOW_SIZE = 65535.
        assert_eq!(decode_url("AAMAAABkAAQAAP__").as_deref(), Some(&[0, 3, 0, 0, 0, 100, 0, 4, 0, 0, 255, 255][..]));
        assert_eq!(decode_url("AP+/"), None, "not the URL alphabet");
    }
}
