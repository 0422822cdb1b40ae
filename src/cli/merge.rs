//! `strain merge RESULT...`: reads segment results (files, or a concatenated stream on
//! standard input), merges them with [`crate::merge`] and reports the merged test as one run's
//! result: wrk's text, the thresholds, `--json` and `--html`. The merging itself is pure and
//! lives in `src/merge/`; this is only the input and output around it.

use std::io::{Read, Write};

use super::flags::MergeFlags;
use super::CliError;
use crate::report::{self, Output, Outputs, TextOptions};
use crate::run::{Failure, RunResult};

/// Merges, prints and writes; returns the exit code (99 when a threshold fails).
pub fn run(f: &MergeFlags) -> Result<i32, CliError> {
    for path in [&f.files.json, &f.files.html].into_iter().flatten() {
        super::check_writable(path)?;
    }
    let mut docs = Vec::new();
    let mut stdin_read = false;
    for path in &f.results {
        let (name, text) = if crate::report::is_standard(path) {
            if std::mem::replace(&mut stdin_read, true) {
                return Err(CliError::Usage("'-' (standard input) is given twice".into()));
            }
            let mut text = String::new();
            std::io::stdin()
                .read_to_string(&mut text)
                .map_err(|source| CliError::Io { what: "cannot read standard input".into(), source })?;
            ("standard input".to_string(), text)
        } else {
            let text = std::fs::read_to_string(path)
                .map_err(|source| CliError::Io { what: format!("cannot read {}", path.display()), source })?;
            (path.display().to_string(), text)
        };
        let (found, skipped) = crate::merge::parse_stream(&name, &text)?;
        if skipped > 0 {
            eprintln!("strain merge: skipped {skipped} lines of text between the results in {name}");
        }
        docs.extend(found);
    }
    let merged = crate::merge::merge(docs, f.force)?;
    if merged.proxy_dropped {
        eprintln!("strain: the proxy sections (hit ratio, origin counts) are not merged");
    }
    let config = merged.config;
    let merged_replay = merged.replay;
    let outputs = Outputs {
        text: TextOptions { latency: f.text.latency, uncorrected: f.text.uncorrected },
        json: f.files.json.clone().map(Output::of),
        html: f.files.html.clone(),
        command: super::load::command_line(),
        ..Outputs::default()
    };
    let thresholds = super::load::thresholds(&f.checks.thresholds, &config, false)?;
    let nothing_connected = merged.summary.total.connections == 0 && merged.summary.total.requests == 0;
    let result = RunResult {
        replay: None,
        summary: merged.summary,
        series: merged.series,
        // No address was loaded by this process; nothing reads it for a merged result.
        addr: std::net::SocketAddr::from(([0, 0, 0, 0], 0)),
        protocol: merged.protocol,
        proxy: None,
        origin_served: None,
        failure: nothing_connected.then(|| Failure::NothingConnected { why: "no segment made a connection".into() }),
        outcomes: Vec::new(),
        thread_cpu: merged.thread_cpu,
        thread_waited: Vec::new(),
        shared_cpus: merged.shared_cpus,
    };
    let mut result = result;
    result.outcomes = result.judge(&thresholds);
    // wrk's text goes to stderr when stdout carries the JSON, as for a run.
    let mut text = super::print::text_stream(outputs.json.as_ref());
    let mut out = report::text::header(&config);
    out.push_str(&report::text::body(&result.summary, &config, result.protocol, outputs.text));
    for o in &result.outcomes {
        out.push_str(&report::text::outcome(o));
        out.push('\n');
    }
    let _ = text.write_all(out.as_bytes());
    let _ = text.flush();
    if nothing_connected {
        eprintln!("strain: no segment connected to {}", config.target.url);
    }
    let mut doc = report::json::document(&result, &config, &outputs.command);
    doc.replay = merged_replay;
    super::write_result(&doc, &config, &outputs)?;
    Ok(super::print::exit_code(&result))
}
