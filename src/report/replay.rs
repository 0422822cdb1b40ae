//! A replay's lines: the header that says what is replayed and at what pace, and the block
//! after wrk's report that compares the recording with the replay (span, mean rate, how far
//! behind schedule the sends fell, what was skipped and why).

use std::fmt::Write;

use super::units::{grouped, time_us};
use crate::replay::reader::Fed;
use crate::replay::ReplayNote;
use crate::stats::Summary;

/// Paths the text lists.
const TOP_PATHS_TEXT: usize = 10;

/// The header line of a replay (in place of wrk's `Running 10s test @ URL`).
pub fn header(note: &ReplayNote, url: &str, threads: usize, connections: usize) -> String {
    let files: Vec<String> = note.files.iter().map(|f| format!("{} ({})", f.path, f.format)).collect();
    let loops = match note.loops {
        Some(1) => String::new(),
        Some(n) => format!(", {n} times"),
        None => ", looping until stopped".into(),
    };
    format!(
        "Replaying {} @ {url}\n  {} requests over {} at {}x{loops}\n  {threads} threads and {connections} connections\n",
        files.join(", "),
        grouped(note.requests as f64, 0),
        time_us(note.span_us as f64),
        trim(note.speed),
    )
}

/// Every cause a pass skipped records for, with its count (causes with none left out), in the
/// order the report lists them.
pub fn skipped_by_cause(c: &crate::replay::reader::Counts) -> Vec<(u64, &'static str)> {
    [
        (c.no_request, "with no request (\"-\")"),
        (c.not_http, "not an HTTP request (scanners, TLS to a plain port, binary)"),
        (c.truncated, "cut off at the end of the file"),
        (c.unreadable, "entries that cannot be read"),
        (c.bad, "in no layout strain reads"),
        (c.skipped_method, "method not replayed (--methods)"),
        (c.skipped_body, "body not in the file (--synthetic-body)"),
        (c.outside, "outside --from/--to"),
    ]
    .into_iter()
    .filter(|(n, _)| *n > 0)
    .collect()
}

/// A speed as short as it is exact enough (`2`, `0.5`, `1.37`).
fn trim(x: f64) -> String {
    let s = format!("{x:.2}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// The block after wrk's report.
pub fn block(note: &ReplayNote, fed: &Fed, summary: &Summary) -> String {
    let mut out = String::new();
    let elapsed_us = summary.elapsed.as_micros() as f64;
    let sent = summary.total.pacing.sent;
    let replayed_rate = if elapsed_us > 0.0 { sent as f64 * 1e6 / elapsed_us } else { 0.0 };
    let _ = writeln!(out, "  Replay:");
    let _ = writeln!(
        out,
        "    recorded: {} requests over {}, {}/s mean",
        grouped(note.requests as f64, 0),
        time_us(note.span_us as f64),
        grouped(note.recorded_rate(), 1)
    );
    let _ = writeln!(
        out,
        "    replayed: {} sent over {}, {}/s mean (speed {})",
        grouped(sent as f64, 0),
        time_us(elapsed_us),
        grouped(replayed_rate, 1),
        trim(note.speed)
    );
    let lag = &summary.total.lag_us;
    if sent > 0 {
        let _ = writeln!(
            out,
            "    behind schedule: p50 {}, p99 {}, max {}",
            time_us(lag.value_at_quantile(0.5) as f64),
            time_us(lag.value_at_quantile(0.99) as f64),
            time_us(lag.max() as f64)
        );
    }
    let p = &summary.total.pacing;
    if p.unsent > 0 {
        let _ = writeln!(out, "    {} came due but were not sent before the stop", grouped(p.unsent as f64, 0));
    }
    let c = &fed.counts;
    let skipped = skipped_by_cause(c);
    if !skipped.is_empty() {
        let n: u64 = skipped.iter().map(|(n, _)| n).sum();
        let causes: Vec<String> = skipped.iter().map(|(n, why)| format!("{} {why}", grouped(*n as f64, 0))).collect();
        let _ = writeln!(
            out,
            "    skipped: {} of {} records read: {}",
            grouped(n as f64, 0),
            grouped(c.records as f64, 0),
            causes.join(", ")
        );
    }
    for line in &fed.bad_lines {
        let _ = writeln!(out, "      {line}");
    }
    if c.generated_body > 0 {
        let _ = writeln!(
            out,
            "    generated: {} request bodies the file gives only the size of, sent as that many bytes",
            grouped(c.generated_body as f64, 0)
        );
    }
    let paths = super::json::top_paths(summary, fed, TOP_PATHS_TEXT);
    if !paths.is_empty() {
        let shown = fed.paths.len().min(crate::replay::reader::MAX_PATHS);
        let title = format!("top paths (of {shown}):");
        let _ = writeln!(out, "    {title:<26}{:>12}{:>12}{:>12}{:>9}", "requests", "mean", "max", "errors");
        for p in &paths {
            let _ = writeln!(
                out,
                "      {:<24}{:>12}{:>12}{:>12}{:>9}",
                p.path,
                grouped(p.requests as f64, 0),
                time_us(p.latency_mean_us),
                time_us(p.latency_max_us as f64),
                p.errors
            );
        }
    }
    if c.late_in_file > 0 {
        let _ = writeln!(
            out,
            "    {} records came later in the file than the reorder window allows: sent at once",
            grouped(c.late_in_file as f64, 0)
        );
    }
    out
}
