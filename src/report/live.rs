//! The progress line printed on stderr once per interval while a test runs.

use super::units::time_us;
use crate::stats::interval::IntervalRow;

/// One readable line: elapsed time, target and achieved rate, latency, errors, connections,
/// late sends.
pub fn line(r: &IntervalRow) -> String {
    let target = r.target_per_s.map_or(String::new(), |t| format!("target {t:>8.0}/s  "));
    format!(
        "[{:>6.1}s] {target}done {:>8.0}/s  p50 {:>8}  p90 {:>8}  p99 {:>8}  max {:>8}  errors {}  conns {}  late {}",
        r.start_s + r.length_s,
        r.achieved_per_s,
        time_us(r.p50_us as f64),
        time_us(r.p90_us as f64),
        time_us(r.p99_us as f64),
        time_us(r.max_us as f64),
        r.errors,
        r.open_connections,
        r.late
    )
}
