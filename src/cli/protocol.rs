//! A protocol command's three modes, written once: one run, a capacity search (`find-max`) and
//! an A/B comparison (`compare`). A protocol supplies how its flags make a load ([`Protocol`]);
//! everything around it (result files, checks, the search, the runner) is the same for all.

use super::flags::{CompareCmd, ConnectFlags, FindMaxCmd, LengthFlags, ProtocolCmd, ProtocolFlags, ProtocolMode};
use super::{load, run_and_report, stop_flag, CliError};
use crate::compare::ab::AbSide;
use crate::config::Config;
use crate::run::{OriginPlacement, RunConfig, Workload};

/// What a protocol command is set up for: one of its modes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Purpose {
    /// One run.
    Run,
    /// A capacity search: it chooses the rate.
    FindMax,
    /// An A/B comparison.
    Compare,
}

/// Where a protocol's load goes and how it connects.
pub struct Aim<'a> {
    /// The server's URL.
    pub url: &'a str,
    /// Connections, threads, timeout.
    pub connect: &'a ConnectFlags,
    /// The run's shape; `None` for a search, which sets each step's.
    pub shape: Option<load::RunShape<'a>>,
    /// `-c` when it is not given.
    pub connections: usize,
}

/// What a protocol's flags make: its command's name and its load.
pub trait Protocol: ProtocolFlags {
    /// The command, for messages (`strain grpc`).
    const COMMAND: &'static str;

    /// The load these flags describe at `aim`, and its workload. Everything the protocol
    /// settles before any load (a schema, an upgrade probe) is settled here.
    fn load(&self, aim: Aim) -> Result<(Config, Workload), CliError>;

    /// The length of one run from its flags (a protocol may give the rate its own way).
    fn length(&self, length: &LengthFlags, _connect: &ConnectFlags) -> Result<LengthFlags, CliError> {
        Ok(length.clone())
    }

    /// Refuses the protocol's flags that `purpose` cannot honour.
    fn fits(&self, _purpose: Purpose) -> Result<(), CliError> {
        Ok(())
    }
}

/// Runs a protocol command in the mode its flags ask for.
pub fn run<P: Protocol>(f: &ProtocolCmd<P>) -> Result<i32, CliError> {
    match &f.mode {
        Some(ProtocolMode::FindMax(m)) => return find_max(m),
        Some(ProtocolMode::Compare(c)) => return compare(c),
        None => {}
    }
    f.own.fits(Purpose::Run)?;
    let url = f.url.as_deref().ok_or_else(|| CliError::Usage(format!("{} needs the server's URL", P::COMMAND)))?;
    // A report that cannot be written is said before the server is asked anything.
    super::check_files(&f.run.files, f.run.live.hdr_log.as_deref())?;
    let length = f.own.length(&f.run.length, &f.connect)?;
    let shape = load::RunShape { length: &length, ..load::RunShape::of(&f.run) };
    let aim = Aim { url, connect: &f.connect, shape: Some(shape), connections: crate::defaults::CONNECTIONS };
    let (config, workload) = f.own.load(aim)?;
    let checks = load::checks(&f.run, &config, false)?;
    let outputs = load::outputs(&config, &f.run);
    let stop = stop_flag()?;
    let test = RunConfig { load: config, workload, origin: OriginPlacement::Elsewhere, checks };
    let (code, _) = run_and_report(test, &outputs, &stop)?;
    Ok(code)
}

/// The capacity search over the protocol's load.
fn find_max<P: Protocol>(f: &FindMaxCmd<P>) -> Result<i32, CliError> {
    f.own.fits(Purpose::FindMax)?;
    super::check_files(&f.files, None)?;
    let aim = Aim { url: &f.url, connect: &f.connect, shape: None, connections: crate::defaults::SEARCH_CONNECTIONS };
    let (config, workload) = f.own.load(aim)?;
    let search = super::find_max::find_max_config(&f.search, config, workload)?;
    let stop = stop_flag()?;
    let metrics = f.metrics.settings(None);
    super::find_max::search_and_report(&search, &stop, f.files.json.as_deref(), f.files.html.as_deref(), &metrics)
}

/// The A/B runner over the same load to two servers.
fn compare<P: Protocol>(f: &CompareCmd<P>) -> Result<i32, CliError> {
    f.own.fits(Purpose::Compare)?;
    super::check_files(&f.files, None)?;
    let shape = super::compare::ab_shape(&f.length, &f.runner)?;
    let side = |url: &str, prepare: &Option<String>| -> Result<AbSide, CliError> {
        let aim = Aim { url, connect: &f.connect, shape: Some(shape), connections: crate::defaults::CONNECTIONS };
        let (config, workload) = f.own.load(aim)?;
        Ok(AbSide { config, workload, prepare: prepare.clone() })
    };
    let (a, b) = (side(&f.a, &f.runner.prepare_a)?, side(&f.b, &f.runner.prepare_b)?);
    let setup = super::compare::ab_setup(a, b, &f.runner, f.fail_on_regression);
    super::compare::run_ab(&setup, &f.runner, &f.files)
}
