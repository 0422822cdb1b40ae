//! `strain compare`: two URLs run the A/B runner ([`crate::compare::ab`]) with the load the
//! flags describe; result files are read and judged as they are. Either way the verdict is
//! printed (and written as JSON and HTML), and becomes the exit code: 98 a regression, 97
//! inconclusive, 0 otherwise. A file that is missing, is not a result, or is of a different
//! test is a usage error.

use std::io::{IsTerminal, Write};
use std::path::Path;

use clap::parser::ValueSource;
use clap::ArgMatches;

use super::flags::{CompareFlags, LengthFlags, ResultFiles, RunnerFlags};
use super::units::RoundsArg;
use super::{load, CliError, EXIT_INCONCLUSIVE, EXIT_OK, EXIT_REGRESSION};
use crate::compare::ab::{self, AbEvent, AbSetup, AbSide, Rounds};
use crate::compare::{self, render, runs, Comparison, Rule, Side};
use crate::report::Output;
use crate::result::RunDoc;

/// Flags that mean something with saved results; every other one is for the A/B runner.
const SAVED_FLAGS: [&str; 7] = ["base", "new", "fail_on_regression", "allow_different_url", "force", "json", "html"];

/// Runs `strain compare`; `given` tells which flags were on the command line.
pub fn run(f: &CompareFlags, given: Option<&ArgMatches>) -> Result<i32, CliError> {
    for path in [&f.files.json, &f.files.html].into_iter().flatten() {
        super::check_writable(path)?;
    }
    if !(f.fail_on_regression.is_finite() && f.fail_on_regression >= 0.0) {
        return Err(CliError::Usage(format!(
            "--fail-on-regression {}: expected a percentage >= 0",
            f.fail_on_regression
        )));
    }
    let urls = f.base.iter().filter(|a| is_url(a)).count();
    match (urls, f.base.len()) {
        (0, _) => saved(f, given),
        (2, 2) => runner(f),
        _ => Err(CliError::Usage(
            "compare takes two URLs (the A/B runner) or result files (BASE NEW, or BASE... -- NEW...), not a mix"
                .into(),
        )),
    }
}

fn is_url(s: &str) -> bool {
    ["http://", "https://"].iter().any(|p| s.get(..p.len()).is_some_and(|h| h.eq_ignore_ascii_case(p)))
}

/// Saved results: BASE NEW, or BASE... -- NEW....
fn saved(f: &CompareFlags, given: Option<&ArgMatches>) -> Result<i32, CliError> {
    if let Some(flag) = given.and_then(runner_flag_given) {
        return Err(CliError::Usage(format!(
            "{flag} is for the A/B runner (compare URL_A URL_B); saved results are compared as they are"
        )));
    }
    let (base_files, new_files): (&[String], &[String]) = if f.new.is_empty() {
        match f.base.as_slice() {
            [base, new] => (std::slice::from_ref(base), std::slice::from_ref(new)),
            _ => {
                return Err(CliError::Usage(
                    "compare takes BASE NEW, or several files per side: BASE... -- NEW...".into(),
                ))
            }
        }
    } else {
        (&f.base, &f.new)
    };
    let base = read_side(base_files)?;
    let new = read_side(new_files)?;
    if !f.force {
        let first = &base[0];
        for doc in base.iter().chain(&new).skip(1) {
            if let Some(what) = runs::mismatch(&first.1, &doc.1, f.allow_different_url) {
                return Err(CliError::Usage(format!(
                    "{} and {} differ in {what}: compare like with like, or give --force{}",
                    first.0,
                    doc.0,
                    if what.starts_with("URL") { " (or --allow-different-url)" } else { "" }
                )));
            }
        }
    }
    let c = compare::compare(
        &Side::of(base.iter().map(|d| &d.1)),
        &Side::of(new.iter().map(|d| &d.1)),
        Rule::fixed(f.fail_on_regression),
    );
    let label = |side: &str, docs: &[(String, RunDoc)]| -> Vec<(String, RunDoc)> {
        docs.iter().map(|(p, d)| (format!("{side} {}", super::file_name(Path::new(p))), d.clone())).collect()
    };
    let mut all = label("base", &base);
    all.extend(label("new", &new));
    report(&f.files, &c, &all)
}

/// The first runner-only flag given, by its long name.
fn runner_flag_given(m: &ArgMatches) -> Option<String> {
    let mut cmd = <super::flags::Cli as clap::CommandFactory>::command();
    // A command's flags are defined when it is built (`flags::Deferred`).
    cmd.build();
    let sub = cmd.find_subcommand("compare")?;
    let given = sub
        .get_arguments()
        .filter(|a| !SAVED_FLAGS.contains(&a.get_id().as_str()))
        .find(|a| m.value_source(a.get_id().as_str()) == Some(ValueSource::CommandLine))
        .map(|a| match (a.get_long(), a.get_short()) {
            (Some(l), _) => format!("--{l}"),
            (None, Some(s)) => format!("-{s}"),
            (None, None) => a.get_id().to_string(),
        });
    given
}

/// The results of one side's files, each with its path.
fn read_side(files: &[String]) -> Result<Vec<(String, RunDoc)>, CliError> {
    files
        .iter()
        .map(|path| {
            let text = std::fs::read_to_string(path)
                .map_err(|source| usage(compare::CompareError::Read { path: path.clone(), source }))?;
            Ok((path.clone(), runs::parse_result(path, &text).map_err(usage)?))
        })
        .collect()
}

/// The A/B runner: both URLs, interleaved, the load the flags describe.
fn runner(f: &CompareFlags) -> Result<i32, CliError> {
    let shape = ab_shape(&f.length, &f.runner)?;
    // The files are read once for both sides.
    let inputs = load::Inputs::read(&f.request)?;
    let request = load::RequestShape { flags: &f.request, inputs: &inputs };
    let side = |url: &str, prepare: &Option<String>| -> Result<AbSide, CliError> {
        let config = load::load(
            load::http_target(url)?,
            &f.connect,
            load::protocol(&f.http)?,
            Some(shape),
            load::Requests::Flags(request),
            crate::defaults::CONNECTIONS,
        )?;
        let workload = load::workload(&f.request, url, &f.new)?;
        Ok(AbSide { config, workload, prepare: prepare.clone() })
    };
    let plan = ab_setup(
        side(&f.base[0], &f.runner.prepare_a)?,
        side(&f.base[1], &f.runner.prepare_b)?,
        &f.runner,
        f.fail_on_regression,
    );
    run_ab(&plan, &f.runner, &f.files)
}

/// The shape of each A/B run: one held load for a duration (no -n, no --stages), 1 s rows
/// unless told, the warm-up before the measured duration.
pub fn ab_shape<'a>(length: &'a LengthFlags, runner: &RunnerFlags) -> Result<load::RunShape<'a>, CliError> {
    if length.requests.is_some() {
        return Err(CliError::Usage("the A/B runner runs each side for a duration (-d): -n is not for compare".into()));
    }
    if length.stages.is_some() {
        return Err(CliError::Usage("the A/B runner holds one load: give -R, not --stages".into()));
    }
    // 1 s rows unless told, as always: a comparison of one run a side samples them.
    let interval = Some(runner.interval.unwrap_or(crate::defaults::COMPARE_INTERVAL));
    Ok(load::RunShape {
        length,
        segment: None,
        interval,
        warmup: runner.warmup.0,
        replay: None,
        time_bound: None,
        pages: None,
    })
}

/// The A/B plan of two sides, as the runner's flags ask.
pub fn ab_setup(a: AbSide, b: AbSide, runner: &RunnerFlags, allowed_pct: f64) -> AbSetup {
    AbSetup {
        a,
        b,
        rounds: match runner.rounds {
            RoundsArg::Fixed(n) => Rounds::Fixed(n),
            RoundsArg::Auto => Rounds::Auto { max: runner.max_rounds },
        },
        allowed_pct,
        command: load::command_line(),
    }
}

/// Runs an A/B plan (the sides' loads settled), prints the verdict, writes what `files` ask.
pub fn run_ab(plan: &AbSetup, runner: &RunnerFlags, files: &ResultFiles) -> Result<i32, CliError> {
    for path in [&files.json, &files.html].into_iter().flatten() {
        super::check_writable(path)?;
    }
    if let Some(dir) = &runner.save_runs {
        std::fs::create_dir_all(dir)
            .map_err(|source| CliError::Io { what: format!("cannot create {}", dir.display()), source })?;
        super::check_writable(&dir.join("a-1.json"))?;
    }
    let stop = super::stop_flag()?;
    let progress = std::io::stderr().is_terminal();
    let mut saved = Ok(());
    let mut warned = false;
    let outcome = ab::run(plan, &stop, &mut |event| match event {
        AbEvent::Starting { side, round, of } if progress => {
            eprint!("\rstrain: round {round}/{of}: running {side}…");
            let _ = std::io::stderr().flush();
        }
        AbEvent::Starting { .. } => {}
        AbEvent::Ran { side, round, doc } => {
            if let Some(shared) = doc.shared_cpus.as_ref().filter(|_| !warned) {
                warned = true;
                eprintln!("{}", shared.warning(&doc.config.url));
            }
            if progress {
                let p = |k: &str| crate::report::units::time_us(doc.latency_us.at(k).unwrap_or(0) as f64);
                eprintln!(
                    "\rstrain: round {round}: {side} {:.0} req/s, p50 {}, p99 {}, {} errors",
                    doc.requests_per_s,
                    p("50"),
                    p("99"),
                    doc.error_total()
                );
            }
            if let Some(dir) = &runner.save_runs {
                let path = dir.join(format!("{}-{round}.json", side.to_ascii_lowercase()));
                if saved.is_ok() {
                    saved = super::write_file(&path, &doc.to_json());
                }
            }
        }
    })
    .map_err(|e| CliError::Usage(e.to_string()))?;
    saved?;
    if outcome.stopped {
        eprintln!("strain: stopped after {} rounds: the verdict rests on those", outcome.rounds);
    }
    let runs: Vec<(String, RunDoc)> = [("A", &outcome.a), ("B", &outcome.b)]
        .into_iter()
        .flat_map(|(side, docs)| {
            docs.iter().enumerate().map(move |(i, d)| (format!("{side} round {}", i + 1), d.clone()))
        })
        .collect();
    report(files, &outcome.comparison, &runs)
}

/// Prints the comparison, writes its JSON and HTML, and returns the exit code.
fn report(files: &ResultFiles, c: &Comparison, runs: &[(String, RunDoc)]) -> Result<i32, CliError> {
    let json = files.json.clone().map(Output::of);
    let mut text = render::text(c);
    let shared: Vec<&crate::net::host::SharedCpus> = runs.iter().filter_map(|(_, d)| d.shared_cpus.as_ref()).collect();
    if let Some(first) = shared.first() {
        // Before the verdict, which stays the last line.
        let at = text.rfind("Verdict: ").unwrap_or(text.len());
        text.insert_str(at, &format!(
            "Shared CPUs: in {} of {} runs the server and strain both ran on CPUs {}: each side's numbers include their competition for CPU time, which varies from run to run; pin them apart before trusting a verdict.\n",
            shared.len(),
            runs.len(),
            crate::net::host::cpu_list(&first.cpus)
        ));
    }
    let _ = super::print::text_stream(json.as_ref()).write_all(text.as_bytes());
    if let Some(json) = &json {
        super::print::emit(json, &render::json(c, runs))?;
    }
    if let Some(path) = &files.html {
        super::write_file(path, &render::html(c, runs))?;
    }
    Ok(if c.regressed() {
        EXIT_REGRESSION
    } else if c.inconclusive() {
        EXIT_INCONCLUSIVE
    } else {
        EXIT_OK
    })
}

fn usage(e: compare::CompareError) -> CliError {
    CliError::Usage(e.to_string())
}
