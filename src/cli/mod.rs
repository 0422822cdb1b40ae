//! The command line: raw flags ([`flags`]) become a validated [`Config`] here, and each mode
//! (load a URL, run the origin, run the demo) is wired from its parts. The binary's `main`
//! only prints the error this returns.

pub mod compare;
pub mod find_max;
pub mod flags;
pub mod k8s;
pub mod load;
pub mod merge;
pub mod print;
pub mod proxy;
pub mod units;

pub(crate) use print::{check_writable, run_and_report, write_file, write_result};

use std::ffi::OsString;
use std::io::Write;
use std::net::TcpListener;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use clap::Parser;

use crate::config::ConfigError;
use crate::origin::{self, OriginConfig, OriginError};
use crate::report;
use crate::result;
use crate::run::{OriginPlacement, RunConfig, RunError};
use flags::{Cli, Command, DemoFlags, LoadFlags, OriginFlags};

// Exit codes: one table, mirrored in README.md ("Exit codes") and tested in
// tests/integration/exit_codes.rs.
/// The run executed and measured something.
pub const EXIT_OK: i32 = 0;
/// The run started but failed: a script error, or no connection ever succeeded.
pub const EXIT_FAILED: i32 = 1;
/// A usage or setup error: nothing was loaded.
pub const EXIT_USAGE: i32 = 2;
/// A second Ctrl-C ended strain at once, without a report (128 + SIGINT, as shells report it).
pub const EXIT_INTERRUPTED: i32 = 130;
/// The run executed but a threshold failed (k6's code).
pub const EXIT_THRESHOLDS: i32 = 99;
/// `strain compare` found a significant regression beyond `--fail-on-regression`. 98, next to
/// 99: both mean "measured fine, judged failing", so CI can tell them from 1 and 2 (could not
/// run) with one test (>= 98), and low codes such as 3 stay free for failures to run.
pub const EXIT_REGRESSION: i32 = 98;

/// Exit code of `strain compare` when the evidence cannot decide (too few runs or intervals,
/// or noise too large for the allowed change): not a pass, so a CI gate does not read it as one.
pub const EXIT_INCONCLUSIVE: i32 = 97;

/// Why strain could not do what was asked; every variant exits with [`EXIT_USAGE`].
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    /// A flag or value is wrong.
    #[error("{0}")]
    Usage(String),
    /// The options do not form a valid test.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The test could not run.
    #[error(transparent)]
    Run(#[from] RunError),
    /// The origin server failed.
    #[error(transparent)]
    Origin(#[from] OriginError),
    /// Results cannot be merged.
    #[error(transparent)]
    Merge(#[from] crate::merge::MergeError),
    /// Live metrics could not be set up.
    #[error(transparent)]
    Metrics(#[from] crate::metrics::ExportError),
    /// A report or listener could not be set up.
    #[error("{what}: {source}")]
    Io {
        /// What was being done.
        what: String,
        /// The OS error.
        source: std::io::Error,
    },
}

impl CliError {
    /// The process exit code for this error.
    pub fn exit_code(&self) -> i32 {
        EXIT_USAGE
    }
}

/// Runs strain with these arguments (the first is the program name); returns the exit code.
pub fn run<I, T>(args: I) -> Result<i32, CliError>
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let args: Vec<OsString> = args.into_iter().map(Into::into).collect();
    if args.len() <= 1 {
        eprint!("{SHORT_USAGE}");
        return Ok(EXIT_USAGE);
    }
    // The matches are kept too: `compare` asks which flags were given, not just their values.
    let parsed = <Cli as clap::CommandFactory>::command()
        .try_get_matches_from(args)
        .and_then(|m| <Cli as clap::FromArgMatches>::from_arg_matches(&m).map(|cli| (cli, m)));
    let (cli, matches) = match parsed {
        Ok(parsed) => parsed,
        Err(e) if !e.use_stderr() => {
            // --help and --version; a closed pipe (`strain --help | head`) is not an error.
            let _ = write!(std::io::stdout(), "{e}");
            return Ok(EXIT_OK);
        }
        Err(e) => return Err(CliError::Usage(one_line(&e.render().to_string()))),
    };
    match cli.command {
        Some(Command::Origin(f)) => run_origin(&f),
        Some(Command::Demo(f)) => run_demo(&f),
        Some(Command::Proxy(f)) => proxy::run(&f),
        Some(Command::Report(f)) => run_report(&f),
        Some(Command::Compare(f)) => compare::run(&f, matches.subcommand_matches("compare")),
        Some(Command::FindMax(f)) => find_max::run(&f),
        Some(Command::Merge(f)) => merge::run(&f),
        Some(Command::K8sJob(f)) => k8s::run(&f),
        Some(Command::Completions { shell }) => {
            let mut cmd = <Cli as clap::CommandFactory>::command();
            clap_complete::generate(shell, &mut cmd, "strain", &mut std::io::stdout());
            Ok(EXIT_OK)
        }
        Some(Command::Man) => {
            let page = clap_mangen::Man::new(<Cli as clap::CommandFactory>::command());
            let mut out = Vec::new();
            page.render(&mut out)
                .map_err(|source| CliError::Io { what: "cannot render the man page".into(), source })?;
            let _ = std::io::stdout().write_all(&out);
            Ok(EXIT_OK)
        }
        None => run_load(&cli.load, OriginPlacement::Elsewhere),
    }
}

/// The version, with the commit it was built from when the build knew it.
pub const VERSION: &str = match option_env!("STRAIN_COMMIT") {
    Some(_) => concat!(env!("CARGO_PKG_VERSION"), " (", env!("STRAIN_COMMIT"), ")"),
    None => env!("CARGO_PKG_VERSION"),
};

/// What bare `strain` prints: how to start.
const SHORT_USAGE: &str = "\
strain: give a URL to load, or a command

Usage: strain [OPTIONS] <URL>
       strain <COMMAND> [OPTIONS]

Most used:
  strain demo                               load strain's built-in server, print the report
  strain -c 100 -d 30s URL                  load URL over 100 connections for 30 s
  strain find-max --slo 'p99<100ms' URL     the highest rate that meets an SLO

Every flag and command: strain --help
";

/// clap's message as one line: without its "error: " prefix, the usage and the pointer to
/// --help, but with what it lists (the missing arguments) and its tip (a similar flag).
fn one_line(msg: &str) -> String {
    let mut lines = msg.lines().map(str::trim).filter(|l| !l.is_empty());
    let first = lines.next().unwrap_or(msg).trim_start_matches("error: ").to_string();
    let rest: Vec<&str> =
        lines.take_while(|l| !l.starts_with("Usage:") && !l.starts_with("For more information")).collect();
    let (tips, listed): (Vec<&str>, Vec<&str>) = rest.into_iter().partition(|l| l.starts_with("tip:"));
    // The "did you mean" tips; not how to pass a flag-like value.
    let tips = tips.into_iter().filter(|t| t.contains("similar"));
    let mut out = first;
    if !listed.is_empty() {
        out = format!("{} {}", out.trim_end(), listed.join(", "));
    }
    for tip in tips {
        out = format!("{out} ({tip})");
    }
    out
}

/// Binds a Unix-domain socket at `path`. A socket file nothing accepts on (left by a server
/// that was killed) is replaced, as servers do; any other file is left alone.
fn bind_unix(path: &std::path::Path) -> Result<std::os::unix::net::UnixListener, CliError> {
    use std::os::unix::fs::FileTypeExt;
    use std::os::unix::net::{UnixListener, UnixStream};
    let fail = |source| CliError::Io { what: format!("cannot listen on unix:{}", path.display()), source };
    match UnixListener::bind(path) {
        Err(e) if e.kind() == std::io::ErrorKind::AddrInUse => {
            let is_socket = std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_socket());
            if !is_socket {
                return Err(CliError::Usage(format!(
                    "cannot listen on unix:{}: a file that is not a socket is there (strain leaves it alone)",
                    path.display()
                )));
            }
            if UnixStream::connect(path).is_ok() {
                return Err(CliError::Usage(format!(
                    "cannot listen on unix:{}: another server is listening there",
                    path.display()
                )));
            }
            std::fs::remove_file(path).map_err(fail)?;
            UnixListener::bind(path).map_err(fail)
        }
        other => other.map_err(fail),
    }
}

/// `strain <url>`: the load the flags describe, against `origin`.
fn run_load(f: &LoadFlags, origin: OriginPlacement) -> Result<i32, CliError> {
    // With --targets, the first target names the host when no URL does.
    let first = match (&f.url, &f.request.targets) {
        (None, Some(path)) => crate::workload::targets::read(path)
            .map_err(|e| CliError::Usage(e.to_string()))?
            .first()
            .map(|t| t.url.clone()),
        _ => None,
    };
    let url = f.url.as_deref().or(first.as_deref()).ok_or_else(|| CliError::Usage("a URL is required".into()))?;
    let mut config = load::load(url, &f.connect, Some(load::RunShape::of(&f.run)), crate::defaults::CONNECTIONS)?;
    let checks = load::checks(&f.run, &config, false)?;
    let workload = load::workload(&mut config, &f.request, url, &f.script_args)?;
    let outputs = load::outputs(&config, &f.run);
    let stop = stop_flag()?;
    let (code, result) = run_and_report(RunConfig { load: config, workload, origin, checks }, &outputs, &stop)?;
    if let Some(served) = result.origin_served {
        eprintln!("origin saw {} requests on {} connections", served.requests, served.connections);
    }
    Ok(code)
}

/// A flag set by the first Ctrl-C (and SIGTERM); a second Ctrl-C exits at once.
pub(crate) fn stop_flag() -> Result<Arc<AtomicBool>, CliError> {
    use signal_hook::consts::{SIGINT, SIGTERM};
    let stop = Arc::new(AtomicBool::new(false));
    let io = |source| CliError::Io { what: "cannot install the Ctrl-C handler".into(), source };
    for sig in [SIGINT, SIGTERM] {
        signal_hook::flag::register_conditional_shutdown(sig, EXIT_INTERRUPTED, stop.clone()).map_err(io)?;
        signal_hook::flag::register(sig, stop.clone()).map_err(io)?;
    }
    Ok(stop)
}

/// `strain report`: saved results drawn as one page.
fn run_report(f: &flags::ReportFlags) -> Result<i32, CliError> {
    if f.labels.len() > f.results.len() {
        return Err(CliError::Usage(format!("{} labels for {} results", f.labels.len(), f.results.len())));
    }
    check_writable(&f.output)?;
    // Each file is read once; its kind picks the page. A search's and a comparison's pages have
    // their own layouts, so each is given alone.
    let mut docs = Vec::with_capacity(f.results.len());
    for path in &f.results {
        let text = read_text(path)?;
        let kind = parsed(path, &text, result::kind_of)?;
        docs.push((path, text, kind));
    }
    let page = match docs.as_slice() {
        [(path, text, result::Kind::FindMax)] => {
            report::html::render_find_max(&parsed(path, text, result::find_max::FindMaxDoc::parse)?)
        }
        [(path, text, result::Kind::Compare)] => {
            let doc = parsed(path, text, crate::compare::doc::CompareDoc::parse)?;
            crate::compare::render::html(&doc.comparison, &doc.labelled())
        }
        docs => {
            let mut results = Vec::with_capacity(docs.len());
            for (i, (path, text, kind)) in docs.iter().enumerate() {
                let what = match kind {
                    result::Kind::Run => None,
                    result::Kind::FindMax => Some("a find-max search"),
                    result::Kind::Compare => Some("a comparison"),
                };
                if let Some(what) = what {
                    return Err(CliError::Usage(format!(
                        "{what} gets a page of its own: give its JSON alone ({} files given)",
                        docs.len()
                    )));
                }
                let label = f.labels.get(i).cloned().unwrap_or_else(|| file_name(path));
                results.push((label, parsed(path, text, result::RunDoc::parse)?));
            }
            report::html::render(&results)
        }
    };
    write_file(&f.output, &page)?;
    Ok(EXIT_OK)
}

/// A path's file name, for labels.
pub(crate) fn file_name(path: &std::path::Path) -> String {
    path.file_name().map_or_else(|| path.display().to_string(), |n| n.to_string_lossy().into_owned())
}

/// A file's text; an unreadable file is one line naming it.
fn read_text(path: &std::path::Path) -> Result<String, CliError> {
    std::fs::read_to_string(path)
        .map_err(|source| CliError::Io { what: format!("cannot read {}", path.display()), source })
}

/// `text` (the file `path`) read with `parse`; an unfit document is one line naming the file.
fn parsed<T>(
    path: &std::path::Path,
    text: &str,
    parse: impl Fn(&str) -> Result<T, result::ResultError>,
) -> Result<T, CliError> {
    parse(text).map_err(|e| CliError::Usage(format!("{}: {e}", path.display())))
}

fn run_origin(f: &OriginFlags) -> Result<i32, CliError> {
    let mut config = OriginConfig {
        body_size: f.body_size,
        status: f.status,
        stall_at: f.stall_at,
        stall_for: f.stall_for.unwrap_or_default(),
        keepalive: f.keepalive as u64,
        seed: f.seed,
        header_timeout: Some(f.header_timeout.0),
        send_timeout: Some(f.send_timeout.0),
        ..OriginConfig::default()
    };
    f.documents.apply(&mut config)?;
    config.service = f.service()?;
    config.tls = f.tls().map(Box::new);
    config.http3 = f.http3;
    if let Some(tls) = &config.tls {
        tls.check()?;
    }
    crate::net::raise_file_limit();
    let (listener, shown): (origin::Listener, String) = match &f.listen {
        units::ListenAddr::Tcp(addr) => {
            let (listener, addr) =
                if f.http3 { bind_with_udp(*addr)? } else { bind(*addr).map(|(l, a)| (l.into(), a))? };
            let scheme = if config.tls.is_some() { "https" } else { "http" };
            // The URL stays the line's last word: scripts and tests take it from there (HTTP/3
            // is on the same address's UDP port, and Alt-Svc says so).
            (listener, format!("{scheme}://{addr}/"))
        }
        units::ListenAddr::Unix(path) => {
            let listener = bind_unix(path)?;
            (origin::Listener::Unix(listener), format!("unix:{}", path.display()))
        }
    };
    if let Some(t) = f.threads {
        config.threads = t.max(1);
    }
    let stop = stop_flag()?;
    println!("strain origin listening on {shown}");
    let _ = std::io::stdout().flush();
    let served = origin::run(listener, &config, &stop);
    if let units::ListenAddr::Unix(path) = &f.listen {
        // The socket file would make the next bind fail.
        let _ = std::fs::remove_file(path);
    }
    let stats = served?;
    println!(
        "strain origin served {} requests on {} connections ({} bytes in, {} bytes out)",
        stats.requests, stats.connections, stats.bytes_read, stats.bytes_written
    );
    // On stderr: the test harness reads exactly four numbers from stdout after the first line.
    eprintln!("strain origin: 200 {}, 304 {}, aborted {}", stats.ok, stats.not_modified, stats.aborted);
    Ok(EXIT_OK)
}

/// `strain demo`: `strain -t 1 --latency -d T URL` against the built-in origin in this process,
/// through the same flags as any run.
fn run_demo(f: &DemoFlags) -> Result<i32, CliError> {
    if f.find_max {
        return demo_find_max();
    }
    let (listener, addr) = bind(std::net::SocketAddr::from(([127, 0, 0, 1], 0)))?;
    let duration = format!("{}ms", f.duration.0.as_millis());
    let url = format!("http://{addr}/");
    let cli = Cli::try_parse_from(["strain", "-t", "1", "--latency", "-d", &duration, &url])
        .map_err(|e| CliError::Usage(one_line(&e.to_string())))?;
    let origin =
        OriginPlacement::InProcess { listener, config: OriginConfig { threads: 1, ..OriginConfig::default() } };
    run_load(&cli.load, origin)
}

/// `strain demo --find-max`: the capacity search against an origin whose capacity is known
/// (8 workers of 4 ms: 2,000 requests/s), with short steps so it ends within a minute.
fn demo_find_max() -> Result<i32, CliError> {
    let service = origin::Service { time: std::time::Duration::from_millis(4), workers: 8, dist: Default::default() };
    let capacity = f64::from(service.workers) / service.time.as_secs_f64();
    let (listener, addr) = bind(std::net::SocketAddr::from(([127, 0, 0, 1], 0)))?;
    let url = format!("http://{addr}/");
    let cli = Cli::try_parse_from(["strain", "find-max", "-t", "1", "--slo", "p99<100ms", &url])
        .map_err(|e| CliError::Usage(one_line(&e.to_string())))?;
    let Some(Command::FindMax(f)) = cli.command else { return Err(CliError::Usage("demo: no search".into())) };
    let f = *f;
    let (load, workload) = find_max::load(&f)?;
    let flags = flags::FindMaxOptions {
        warmup: Some(units::Dur(std::time::Duration::from_secs(1))),
        step: Some(units::Dur(std::time::Duration::from_secs(2))),
        ..f.search
    };
    let search = find_max::search_config(&flags, load, workload)?;
    println!(
        "The origin serves each request with one of {} workers for {:?}: its capacity is {} requests/s.",
        service.workers,
        service.time,
        report::units::rate(capacity)
    );
    let origin_config = OriginConfig { threads: 1, service: Some(service), ..OriginConfig::default() };
    let stop = stop_flag()?;
    find_max::search_with_origin(&search, &stop, listener, &origin_config, None, None, &Default::default())
}

/// Binds a listener and reads back its address (port 0 picks a free one).
pub(crate) fn bind(addr: std::net::SocketAddr) -> Result<(TcpListener, std::net::SocketAddr), CliError> {
    let listener =
        TcpListener::bind(addr).map_err(|source| CliError::Io { what: format!("cannot listen on {addr}"), source })?;
    let bound =
        listener.local_addr().map_err(|source| CliError::Io { what: "cannot read the address".into(), source })?;
    Ok((listener, bound))
}

/// Binds a TCP listener and the UDP socket of the same address for HTTP/3, both before the
/// origin says it listens (a client's first datagram must not find the port closed); port 0
/// tries a few ports the kernel picks until the UDP one is free too.
fn bind_with_udp(addr: std::net::SocketAddr) -> Result<(origin::Listener, std::net::SocketAddr), CliError> {
    const TRIES: usize = 16;
    let mut tries = 0;
    loop {
        let (listener, bound) = bind(addr)?;
        tries += 1;
        match std::net::UdpSocket::bind(bound) {
            Ok(udp) => return Ok((origin::Listener::TcpAndUdp(listener, udp), bound)),
            Err(_) if addr.port() == 0 && tries < TRIES => continue,
            Err(source) => {
                return Err(CliError::Io { what: format!("cannot listen on UDP {bound} for HTTP/3"), source })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clap_errors_become_one_line() {
        let msg = "error: invalid value 'x' for '-c <N>': bad\n\nFor more information, try '--help'.\n";
        assert_eq!(one_line(msg), "invalid value 'x' for '-c <N>': bad");
    }
}
