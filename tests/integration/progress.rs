//! The live status line: drawn on a terminal's stderr in every mode (checked under a real
//! pseudo-terminal made by util-linux `script`), cleared before the report, and absent without
//! a terminal or with `--quiet`.

use std::path::Path;
use std::process::Command;

use crate::harness::{args, bin, free_port, run_program, strain, Origin, Run};

/// Runs strain with `args` on a pseudo-terminal; with `stdout_to`, its stdout goes to that file
/// instead. The run's `stdout` is then the raw bytes the terminal received (stderr, and stdout
/// unless redirected; the terminal turns each `\n` into `\r\n`).
fn on_terminal(args: &[&str], stdout_to: Option<&Path>) -> Run {
    on_terminal_of(None, args, stdout_to)
}

/// [`on_terminal`] on a terminal `cols` columns wide (unset, `script` leaves the width unknown).
fn on_terminal_of(cols: Option<u16>, args: &[&str], stdout_to: Option<&Path>) -> Run {
    if Command::new("script").arg("--version").output().is_err() {
        panic!("these tests need util-linux's `script` to make a pseudo-terminal: install the util-linux package");
    }
    // Single quotes keep each argument whole for the shell `script` starts; none holds a quote.
    let mut cmd: Vec<String> = std::iter::once(bin()).chain(args.iter().copied()).map(|a| format!("'{a}'")).collect();
    if let Some(path) = stdout_to {
        cmd.push(format!("> '{}'", path.display()));
    }
    let size = cols.map_or(String::new(), |c| format!("stty cols {c} && "));
    run_program("script", &["-qfec", &format!("{size}{}", cmd.join(" ")), "/dev/null"])
}

/// Every status line drawn, as drawn: a carriage return, then the bar, up to the clear to the
/// end of the line.
fn draws(terminal: &str) -> Vec<&str> {
    terminal
        .split('\r')
        .filter(|s| s.starts_with("[#") || s.starts_with("[-"))
        .map(|s| s.strip_suffix("\x1b[K").unwrap_or_else(|| panic!("a status line not ended by a clear: {s:?}")))
        .collect()
}

/// What the terminal showed before `marker`, which must be there.
fn before<'a>(terminal: &'a str, marker: &str) -> &'a str {
    let at = terminal.find(marker).unwrap_or_else(|| panic!("no {marker:?} in {terminal:?}"));
    &terminal[..at]
}

#[test]
fn status_line_updates_on_a_terminal_and_is_cleared_before_the_report() {
    let origin = Origin::start(&[]);
    let run = on_terminal(&["-c", "4", "-t", "1", "-d", "2s", &origin.url()], None);
    let out = &run.stdout;
    assert_eq!(run.code, 0, "{out:?}");
    let lines = draws(out);
    // One per one-second interval, each redrawn over the last.
    assert_eq!(lines.len(), 2, "{out:?}");
    assert!(lines[0].starts_with("[#####-----] 1.0/2s  "), "{out:?}");
    assert!(lines[1].starts_with("[##########] 2.0/2s  "), "{out:?}");
    for line in &lines {
        assert!(
            line.contains(" req/s  p50 ") && line.contains("  p99 ") && line.contains("  err 0  conn "),
            "{line:?}"
        );
        assert!(line.len() < 80, "{line:?}");
    }
    assert!(lines[0].ends_with("  err 0  conn 4"), "{out:?}");
    // wrk's header comes before the first draw, and the line is erased before the report.
    assert!(before(out, "\r[").contains("Running 2s test @"), "{out:?}");
    assert!(before(out, "  Thread Stats").ends_with("\x1b[K\r\x1b[K"), "{out:?}");
    let report = &out[out.find("  Thread Stats").unwrap()..];
    assert!(!report.contains('\x1b'), "{report:?}");
    assert!(report.contains("\r\nRequests/sec: "), "{report:?}");
}

#[test]
fn status_line_fits_the_terminals_width() {
    let origin = Origin::start(&[]);
    let run = on_terminal_of(Some(50), &["-c", "4", "-t", "1", "-d", "2s", &origin.url()], None);
    let out = &run.stdout;
    assert_eq!(run.code, 0, "{out:?}");
    let lines = draws(out);
    assert_eq!(lines.len(), 2, "{out:?}");
    for line in &lines {
        // One column is kept free; connections and p50 are the first fields left off.
        assert!(line.len() <= 49 && line.contains(" req/s") && !line.contains("conn"), "{line:?}");
    }
}

#[test]
fn rate_mode_plain_lines_scroll_above_the_status_line_and_json_on_stdout_stays_clean() {
    let origin = Origin::start(&[]);
    let dir = tempfile::tempdir().unwrap();
    let json_path = dir.path().join("out.json");
    let url = origin.url();
    let run = on_terminal(&args(&format!("-R 1000 -c 4 -t 1 -d 2s --interval 500ms --json - {url}")), Some(&json_path));
    let out = &run.stdout;
    assert_eq!(run.code, 0, "{out:?}");
    let lines = draws(out);
    assert_eq!(lines.len(), 4, "{out:?}");
    for line in &lines {
        // Achieved against the target.
        assert!(line.contains("/1000 req/s  p50 "), "{line:?}");
    }
    // Each plain line is whole, on a line of its own: printed right after the status line
    // (drawn and erased on the same terminal line) or after another plain line.
    let plain: Vec<&str> = out
        .split("\r\n")
        .filter(|l| l.contains("] target"))
        .map(|l| match l.split_once("\x1b[K\r\x1b[K") {
            Some((status, plain)) => {
                assert!(status.starts_with("\r[") && !status[1..].contains(['\r', '\x1b']), "{l:?}");
                plain
            }
            None => l,
        })
        .collect();
    assert_eq!(plain.len(), 4, "{out:?}");
    for line in &plain {
        assert!(line.starts_with("[   ") && !line.contains(['\r', '\x1b']), "{line:?}");
    }
    // The text report moved to the terminal (stderr), after the erase; the JSON file is intact.
    assert!(before(out, "  Thread Stats").ends_with("\x1b[K\r\x1b[K"), "{out:?}");
    let json_text = std::fs::read_to_string(&json_path).unwrap();
    assert!(!json_text.contains(['\r', '\x1b']), "{json_text:?}");
    let json: serde_json::Value = serde_json::from_str(&json_text).unwrap();
    assert_eq!(json["sent"], 2000, "{json_text}");
}

#[test]
fn proxy_status_line_shows_the_hit_ratio() {
    // The origin stands in for the proxy: nothing is cached, so the ratio is about 0.
    let port = free_port();
    let listen = format!("127.0.0.1:{port}");
    let run = on_terminal(&["proxy", "--listen", &listen, "--proxy", &listen, "-c", "4", "-t", "1", "-d", "2s"], None);
    let out = &run.stdout;
    assert_eq!(run.code, 0, "{out:?}");
    let lines = draws(out);
    assert_eq!(lines.len(), 2, "{out:?}");
    for line in &lines {
        let hit = line.rsplit("  hit ").next().unwrap();
        let ratio: f64 = hit.parse().unwrap_or_else(|_| panic!("no hit ratio in {line:?}"));
        // An interval's ratio is about 0 but not exactly: the client and origin counters are
        // read at slightly different moments, so the value may even be a little negative.
        assert!(ratio.abs() <= 0.5, "{line:?}");
    }
    assert!(before(out, "  Thread Stats").ends_with("\x1b[K\r\x1b[K"), "{out:?}");
}

#[test]
fn quiet_or_no_terminal_draws_nothing() {
    let origin = Origin::start(&[]);
    let url = origin.url();
    let run = on_terminal(&args(&format!("--quiet --interval 1s -c 2 -t 1 -d 2s {url}")), None);
    assert_eq!(run.code, 0, "{:?}", run.stdout);
    // The terminal's own line ends are the only carriage returns.
    assert!(!run.stdout.contains('\x1b') && !run.stdout.replace("\r\n", "").contains('\r'), "{:?}", run.stdout);
    assert_eq!(run.stdout.matches("] done ").count(), 2, "{:?}", run.stdout);
    assert!(run.stdout.contains("Requests/sec: "), "{:?}", run.stdout);

    // The harness's pipes are no terminal: plain lines only.
    let run = strain(&args(&format!("--interval 1s -c 2 -t 1 -d 2s {url}")));
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(!run.stderr.contains(['\r', '\x1b']), "{:?}", run.stderr);
    assert_eq!(run.stderr.matches("] done ").count(), 2, "{:?}", run.stderr);
}
