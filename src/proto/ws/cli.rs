//! `strain ws URL`: WebSocket messages over `-c` upgraded connections. The upgrade is checked
//! once before any load (a refused upgrade or subprotocol is one line, exit 2, and no message
//! is sent); then one run whose requests are the messages and whose responses their answers, a
//! capacity search over the message rate (`ws find-max`), or an A/B comparison of two servers
//! (`ws compare`).

use std::sync::Arc;

use super::flags::WsMessageFlags;
use super::handshake::Offer;
use super::{Mode, WsLoad};
use crate::cli::flags::{ConnectFlags, LengthFlags};
use crate::cli::load;
use crate::cli::protocol::{Aim, Protocol, Purpose};
use crate::cli::CliError;
use crate::config::{Config, Target};
use crate::run::Workload;

/// The message sent without `--message`, `--message-file` or `--message-size`.
const DEFAULT_MESSAGE: &str = "strain";

impl Protocol for WsMessageFlags {
    const COMMAND: &'static str = "strain ws";

    fn load(&self, aim: Aim) -> Result<(Config, Workload), CliError> {
        let (config, load) = ws_load(self, aim)?;
        probe(&config, &load)?;
        Ok((config, Workload::Unit(load)))
    }

    /// `--rate-per-conn` is `-R` over the connections.
    fn length(&self, length: &LengthFlags, connect: &ConnectFlags) -> Result<LengthFlags, CliError> {
        let mut length = length.clone();
        if let Some(r) = self.rate_per_conn {
            if length.rate.is_some() || length.stages.is_some() {
                return Err(CliError::Usage("give the rate once: --rate-per-conn, or -R or --stages in total".into()));
            }
            length.rate = Some(r * connect.connections.unwrap_or(crate::defaults::CONNECTIONS) as f64);
        }
        Ok(length)
    }

    fn fits(&self, purpose: Purpose) -> Result<(), CliError> {
        match purpose {
            Purpose::FindMax if self.rate_per_conn.is_some() || self.listen_only => {
                Err(CliError::Usage("find-max chooses the message rate: drop --rate-per-conn and --listen-only".into()))
            }
            Purpose::Compare if self.rate_per_conn.is_some() => {
                Err(CliError::Usage("strain ws compare takes the rate as -R".into()))
            }
            _ => Ok(()),
        }
    }
}

/// The load of messages to `url`: HTTP/1.1 connections upgraded, the message the flags give,
/// the run's shape (`None` for a search). `-c` defaults to `connections`.
fn ws_load(m: &WsMessageFlags, aim: Aim) -> Result<(Config, Arc<WsLoad>), CliError> {
    let Aim { url, connect, shape, connections } = aim;
    let target = Target::parse(url)?;
    if !target.websocket {
        return Err(CliError::Usage(format!("{url}: a WebSocket URL starts with ws:// or wss://")));
    }
    let protocol = crate::config::ProtocolChoice::Exactly(crate::config::Protocol::Unit(super::SPEECH));
    let config = load::load(target, connect, protocol, shape, load::Requests::Workload, connections)?;
    let (payload, binary) = match (&m.message, &m.message_file, m.message_size) {
        (Some(text), _, _) => (text.clone().into_bytes(), false),
        (_, Some(path), _) => {
            (std::fs::read(path).map_err(|e| CliError::Usage(format!("cannot read {}: {e}", path.display())))?, true)
        }
        (_, _, Some(n)) => ((0..n).map(|i| b'a' + (i % 26) as u8).collect(), true),
        _ => (DEFAULT_MESSAGE.as_bytes().to_vec(), false),
    };
    let headers =
        m.headers.iter().map(|h| load::parse_header(h).map(|h| (h.name, h.value))).collect::<Result<Vec<_>, _>>()?;
    let target = &config.target;
    let offer = Offer {
        path: target.path.clone(),
        host: target.host_header(),
        subprotocols: m.subprotocols.clone(),
        deflate: m.deflate,
        headers,
    };
    let mut load = WsLoad::new(offer, payload, binary, !m.no_reconnect);
    load.connect_rate = m.connect_rate;
    load.ping_us = m.ping.map(|d| (d.0.as_micros() as u64).max(1));
    load.mode = match (m.match_ids, m.listen_only) {
        (true, _) => Mode::Match,
        (_, true) if config.paced() => {
            return Err(CliError::Usage("--listen-only sends nothing: drop -R and --stages".into()))
        }
        (_, true) => Mode::Listen,
        _ => Mode::Echo,
    };
    Ok((config, Arc::new(load)))
}

/// Upgrades one connection before the load, so that what the server refuses is said at once.
/// A server that cannot be reached is left to the run, which reports its connect errors as
/// every run does.
fn probe(config: &Config, load: &WsLoad) -> Result<(), CliError> {
    if config.unix_socket.is_some() {
        return Ok(());
    }
    let target = &config.target;
    let Ok(addr) = crate::net::resolve(&target.host, target.port, config.timeout) else { return Ok(()) };
    let tls = target.tls(config.insecure, &[b"http/1.1"]).map_err(|e| CliError::Usage(e.to_string()))?;
    match super::handshake::probe(addr, tls.as_ref(), &load.offer, config.timeout) {
        Ok(_) | Err(super::handshake::ProbeError::Connect { .. }) => Ok(()),
        Err(e) => Err(CliError::Usage(e.to_string())),
    }
}
