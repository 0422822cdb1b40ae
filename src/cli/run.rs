//! `strain URL`: the load the flags describe, run once and reported.

use super::flags::LoadFlags;
use super::{load, run_and_report, stop_flag, CliError};
use crate::run::{OriginPlacement, RunConfig};

/// `strain <url>`: the load the flags describe, against `origin`.
pub fn run(f: &LoadFlags, origin: OriginPlacement) -> Result<i32, CliError> {
    let inputs = load::Inputs::read(&f.request)?;
    // With --targets, the first target names the host when no URL does.
    let url = f.url.as_deref().or(inputs.first_url()).ok_or_else(|| CliError::Usage("a URL is required".into()))?;
    let request = load::RequestShape { flags: &f.request, inputs: &inputs };
    let config = load::load(
        load::http_target(url)?,
        &f.connect,
        load::protocol(&f.http)?,
        Some(load::RunShape { pages: f.pages.browse(), ..load::RunShape::of(&f.run) }),
        load::Requests::Flags(request),
        crate::defaults::CONNECTIONS,
    )?;
    let checks = load::checks(&f.run, &config, false)?;
    let workload = load::workload(&f.request, url, &f.script_args)?;
    if f.pages.fullpage && f.request.script.is_some() {
        return Err(CliError::Usage("--fullpage builds its own requests: it cannot be combined with -s".into()));
    }
    let outputs = load::outputs(&config, &f.run);
    let stop = stop_flag()?;
    let (code, result) = run_and_report(RunConfig { load: config, workload, origin, checks }, &outputs, &stop)?;
    if let Some(served) = result.origin_served {
        eprintln!("origin saw {} requests on {} connections", served.requests, served.connections);
    }
    Ok(code)
}
