//! `--watch-pid`: a server process's CPU and memory over a step, read from `/proc`, so the
//! step table shows which resource ran out.

use std::time::Instant;

/// A process's counters at one moment.
#[derive(Debug, Clone, Copy)]
pub struct Sample {
    at: Instant,
    /// User + system CPU time, in clock ticks.
    ticks: u64,
}

pub use crate::result::find_max::Watched;

/// Why a process cannot be watched.
#[derive(Debug, thiserror::Error)]
#[error("cannot watch process {pid}: {why}")]
pub struct WatchError {
    /// The process id.
    pub pid: u32,
    /// What failed.
    pub why: String,
}

/// Reads `/proc/PID/stat`'s user and system time.
pub fn sample(pid: u32) -> Result<Sample, WatchError> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map_err(|e| WatchError { pid, why: format!("/proc/{pid}/stat: {e}") })?;
    let ticks = cpu_ticks(&text).ok_or_else(|| WatchError { pid, why: "unreadable /proc stat line".into() })?;
    Ok(Sample { at: Instant::now(), ticks })
}

/// utime + stime from a `/proc/PID/stat` line. The command name (field 2) is in parentheses
/// and may hold spaces and parentheses itself, so fields are counted after its last `)`.
fn cpu_ticks(stat: &str) -> Option<u64> {
    let rest = &stat[stat.rfind(')')? + 1..];
    let mut fields = rest.split_whitespace();
    // After the name: state is field 3, utime 14, stime 15.
    let utime: u64 = fields.nth(11)?.parse().ok()?;
    let stime: u64 = fields.next()?.parse().ok()?;
    Some(utime + stime)
}

/// Resident memory from `/proc/PID/statm` (pages), in bytes.
fn rss_bytes(pid: u32) -> Option<u64> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/statm")).ok()?;
    let pages: u64 = text.split_whitespace().nth(1)?.parse().ok()?;
    // SAFETY: sysconf has no preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    Some(pages * u64::try_from(page).ok()?)
}

/// The process over the time since `start` (`None`: it could not be read then).
pub fn over(pid: u32, start: Option<Sample>) -> Watched {
    let end = sample(pid).ok();
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as f64;
    let cpu_pct = start.zip(end).and_then(|(a, b)| {
        let wall = b.at.duration_since(a.at).as_secs_f64();
        (wall > 0.0).then(|| b.ticks.saturating_sub(a.ticks) as f64 / hz / wall * 100.0)
    });
    Watched { pid, cpu_pct, rss_bytes: rss_bytes(pid) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_lines_with_odd_names_parse() {
        let line = "4242 (my (odd) server) S 1 4242 4242 0 -1 4194560 1203 0 0 0 77 23 0 0 20 0 4 0 1 2 3";
        assert_eq!(cpu_ticks(line), Some(100));
        assert_eq!(cpu_ticks("garbage"), None);
    }

    #[test]
    fn this_process_can_be_watched() {
        let pid = std::process::id();
        let start = sample(pid).ok();
        let w = over(pid, start);
        assert!(w.cpu_pct.is_some() && w.rss_bytes.is_some_and(|b| b > 0), "{w:?}");
        assert!(sample(u32::MAX).is_err());
    }
}
