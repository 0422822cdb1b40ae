//! Issue 9, defect 4: one exit-code table (README "Exit codes"), each code provoked for real.

use std::net::TcpListener;

use crate::harness::{script, strain, strain_raw, Origin};

#[test]
fn a_run_that_measured_something_exits_0() {
    let origin = Origin::start(&[]);
    let run = strain(&["-t", "1", "-c", "2", "-d", "300ms", &origin.url()]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.num("/requests") > 0);
}

#[test]
fn a_run_where_nothing_connected_exits_1_with_its_report() {
    let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let run = strain(&["-t", "1", "-c", "1", "-d", "300ms", &format!("http://127.0.0.1:{port}/")]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(run.stdout.contains("Requests/sec:"), "{}", run.stdout);
}

#[test]
fn a_script_error_exits_1_and_prints_only_the_script_error() {
    let origin = Origin::start(&[]);
    let (_dir, path) = script("request = function() error('boom') end\n");
    let run = strain(&["-t", "1", "-c", "1", "-d", "300ms", "-s", &path, &origin.url()]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(run.stderr.contains("boom"), "{}", run.stderr);
    assert!(!run.stderr.contains("no connection"), "{}", run.stderr);
}

#[test]
fn usage_and_setup_errors_exit_2_with_one_line() {
    for args in
        [&["-c", "x", "http://127.0.0.1:1/"][..], &["--no-such-flag"], &["-d", "forever", "http://127.0.0.1:1/"]]
    {
        let run = strain_raw(args);
        assert_eq!(run.code, 2, "{args:?}: {}", run.stderr);
        assert_eq!(run.stderr.lines().count(), 1, "{args:?}: {}", run.stderr);
        assert!(run.stderr.starts_with("strain: "), "{}", run.stderr);
        assert!(run.stdout.is_empty(), "{}", run.stdout);
    }
}
