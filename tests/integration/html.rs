//! Issues 11 and 21: the HTML pages, checked in headless Chromium (installed by the test
//! command). Each page kind (run, overlay, comparison, merge, find-max) loads with no console
//! error and makes no request; the tests read the DOM: the answer first (thresholds ✓/✗ with
//! their values), tick labels on a 1-2-5 grid, distinct series colours, no stage text without
//! stages, no empty errors chart, a heatmap column per interval, and a size budget for an hour.
//!
//! `STRAIN_SCREENSHOTS=1` also writes each page's screenshot into docs/img/ (the pictures in
//! README.md and docs/REPORTS.md come from there).

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

use crate::harness::{args, exclusive, strain, strain_at, strain_raw, Origin};

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

/// A screenshot of `page` at a wide window, into docs/img/`name` when asked for.
fn screenshot(page: &Path, name: &str, height: u32) {
    if std::env::var_os("STRAIN_SCREENSHOTS").is_none() {
        return;
    }
    let png = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/img").join(name);
    std::fs::create_dir_all(png.parent().unwrap()).unwrap();
    let shot = Command::new(chromium())
        .args(["--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars"])
        .arg(format!("--window-size=1400,{height}"))
        .arg(format!("--screenshot={}", png.display()))
        .arg(format!("file://{}", page.display()))
        .output()
        .unwrap();
    assert!(shot.status.success());
}

/// What every page must be: self-contained (a policy that forbids the rest, one inline script,
/// nothing referenced), loading without a console error, with `charts` charts; its DOM.
fn check_page(page: &Path, charts: usize) -> String {
    let text = std::fs::read_to_string(page).unwrap();
    assert!(text.contains("Content-Security-Policy\" content=\"default-src 'none'"), "no CSP");
    for attr in ["src=", "href=", "@import", "url("] {
        assert!(!text.contains(attr), "the page refers to something outside it: {attr}");
    }
    assert_eq!(text.matches("<script").count(), 1, "one inline script");
    let (dom, log) = load(page);
    assert!(!log.contains("CONSOLE") && !log.contains("Uncaught") && !log.contains("Refused"), "console: {log}");
    // The tooltip script ran (its hash matched the page's policy): it adds the tooltip box and a
    // guide line to every chart with data.
    assert!(dom.contains("<div class=\"tip\""), "the tooltip script did not run");
    let with_data = dom.matches("<svg class=\"chart").count() - dom.matches("&quot;px&quot;:[]").count();
    assert_eq!(dom.matches("class=\"guide\"").count(), with_data, "a guide line per chart with data");
    assert_eq!(dom.matches("<svg class=\"chart").count(), charts, "{}", titles(&dom).join(" | "));
    for axis in axes(&dom) {
        on_grid(&axis);
    }
    dom
}

/// The charts' titles, in order.
fn titles(dom: &str) -> Vec<String> {
    dom.split("class=\"title\">").skip(1).map(|s| s.split('<').next().unwrap().to_string()).collect()
}

/// Every axis of the page: (its scale, its tick labels).
fn axes(dom: &str) -> Vec<(String, Vec<String>)> {
    let mut out = Vec::new();
    for part in dom.split("<g class=\"axis ").skip(1) {
        let scale = part.split("data-scale=\"").nth(1).unwrap().split('"').next().unwrap().to_string();
        let body = part.split("</g>").next().unwrap();
        let ticks = body.split("class=\"tick\">").skip(1).map(|s| s.split('<').next().unwrap().to_string()).collect();
        out.push((scale, ticks));
    }
    out
}

/// A tick label's value (thousands separators dropped).
fn value(label: &str) -> f64 {
    label.replace(',', "").parse().unwrap_or_else(|_| panic!("tick '{label}' is not a number"))
}

/// True when `v` is 1, 2 or 5 times a power of ten.
fn one_two_five(v: f64) -> bool {
    let m = v / 10f64.powf(v.log10().floor());
    [1.0, 2.0, 5.0, 10.0].iter().any(|n| (m - n).abs() < 1e-6)
}

/// An axis's ticks lie on a 1-2-5 grid: a linear axis steps evenly by 1, 2 or 5 × 10^k from a
/// multiple of the step; a log axis has 1, 2 and 5 of each decade.
fn on_grid((scale, ticks): &(String, Vec<String>)) {
    match scale.as_str() {
        "lin" => {
            let v: Vec<f64> = ticks.iter().map(|t| value(t)).collect();
            assert!(v.len() >= 2, "{ticks:?}");
            let step = v[1] - v[0];
            assert!(one_two_five(step), "step {step} of {ticks:?}");
            for (w, t) in v.windows(2).zip(ticks) {
                assert!(((w[1] - w[0]) - step).abs() < step * 1e-6, "uneven {ticks:?}");
                assert!(((w[0] / step) - (w[0] / step).round()).abs() < 1e-6, "{t} off the grid in {ticks:?}");
            }
        }
        "log" => {
            for t in ticks {
                assert!(one_two_five(value(t)), "{t} in {ticks:?}");
            }
        }
        // The spectrum names percentiles: 0%, 90%, 99%, ...
        "pct" => assert!(ticks.iter().all(|t| t.ends_with('%')), "{ticks:?}"),
        other => panic!("axis scale {other}"),
    }
}

/// The distinct stroke colours of the lines drawn.
fn line_colours(dom: &str) -> BTreeSet<String> {
    dom.split("<polyline ")
        .skip(1)
        .map(|p| p.split("stroke=\"").nth(1).unwrap().split('"').next().unwrap().to_string())
        .collect()
}

/// The text of the `row`-th element marked `data-metric="NAME"` (a summary table's cell, or a
/// search page's answer).
fn cell(dom: &str, metric: &str, row: usize) -> String {
    let tag = format!(" data-metric=\"{metric}\">");
    let at = dom.match_indices(&tag).nth(row).unwrap_or_else(|| panic!("no {metric} cell {row}")).0 + tag.len();
    dom[at..].split('<').next().unwrap().to_string()
}

/// A count as the page writes it: `12,345`.
fn grouped(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// The page's text with its tags and the data the tooltips carry left out.
fn visible_text(dom: &str) -> String {
    let mut out = String::new();
    let mut inside = false;
    let mut quoted = false;
    for c in dom.chars() {
        match c {
            '<' if !inside => inside = true,
            '"' if inside => quoted = !quoted,
            '>' if inside && !quoted => inside = false,
            c if !inside => out.push(c),
            _ => {}
        }
    }
    out
}

/// The number of points of the first line drawn in the chart titled `title`.
fn points_in(dom: &str, title: &str) -> usize {
    let chart = dom.split(&format!("class=\"title\">{title}<")).nth(1).unwrap_or_else(|| panic!("no chart {title}"));
    let line = chart.split("<polyline points=\"").nth(1).unwrap().split('"').next().unwrap();
    line.split_whitespace().count()
}

#[test]
fn a_run_with_a_stall_and_a_failing_threshold_says_so_first_and_draws_the_stall() {
    // Issue 21's run: -R 2000 with a 1 s server stall and a threshold that fails.
    let _alone = exclusive();
    let origin = Origin::start(&["-t", "1", "--stall-at", "2s", "--stall-for", "1s"]);
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("run.html");
    let line = format!("-t 1 -c 20 -d 6s -R 2000 --threshold p99<50ms --threshold errors<1% --html {}", page.display());
    let run = strain(&[&args(&line)[..], &[&origin.url()]].concat());
    assert_eq!(run.code, 99, "{}", run.stderr);
    let json = run.json.as_ref().unwrap();
    // Throughput, latency (linear and log), heatmap, distribution, spectrum, status codes,
    // connections, late sends.
    let dom = check_page(&page, 9);
    screenshot(&page, "report-run.png", 2250);
    // The answer comes first: the failed threshold with its value, as the text report says it.
    let answer = dom.find("data-verdict=\"fail\"").expect("no verdict");
    assert!(answer < dom.find("<svg").unwrap(), "the verdict is not first");
    let failed = run.stdout.lines().find(|l| l.contains("✗ p99<50ms: ")).unwrap();
    let value = failed.split(": ").nth(1).unwrap();
    assert!(
        dom.contains(&format!("data-threshold=\"p99&lt;50ms\" data-passed=\"false\">✗ <b>p99&lt;50ms</b>: {value}<")),
        "{value}"
    );
    assert!(dom.contains("data-passed=\"true\">✓ <b>errors&lt;1%</b>: 0.000%<"), "the passed threshold");
    // The summary: requests, target, late and unsent sends, exactly as the JSON has them.
    assert_eq!(cell(&dom, "requests", 0), grouped(run.num("/requests")));
    assert_eq!(cell(&dom, "target_per_s", 0), "2,000");
    assert_eq!(cell(&dom, "late", 0), grouped(run.num("/rate/late")));
    assert_eq!(cell(&dom, "unsent", 0), grouped(run.num("/rate/unsent")));
    assert_eq!(cell(&dom, "protocol", 0), "http/1.1");
    // Enough points to see the stall in a 6 s run; a heatmap column per interval.
    let rows = json["intervals"].as_array().unwrap().len();
    assert!(rows >= 40, "{rows} intervals");
    assert_eq!(points_in(&dom, "Throughput"), rows);
    assert!(dom.contains(&format!("data-columns=\"{rows}\"")), "heatmap columns");
    assert_eq!(dom.matches("<g class=\"col\">").count(), rows);
    // The stall is in the heatmap: some cell at a second or more (the slowest bucket's tooltip).
    assert!(dom.contains(" s to "), "no latency bucket of a second");
    // Distinct colours, a legend, and nothing about stages or an empty errors chart.
    assert!(line_colours(&dom).len() >= 4, "{:?}", line_colours(&dom));
    assert!(dom.contains("class=\"legend\">p99<") && dom.contains("class=\"legend\">target<"));
    assert!(!visible_text(&dom).to_lowercase().contains("stage"), "stage text without stages");
    assert!(!dom.contains("class=\"mark\""), "stage marks without stages");
    assert!(dom.contains("Errors: no errors") && !titles(&dom).iter().any(|t| t.starts_with("Errors")), "errors chart");
    // Axis titles carry the unit; the latency toggle offers both scales.
    let t = visible_text(&dom);
    assert!(t.contains("Requests per second") && t.contains("Time (s)") && t.contains("Latency ("), "axis titles");
    assert!(dom.contains("data-scale=\"log\"") && dom.contains(">log</label>"), "log scale");
}

#[test]
fn stages_errors_and_http2_get_their_panels() {
    // Every response a 503, over h2c, in two stages: the errors chart, the stage boundary, the
    // HTTP/2 panel.
    let origin = Origin::start(&["-t", "1", "--status", "503"]);
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("h2.html");
    let line = format!("--http2 -m 2 -t 1 -c 2 --stages 1s:300,1s:600 --html {}", page.display());
    let run = strain_at(&line, &origin.url());
    assert_eq!(run.code, 0, "{}", run.stderr);
    // The run's nine charts and the errors chart.
    let dom = check_page(&page, 10);
    screenshot(&page, "report-errors-h2.png", 2500);
    assert!(titles(&dom).contains(&"Errors by kind".to_string()), "{:?}", titles(&dom));
    assert!(dom.contains("class=\"legend\">status<"), "the status errors' layer");
    assert!(dom.contains("class=\"legend\">503<"), "the status code's layer");
    assert!(dom.contains("Dotted lines: stage boundaries.") && dom.contains("class=\"mark\""), "stage marks");
    assert!(dom.contains("data-panel=\"http2\""), "HTTP/2 panel");
    assert_eq!(
        (cell(&dom, "streams", 0), cell(&dom, "goaways", 0)),
        ("2".to_string(), grouped(run.num("/http2/goaways")))
    );
    assert_eq!(cell(&dom, "protocol", 0), "h2c");
    assert_eq!(cell(&dom, "errors", 0), grouped(run.num("/requests")));
}

#[test]
fn saved_results_overlay_a_proxy_run_gets_its_charts_and_a_comparison_opens_with_its_verdict() {
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("proxy.html");
    let line = format!("proxy --hit-rate 1 --hotset 5 -t 1 -c 2 -d 1s --html {}", page.display());
    let proxy = strain(&args(&line));
    assert_eq!(proxy.code, 0, "{}", proxy.stderr);
    // The run's eight (closed loop: no late sends) and hit ratio, first byte.
    let dom = check_page(&page, 10);
    screenshot(&page, "report-proxy.png", 2300);
    assert!(
        titles(&dom).contains(&"Hit ratio".to_string())
            && titles(&dom).contains(&"First byte and full response, p99".to_string())
    );
    assert!(cell(&dom, "hit_ratio", 0).starts_with("0.") || cell(&dom, "hit_ratio", 0).starts_with("1."));
    // Two saved results on one page, labelled, one colour each.
    let origin = Origin::start(&["-t", "1"]);
    let url = origin.url();
    let mut files = Vec::new();
    for name in ["a", "b"] {
        let path = dir.path().join(format!("{name}.json"));
        let run = strain_raw(&["-t", "1", "-c", "2", "-d", "1s", "--json", path.to_str().unwrap(), &url]);
        assert_eq!(run.code, 0, "{}", run.stderr);
        files.push(path.display().to_string());
    }
    let both = dir.path().join("both.html");
    let line = format!("report {} {} -o {} --label before --label after", files[0], files[1], both.display());
    let run = strain_raw(&args(&line));
    assert_eq!(run.code, 0, "{}", run.stderr);
    // Throughput, latency ×2, a heatmap and status codes each, distribution, spectrum, connections.
    let dom = check_page(&both, 10);
    assert!(dom.contains(">before achieved<") && dom.contains(">after achieved<"), "labels");
    assert!(titles(&dom).contains(&"Latency heatmap: before".to_string()));
    let first: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&files[0]).unwrap()).unwrap();
    assert_eq!(cell(&dom, "requests", 0), grouped(first["requests"].as_u64().unwrap()));
    let colours = line_colours(&dom);
    assert!(colours.contains("#0072B2") && colours.contains("#E69F00"), "{colours:?}");
    // `compare` draws the same overlay under its verdict, and its JSON redraws it.
    let (overlay, saved) = (dir.path().join("compare.html"), dir.path().join("compare.json"));
    let line = format!("compare {} {} --html {} --json {}", files[0], files[1], overlay.display(), saved.display());
    let run = strain_raw(&args(&line));
    // One run a side: inconclusive (97) unless far beyond run-to-run noise.
    assert!(matches!(run.code, 0 | 97 | 98), "{}", run.stderr);
    let dom = check_page(&overlay, 10);
    screenshot(&overlay, "report-compare.png", 1500);
    let verdict = dom.find("<section class=\"answer").expect("no verdict");
    assert!(verdict < dom.find("<svg").unwrap() && dom.contains("<tr data-metric=\"p99\""), "the verdict first");
    assert!(dom.contains(">base a.json achieved<") && dom.contains(">new b.json achieved<"), "labels");
    let again = dir.path().join("again.html");
    let run = strain_raw(&["report", saved.to_str().unwrap(), "-o", again.to_str().unwrap()]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(std::fs::read_to_string(&again).unwrap(), std::fs::read_to_string(&overlay).unwrap());
    // A comparison has a page of its own.
    let run = strain_raw(&["report", saved.to_str().unwrap(), &files[0], "-o", again.to_str().unwrap()]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert_eq!(run.stderr, "strain: a comparison gets a page of its own: give its JSON alone (2 files given)\n");
}

#[test]
fn an_hour_long_result_stays_under_a_megabyte() {
    // A real short run's rows (with their histograms), repeated into 3,600 one-second rows.
    let origin = Origin::start(&["-t", "1"]);
    let dir = tempfile::tempdir().unwrap();
    let short = dir.path().join("short.json");
    let line = format!("-t 1 -c 4 -d 2s -R 500 --interval 1s --json {} {}", short.display(), origin.url());
    let run = strain_raw(&args(&line));
    assert_eq!(run.code, 0, "{}", run.stderr);
    let mut doc: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&short).unwrap()).unwrap();
    let row = doc["intervals"][0].clone();
    assert!(row["latency_histogram"].is_string(), "rows carry their histograms");
    let rows: Vec<serde_json::Value> = (0..3600)
        .map(|i| {
            let mut r = row.clone();
            r["start_s"] = serde_json::json!(f64::from(i));
            r["length_s"] = serde_json::json!(1.0);
            r
        })
        .collect();
    doc["intervals"] = serde_json::Value::Array(rows);
    doc["duration_s"] = serde_json::json!(3600.0);
    let hour = dir.path().join("hour.json");
    std::fs::write(&hour, doc.to_string()).unwrap();
    let page = dir.path().join("hour.html");
    let run = strain_raw(&["report", hour.to_str().unwrap(), "-o", page.to_str().unwrap()]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let size = std::fs::metadata(&page).unwrap().len();
    assert!(size < 1_000_000, "{size} bytes");
    let dom = check_page(&page, 9);
    // 3,600 rows drawn as 240 columns of 15, the time axis in minutes.
    assert!(dom.contains("data-columns=\"240\"") && dom.contains("Each column is 15 intervals"), "columns");
    assert_eq!(points_in(&dom, "Throughput"), 240);
    assert!(visible_text(&dom).contains("Time (min)"));
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
    screenshot(&page, "report-find-max.png", 1100);
    // The answer comes first.
    assert!(dom.find("data-verdict=\"pass\"").unwrap() < dom.find("<svg").unwrap(), "the answer first");
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
    // A search has a page of its own: beside a run's result it is a usage error, and no page.
    let both = dir.path().join("both.html");
    let run = strain_raw(&["report", json.to_str().unwrap(), json.to_str().unwrap(), "-o", both.to_str().unwrap()]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert_eq!(run.stderr, "strain: a find-max search gets a page of its own: give its JSON alone (2 files given)\n");
    assert!(!both.exists());
}

#[test]
fn a_replay_page_draws_the_recorded_rate_against_the_replayed() {
    let origin = Origin::start(&["-t", "1"]);
    let dir = tempfile::tempdir().unwrap();
    // 1 s at 200/s, 1 s of silence, 1 s at 600/s.
    let phases = [(0, 200, 200), (2_000_000, 600, 600)];
    let text = crate::harness::recording(
        phases
            .into_iter()
            .flat_map(|(start_us, rate, n)| (0..n).map(move |k| (start_us + k * 1_000_000 / rate, "/r".into()))),
    );
    let file = dir.path().join("r.jsonl");
    std::fs::write(&file, text).unwrap();
    let page = dir.path().join("replay.html");
    let (file, page_s) = (file.display().to_string(), page.display().to_string());
    let run = strain(&["replay", "-t", "1", "-c", "8", "--interval", "250ms", "--html", &page_s, &file, &origin.url()]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    // Each row's target is the recording's rate over it: exact where a row holds whole gaps.
    let rows = run.json.as_ref().unwrap()["intervals"].as_array().unwrap().clone();
    // Rows are cut a little after their time, so a row that ends where a phase ends (rows 3, 7
    // and 11) holds a sliver of what follows, more under load: only the rows inside are exact.
    let targets: Vec<f64> = rows.iter().take(12).map(|r| r["target_per_s"].as_f64().unwrap()).collect();
    let near = |k: usize, want: f64| (targets[k] - want).abs() <= 0.01 * want + 0.5;
    assert!((0..3).all(|k| near(k, 200.0)), "{targets:?}");
    assert!((4..7).all(|k| near(k, 0.0)), "{targets:?}");
    assert!((8..11).all(|k| near(k, 600.0)), "{targets:?}");
    let dom = check_page(&page, 9);
    screenshot(&page, "report-replay.png", 1400);
    assert!(dom.contains("class=\"legend\">recorded<") && dom.contains("class=\"legend\">replayed<"), "legends");
}
