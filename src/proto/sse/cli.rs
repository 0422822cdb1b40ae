//! `strain sse URL`: `-c` held Server-Sent Events streams. Each stream's request goes out as
//! the flags say; each event is an answer, timed from the one before it on its stream. `-n`
//! counts streams and `-R` starts that many per second, each on a connection of its own (an
//! event is not sent, so nothing is due but the streams' starts).

use std::sync::Arc;

use super::flags::SseFlags;
use super::SseLoad;
use crate::cli::load::{self, RunShape};
use crate::cli::protocol::{Aim, Protocol};
use crate::cli::CliError;
use crate::config::{Config, Target};
use crate::run::Workload;

impl Protocol for SseFlags {
    const COMMAND: &'static str = "strain sse";

    fn load(&self, aim: Aim) -> Result<(Config, Workload), CliError> {
        let Aim { url, connect, shape, connections } = aim;
        let target = load::http_target(url)?;
        // `-n` counts streams, which the unit starts: the run itself is one of held streams,
        // ended by its duration or by the last stream's end. `-R` and `--stages` are of streams
        // started, each on a connection of its own (the engine's connections arriving).
        let mut length = shape.as_ref().map(|s| s.length.clone());
        let streams = length.as_mut().and_then(|l| l.requests.take());
        let shape = shape.zip(length.as_ref()).map(|(s, length)| RunShape { length, ..s });
        let protocol = crate::config::ProtocolChoice::Exactly(crate::config::Protocol::Unit(super::SPEECH));
        let config = load::load(target.clone(), connect, protocol, shape, load::Requests::Workload, connections)?;
        Ok((config, Workload::Unit(Arc::new(self.sse_load(&target, streams)?))))
    }
}

impl SseFlags {
    /// The load the flags describe on `target`.
    fn sse_load(&self, target: &Target, streams: Option<usize>) -> Result<SseLoad, CliError> {
        let headers = self
            .headers
            .iter()
            .map(|h| load::parse_header(h).map(|h| (h.name, h.value)))
            .collect::<Result<Vec<_>, _>>()?;
        let body = match (&self.body, &self.body_file) {
            (Some(text), _) => Some(text.clone().into_bytes()),
            (_, Some(path)) => {
                Some(std::fs::read(path).map_err(|e| CliError::Usage(format!("cannot read {}: {e}", path.display())))?)
            }
            _ => None,
        };
        let method = load::method(&self.method)?;
        Ok(SseLoad {
            method,
            path: target.path.clone(),
            host: target.host_header(),
            headers,
            body,
            reconnect: !self.no_reconnect,
            streams: streams.map(|n| n as u64),
        })
    }
}
