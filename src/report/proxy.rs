//! Proxy-test reporting: the per-interval line with jtest's columns and the measured hit ratio,
//! and the summary lines after wrk's report.

use super::units::{binary, time_us};
use crate::run::proxy::{hit_ratio, ProxyResult, ProxyRow};
use crate::stats::interval::IntervalRow;
use crate::stats::Recorder;

/// One interval: connections, ops/s, first-byte and total latency (mean, p99), bytes/s, origin
/// requests/s and new connections, hit ratio, errors.
pub fn line(r: &IntervalRow, p: &ProxyRow) -> String {
    let secs = r.length_s.max(1e-9);
    let origin = match (p.origin_requests, p.origin_new_connections) {
        (Some(req), Some(conns)) => format!("origin {:>7.0}/s new {:>4}  ", req as f64 / secs, conns),
        _ => "origin      ?/s new    ?  ".to_string(),
    };
    let hit = match p.hit_ratio {
        Some(h) => format!("{h:>5.3}"),
        None => "    ?".to_string(),
    };
    format!(
        "[{:>6.1}s] con {:>5} new {:>4}  ops {:>8.0}/s  1st {:>8} p99 {:>8}  all {:>8} p99 {:>8}  {:>8}B/s  {origin}hit {hit}  errors {}{}",
        r.start_s + r.length_s,
        r.open_connections,
        r.new_connections,
        r.achieved_per_s,
        time_us(r.ttfb_mean_us),
        time_us(r.ttfb_p99_us as f64),
        time_us(r.mean_us),
        time_us(r.p99_us as f64),
        binary(r.bytes_per_s),
        r.errors,
        r.errors_by_kind.iter().map(|(k, n)| format!(" {k} {n}")).collect::<String>()
    )
}

/// Lines after wrk's report: what the proxy answered itself, aborts, content errors.
pub fn summary(client: &Recorder, proxy: &ProxyResult) -> String {
    let (client_requests, status_errors, aborted) = (client.requests, client.status_errors, client.aborted);
    let content_errors = client.errors[crate::stats::ErrorKind::Content as usize];
    let failures = &client.content_failures;
    let mut out = String::new();
    match proxy.origin.map(|o| (o.requests, o.connections)) {
        Some((requests, connections)) => {
            let successes = client_requests.saturating_sub(status_errors);
            match hit_ratio(successes, requests) {
                Some(ratio) => {
                    let hits = successes.saturating_sub(requests);
                    out.push_str(&format!(
                        "  Proxy: hit ratio {ratio:.3}: {hits} of {successes} successful responses did not reach the origin, which served {requests} on {connections} connections\n"
                    ));
                }
                None => out.push_str(&format!(
                    "  Proxy: no successful responses ({status_errors} of {client_requests} had an error status), so no hit ratio; the origin served {requests} on {connections} connections\n"
                )),
            }
        }
        None => out.push_str("  Proxy: the origin's counters could not be read; no hit ratio\n"),
    }
    if aborted > 0 {
        out.push_str(&format!("  Aborted by the client: {aborted}\n"));
    }
    if content_errors > 0 {
        out.push_str(&format!("  Content errors: {content_errors}\n"));
        for f in failures {
            out.push_str(&format!("    {f}\n"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::run::proxy::OriginCounts;

    /// A client recorder with these counts, and a proxy result with this origin.
    fn case(requests: u64, status_errors: u64, aborted: u64, failures: &[&str], origin: (u64, u64)) -> String {
        let mut r = Recorder::new();
        r.requests = requests;
        r.status_errors = status_errors;
        r.aborted = aborted;
        for f in failures {
            r.content_error(f.to_string());
        }
        let origin = Some(OriginCounts { requests: origin.0, connections: origin.1 });
        summary(&r, &ProxyResult { origin, hit_ratio: None, rows: Vec::new() })
    }

    #[test]
    fn hit_ratio_from_counts() {
        assert_eq!(hit_ratio(1000, 100), Some(0.9));
        assert_eq!(hit_ratio(1000, 1000), Some(0.0));
        assert_eq!(hit_ratio(0, 5), None);
        assert_eq!(
            case(1000, 0, 2, &["asked for /d/1/3: length 4, expected 3"], (100, 4)),
            "  Proxy: hit ratio 0.900: 900 of 1000 successful responses did not reach the origin, which served 100 on 4 connections\n  \
             Aborted by the client: 2\n  Content errors: 1\n    asked for /d/1/3: length 4, expected 3\n"
        );
        // Error responses are not hits.
        assert_eq!(
            case(1000, 500, 0, &[], (100, 4)),
            "  Proxy: hit ratio 0.800: 400 of 500 successful responses did not reach the origin, which served 100 on 4 connections\n"
        );
        assert_eq!(
            case(1000, 1000, 0, &[], (0, 0)),
            "  Proxy: no successful responses (1000 of 1000 had an error status), so no hit ratio; the origin served 0 on 0 connections\n"
        );
    }
}
