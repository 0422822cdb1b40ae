//! Issue 11, part 1: the HTML report, checked in headless Chromium (installed by the test
//! command): it loads with no console error, makes no request, draws its charts, and shows the
//! numbers of the JSON.

use std::path::Path;
use std::process::Command;

use crate::harness::{args, strain, strain_raw, Origin};

/// Chromium's binary (Debian's `chromium`).
fn chromium() -> &'static str {
    for p in ["/usr/bin/chromium", "/usr/bin/chromium-browser"] {
        if Path::new(p).exists() {
            return p;
        }
    }
    panic!("chromium is not installed: run `bash .ci/run` (it installs it) or `apt-get install -y chromium`");
}

/// Loads `page` in headless Chromium: the DOM after load, and what Chromium logged.
pub fn load(page: &Path) -> (String, String) {
    let out = Command::new(chromium())
        .args(["--headless", "--no-sandbox", "--disable-gpu", "--enable-logging=stderr", "--v=0"])
        // Any request to another host would fail loudly rather than leave the machine.
        .arg("--host-resolver-rules=MAP * ~NOTFOUND")
        .arg("--dump-dom")
        .arg(format!("file://{}", page.display()))
        .output()
        .expect("run chromium");
    (String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned())
}

/// What a page must be, whatever it shows.
fn check_page(page: &Path, charts: usize) -> String {
    let text = std::fs::read_to_string(page).unwrap();
    assert!(text.contains("Content-Security-Policy\" content=\"default-src 'none'"), "no CSP");
    for attr in ["src=", "href=", "<script", "@import", "url("] {
        assert!(!text.contains(attr), "the page refers to something outside it: {attr}");
    }
    let (dom, log) = load(page);
    assert!(!log.contains("CONSOLE") && !log.contains("Uncaught"), "console: {log}");
    assert_eq!(dom.matches("<svg class=\"chart\"").count(), charts, "{dom}");
    assert!(dom.contains("<polyline points=\""), "no line drawn");
    dom
}

/// The text of the `row`-th element marked `data-metric="NAME"` (a summary table's cell, or a
/// search page's answer).
fn cell(dom: &str, metric: &str, row: usize) -> String {
    let tag = format!(" data-metric=\"{metric}\">");
    let at = dom.match_indices(&tag).nth(row).unwrap_or_else(|| panic!("no {metric} cell {row}")).0 + tag.len();
    dom[at..].split('<').next().unwrap().to_string()
}

#[test]
fn a_run_writes_a_self_contained_page_with_the_numbers_of_its_json() {
    let origin = Origin::start(&["-t", "1"]);
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("run.html");
    let url = origin.url();
    let line = format!("-t 1 -c 4 --stages 1s:500,0s:1000,1s:1000 --html {}", page.display());
    let run = strain(&[&args(&line)[..], &[&url]].concat());
    assert_eq!(run.code, 0, "{}", run.stderr);
    let dom = check_page(&page, 4);
    assert_eq!(cell(&dom, "requests", 0), run.num("/requests").to_string());
    assert_eq!(cell(&dom, "errors", 0), "0");
    let json = run.json.as_ref().unwrap();
    assert_eq!(cell(&dom, "requests_per_s", 0), format!("{:.2}", json["requests_per_s"].as_f64().unwrap()));
    // The stage boundary is marked, and both spectra are drawn.
    assert!(dom.contains("class=\"mark\""), "no stage mark");
    assert!(dom.contains(">corrected<") && dom.contains(">uncorrected<"), "spectra");
    // A screenshot, to look at.
    let png = dir.path().join("run.png");
    let shot = Command::new(chromium())
        .args(["--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--window-size=1500,1100"])
        .arg(format!("--screenshot={}", png.display()))
        .arg(format!("file://{}", page.display()))
        .output()
        .unwrap();
    assert!(shot.status.success());
    assert!(std::fs::metadata(&png).unwrap().len() > 10_000);
}

#[test]
fn saved_results_are_overlaid_and_a_proxy_run_gets_its_charts() {
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("proxy.html");
    let line = format!("proxy --hit-rate 1 --hotset 5 -t 1 -c 2 -d 1s --html {}", page.display());
    let proxy = strain(&args(&line));
    assert_eq!(proxy.code, 0, "{}", proxy.stderr);
    check_page(&page, 6);
    // Two saved results on one page, labelled.
    let origin = Origin::start(&["-t", "1"]);
    let url = origin.url();
    let mut files = Vec::new();
    for name in ["a", "b"] {
        let path = dir.path().join(format!("{name}.json"));
        let run = strain_raw(&[
            "-t",
            "1",
            "-c",
            "2",
            "-d",
            "1s",
            "--interval",
            "200ms",
            "--json",
            path.to_str().unwrap(),
            &url,
        ]);
        assert_eq!(run.code, 0, "{}", run.stderr);
        files.push(path.display().to_string());
    }
    let both = dir.path().join("both.html");
    let run = strain_raw(&[
        "report",
        &files[0],
        &files[1],
        "-o",
        both.to_str().unwrap(),
        "--label",
        "before",
        "--label",
        "after",
    ]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let dom = check_page(&both, 4);
    assert!(dom.contains(">before achieved<") && dom.contains(">after achieved<"), "labels");
    let first: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&files[0]).unwrap()).unwrap();
    assert_eq!(cell(&dom, "requests", 0), first["requests"].to_string());
    // `compare` draws the same overlay of its two sides.
    let overlay = dir.path().join("compare.html");
    let run = strain_raw(&["compare", &files[0], &files[1], "--html", overlay.to_str().unwrap()]);
    // One run a side: inconclusive (97) unless far beyond run-to-run noise.
    assert!(matches!(run.code, 0 | 97 | 98), "{}", run.stderr);
    let dom = check_page(&overlay, 4);
    assert!(dom.contains(">base a.json achieved<") && dom.contains(">new b.json achieved<"), "labels");
}

#[test]
fn report_refuses_what_is_not_a_result() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.json");
    std::fs::write(&bad, "{\"hello\": 1}").unwrap();
    let out = dir.path().join("x.html");
    for input in [bad.to_str().unwrap(), "/no/such/file.json"] {
        let run = strain_raw(&["report", input, "-o", out.to_str().unwrap()]);
        assert_eq!(run.code, 2, "{}", run.stderr);
        assert!(run.stderr.starts_with("strain: ") && run.stderr.lines().count() == 1, "{}", run.stderr);
        assert!(!out.exists());
    }
}

#[test]
fn a_find_max_page_shows_the_max_rate_of_its_json_and_report_redraws_it() {
    let search = crate::find_max_report::search();
    let dir = tempfile::tempdir().unwrap();
    let (json, page, again) = (dir.path().join("f.json"), dir.path().join("f.html"), dir.path().join("r.html"));
    std::fs::write(&json, &search.json_text).unwrap();
    std::fs::write(&page, &search.html).unwrap();
    // The whole curve, and the same from the knee to the first fail (the search overshot to 4,000/s).
    let dom = check_page(&page, 2);
    // The origin's capacity is 2,000/s, so the answer has four digits grouped by a comma.
    // Rounded as `{:.0}` rounds (half to even: bisection often lands on 2,062.5).
    let max: u64 = format!("{:.0}", search.json["max_rate"].as_f64().unwrap()).parse().unwrap();
    assert_eq!(cell(&dom, "max_rate", 0), format!("{},{:03}", max / 1000, max % 1000));
    let steps = search.json["steps"].as_array().unwrap().len();
    assert_eq!(dom.matches("<tr").count(), steps + 1, "a row per step under the header");
    assert_eq!(dom.matches("<tr style=\"font-weight:bold\">").count(), 1, "the max rate's step stands out");
    // `strain report` draws the same page from the saved JSON.
    let run = strain_raw(&["report", json.to_str().unwrap(), "-o", again.to_str().unwrap()]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(std::fs::read_to_string(&again).unwrap(), search.html);
    check_page(&again, 2);
    // A search has a page of its own: beside a run's result it is a usage error, and no page.
    let both = dir.path().join("both.html");
    let run = strain_raw(&["report", json.to_str().unwrap(), json.to_str().unwrap(), "-o", both.to_str().unwrap()]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert_eq!(run.stderr, "strain: a find-max search gets a page of its own: give its JSON alone (2 files given)\n");
    assert!(!both.exists());
}
