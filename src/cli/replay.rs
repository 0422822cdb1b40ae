//! `strain replay FILE... [URL]`: the recordings scanned (a bad record, an unknown format or
//! a file without a request stops here, before anything is sent), then replayed as one run.

use std::time::Duration;

use super::flags::{LengthFlags, ReplayFlags};
use super::{load, run_and_report, stop_flag, CliError};
use crate::config::Target;
use crate::replay::reader::{self, ReplayError};
use crate::replay::render::Rewrite;
use crate::replay::{BadLines, Format, Loops, Mark, Pace, ReplayNote, ReplaySetup, SessionKey};
use crate::run::{OriginPlacement, Replay, RunConfig, Workload};

/// Runs `strain replay`.
pub fn run(f: &ReplayFlags) -> Result<i32, CliError> {
    let (files, url) = super::flags::replay_files(&f.inputs);
    if files.is_empty() {
        return Err(CliError::Usage("strain replay needs a recording: FILE... [URL]".into()));
    }
    if f.run.length.stages.is_some() {
        return Err(CliError::Usage(
            "--stages does not apply to a replay: its pace is the recording's (--speed, or -R for its mean rate)"
                .into(),
        ));
    }
    let replay = setup(f, files, url)?;
    // A report that cannot be written is said before the scan, which reads every recording.
    super::check_files(&f.run.files, f.run.live.hdr_log.as_deref())?;
    let scan = reader::scan(&replay).map_err(replay_error)?;
    let speed = scan.speed(replay.pace);
    let servers = &scan.servers;
    if servers.len() > 1 {
        let names: Vec<String> = servers.iter().take(3).map(Target::origin).collect();
        return Err(CliError::Usage(format!(
            "the recordings name {} servers ({}{}): give a URL to replay against",
            servers.len(),
            names.join(", "),
            if servers.len() > 3 { ", ..." } else { "" }
        )));
    }
    let url = servers.first().map(|t| t.url.clone()).ok_or_else(|| CliError::Usage("a URL is required".into()))?;
    let loops = match replay.loops {
        Loops::Times(n) => Some(n),
        Loops::Forever => None,
    };
    let note = ReplayNote { files: scan.files.clone(), requests: scan.requests, span_us: scan.span_us, speed, loops };
    // The load lasts the replayed span (each pass), a second more for the last request's
    // tick; -d cuts it shorter; the run ends as soon as the last request is answered.
    let pass = Duration::from_secs_f64(scan.span_us as f64 / 1e6 / speed);
    let whole = match loops {
        Some(n) => (pass + pass / scan.requests.max(1) as u32) * n + Duration::from_secs(1),
        None => crate::defaults::REQUESTS_DURATION,
    };
    let length = LengthFlags {
        duration: Some(super::units::Dur(f.run.length.duration.map_or(whole, |d| d.0.min(whole)))),
        requests: f.run.length.requests,
        rate: None,
        stages: None,
    };
    let shape = load::RunShape {
        length: &length,
        replay: Some(&note),
        time_bound: Some(f.run.length.duration.is_some()),
        ..load::RunShape::of(&f.run)
    };
    let config = load::load(
        load::http_target(&url)?,
        &f.connect,
        load::protocol(&f.http)?,
        Some(shape),
        load::Requests::Workload,
        crate::defaults::REPLAY_CONNECTIONS,
    )?;
    let checks = load::checks(&f.run, &config, false)?;
    let outputs = load::outputs(&config, &f.run);
    let stop = stop_flag()?;
    let workload = Workload::Replay(Box::new(Replay { setup: replay, scan, speed }));
    let test = RunConfig { load: config, workload, origin: OriginPlacement::Elsewhere, checks };
    let (code, _) = run_and_report(test, &outputs, &stop)?;
    Ok(code)
}

/// A recording that cannot be replayed: one line, exit 2 (nothing was sent).
fn replay_error(e: ReplayError) -> CliError {
    CliError::Usage(e.to_string())
}

/// The replay the flags describe.
fn setup(f: &ReplayFlags, files: Vec<std::path::PathBuf>, url: Option<&str>) -> Result<ReplaySetup, CliError> {
    let format = match (&f.format, &f.log_format) {
        (Some(name), _) => Some(Format::parse(name).map_err(CliError::Usage)?),
        (None, Some(layout)) => Some(Format::Log(
            crate::replay::read::LogFormat::parse(layout)
                .map_err(|why| CliError::Usage(format!("invalid --log-format: {why}")))?,
        )),
        (None, None) => None,
    };
    let pace = match f.run.length.rate {
        Some(rate) => Pace::Rate(rate),
        None => Pace::Speed(f.speed),
    };
    let loops = match f.loops.trim() {
        "forever" => Loops::Forever,
        n => match n.parse::<u32>() {
            Ok(n) if n > 0 => Loops::Times(n),
            _ => return Err(CliError::Usage(format!("invalid --loop '{n}': a count above 0, or forever"))),
        },
    };
    let sessions = f.sessions.as_deref().map(|k| match k {
        "client" => SessionKey::Client,
        "connection" => SessionKey::Connection,
        _ => SessionKey::Session,
    });
    let methods = if f.methods.is_empty() {
        reader::default_methods()
    } else {
        f.methods.iter().map(|m| m.trim().to_ascii_uppercase()).filter(|m| !m.is_empty()).collect()
    };
    let render = Rewrite {
        base: url.map(Target::parse).transpose()?,
        keep_host: f.keep_host,
        methods,
        synthetic_body: f.synthetic_body,
        headers: f.headers.iter().map(|h| load::parse_header(h)).collect::<Result<_, _>>()?,
        drop: f.drop_headers.iter().map(|h| h.trim().to_ascii_lowercase()).collect(),
    };
    Ok(ReplaySetup {
        files,
        format,
        pace,
        from: f.from.as_deref().map(|s| mark("--from", s)).transpose()?,
        to: f.to.as_deref().map(|s| mark("--to", s)).transpose()?,
        loops,
        max_gap: f.max_gap.map(|d| d.0),
        window: f.window,
        sessions,
        render,
        bad_lines: match (f.skip_bad, f.strict) {
            (true, _) => BadLines::Any,
            (_, true) => BadLines::None,
            _ => BadLines::Few,
        },
    })
}

/// `--from`/`--to`: a duration into the recording, or an RFC 3339 time.
fn mark(flag: &str, s: &str) -> Result<Mark, CliError> {
    if let Ok(d) = super::units::duration(s) {
        return Ok(Mark::After(d));
    }
    crate::replay::read::instant_us(s).map(Mark::At).ok_or_else(|| {
        CliError::Usage(format!("invalid {flag} '{s}': a time into the recording (10m) or an RFC 3339 time"))
    })
}
