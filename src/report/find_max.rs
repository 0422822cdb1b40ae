//! A capacity search in text (a header, a line per step as it ends, the answer) and as JSON
//! (every step with its full result, the answer, and `max_rate` at the top level for scripts).

use std::fmt::Write as _;

use crate::config::Paces;
use crate::find_max::bisect::End;
use crate::find_max::step::{Step, Verdict};
use crate::find_max::{Answer, FindMaxConfig, FindMaxResult};
use crate::result::find_max::{Answer as AnswerDoc, FindMaxDoc, FindMaxSettings, Knee, Limit, StepDoc};
use crate::result::{ThresholdDoc, SCHEMA_VERSION};
use crate::verdict::Outcome;

use super::units::{rate, time_us};

/// What is searched, and how.
pub fn header(c: &FindMaxConfig) -> String {
    let slo: Vec<&str> = c.spec().slo.iter().map(|t| t.text.as_str()).collect();
    format!(
        "Searching {} for the highest rate with {}\n  {} connections, {} thread{}, steps of {:?} after {:?} of warm-up, precision {}%\n",
        c.load().target.url,
        slo.join(", "),
        c.load().connections,
        c.load().threads,
        if c.load().threads == 1 { "" } else { "s" },
        c.spec().step,
        c.spec().warmup,
        c.spec().precision * 100.0
    )
}

/// The probe's line; `noun` is what the rates count.
pub fn probed(per_s: f64, start: f64, connections: usize, noun: &str) -> String {
    format!(
        "  probe: {} {noun}/s closed loop on {connections} connections; starting at {}/s\n",
        rate(per_s),
        rate(start)
    )
}

/// The step table's header line.
pub fn table_header(watch: &[u32]) -> String {
    let mut out = format!(
        "  {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>7} {:>7}",
        "target/s", "achieved", "p50", "p90", "p99", "max", "errors", "late"
    );
    for pid in watch {
        let _ = write!(out, " {:>9} {:>9}", format!("cpu:{pid}"), "rss");
    }
    out.push_str("  verdict\n");
    out
}

/// One step's line.
pub fn step_line(s: &Step) -> String {
    let f = &s.figures;
    let mut out = format!(
        "  {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>7} {:>7}",
        rate(f.target_per_s),
        rate(f.achieved_per_s),
        time_us(f.p50_us as f64),
        time_us(f.p90_us as f64),
        time_us(f.p99_us as f64),
        time_us(f.max_us as f64),
        f.errors,
        f.late
    );
    for w in &s.watched {
        let cpu = w.cpu_pct.map_or_else(|| "-".into(), |c| format!("{c:.0}%"));
        let rss = w.rss_bytes.map_or_else(|| "-".into(), |b| format!("{}B", super::units::binary(b as f64)));
        let _ = write!(out, " {cpu:>9} {rss:>9}");
    }
    let _ = write!(out, "  {}", s.verdict.word());
    let failed: Vec<&str> = s.result.outcomes.iter().filter(|o| !o.passed).map(|o| o.threshold.text.as_str()).collect();
    if matches!(s.verdict, Verdict::Slo) && !failed.is_empty() {
        let _ = write!(out, " {}", failed.join(", "));
    }
    out.push('\n');
    out
}

/// The answer's note when the server shared strain's CPUs: every step measured both.
pub fn shared_note(shared: &crate::net::host::SharedCpus) -> String {
    format!(
        "Shared CPUs: the server and strain both ran on CPUs {} in every step, so each rate measured the two together; pin them apart for the server's own capacity.",
        crate::net::host::cpu_list(&shared.cpus)
    )
}

/// The answer, in sentences, of a search whose rates pace `paces`.
pub fn answer(a: &Answer, connections: usize, paces: Paces) -> String {
    let noun = paces.noun();
    let mut out = String::new();
    match a.max_rate {
        Some(r) if a.end == End::MaxPassed => {
            let _ = writeln!(out, "Max rate: at least {} {noun}/s: the SLO held at --max", rate(r));
        }
        Some(r) if a.limit.is_some() => {
            let _ = writeln!(out, "Max rate: at least {} {noun}/s (strain reached its own limit above it)", rate(r));
        }
        Some(r) => {
            let _ = writeln!(out, "Max rate: {} {noun}/s meets the SLO", rate(r));
        }
        None => out.push_str("Max rate: none: no rate tried met the SLO\n"),
    }
    if let Some(f) = a.first_fail {
        // A step that fell behind failed with no SLO term: say so rather than show empty brackets.
        let why = if a.failed_terms.is_empty() {
            "behind: fewer than 95% answered".to_string()
        } else {
            a.failed_terms.join(", ")
        };
        let _ = writeln!(out, "First fail: {} {noun}/s ({why})", rate(f));
    }
    if let Some((r, us)) = a.knee {
        let _ = writeln!(out, "Knee: latency turns up at {} {noun}/s ({})", rate(r), time_us(us));
    }
    match &a.limit {
        Some(Verdict::Generator { late_share, cpu_share }) => {
            let why = if *cpu_share >= crate::find_max::step::CPU_SATURATED {
                format!("its busiest thread was busy or waiting for a CPU {:.0}% of the step", cpu_share * 100.0)
            } else {
                format!("{:.1}% of requests were sent late because strain itself was behind", late_share * 100.0)
            };
            let _ = writeln!(
                out,
                "Generator limit: strain could not keep the schedule ({why}). This measured strain, not the service: give strain more threads (-t) or more machines."
            );
        }
        Some(Verdict::Connections { suggest }) => {
            let why = match paces {
                Paces::Requests => format!(
                    "every one of the {connections} connections was busy while the service answered as fast as at lower rates"
                ),
                Paces::Streams => format!(
                    "{noun} arrived to find all {connections} connections holding one while the started ones met the SLO"
                ),
            };
            let _ = writeln!(out, "Connection limit: {why}. Use -c {suggest}.");
        }
        _ => {}
    }
    match a.end {
        End::StepBudget => out.push_str("The search stopped after its step budget without converging.\n"),
        End::Stopped => out.push_str("The search was stopped before it converged.\n"),
        _ => {}
    }
    out
}

fn end_name(e: End) -> &'static str {
    match e {
        End::Converged => "converged",
        End::MaxPassed => "max_passed",
        End::NothingPassed => "nothing_passed",
        End::Limit => "limit",
        End::StepBudget => "step_budget",
        End::Stopped => "stopped",
    }
}

fn slo_docs(o: &[Outcome]) -> Vec<ThresholdDoc> {
    o.iter().map(|o| ThresholdDoc { expr: o.threshold.text.clone(), passed: o.passed, value: o.measured }).collect()
}

/// The search as its document.
pub fn document(c: &FindMaxConfig, r: &FindMaxResult, command: &[String]) -> FindMaxDoc {
    let steps = r
        .steps
        .iter()
        .map(|s| StepDoc {
            figures: s.figures,
            verdict: s.verdict.name().to_string(),
            slo: slo_docs(&s.result.outcomes),
            cpu_share: s.cpu_share,
            watched: s.watched.clone(),
            result: super::json::document(
                &s.result,
                &c.step_load(s.figures.target_per_s).unwrap_or_else(|_| c.load().clone()),
                command,
            ),
        })
        .collect();
    FindMaxDoc {
        schema_version: SCHEMA_VERSION,
        strain_version: env!("CARGO_PKG_VERSION").to_string(),
        kind: "find-max".to_string(),
        max_rate: r.answer.max_rate,
        answer: answer_doc(&r.answer),
        config: FindMaxSettings {
            url: c.load().target.url.clone(),
            connections: c.load().connections,
            threads: c.load().threads,
            slo: c.spec().slo.iter().map(|t| t.text.clone()).collect(),
            start: c.spec().start,
            max: c.spec().max,
            precision: c.spec().precision,
            warmup_s: c.spec().warmup.as_secs_f64(),
            step_s: c.spec().step.as_secs_f64(),
            watch_pids: c.spec().watch.clone(),
            rate_of: (c.load().paces() != Paces::Requests).then(|| c.load().paces().noun().to_string()),
        },
        probe_per_s: r.probe_per_s,
        steps,
        command: command.to_vec(),
        host_cores: std::thread::available_parallelism().map_or(1, |n| n.get()),
        shared_cpus: r.steps.iter().find_map(|s| s.result.shared_cpus.clone()),
    }
}

fn answer_doc(a: &Answer) -> AnswerDoc {
    AnswerDoc {
        end: end_name(a.end).to_string(),
        max_rate: a.max_rate,
        first_fail: a.first_fail,
        failed_terms: a.failed_terms.clone(),
        knee: a.knee.map(|(rate, latency_us)| Knee { rate, latency_us }),
        limit: a.limit.as_ref().and_then(|v| match v {
            Verdict::Generator { late_share, cpu_share } => Some(Limit {
                kind: "generator".to_string(),
                late_share: Some(*late_share),
                cpu_share: Some(*cpu_share),
                suggest_connections: None,
            }),
            Verdict::Connections { suggest } => Some(Limit {
                kind: "connections".to_string(),
                late_share: None,
                cpu_share: None,
                suggest_connections: Some(*suggest),
            }),
            _ => None,
        }),
    }
}

/// The search as pretty JSON.
pub fn json(c: &FindMaxConfig, r: &FindMaxResult, command: &[String]) -> String {
    document(c, r, command).to_json()
}

#[cfg(test)]
mod tests {
    #[test]
    fn rates_group_thousands() {
        let rows = [(0.0, "0"), (999.4, "999"), (1_000.0, "1,000"), (16_000.0, "16,000"), (1_234_567.8, "1,234,568")];
        for (r, s) in rows {
            assert_eq!(super::rate(r), s);
        }
    }
}
