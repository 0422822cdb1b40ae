//! The `/metrics` endpoint: a small HTTP/1.1 server on its own thread, answering each scrape
//! with the tally rendered at that moment. Scrapes are a few a second at most, so one thread
//! that handles a connection at a time is enough, and it never touches the load's threads.

use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use super::exposition::{render, wants_openmetrics, OPENMETRICS, TEXT};
use super::{Tags, Tally};

/// How often the endpoint looks for a new connection.
const POLL: Duration = Duration::from_millis(100);

/// A running `/metrics` endpoint.
pub struct Endpoint {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Endpoint {
    /// Listens on `addr` and serves `tally` (labelled with `tags`) until stopped.
    pub fn start(addr: SocketAddr, tally: Arc<Mutex<Tally>>, tags: Tags) -> std::io::Result<Endpoint> {
        let listener = TcpListener::bind(addr)?;
        let addr = listener.local_addr()?;
        // Non-blocking accepts, so the thread sees `stop` within a poll.
        listener.set_nonblocking(true)?;
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let thread = std::thread::Builder::new().name("strain-metrics".into()).spawn(move || {
            while !flag.load(Ordering::Relaxed) {
                match listener.accept() {
                    Ok((stream, _)) => answer(stream, &tally, &tags),
                    // Nothing waiting (or a failed accept): look again shortly. Scrapes come a
                    // few a second at most, so 10 wake-ups a second cost nothing and delay a
                    // scrape by 100 ms at most.
                    Err(_) => std::thread::sleep(POLL),
                }
            }
        })?;
        Ok(Endpoint { addr, stop, thread: Some(thread) })
    }

    /// Where it listens.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }
}

impl Drop for Endpoint {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Reads one request and answers it: the metrics on `GET /metrics`, 404 elsewhere, then
/// closes (a scraper opens a connection per scrape or reuses one; closing is always valid).
fn answer(stream: TcpStream, tally: &Mutex<Tally>, tags: &Tags) {
    let _ = stream.set_nonblocking(false);
    let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
    let _ = stream.set_write_timeout(Some(Duration::from_secs(2)));
    let mut reader = BufReader::new(&stream);
    let mut line = String::new();
    if reader.read_line(&mut line).is_err() {
        return;
    }
    let mut parts = line.split_whitespace();
    let (method, path) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
    let mut accept = String::new();
    // Headers until the blank line; at most 100 of them.
    for _ in 0..100 {
        let mut h = String::new();
        match reader.read_line(&mut h) {
            Ok(0) | Err(_) => break,
            Ok(_) if h.trim().is_empty() => break,
            Ok(_) => {
                if let Some((name, value)) = h.split_once(':') {
                    if name.trim().eq_ignore_ascii_case("accept") {
                        accept = value.trim().to_string();
                    }
                }
            }
        }
    }
    let (status, kind, body) = if (method == "GET" || method == "HEAD") && path.split('?').next() == Some("/metrics") {
        let om = wants_openmetrics(&accept);
        let families = match tally.lock() {
            Ok(t) => t.families(tags),
            Err(p) => p.into_inner().families(tags),
        };
        ("200 OK", if om { OPENMETRICS } else { TEXT }, render(&families, om))
    } else {
        ("404 Not Found", "text/plain; charset=utf-8", "strain serves /metrics only\n".to_string())
    };
    let head = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {kind}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    let mut out = &stream;
    let _ = out.write_all(head.as_bytes());
    if method != "HEAD" {
        let _ = out.write_all(body.as_bytes());
    }
}
