//! `strain URL`: the load the flags describe, run once and reported.

use super::flags::LoadFlags;
use super::{load, run_and_report, stop_flag, CliError};
use crate::run::{OriginPlacement, RunConfig};

/// `strain <url>`: the load the flags describe, against `origin`.
pub fn run(f: &LoadFlags, origin: OriginPlacement) -> Result<i32, CliError> {
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
