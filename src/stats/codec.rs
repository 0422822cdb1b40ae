//! Histograms as text: HdrHistogram's V2 deflate encoding in base64, the form interval logs,
//! result JSON and `strain merge` carry them in.
//!
//! The encoding is done in two steps, [`v2`] then [`deflate_v2`], so that a run can take the
//! first (cheap, small) as each interval ends and the second once its load is over: a deflate
//! compressor's state is a few hundred KiB, which would otherwise add to the run's peak memory
//! while its connections are open.

use hdrhistogram::serialization::{Serializer, V2Serializer};
use hdrhistogram::Histogram;

/// The cookie of HdrHistogram's compressed V2 encoding (V2 base cookie with the word size
/// bits), which precedes the length of the zlib stream.
const V2_COMPRESSED_COOKIE: u32 = 0x1c84_9304 | 0x10;

/// A histogram as HdrHistogram's V2 deflate encoding in base64 (what interval logs carry).
pub fn encode_histogram(h: &Histogram<u64>) -> String {
    deflate_v2(&v2(h, &mut V2Serializer::new()))
}

/// A histogram in HdrHistogram's plain V2 encoding (zero runs collapsed, no compression), with
/// `serializer` (whose buffer is reused from one call to the next).
pub fn v2(h: &Histogram<u64>, serializer: &mut V2Serializer) -> Vec<u8> {
    let mut bytes = Vec::new();
    // Serializing into memory only fails for histograms too large to encode, which ours are not.
    let _ = serializer.serialize(h, &mut bytes);
    bytes
}

/// [`encode_histogram`] of the histogram whose plain V2 encoding is `v2`: the compressed cookie,
/// the zlib stream's length, the stream (as HdrHistogram's V2 deflate serializer writes them).
pub fn deflate_v2(v2: &[u8]) -> String {
    Deflater::new().deflate_v2(v2)
}

/// A zlib compressor kept for many histograms: its few hundred KiB of state are made once, not
/// per histogram (a long run's series would otherwise churn the allocator every interval).
#[derive(Debug)]
pub struct Deflater {
    /// The compressor, reset for each histogram.
    z: flate2::Compress,
    /// The zlib stream, reused.
    out: Vec<u8>,
}

impl Default for Deflater {
    fn default() -> Self {
        Self::new()
    }
}

impl Deflater {
    /// A compressor at zlib's default level.
    pub fn new() -> Deflater {
        Deflater { z: flate2::Compress::new(flate2::Compression::default(), true), out: Vec::new() }
    }

    /// [`deflate_v2`] with this compressor.
    pub fn deflate_v2(&mut self, v2: &[u8]) -> String {
        self.z.reset();
        self.out.clear();
        self.out.reserve(v2.len() / 2 + 64);
        loop {
            let read = usize::try_from(self.z.total_in()).unwrap_or(usize::MAX).min(v2.len());
            match self.z.compress_vec(&v2[read..], &mut self.out, flate2::FlushCompress::Finish) {
                Ok(flate2::Status::StreamEnd) | Err(_) => break,
                // Out of room: the stream goes on into more.
                Ok(_) => self.out.reserve(self.out.len().max(256)),
            }
        }
        let mut bytes = Vec::with_capacity(self.out.len() + 8);
        bytes.extend_from_slice(&V2_COMPRESSED_COOKIE.to_be_bytes());
        bytes.extend_from_slice(&u32::try_from(self.out.len()).unwrap_or(u32::MAX).to_be_bytes());
        bytes.extend_from_slice(&self.out);
        crate::b64::encode(&bytes)
    }
}

/// Reads back what [`encode_histogram`] wrote.
pub fn decode_histogram(text: &str) -> Option<Histogram<u64>> {
    let bytes = crate::b64::decode(text)?;
    hdrhistogram::serialization::Deserializer::new().deserialize(&mut bytes.as_slice()).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_steps_write_what_hdrhistograms_deflate_serializer_writes() {
        let mut h = crate::stats::latency_histogram();
        for v in [1, 2, 3, 150, 150, 9_000, 1_500_000, 3_600_000_000] {
            h.record(v).unwrap();
        }
        let mut theirs = Vec::new();
        hdrhistogram::serialization::V2DeflateSerializer::new().serialize(&h, &mut theirs).unwrap();
        assert_eq!(encode_histogram(&h), crate::b64::encode(&theirs));
        let back = decode_histogram(&encode_histogram(&h)).unwrap();
        assert_eq!(back, h);
        // An empty one too.
        let empty = crate::stats::latency_histogram();
        assert_eq!(decode_histogram(&encode_histogram(&empty)).unwrap().len(), 0);
    }

    #[test]
    fn a_kept_compressor_writes_what_a_fresh_one_writes_histogram_after_histogram() {
        let mut z = Deflater::new();
        let mut serializer = V2Serializer::new();
        for n in [1u64, 5_000, 0, 77] {
            let mut h = crate::stats::latency_histogram();
            for v in 0..n {
                h.record(100 + v * 37).unwrap();
            }
            let plain = v2(&h, &mut serializer);
            assert_eq!(z.deflate_v2(&plain), deflate_v2(&plain), "{n} values");
            assert_eq!(decode_histogram(&z.deflate_v2(&plain)).unwrap(), h);
        }
    }
}
