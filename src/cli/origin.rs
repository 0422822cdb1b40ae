//! `strain origin`: the built-in origin server from its flags, on a TCP address (with HTTP/3's
//! UDP socket beside it) or a Unix-domain socket, until Ctrl-C or SIGTERM.

use std::io::Write;
use std::net::TcpListener;

use super::flags::OriginFlags;
use super::{stop_flag, units, CliError, EXIT_OK};
use crate::origin::{self, OriginConfig};

/// Runs `strain origin`, serving `units` beside HTTP (what the units' flags asked for).
pub fn run(f: &OriginFlags, units: Vec<std::sync::Arc<dyn origin::unit::Unit>>) -> Result<i32, CliError> {
    let mut config = OriginConfig {
        body_size: f.body_size,
        status: f.http_status()?,
        stall_at: f.stall_at,
        stall_for: f.stall_for.unwrap_or_default(),
        keepalive: f.keepalive as u64,
        seed: f.seed,
        header_timeout: Some(f.header_timeout.0),
        send_timeout: Some(f.send_timeout.0),
        ..OriginConfig::default()
    };
    f.documents.apply(&mut config)?;
    config.pages = origin::Pages { embed: f.embed, links: f.links };
    config.service = f.service()?;
    config.tls = f.tls().map(Box::new);
    config.http3 = f.http3;
    config.units = units;
    if let Some(tls) = &config.tls {
        tls.check()?;
    }
    if let Some(path) = &f.replay {
        let key = f.replay_key.map(|k| k.key()).unwrap_or_default();
        let recording = origin::Recording::read(path, key).map_err(|e| CliError::Usage(e.to_string()))?;
        if recording.unkeyed > 0 {
            eprintln!(
                "strain origin: {} recorded responses have no uuid header and are never answered (--replay-key url matches by URL)",
                recording.unkeyed
            );
        }
        config.replay = Some(std::sync::Arc::new(recording));
    }
    crate::net::raise_file_limit();
    let (listener, shown): (origin::Listener, String) = match &f.listen {
        units::ListenAddr::Tcp(addr) => {
            let (listener, addr) =
                if f.http3 { bind_with_udp(*addr)? } else { bind(*addr).map(|(l, a)| (l.into(), a))? };
            let scheme = crate::config::Scheme::of_tls(config.tls.is_some()).name();
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
    if !config.units.is_empty() {
        let said: Vec<String> = config
            .units
            .iter()
            .map(|u| u.summary(&u.counters().iter().map(|n| stats.units.get(n).unwrap_or(0)).collect::<Vec<_>>()))
            .collect();
        eprintln!("strain origin: {}; 200 {}", said.join("; "), stats.ok);
    } else if config.replay.is_some() {
        eprintln!(
            "strain origin: recorded {}, unmatched {} (answered 404), 200 {}, 304 {}",
            stats.recorded, stats.unmatched, stats.ok, stats.not_modified
        );
    } else {
        eprintln!("strain origin: 200 {}, 304 {}, aborted {}", stats.ok, stats.not_modified, stats.aborted);
    }
    Ok(EXIT_OK)
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

/// Connections the kernel queues for the origin to accept (its cap, net.core.somaxconn, may be
/// lower): std's 128 dropped SYNs when 10,000 clients connected at once, and each dropped one
/// waited a second for its retry.
const BACKLOG: i32 = 4096;

/// Binds a listener and reads back its address (port 0 picks a free one).
pub(crate) fn bind(addr: std::net::SocketAddr) -> Result<(TcpListener, std::net::SocketAddr), CliError> {
    let io = |source| CliError::Io { what: format!("cannot listen on {addr}"), source };
    let socket = socket2::Socket::new(socket2::Domain::for_address(addr), socket2::Type::STREAM, None).map_err(io)?;
    // As std's bind does: a port in TIME_WAIT from the last run can be listened on again.
    socket.set_reuse_address(true).map_err(io)?;
    socket.bind(&addr.into()).map_err(io)?;
    socket.listen(BACKLOG).map_err(io)?;
    let listener: TcpListener = socket.into();
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
