//! Issue 14: one test split over processes on separate "machines": each segment runs in its own
//! network namespace, joined to the origin's namespace by a veth pair, all made by the test and
//! removed after. Every address is inside namespaces the test made itself.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::harness::{bin, exclusive};

/// Namespaces and links made for one test; removed on drop.
struct Net {
    names: Vec<String>,
}

impl Net {
    /// An origin namespace and `n` client namespaces, client `i` linked to it by a veth pair
    /// (10.201.i.2 to 10.201.i.1); every client reaches the origin at one address, 10.201.255.1
    /// (on the origin's loopback, routed through each pair), as machines reach one service.
    /// The error gives the reason where namespaces cannot be made.
    fn make(n: usize) -> Result<(Net, String, Vec<String>), String> {
        let tag = std::process::id() % 100_000;
        let origin = format!("strain-o{tag}");
        let mut net = Net { names: vec![origin.clone()] };
        ip(&["netns", "add", &origin])?;
        ip(&["netns", "exec", &origin, "ip", "link", "set", "lo", "up"])?;
        ip(&["netns", "exec", &origin, "ip", "addr", "add", "10.201.255.1/32", "dev", "lo"])?;
        let mut clients = Vec::new();
        for i in 0..n {
            let ns = format!("strain-c{tag}-{i}");
            net.names.push(ns.clone());
            ip(&["netns", "add", &ns])?;
            let (a, b) = (format!("sto{tag}{i}"), format!("stc{tag}{i}"));
            ip(&["link", "add", &a, "type", "veth", "peer", "name", &b])?;
            ip(&["link", "set", &a, "netns", &origin])?;
            ip(&["link", "set", &b, "netns", &ns])?;
            let (oa, ca) = (format!("10.201.{i}.1/30"), format!("10.201.{i}.2/30"));
            ip(&["netns", "exec", &origin, "ip", "addr", "add", &oa, "dev", &a])?;
            ip(&["netns", "exec", &origin, "ip", "link", "set", &a, "up"])?;
            ip(&["netns", "exec", &ns, "ip", "addr", "add", &ca, "dev", &b])?;
            ip(&["netns", "exec", &ns, "ip", "link", "set", &b, "up"])?;
            ip(&["netns", "exec", &ns, "ip", "link", "set", "lo", "up"])?;
            let via = format!("10.201.{i}.1");
            ip(&["netns", "exec", &ns, "ip", "route", "add", "10.201.255.1/32", "via", &via])?;
            clients.push(ns);
        }
        Ok((net, origin, clients))
    }
}

impl Drop for Net {
    fn drop(&mut self) {
        // Deleting a namespace deletes the veth ends in it, and with them their peers.
        for n in &self.names {
            let _ = ip(&["netns", "del", n]);
        }
    }
}

/// Runs `ip` with `args`; the error names the command.
fn ip(args: &[&str]) -> Result<(), String> {
    let out = Command::new("ip").args(args).stdin(Stdio::null()).output().map_err(|e| format!("ip: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!("ip {}: {}", args.join(" "), String::from_utf8_lossy(&out.stderr).trim()))
    }
}

/// Starts strain with `args` inside namespace `ns`.
fn strain_in(ns: &str, args: &[&str]) -> Child {
    Command::new("ip")
        .args(["netns", "exec", ns, bin()])
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("ip netns exec strain")
}

#[test]
fn three_segments_on_three_namespaces_add_up_to_the_one_test() {
    let _alone = exclusive();
    let (_net, origin_ns, clients) = match Net::make(3) {
        Ok(made) => made,
        Err(why) => {
            eprintln!("skipped: network namespaces cannot be made here ({why})");
            return;
        }
    };
    let mut origin = strain_in(&origin_ns, &["origin", "--listen", "0.0.0.0:8080", "-t", "1"]);
    let mut lines = BufReader::new(origin.stdout.take().unwrap());
    let mut first = String::new();
    lines.read_line(&mut first).unwrap();
    assert!(first.contains("listening"), "{first}");
    let dir = tempfile::tempdir().unwrap();
    // Every segment starts at the same wall-clock instant, 1.5 s from now.
    let at = (SystemTime::now() + Duration::from_millis(1500)).duration_since(UNIX_EPOCH).unwrap().as_secs_f64();
    let at = format!("{at:.3}");
    let runs: Vec<(Child, std::path::PathBuf)> = clients
        .iter()
        .enumerate()
        .map(|(i, ns)| {
            let json = dir.path().join(format!("seg{i}.json"));
            let url = "http://10.201.255.1:8080/".to_string();
            let segment = format!("{i}/3");
            let args = [
                "--segment",
                &segment,
                "--start-at",
                &at,
                "-c",
                "9",
                "-t",
                "1",
                "-R",
                "3000",
                "-d",
                "2s",
                "--json",
                json.to_str().unwrap(),
                &url,
            ];
            (strain_in(ns, &args), json)
        })
        .collect();
    let mut results = Vec::new();
    for (mut child, json) in runs {
        let status = child.wait().unwrap();
        assert!(status.success(), "a segment failed: {status}");
        let doc: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
        results.push((doc, json));
    }
    crate::harness::signal(origin.id(), "INT");
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut lines, &mut rest).unwrap();
    let _ = origin.wait();
    let served: u64 = rest
        .split("served ")
        .nth(1)
        .and_then(|s| s.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("origin said: {rest}"));
    // Each segment sent its third of the schedule, from the same instant.
    let started: Vec<SystemTime> =
        results.iter().map(|(d, _)| humantime::parse_rfc3339(d["started"].as_str().unwrap()).unwrap()).collect();
    let (first, last) = (started.iter().min().unwrap(), started.iter().max().unwrap());
    let spread = last.duration_since(*first).unwrap();
    assert!(spread < Duration::from_millis(50), "segments started {spread:?} apart: {started:?}");
    let per: Vec<u64> = results.iter().map(|(d, _)| d["requests"].as_u64().unwrap()).collect();
    assert_eq!(per.iter().sum::<u64>(), served, "the origin's count is the segments' total");
    // Merged: the one test's count, at the one test's rate (3,000/s for 2 s, within 1%).
    let mut a: Vec<&str> = vec!["merge"];
    a.extend(results.iter().map(|(_, p)| p.to_str().unwrap()));
    let merged = crate::harness::strain(&a);
    assert_eq!(merged.code, 0, "{}", merged.stderr);
    assert_eq!(merged.num("/requests"), served, "merged total = the origin's count");
    let sent = merged.num("/rate/sent") as f64;
    assert!((sent - 6000.0).abs() <= 60.0, "{sent} of 6,000 planned");
    assert!(merged.stdout.contains("3 threads and 9 connections"), "{}", merged.stdout);
}

#[test]
fn a_segment_writes_its_result_on_stdout_as_one_json_line() {
    let origin = crate::harness::Origin::start(&["-t", "1"]);
    let url = origin.url();
    let run =
        crate::harness::strain_raw(&["--segment", "1/2", "-c", "2", "-t", "1", "-d", "300ms", "--json", "-", &url]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.stdout.lines().count(), 1, "{}", run.stdout);
    let doc: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(doc["segment"], serde_json::json!({"index": 1, "count": 2}));
    assert!(run.stderr.contains("Running"), "the report went to stderr");
}
