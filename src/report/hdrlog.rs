//! HdrHistogram interval logs: one compressed latency histogram per interval, in the text
//! format of HdrHistogram's `HistogramLogWriter`, so that its own tools (`HistogramLogProcessor`,
//! the plotters, the `hdrhistogram` crate's `IntervalLogIterator`) read what strain writes.
//!
//! Whoever runs the load writes the header once ([`HdrLog::new`]) and then one line per
//! interval ([`HdrLog::interval`]). Histogram values are microseconds, strain's latency unit;
//! HdrHistogram's tools assume nanoseconds by default, so pass `-outputValueUnitRatio 1000`
//! to `HistogramLogProcessor` to read milliseconds. The `Interval_Max` column, which is for
//! people only, is already in milliseconds (the maximum divided by [`MAX_VALUE_DIVISOR`]).
//!
//! The header is written here because the crate's `IntervalLogWriterBuilder` writes neither the
//! format version nor the column legend that Java's writer writes. The interval lines go
//! through the crate's writer (V2 deflate encoding, base64, the `Tag=` prefix), but into a
//! scratch buffer: that writer borrows its output for its whole life, so it cannot live in a
//! struct that owns the output, and making a new one per interval repeats its own header
//! lines, which are dropped.

use std::io::{self, Write};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use hdrhistogram::serialization::interval_log::{IntervalLogWriterBuilder, IntervalLogWriterError, Tag};
use hdrhistogram::serialization::V2DeflateSerializer;
use hdrhistogram::Histogram;

/// `Interval_Max` is the interval's maximum divided by this: microseconds shown as milliseconds.
pub const MAX_VALUE_DIVISOR: f64 = 1000.0;
/// The log format version Java's writer declares for this layout.
const FORMAT_VERSION: &str = "1.3";
/// The first second of the year 10000, which RFC 3339 cannot write.
const YEAR_10000: u64 = 253_402_300_800;

/// Writes an HdrHistogram interval log (the format HdrHistogram's own tools read: HistogramLogProcessor etc.).
pub struct HdrLog<W: Write> {
    out: W,
    serializer: V2DeflateSerializer,
    /// Reused for each interval line; see the module note.
    scratch: Vec<u8>,
}

impl<W: Write> HdrLog<W> {
    /// Writes the header: version, `StartTime` and `BaseTime` (both `start`), the column legend.
    pub fn new(mut out: W, start: SystemTime) -> io::Result<Self> {
        let secs = seconds_since_epoch(start);
        writeln!(out, "#[Logged with strain {}]", env!("CARGO_PKG_VERSION"))?;
        writeln!(out, "#[Histogram log format version {FORMAT_VERSION}]")?;
        // Java writes a local date after the comma; readers skip it, so a UTC one is as good.
        match rfc3339(start) {
            Some(date) => writeln!(out, "#[StartTime: {secs:.3} (seconds since epoch), {date}]")?,
            None => writeln!(out, "#[StartTime: {secs:.3} (seconds since epoch)]")?,
        }
        // Interval timestamps are offsets from the start; saying so spares readers the guess
        // Java's reader makes when only a StartTime is given.
        writeln!(out, "#[BaseTime: {secs:.3} (seconds since epoch)]")?;
        writeln!(out, "#[MaxValueDivisor: {MAX_VALUE_DIVISOR:.3}]")?;
        writeln!(out, "\"StartTimestamp\",\"Interval_Length\",\"Interval_Max\",\"Interval_Compressed_Histogram\"")?;
        Ok(HdrLog { out, serializer: V2DeflateSerializer::new(), scratch: Vec::new() })
    }

    /// Appends one interval: start offset and length in seconds, its histogram (values in microseconds), an optional tag.
    ///
    /// A negative or non-finite time, or a tag with a comma, space or line break, is refused
    /// with `InvalidInput` before anything is written; an empty tag is the same as none.
    pub fn interval(
        &mut self,
        start_offset_s: f64,
        length_s: f64,
        h: &Histogram<u64>,
        tag: Option<&str>,
    ) -> io::Result<()> {
        let start = seconds(start_offset_s, "interval start")?;
        let length = seconds(length_s, "interval length")?;
        let tag = match tag.filter(|t| !t.is_empty()) {
            None => None,
            Some(t) => Some(Tag::new(t).ok_or_else(|| invalid(format!("bad tag {t:?}: no ',', ' ' or line breaks")))?),
        };
        self.scratch.clear();
        {
            let mut builder = IntervalLogWriterBuilder::new();
            let mut writer = builder
                .with_max_value_divisor(MAX_VALUE_DIVISOR)
                .begin_log_with(&mut self.scratch, &mut self.serializer)?;
            writer.write_histogram(h, start, length, tag).map_err(|e| match e {
                IntervalLogWriterError::IoError(e) => e,
                IntervalLogWriterError::SerializeError(e) => io::Error::other(e),
            })?;
        }
        // The interval is the last line; whatever the builder wrote before it is a header.
        let body = self.scratch.strip_suffix(b"\n").unwrap_or(&self.scratch);
        let from = body.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
        self.out.write_all(&self.scratch[from..])
    }

    /// Flushes the underlying writer.
    pub fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }

    /// Gives back the underlying writer.
    pub fn into_inner(self) -> W {
        self.out
    }
}

fn seconds_since_epoch(t: SystemTime) -> f64 {
    match t.duration_since(UNIX_EPOCH) {
        Ok(d) => d.as_secs_f64(),
        Err(e) => -e.duration().as_secs_f64(),
    }
}

/// The UTC date of `t`, when RFC 3339 can write it (humantime panics otherwise).
fn rfc3339(t: SystemTime) -> Option<humantime::Rfc3339Timestamp> {
    let since = t.duration_since(UNIX_EPOCH).ok()?;
    (since.as_secs() < YEAR_10000).then(|| humantime::format_rfc3339_millis(t))
}

fn seconds(s: f64, what: &str) -> io::Result<Duration> {
    Duration::try_from_secs_f64(s).map_err(|_| invalid(format!("{what} must be a finite, non-negative time: {s}")))
}

fn invalid(msg: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, msg)
}

#[cfg(test)]
mod tests {
    use hdrhistogram::serialization::interval_log::{IntervalLogIterator, LogEntry};
    use hdrhistogram::serialization::Deserializer;

    use super::*;

    fn base64_decode(s: &str) -> Vec<u8> {
        crate::b64::decode(s).expect("base64")
    }

    fn histogram(values: &[(u64, u64)]) -> Histogram<u64> {
        let mut h = Histogram::new_with_bounds(1, 3_600_000_000, 3).unwrap();
        for &(v, n) in values {
            h.record_n(v, n).unwrap();
        }
        h
    }

    #[test]
    fn intervals_read_back_exactly() {
        let start = UNIX_EPOCH + Duration::from_millis(1_700_000_000_123);
        let intervals = [
            (0.0, 1.0, histogram(&[(120, 500), (850, 30), (2_500, 7), (1_500_000, 1)]), None),
            (1.0, 1.5, histogram(&[(90, 1), (52_736, 1_101_282)]), Some("uncorrected")),
            (2.5, 1.0, histogram(&[]), None),
        ];
        let mut log = HdrLog::new(Vec::new(), start).unwrap();
        for (from, length, h, tag) in &intervals {
            log.interval(*from, *length, h, *tag).unwrap();
        }
        let bytes = log.into_inner();
        let text = String::from_utf8(bytes.clone()).unwrap();
        assert!(text.starts_with("#[Logged with strain "), "{text}");
        assert!(text.contains("#[StartTime: 1700000000.123 (seconds since epoch), 2023-11-14T22:13:20.123Z]\n"));
        assert!(text.contains("#[BaseTime: 1700000000.123 (seconds since epoch)]\n"));
        // Interval lines, and nothing the crate's writer put before them.
        assert_eq!(text.matches("MaxValueDivisor").count(), 1, "{text}");
        assert!(text.contains("\n0.000,1.000,1500.159,"), "{text}");
        assert!(text.contains("\nTag=uncorrected,1.000,1.500,52.767,"), "{text}");

        let mut entries = IntervalLogIterator::new(&bytes);
        assert_eq!(entries.next(), Some(Ok(LogEntry::StartTime(Duration::from_millis(1_700_000_000_123)))));
        assert_eq!(entries.next(), Some(Ok(LogEntry::BaseTime(Duration::from_millis(1_700_000_000_123)))));
        let mut seen = 0;
        for (entry, (from, length, h, tag)) in entries.zip(&intervals) {
            let Ok(LogEntry::Interval(line)) = entry else { panic!("not an interval: {entry:?}") };
            assert_eq!(line.start_timestamp(), Duration::from_secs_f64(*from));
            assert_eq!(line.duration(), Duration::from_secs_f64(*length));
            assert_eq!(line.tag().map(|t| t.as_str()), *tag);
            assert_eq!(line.max(), h.max() as f64 / MAX_VALUE_DIVISOR);
            let raw = base64_decode(line.encoded_histogram());
            let back: Histogram<u64> = Deserializer::new().deserialize(&mut raw.as_slice()).unwrap();
            assert_eq!(back.len(), h.len());
            assert_eq!(back.max(), h.max());
            let counts = |h: &Histogram<u64>| -> Vec<(u64, u64)> {
                h.iter_recorded().map(|v| (v.value_iterated_to(), v.count_at_value())).collect()
            };
            assert_eq!(counts(&back), counts(h));
            seen += 1;
        }
        assert_eq!(seen, intervals.len());
    }

    #[test]
    fn bad_input_is_refused_without_writing() {
        let h = histogram(&[(100, 1)]);
        let rows: &[(f64, f64, Option<&str>)] = &[
            (-1.0, 1.0, None),
            (0.0, f64::NAN, None),
            (f64::INFINITY, 1.0, None),
            (0.0, 1.0, Some("two words")),
            (0.0, 1.0, Some("a,b")),
            (0.0, 1.0, Some("line\nbreak")),
        ];
        for &(from, length, tag) in rows {
            let mut log = HdrLog::new(Vec::new(), UNIX_EPOCH).unwrap();
            let before = log.out.len();
            let err = log.interval(from, length, &h, tag).unwrap_err();
            assert_eq!(err.kind(), io::ErrorKind::InvalidInput, "{from} {length} {tag:?}");
            assert_eq!(log.out.len(), before);
        }
        // An empty tag is no tag.
        let mut log = HdrLog::new(Vec::new(), UNIX_EPOCH).unwrap();
        log.interval(0.0, 1.0, &h, Some("")).unwrap();
        assert!(!String::from_utf8(log.into_inner()).unwrap().contains("Tag="));
    }

    #[test]
    fn start_times_outside_rfc3339_still_write_a_header() {
        let rows: &[(SystemTime, &str)] = &[
            (UNIX_EPOCH, "#[StartTime: 0.000 (seconds since epoch), 1970-01-01T00:00:00.000Z]"),
            (UNIX_EPOCH - Duration::from_millis(1_500), "#[StartTime: -1.500 (seconds since epoch)]"),
            (UNIX_EPOCH + Duration::from_secs(YEAR_10000), "#[StartTime: 253402300800.000 (seconds since epoch)]"),
        ];
        for (start, want) in rows {
            let text = String::from_utf8(HdrLog::new(Vec::new(), *start).unwrap().into_inner()).unwrap();
            assert!(text.lines().any(|l| l == *want), "{text}");
        }
    }
}
