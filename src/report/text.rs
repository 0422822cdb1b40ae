//! wrk's text report, byte for byte where wrk is deterministic (people parse it).

use std::fmt::Write;

use super::units::{binary, metric, padded, time_s, time_us, time_us_exact};
use super::{wrk2, TextOptions};
use crate::config::{Config, Protocol};
use crate::stats::section::Spoken;
use crate::stats::{ConnectCause, Distribution, ErrorKind, Summary};

/// Percentiles of wrk's `--latency` block.
const WRK_PERCENTILES: [f64; 4] = [50.0, 75.0, 90.0, 99.0];

/// The lines wrk prints before the load starts.
pub fn header(config: &Config) -> String {
    let segment = if config.segment.is_split() {
        format!(
            " (segment {} of {}: {} connections in all)",
            config.segment.index, config.segment.count, config.connections
        )
    } else {
        String::new()
    };
    // wrk's "Running 10s test @": a run of -n requests says its count, and its time only
    // when one was asked for too (whichever comes first ends it).
    // With --fullpage, -n counts pages.
    let counted = if config.pages.is_some() { "page" } else { "request" };
    let test = match (config.requests, config.time_bound) {
        (None, _) => format!("{} test", length(config.duration)),
        (Some(n), false) => format!("{n}-{counted} test"),
        (Some(n), true) => format!("{n}-{counted} test (at most {})", length(config.duration)),
    };
    format!(
        "Running {test} @ {}\n  {} threads and {} connections{segment}\n",
        target_words(config),
        config.threads,
        config.segment_connections()
    )
}

/// A run's length as the header says it: wrk's words for whole seconds (`10s`, `2m`), and
/// exactly otherwise (`500ms`, `1.5s`), where wrk's rounding would name a test not run.
fn length(d: std::time::Duration) -> String {
    let ms = d.as_millis();
    if d.subsec_nanos() == 0 {
        time_s(d.as_secs_f64())
    } else if ms < 1000 {
        format!("{}ms", d.as_secs_f64() * 1000.0)
    } else {
        format!("{}s", d.as_secs_f64())
    }
}

/// What the header says the load goes to: the URL, or a targets file's requests (their count
/// and the first few URLs), since the URL argument is then at most a default.
fn target_words(config: &Config) -> String {
    const SHOWN: usize = 3;
    match config.targets.len() {
        0 => config.target.url.clone(),
        n => {
            let urls: Vec<&str> = config.targets.iter().take(SHOWN).map(|t| t.target.url.as_str()).collect();
            let more = if n > SHOWN { format!(" and {} more", n - SHOWN) } else { String::new() };
            let noun = if n == 1 { "target" } else { "targets" };
            format!("{n} {noun} ({}{more})", urls.join(", "))
        }
    }
}

/// The report wrk prints after the load ends.
pub fn body(summary: &Summary, config: &Config, protocol: Protocol, show: TextOptions) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "  Thread Stats{:>6}{:>11}{:>8}{:>12}", "Avg", "Stdev", "Max", "+/- Stdev");
    stats_row(&mut out, "Latency", &summary.latency(), time_us);
    stats_row(&mut out, "Req/Sec", &summary.thread_rate(), metric);
    if config.paced() {
        // Rate mode prints wrk2's blocks: corrected latency with -L, the uncorrected one with -U.
        if show.latency {
            out.push_str(&wrk2::latency_block("Recorded Latency", &summary.total.latency_us));
        }
        if show.uncorrected {
            out.push('\n');
            out.push_str(&wrk2::latency_block(
                "Uncorrected Latency (measured without taking delayed starts into account)",
                &summary.total.uncorrected_us,
            ));
        }
    } else if show.latency {
        out.push_str("  Latency Distribution\n");
        for p in WRK_PERCENTILES {
            let v = summary.latency_percentile_us(p);
            let _ = writeln!(out, "{p:>7.0}%{}", padded(&time_us_exact(v), 10));
        }
    }
    let t = &summary.total;
    // A unit's answers may be other than responses (WebSocket's messages).
    let answers = t.sections.answers();
    let (noun, per) = (answers.plural, format!("{}/sec", answers.title));
    let _ = writeln!(
        out,
        "  {} {noun} in {}, {}B read",
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
    // Not in wrk: the cause decides the remedy (ports, server backlog, timeout).
    let causes: Vec<String> = ConnectCause::ALL
        .iter()
        .filter(|c| summary.total.connect_causes[**c as usize] > 0)
        .map(|c| format!("{} {}", c.words(), summary.total.connect_causes[*c as usize]))
        .collect();
    if !causes.is_empty() {
        let _ = writeln!(out, "  Connect errors: {}", causes.join(", "));
    }
    let status = summary.status_errors();
    if status > 0 {
        let _ = writeln!(out, "  {}: {status}", summary.total.sections.answers().failed);
    }
    if config.paced() {
        pacing_lines(&mut out, summary, config, protocol);
    }
    if t.arrivals_dropped > 0 {
        let noun = match config.paces() {
            crate::config::Paces::Streams => "streams",
            crate::config::Paces::Requests => "connections",
        };
        let _ = writeln!(
            out,
            "  Arrivals dropped: {} {noun} came due with all {} connections busy (more connections, or a lower rate, carry them)",
            t.arrivals_dropped, config.connections
        );
    }
    let _ = writeln!(out, "{per}: {:>9.2}", summary.requests_per_s());
    let _ = writeln!(out, "Transfer/sec: {:>10}B", binary(summary.bytes_per_s()));
    if summary.status_counts().any(|(code, _)| !(200..400).contains(&code)) {
        // wrk says only how many; which codes is what one wants next.
        let codes: Vec<String> = summary
            .status_counts()
            .map(|(code, n)| format!("{code} \u{d7}{}", crate::report::units::rate(n as f64)))
            .collect();
        let _ = writeln!(out, "Status codes: {}", codes.join(", "));
    }
    if !config.targets.is_empty() {
        target_lines(&mut out, summary, config);
    }
    for section in summary.total.sections.iter() {
        section.text(&spoken(protocol, config), &mut out);
    }
    out
}

/// Advice for stderr when connects failed because the local port range ran out, naming the
/// range and the remedies; `None` when that did not happen.
pub fn port_range_advice(summary: &Summary, config: &Config, target: std::net::SocketAddr) -> Option<String> {
    let n = summary.total.connect_causes[ConnectCause::AddressNotAvailable as usize];
    if n == 0 {
        return None;
    }
    let range = match crate::net::local_port_range() {
        Some((lo, hi)) => format!("{lo}-{hi}, {} ports", hi.saturating_sub(lo) + 1),
        None => "unknown".to_string(),
    };
    let sources = config.source_addrs.len().max(1);
    let mut line = format!(
        "strain: {n} connects failed for lack of a local port: {sources} source address(es) x the local port range ({range}) is the limit, and ports in TIME_WAIT count too; "
    );
    if target.is_ipv4() && target.ip().is_loopback() {
        line.push_str("add source addresses (--source-addr 127.0.0.2 --source-addr 127.0.0.3 ...) or widen net.ipv4.ip_local_port_range");
    } else {
        line.push_str(
            "add --source-addr with more local addresses, widen net.ipv4.ip_local_port_range, or use fewer connections",
        );
    }
    Some(line)
}

/// Rate mode: whether the generator kept to the schedule, so a slow server can be told from a
/// generator that is too small.
fn pacing_lines(out: &mut String, summary: &Summary, config: &Config, protocol: Protocol) {
    let p = &summary.total.pacing;
    out.push_str(
        "  Latency counts from each request's intended send time (corrected for coordinated omission; -U: uncorrected)\n",
    );
    if p.late > 0 {
        let mean = p.late_sum_us as f64 / p.late as f64;
        let _ = write!(
            out,
            "  Late sends: {} of {} requests went out more than {} after their intended time (mean {}, max {})",
            p.late,
            p.sent,
            time_us(crate::stats::LATE_SEND_US as f64),
            time_us(mean),
            time_us(p.late_max_us as f64)
        );
        let own = p.late_generator();
        if own > 0 {
            let _ = write!(
                out,
                "; {own} were late because strain itself was behind (its thread was busy or waiting for a CPU while they were due: add threads with -t, or give strain CPUs of its own)"
            );
        }
        if p.late_connecting > 0 {
            let _ = write!(
                out,
                "; {} came due while their connection was still being opened (connect or TLS handshake)",
                p.late_connecting
            );
        }
        let busy_sends = p.late_no_connection.saturating_sub(p.late_connecting);
        if busy_sends > 0 {
            let _ = write!(
                out,
                "; {busy_sends} found every connection waiting on a response ({})",
                busy(summary, config, protocol)
            );
        }
        out.push('\n');
    }
    if p.unsent > 0 {
        let _ = writeln!(out, "  Unsent: {} requests came due but were never sent", p.unsent);
    }
}

/// A targets file's table: each target's responses, failed requests, mean and largest latency.
fn target_lines(out: &mut String, summary: &Summary, config: &Config) {
    out.push_str("Targets:\n    requests    errors      mean       max  target\n");
    for (k, t) in config.targets.iter().enumerate() {
        let c = summary.total.targets.get(k).copied().unwrap_or_default();
        let mean = if c.requests > 0 { c.latency_sum_us as f64 / c.requests as f64 } else { 0.0 };
        let _ = writeln!(
            out,
            "  {:>10}  {:>8}  {:>8}  {:>8}  {} {}",
            crate::report::units::rate(c.requests as f64),
            crate::report::units::rate(c.errors as f64),
            time_us(mean),
            time_us(c.latency_max_us as f64),
            t.method,
            t.target.url
        );
    }
}

/// Why sends found every connection waiting on a response, and what would help. By Little's
/// law the rate needs about rate x the server's own (uncorrected) median latency requests in
/// flight: with fewer slots than that, more connections would have helped. With more, every
/// slot was held at once only because responses took far longer than the median at times
/// (sends strain itself made late and bunched are counted as strain's, not here): the server
/// was slow or stalled then, if its slowest response was long enough for the rate to fill
/// them all (rate x slowest >= slots); more connections would only queue more requests at it.
/// If not even that, the slots were busy with a backlog of requests already late.
fn busy(summary: &Summary, config: &Config, protocol: Protocol) -> String {
    let rate = config.schedule.as_ref().map_or(0.0, |s| s.total_requests() / s.duration().as_secs_f64().max(1e-9));
    let rate = rate * config.segment_fraction();
    let h = &summary.total.uncorrected_us;
    let median_s = if h.is_empty() { 0.0 } else { h.value_at_quantile(0.5) as f64 / 1e6 };
    let slots = config.segment_connections() * protocol.streams() as usize;
    let needed = rate * median_s;
    let max_s = if h.is_empty() { 0.0 } else { h.max() as f64 / 1e6 };
    if (slots as f64) < needed * 1.2 {
        let more = match protocol {
            Protocol::Http1 | Protocol::Unit(_) => "add connections with -c",
            Protocol::Http2 { .. } | Protocol::Http3 { .. } => "add connections with -c or streams with -m",
        };
        format!(
            "{more}: {} req/s at the server's median latency of {} keeps about {} in flight, {slots} can be",
            crate::report::units::rate(rate),
            time_us(median_s * 1e6),
            needed.ceil()
        )
    } else if rate * max_s >= slots as f64 {
        format!(
            "{} req/s at the server's median latency of {} keeps about {} in flight and {slots} were open, so the server was slow or stalled at times: its slowest response took {}; more connections would queue more requests at it",
            crate::report::units::rate(rate),
            time_us(median_s * 1e6),
            needed.ceil(),
            time_us(max_s * 1e6)
        )
    } else {
        // Even the slowest response held a connection too briefly for the rate to fill them
        // all: they were busy with requests already late (a backlog strain or the opening
        // left), not with a slow server.
        format!(
            "busy with requests already late: at {} req/s even the server's slowest response, {}, leaves most of the {slots} free",
            crate::report::units::rate(rate),
            time_us(max_s * 1e6)
        )
    }
}

fn stats_row(out: &mut String, name: &str, d: &Distribution, fmt: fn(f64) -> String) {
    let _ = write!(out, "    {name:<10}");
    out.push_str(&padded(&fmt(d.mean), 8));
    out.push_str(&padded(&fmt(d.stdev), 10));
    out.push_str(&padded(&fmt(d.max as f64), 9));
    let _ = writeln!(out, "{:>8.2}%", d.within_stdev_pct);
}

/// A judged threshold as a line of the report: `  ✓ p99<200ms: 12.30ms`.
pub fn outcome(o: &crate::verdict::Outcome) -> String {
    let mark = if o.passed { "✓" } else { "✗" };
    let value = o.measured.map_or_else(|| "no value".to_string(), |v| threshold_value(o.threshold.metric, v));
    format!("  {mark} {}: {value}", o.threshold.text)
}

/// A threshold's measured value in its metric's unit, as the report writes it.
pub fn threshold_value(metric: crate::verdict::Metric, v: f64) -> String {
    use crate::verdict::Metric;
    match metric {
        Metric::Percentile(_) | Metric::Max | Metric::Mean => time_us(v),
        Metric::ErrorRate | Metric::LateRate => format!("{:.3}%", v * 100.0),
        Metric::Errors | Metric::Late => format!("{v:.0}"),
        Metric::Rps => format!("{v:.2}"),
        Metric::HitRatio => format!("{v:.3}"),
    }
}

/// How a run spoke its protocol, as a unit's section is headed.
pub(crate) fn spoken(protocol: Protocol, config: &Config) -> Spoken {
    Spoken { protocol: protocol.name(config.target.scheme).to_string(), streams_per_connection: protocol.streams() }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::{fixed, paced};

    const LATENCY: TextOptions = TextOptions { latency: true, uncorrected: false };
    const BOTH: TextOptions = TextOptions { latency: true, uncorrected: true };

    #[test]
    fn text_report_matches_golden_file() {
        let (summary, config) = fixed();
        crate::report::check_golden(
            "wrk_text.txt",
            &(header(&config) + &body(&summary, &config, Protocol::Http1, LATENCY)),
        );
    }

    #[test]
    fn connect_errors_by_cause_and_port_range_advice() {
        let (mut summary, config) = fixed();
        let addr: std::net::SocketAddr = "127.0.0.1:8080".parse().unwrap();
        assert_eq!(port_range_advice(&summary, &config, addr), None);
        summary.total.connect_error(ConnectCause::AddressNotAvailable, String::new);
        summary.total.connect_error(ConnectCause::TimedOut, String::new);
        assert!(body(&summary, &config, Protocol::Http1, LATENCY).contains(
            "  Socket errors: connect 3, read 5, write 0, timeout 4\n  Connect errors: address not available 1, timed out 1\n"
        ));
        let advice = port_range_advice(&summary, &config, addr).unwrap();
        assert!(
            advice.starts_with(
                "strain: 1 connects failed for lack of a local port: 1 source address(es) x the local port range ("
            ),
            "{advice}"
        );
        assert!(advice.contains("--source-addr 127.0.0.2"), "{advice}");
    }

    #[test]
    fn rate_mode_report_matches_golden_file() {
        let (mut summary, config) = fixed();
        let config = paced(&config);
        let t = &mut summary.total;
        for (latency_us, n) in [(110, 900), (400, 107)] {
            for _ in 0..n {
                t.uncorrected_us.record(latency_us).unwrap();
            }
        }
        t.pacing = crate::report::fixed_pacing();
        crate::report::check_golden(
            "wrk2_text_rate.txt",
            &(header(&config) + &body(&summary, &config, Protocol::Http1, BOTH)),
        );
    }
}
