//! The command line: raw flags ([`flags`]) become a validated [`crate::config::Config`]
//! ([`load`]), and this file dispatches each subcommand to its file (`strain URL` is [`run`]);
//! the error type and exit codes are [`error`]'s. The binary's `main` only prints the error
//! this returns.

pub mod compare;
pub mod demo;
pub mod error;
pub mod find_max;
pub mod flags;
pub mod k8s;
pub mod load;
pub mod merge;
pub mod origin;
pub mod print;
pub mod protocol;
pub mod proxy;
pub mod replay;
pub mod report;
pub mod run;
pub mod unit;
pub mod units;

pub(crate) use print::{check_files, check_writable, run_and_report, write_file, write_result};

pub use error::{
    CliError, EXIT_FAILED, EXIT_INCONCLUSIVE, EXIT_INTERRUPTED, EXIT_OK, EXIT_REGRESSION, EXIT_THRESHOLDS, EXIT_USAGE,
};
pub(crate) use report::file_name;

use std::ffi::OsString;
use std::io::Write;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use flags::{Cli, Command};

/// Runs strain with these arguments (the first is the program name) and these units'
/// commands ([`crate::proto::COMMANDS`]); returns the exit code.
pub fn run<I, T>(args: I, units: &[&dyn unit::Unit]) -> Result<i32, CliError>
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
    let matches = command(units).try_get_matches_from(args);
    if let Some((name, sub)) = matches.as_ref().ok().and_then(|m| m.subcommand()) {
        if let Some(u) = units.iter().find(|u| u.name() == name) {
            return u.run(sub);
        }
    }
    let parsed = matches.and_then(|m| <Cli as clap::FromArgMatches>::from_arg_matches(&m).map(|cli| (cli, m)));
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
        Some(Command::Origin(f)) => {
            let mut served = Vec::new();
            for (u, given) in units.iter().zip(std::iter::repeat(matches.subcommand_matches("origin"))) {
                served.extend(given.map(|m| u.origin(m, &f.0)).transpose()?.flatten());
            }
            origin::run(&f.0, served)
        }
        Some(Command::Demo(f)) => demo::run(&f.0),
        Some(Command::Proxy(f)) => proxy::run(&f.0),
        Some(Command::Report(f)) => report::run(&f.0),
        Some(Command::Compare(f)) => compare::run(&f.0, matches.subcommand_matches("compare")),
        Some(Command::FindMax(f)) => find_max::run(&f.0),
        Some(Command::Merge(f)) => merge::run(&f.0),
        Some(Command::Replay(f)) => replay::run(&f.0),
        Some(Command::K8sJob(f)) => k8s::run(&f.0),
        Some(Command::Completions { shell }) => {
            let mut cmd = command(units);
            // Written whole, as the man page is: clap_complete panics when stdout is closed
            // early (`strain completions zsh | head`).
            let mut out = Vec::new();
            clap_complete::generate(shell, &mut cmd, "strain", &mut out);
            let _ = std::io::stdout().write_all(&out);
            Ok(EXIT_OK)
        }
        Some(Command::Man) => {
            // Every command's flags defined (they are deferred until a command runs).
            let mut cmd = command(units);
            cmd.build();
            let page = clap_mangen::Man::new(cmd);
            let mut out = Vec::new();
            page.render(&mut out)
                .map_err(|source| CliError::Io { what: "cannot render the man page".into(), source })?;
            let _ = std::io::stdout().write_all(&out);
            Ok(EXIT_OK)
        }
        None => run::run(&cli.load, crate::run::OriginPlacement::Elsewhere),
    }
}

/// Every command: strain's own, then the units', whose flags `strain origin` takes too.
fn command(units: &[&dyn unit::Unit]) -> clap::Command {
    let mut cmd = <Cli as clap::CommandFactory>::command();
    for u in units {
        cmd = cmd.subcommand(u.command()).mut_subcommand("origin", |origin| u.origin_args(origin));
    }
    if units.is_empty() {
        return cmd;
    }
    let names: Vec<&str> = units.iter().map(|u| u.name()).collect();
    cmd.override_usage(format!(
        "{}\n       strain {} [find-max | compare] URL [OPTIONS]",
        flags::USAGE,
        names.join(" | ")
    ))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clap_errors_become_one_line() {
        let msg = "error: invalid value 'x' for '-c <N>': bad\n\nFor more information, try '--help'.\n";
        assert_eq!(one_line(msg), "invalid value 'x' for '-c <N>': bad");
    }
}
