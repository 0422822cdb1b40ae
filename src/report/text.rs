//! wrk's text report, byte for byte where wrk is deterministic (people parse it).

use std::fmt::Write;

use super::units::{binary, metric, padded, time_s, time_us};
use crate::config::Config;
use crate::stats::{Distribution, ErrorKind, Summary};

/// Percentiles of wrk's `--latency` block.
const WRK_PERCENTILES: [f64; 4] = [50.0, 75.0, 90.0, 99.0];

/// The lines wrk prints before the load starts.
pub fn header(config: &Config) -> String {
    format!(
        "Running {} test @ {}\n  {} threads and {} connections\n",
        time_s(config.duration.as_secs_f64()),
        config.target.url,
        config.threads,
        config.connections
    )
}

/// The report wrk prints after the load ends.
pub fn body(summary: &Summary, config: &Config) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "  Thread Stats{:>6}{:>11}{:>8}{:>12}", "Avg", "Stdev", "Max", "+/- Stdev");
    stats_row(&mut out, "Latency", &summary.latency(), time_us);
    stats_row(&mut out, "Req/Sec", &summary.thread_rate(), metric);
    if config.latency {
        out.push_str("  Latency Distribution\n");
        for p in WRK_PERCENTILES {
            let v = summary.latency_percentile_us(p) as f64;
            let _ = writeln!(out, "{p:>7.0}%{}", padded(&time_us(v), 10));
        }
    }
    let t = &summary.total;
    let _ = writeln!(
        out,
        "  {} requests in {}, {}B read",
        t.requests,
        time_us(summary.elapsed.as_micros() as f64),
        binary(t.bytes as f64)
    );
    let connect = summary.errors(ErrorKind::Connect);
    // wrk counts an unparsable response as a read error.
    let read = summary.errors(ErrorKind::Read) + summary.errors(ErrorKind::Parse);
    let write = summary.errors(ErrorKind::Write);
    let timeout = summary.errors(ErrorKind::Timeout);
    if connect + read + write + timeout > 0 {
        let _ = writeln!(out, "  Socket errors: connect {connect}, read {read}, write {write}, timeout {timeout}");
    }
    let status = summary.status_errors();
    if status > 0 {
        let _ = writeln!(out, "  Non-2xx or 3xx responses: {status}");
    }
    let _ = writeln!(out, "Requests/sec: {:>9.2}", summary.requests_per_s());
    let _ = writeln!(out, "Transfer/sec: {:>10}B", binary(summary.bytes_per_s()));
    out
}

fn stats_row(out: &mut String, name: &str, d: &Distribution, fmt: fn(f64) -> String) {
    let _ = write!(out, "    {name:<10}");
    out.push_str(&padded(&fmt(d.mean), 8));
    out.push_str(&padded(&fmt(d.stdev), 10));
    out.push_str(&padded(&fmt(d.max as f64), 9));
    let _ = writeln!(out, "{:>8.2}%", d.within_stdev_pct);
}
