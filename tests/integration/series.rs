//! The time series in the result: every row's status counts add up to the run's, every row
//! keeps its latency histogram, the interval follows the run's length unless given, and
//! progress lines stay one a second when the rows are shorter.

use crate::harness::{args, schema, strain, Origin};

/// The result's rows.
fn rows(run: &crate::harness::Run) -> Vec<serde_json::Value> {
    run.json.as_ref().unwrap_or_else(|| panic!("no JSON: {}", run.stderr))["intervals"].as_array().unwrap().clone()
}

#[test]
fn interval_status_counts_add_up_to_the_runs_exactly() {
    // Two servers, one answering 200 and one 404, taken in turn from a targets file.
    let (ok, missing) = (Origin::start(&["-t", "1"]), Origin::start(&["-t", "1", "--status", "404"]));
    let dir = tempfile::tempdir().unwrap();
    let targets = dir.path().join("targets.txt");
    std::fs::write(&targets, format!("GET {}a\n\nGET {}b\n", ok.url(), missing.url())).unwrap();
    let run = strain(&args(&format!("-t 2 -c 4 -d 1s --targets {}", targets.display())));
    assert_eq!(run.code, 0, "{}", run.stderr);
    let json = run.json.as_ref().unwrap();
    let errors: Vec<String> = schema().iter_errors(json).map(|e| format!("{e} at {}", e.instance_path)).collect();
    assert!(errors.is_empty(), "{errors:?}");
    let rows = rows(&run);
    // 1 s is cut into 20 ms rows (fewer if a busy machine made a cut late by more than one),
    // each with its histogram. Two threads and two origins share this machine's two CPUs: a
    // cut runs late by a millisecond or two (a CI run's median row was 21.4 ms).
    assert!((25..=51).contains(&rows.len()), "{} rows: {rows:?}", rows.len());
    let mut lengths: Vec<f64> = rows.iter().map(|r| r["length_s"].as_f64().unwrap()).collect();
    lengths.sort_by(f64::total_cmp);
    assert!((0.019..0.023).contains(&lengths[lengths.len() / 2]), "{lengths:?}");
    assert!(rows.iter().all(|r| r["latency_histogram"].as_str().is_some_and(|h| h.starts_with("HISTF"))));
    // Over the rows, each code adds up to the run's count, exactly.
    let total = json["status"].as_object().unwrap();
    assert_eq!(total.keys().collect::<Vec<_>>(), ["200", "404"], "{total:?}");
    for (code, n) in total {
        let summed: u64 = rows.iter().map(|r| r["status"][code.as_str()].as_u64().unwrap_or(0)).sum();
        assert_eq!(summed, n.as_u64().unwrap(), "status {code}");
    }
    let requests: u64 = rows.iter().map(|r| r["requests"].as_u64().unwrap()).sum();
    assert_eq!(requests, run.num("/requests"));
    assert!(run.num("/status/404") > 100, "{total:?}");
}

#[test]
fn the_interval_follows_the_length_unless_given_and_lines_stay_a_second_apart() {
    let origin = Origin::start(&["-t", "1"]);
    let url = origin.url();
    let lines = |run: &crate::harness::Run| run.stderr.lines().filter(|l| l.contains("] target ")).count();
    // Rate mode prints progress: 2 s of 50 ms rows, one line a second.
    let auto = strain(&args(&format!("-t 1 -c 4 -R 400 -d 2s {url}")));
    assert_eq!(auto.code, 0, "{}", auto.stderr);
    let n = rows(&auto).len();
    assert!((30..=41).contains(&n) && lines(&auto) == 2, "{n} rows: {}", auto.stderr);
    // The interval given wins, and every row is a line.
    let given = strain(&args(&format!("-t 1 -c 4 -R 400 -d 2s --interval 200ms {url}")));
    let n = rows(&given).len();
    assert!((8..=11).contains(&n) && lines(&given) == n, "{n} rows: {}", given.stderr);
    // A count in closed loop may end any time: 100 ms rows (here some 0.3 s: 1 ms a response).
    let slow = Origin::start(&["-t", "1", "--delay", "1ms"]);
    let counted = strain(&args(&format!("-t 1 -c 2 -n 600 {}", slow.url())));
    assert_eq!(counted.num("/requests"), 600);
    let rows = rows(&counted);
    assert!(rows.len() > 1 && rows[1]["start_s"].as_f64().unwrap() >= 0.1, "{rows:?}");
    // The cuts keep to a 100 ms grid: a cut made late (a VM's host woke the thread 16 ms late
    // in a full run) shortens the next row by as much.
    let full = &rows[..rows.len() - 1];
    for (k, row) in full.iter().enumerate() {
        assert!((row["start_s"].as_f64().unwrap() - 0.1 * k as f64).abs() < 0.03, "row {k}: {rows:?}");
    }
    let mean = full.iter().map(|r| r["length_s"].as_f64().unwrap()).sum::<f64>() / full.len() as f64;
    assert!((mean - 0.1).abs() < 0.005, "mean row {mean} s: {rows:?}");
}

#[test]
fn a_long_series_kept_in_a_temporary_file_or_without_one_comes_back_whole() {
    // 2 s of 10 ms rows: about 200, past the batches the engine moves to an unlinked file,
    // and the same where TMPDIR names no directory (the rows stay in memory).
    let origin = Origin::start(&["-t", "1"]);
    // 1,000 requests/s: a debug build cutting a row every 10 ms fell 40 ms behind at 2,000/s on
    // a 2-vCPU VM, and left the last requests unsent.
    let line = format!("-t 2 -c 4 -R 1000 -d 2s --interval 10ms {}", origin.url());
    for wrapper in [&[][..], &["env", "TMPDIR=/nonexistent/strain"][..]] {
        let run = crate::harness::strain_under(wrapper, &args(&line));
        assert_eq!(run.code, 0, "{wrapper:?}: {}", run.stderr);
        let rows = rows(&run);
        assert!((150..=201).contains(&rows.len()), "{wrapper:?}: {} rows", rows.len());
        let starts: Vec<f64> = rows.iter().map(|r| r["start_s"].as_f64().unwrap()).collect();
        assert!(starts.windows(2).all(|w| w[0] < w[1]), "{wrapper:?}: out of order: {starts:?}");
        assert!(rows.iter().all(|r| r["latency_histogram"].as_str().is_some_and(|h| h.starts_with("HISTF"))));
        let requests: u64 = rows.iter().map(|r| r["requests"].as_u64().unwrap()).sum();
        assert_eq!(requests, run.num("/requests"), "{wrapper:?}");
        assert_eq!(run.num("/requests"), 2_000, "{wrapper:?}");
    }
}
