//! Histograms as text: HdrHistogram's V2 deflate encoding in base64, the form interval logs,
//! result JSON and `strain merge` carry them in.

/// A histogram as HdrHistogram's V2 deflate encoding in base64 (what interval logs carry).
pub fn encode_histogram(h: &hdrhistogram::Histogram<u64>) -> String {
    use hdrhistogram::serialization::Serializer;
    let mut bytes = Vec::new();
    // Serializing into memory only fails for histograms too large to encode, which ours are not.
    let _ = hdrhistogram::serialization::V2DeflateSerializer::new().serialize(h, &mut bytes);
    crate::b64::encode(&bytes)
}

/// Reads back what [`encode_histogram`] wrote.
pub fn decode_histogram(text: &str) -> Option<hdrhistogram::Histogram<u64>> {
    let bytes = crate::b64::decode(text)?;
    hdrhistogram::serialization::Deserializer::new().deserialize(&mut bytes.as_slice()).ok()
}
