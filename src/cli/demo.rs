//! `strain demo`: strain's main job against its built-in origin in this process, through the
//! same flags as any run (a load, or `--find-max` a capacity search of a known capacity).

use super::flags::{self, Cli, Command, DemoFlags};
use super::origin::bind;
use super::{find_max, one_line, stop_flag, units, CliError};
use crate::origin::{self, OriginConfig};
use crate::report;
use crate::run::OriginPlacement;
use clap::Parser;

/// `strain demo`: `strain -t 1 --latency -d T URL` against the built-in origin in this process,
/// through the same flags as any run.
pub fn run(f: &DemoFlags) -> Result<i32, CliError> {
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
    super::run::run(&cli.load, origin)
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
    let f = *f.0;
    let (load, workload) = find_max::load(&f)?;
    let flags = flags::FindMaxOptions {
        warmup: Some(units::Dur(std::time::Duration::from_secs(1))),
        step: Some(units::Dur(std::time::Duration::from_secs(2))),
        ..f.search
    };
    let search = find_max::find_max_config(&flags, load, workload)?;
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
