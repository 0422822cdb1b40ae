//! `strain merge RESULT...`: reads segment results (files, or a concatenated stream on
//! standard input), merges them with [`crate::merge`] and reports the merged test as one run's
//! result: wrk's text, the thresholds, `--json` and `--html`. The merging itself is pure and
//! lives in `src/merge/`; this is only the input and output around it.

use std::io::{Read, Write};

use super::flags::MergeFlags;
use super::{CliError, EXIT_FAILED, EXIT_OK, EXIT_THRESHOLDS};
use crate::config::Output;
use crate::report;
use crate::run::{Failure, RunResult};

/// Merges, prints and writes; returns the exit code (99 when a threshold fails).
pub fn run(f: &MergeFlags) -> Result<i32, CliError> {
    let mut docs = Vec::new();
    let mut stdin_read = false;
    for path in &f.results {
        let (name, text) = if path.as_os_str() == "-" {
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
    let mut config = merged.config;
    config.latency = f.latency;
    config.uncorrected = f.uncorrected;
    config.html = f.html.clone();
    config.json = f.json.clone().map(|p| if p.as_os_str() == "-" { Output::Stdout } else { Output::File(p) });
    config.command = std::env::args_os().map(|a| a.to_string_lossy().into_owned()).collect();
    let thresholds = super::thresholds(&f.thresholds, &config, false)?;
    let nothing_connected = merged.summary.total.connections == 0 && merged.summary.total.requests == 0;
    let result = RunResult {
        summary: merged.summary,
        series: merged.series,
        // No address was loaded by this process; nothing reads it for a merged result.
        addr: std::net::SocketAddr::from(([0, 0, 0, 0], 0)),
        protocol: merged.protocol,
        proxy: None,
        origin_served: None,
        failure: nothing_connected.then(|| Failure::NothingConnected { why: "no segment made a connection".into() }),
        thread_cpu: merged.thread_cpu,
        thread_waited: Vec::new(),
    };
    let outcomes: Vec<_> = thresholds.iter().map(|t| t.judge(&result)).collect();
    // wrk's text goes to stderr when stdout carries the JSON, as for a run.
    let mut text: Box<dyn Write> =
        if config.json == Some(Output::Stdout) { Box::new(std::io::stderr()) } else { Box::new(std::io::stdout()) };
    let mut out = report::text::header(&config);
    out.push_str(&report::text::body(&result.summary, &config, result.protocol));
    for o in &outcomes {
        out.push_str(&report::text::outcome(o));
        out.push('\n');
    }
    let _ = text.write_all(out.as_bytes());
    let _ = text.flush();
    if nothing_connected {
        eprintln!("strain: no segment connected to {}", config.target.url);
    }
    super::write_result(&report::json::render_result(&result, &config, &outcomes), &config)?;
    Ok(if nothing_connected {
        EXIT_FAILED
    } else if outcomes.iter().any(|o| !o.passed) {
        EXIT_THRESHOLDS
    } else {
        EXIT_OK
    })
}
