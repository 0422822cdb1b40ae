//! `strain proxy`: jtest's client and origin in one process, for loading caching proxies.
//!
//! By default the origin runs in this process and its live counters give the measured hit
//! ratio (1 - origin requests / client requests) each interval. `--client-only` reads the same
//! counters from a remote `strain origin` (`GET /_strain/stats`); `--origin-only` serves only.

use std::sync::atomic::AtomicBool;

use super::flags::{ExtensionFlag, FormFlag, ProxyFlags};
use super::{CliError, EXIT_OK};
use crate::engine::proxy::{Form, ProxySetup};
use crate::run::{OriginPlacement, RunConfig, Workload};
use crate::workload::doc::Extension;
use crate::workload::gen::WorkloadConfig;

/// The request settings of a proxy test.
pub fn proxy_setup(f: &ProxyFlags, origin: &str) -> Result<ProxySetup, CliError> {
    let urls = match &f.urls {
        None => None,
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .map_err(|source| CliError::Io { what: format!("cannot read {}", path.display()), source })?;
            let mut list: Vec<String> = text
                .lines()
                .map(str::trim)
                .filter(|l| !l.is_empty() && !l.starts_with('#'))
                .map(String::from)
                .collect();
            if list.is_empty() {
                return Err(CliError::Usage(format!("{} holds no URLs", path.display())));
            }
            if f.shuffle {
                let mut rng = crate::workload::gen::Rng::new(f.seed);
                for i in (1..list.len()).rev() {
                    list.swap(i, (rng.next_u64() % (i as u64 + 1)) as usize);
                }
            }
            Some(list)
        }
    };
    if f.zipf.is_some_and(|a| !(a.is_finite() && a > 0.0)) {
        return Err(CliError::Usage("--zipf takes an exponent above 0".into()));
    }
    if !(f.evolve.is_finite() && f.evolve >= 0.0) {
        return Err(CliError::Usage("--evolve takes a rate of 0 or more per hour".into()));
    }
    let extension = match (f.request_extension, f.pages.fullpage) {
        (Some(ExtensionFlag::Html) | None, true) => Extension::Html,
        (Some(e), true) => {
            let e = format!("{e:?}").to_lowercase();
            return Err(CliError::Usage(format!(
                "--fullpage asks for .html pages: --request-extension {e} contradicts it"
            )));
        }
        (e, false) => e.map_or(Extension::None, ExtensionFlag::extension),
    };
    Ok(ProxySetup {
        workload: WorkloadConfig {
            hit_rate: f.hit_rate,
            hotset: f.hotset as u64,
            zipf: f.zipf,
            evolve_per_hour: f.evolve,
            doc_size: f.doc_size.map(|n| n as u64),
            seed: f.seed,
            share: (0, 1),
        },
        form: if f.form == FormFlag::Forward { Form::Forward } else { Form::Reverse },
        origin: origin.to_string(),
        reload_rate: f.reload_rate,
        ims_rate: f.ims_rate,
        client_abort_rate: f.client_abort_rate,
        check_content: f.check_content,
        keepalive: if f.new_conn_rate.is_some() && f.keepalive == 0 { 1 } else { f.keepalive as u64 },
        urls,
        new_conn_rate: f.new_conn_rate,
        extension,
        extra_headers: f.extra_headers,
        alternates: f.alternates.zip(f.vary()),
    })
}

/// Writes the URLs a run would start with, for replay with --urls.
fn dump_urls(f: &ProxyFlags, origin: &str, path: &std::path::Path) -> Result<i32, CliError> {
    let plan = proxy_setup(f, origin)?;
    let mut client = crate::engine::proxy::ProxyClient::new(&plan, 0);
    let mut out = String::new();
    let mut req = Vec::new();
    for _ in 0..f.dump_count {
        client.build(&mut req);
        let line = String::from_utf8_lossy(&req);
        let target = line.split(' ').nth(1).unwrap_or("/");
        if target.starts_with("http://") {
            out.push_str(target);
        } else {
            out.push_str(&format!("http://{origin}{target}"));
        }
        out.push('\n');
    }
    super::write_file(path, &out)?;
    Ok(EXIT_OK)
}

/// Runs `strain proxy`.
pub fn run(f: &ProxyFlags) -> Result<i32, CliError> {
    crate::net::raise_file_limit();
    if let Some(path) = &f.dump_urls {
        let origin = f.origin.clone().unwrap_or_else(|| f.listen.to_string());
        return dump_urls(f, &origin, path);
    }
    let stop = super::stop_flag()?;
    if f.client_only {
        let origin =
            f.origin.clone().ok_or_else(|| CliError::Usage("--client-only needs --origin HOST:PORT".into()))?;
        return client(f, &origin, &stop, OriginPlacement::Elsewhere);
    }
    let (listener, addr) = super::origin::bind(f.listen)?;
    let mut origin_config =
        crate::origin::OriginConfig { keepalive: f.origin_keepalive as u64, seed: f.seed, ..Default::default() };
    f.documents.apply(&mut origin_config)?;
    // A whole-page test's in-process origin serves pages worth loading whole.
    let (embed, links) = if f.pages.fullpage { (10, 5) } else { (0, 0) };
    origin_config.pages = crate::origin::Pages { embed: f.embed.unwrap_or(embed), links: f.links.unwrap_or(links) };
    origin_config.vary = f.vary();
    if f.origin_only {
        println!("strain origin listening on http://{addr}/");
        let stats = crate::origin::run(listener, &origin_config, &stop)?;
        println!("strain origin served {} requests on {} connections", stats.requests, stats.connections);
        return Ok(EXIT_OK);
    }
    let origin = f.origin.clone().unwrap_or_else(|| addr.to_string());
    client(f, &origin, &stop, OriginPlacement::InProcess { listener, config: origin_config })
}

/// Runs the client side: the engine with generated requests, reporting the hit ratio.
fn client(f: &ProxyFlags, origin: &str, stop: &AtomicBool, placement: OriginPlacement) -> Result<i32, CliError> {
    let target = f.proxy.clone().unwrap_or_else(|| origin.to_string());
    let scheme = crate::config::Scheme::of_tls(f.proxy_tls).name();
    let url = format!("{scheme}://{target}/");
    if f.find_max {
        if f.pages.fullpage {
            return Err(CliError::Usage(
                "--fullpage loads pages in closed loop, and a capacity search paces requests: use one or the other"
                    .into(),
            ));
        }
        return find_max(f, &url, origin, stop, placement);
    }
    if f.pages.fullpage && f.new_conn_rate.is_some() {
        return Err(CliError::Usage(
            "--fullpage keeps each browser's 6 connections open: it cannot be combined with --new-conn-rate".into(),
        ));
    }
    if let Some(flag) = f.search.first_given() {
        return Err(CliError::Usage(format!("{flag} is the capacity search's: add --find-max (or use --threshold)")));
    }
    let config = super::load::load(
        super::load::http_target(&url)?,
        &f.connect,
        super::load::protocol(&f.http)?,
        Some(super::load::RunShape { pages: f.pages.browse(), ..super::load::RunShape::of(&f.run) }),
        super::load::Requests::Workload,
        crate::defaults::CONNECTIONS,
    )?;
    if f.new_conn_rate.is_some() && config.schedule.is_some() {
        return Err(CliError::Usage(
            "--new-conn-rate cannot be combined with -R or --stages: arriving connections send their requests at once"
                .into(),
        ));
    }
    let checks = super::load::checks(&f.run, &config, true)?;
    let mut outputs = super::load::outputs(&config, &f.run);
    // A proxy test prints its hit ratio as it goes (a line per interval, or per second).
    outputs.progress = true;
    let mut plan = proxy_setup(f, origin)?;
    plan.workload.share = (u64::from(config.segment.index), u64::from(config.segment.count));
    let test = RunConfig { load: config, workload: Workload::Proxy(plan), origin: placement, checks };
    super::run_and_report(test, &outputs, stop).map(|(code, _)| code)
}

/// `--find-max`: the capacity search over the proxy, the in-process origin serving throughout.
/// The flags of a single run that a search cannot honour are refused by clap.
fn find_max(
    f: &ProxyFlags,
    url: &str,
    origin: &str,
    stop: &AtomicBool,
    placement: OriginPlacement,
) -> Result<i32, CliError> {
    let config = super::load::load(
        super::load::http_target(url)?,
        &f.connect,
        super::load::protocol(&f.http)?,
        None,
        super::load::Requests::Workload,
        crate::defaults::CONNECTIONS,
    )?;
    let search = super::find_max::find_max_config(&f.search, config, Workload::Proxy(proxy_setup(f, origin)?))?;
    let (json, html) = (f.run.files.json.as_deref(), f.run.files.html.as_deref());
    let metrics = f.run.metrics.settings(None);
    match placement {
        OriginPlacement::Elsewhere => super::find_max::search_and_report(&search, stop, json, html, &metrics),
        OriginPlacement::InProcess { listener, config: origin_config } => {
            super::find_max::search_with_origin(&search, stop, listener, &origin_config, json, html, &metrics)
        }
    }
}
