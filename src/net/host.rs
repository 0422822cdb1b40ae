//! Whether the server under test competes with strain for CPUs: a target on loopback (or a
//! Unix-domain socket) runs on this machine, and when the CPUs it may run on are among those
//! strain's threads may run on, each takes time from the other, so the numbers measure both
//! (an A/A comparison on two shared cores moved 23% between identical sides).
//!
//! Read from `/proc` once before the load: the listening socket's inode (`/proc/net/tcp`,
//! `tcp6`, `unix`), the processes holding it (`/proc/*/fd`), and their allowed CPUs
//! (`Cpus_allowed_list`), against this thread's own affinity, which strain's worker threads
//! inherit. Anything unreadable makes the answer "unknown", never a warning on a guess, except
//! one certainty: strain allowed on every CPU shares whichever the server uses.

use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::path::Path;

/// A server on this machine that may run on CPUs strain's threads run on.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct SharedCpus {
    /// The CPUs both may run on.
    pub cpus: Vec<usize>,
    /// The server's process, when it was found (its lowest id when several hold the socket).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
    /// Its command name (`/proc/PID/comm`), or `strain` for the built-in origin.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub process: Option<String>,
}

/// Where the target listens.
#[derive(Debug, Clone, Copy)]
pub enum Listening<'a> {
    /// A TCP address (only a loopback one is looked at).
    Tcp(SocketAddr),
    /// A Unix-domain socket's path.
    Unix(&'a Path),
    /// This very process (strain's built-in origin, run beside the load).
    ThisProcess,
}

/// The CPUs strain's threads and the server listening at `at` may share, if it runs here and
/// they do.
pub fn shared_cpus(at: Listening<'_>) -> Option<SharedCpus> {
    let own = own_cpus()?;
    let inodes = match at {
        Listening::ThisProcess => {
            return Some(SharedCpus {
                cpus: own.into_iter().collect(),
                pid: Some(std::process::id()),
                process: Some("strain".into()),
            })
        }
        Listening::Tcp(addr) if !addr.ip().is_loopback() => return None,
        Listening::Tcp(addr) => tcp_inodes(addr.port()),
        Listening::Unix(path) => unix_inodes(path),
    };
    // Nothing listens here (yet): no server to compete with.
    if inodes.is_empty() {
        return None;
    }
    let (pids, theirs) = holders(&inodes);
    if pids.is_empty() && held_here(&inodes) {
        // The origin is this process's own (a search or proxy test serving it beside the load).
        return shared_cpus(Listening::ThisProcess);
    }
    let everything = online_cpus().is_some_and(|all| all.is_subset(&own));
    let cpus: Vec<usize> = match theirs {
        Some(t) => t.intersection(&own).copied().collect(),
        // Unknown to us, but any CPU it uses is one strain may use too.
        None if everything => own.iter().copied().collect(),
        None => return None,
    };
    if cpus.is_empty() {
        return None;
    }
    let pid = pids.first().copied();
    let process =
        pid.and_then(|p| std::fs::read_to_string(format!("/proc/{p}/comm")).ok()).map(|s| s.trim().to_string());
    Some(SharedCpus { cpus, pid, process })
}

impl SharedCpus {
    /// The warning, one line: who shares what, why it matters, and how to pin them apart.
    pub fn warning(&self, target: &str) -> String {
        let online: Vec<usize> = online_cpus().map(|s| s.into_iter().collect()).unwrap_or_default();
        self.warning_on(target, &online)
    }

    /// [`SharedCpus::warning`] on a machine whose CPUs are `online`: the advice splits them.
    fn warning_on(&self, target: &str, online: &[usize]) -> String {
        let who = match (self.pid, &self.process) {
            (Some(pid), _) if pid == std::process::id() => "strain's built-in origin, in this process,".to_string(),
            (Some(pid), Some(name)) => format!("the server at {target} ({name}, pid {pid})"),
            (Some(pid), None) => format!("the server at {target} (pid {pid})"),
            (None, _) => format!("the server at {target} runs on this machine and"),
        };
        let (mine, theirs) = online.split_at(online.len() / 2);
        let pin = match self.pid {
            _ if mine.is_empty() => "; run them on separate machines".to_string(),
            Some(pid) if pid == std::process::id() => format!(
                "; run the origin as its own process, pinned apart: taskset -c {} strain origin ... and taskset -c {} strain ...",
                cpu_list(theirs),
                cpu_list(mine)
            ),
            Some(pid) => format!(
                "; pin them apart, e.g. taskset -c {} strain ... and taskset -acp {} {pid}",
                cpu_list(mine),
                cpu_list(theirs)
            ),
            None => format!(
                "; pin them apart, e.g. taskset -c {} strain ... and the server on CPUs {}",
                cpu_list(mine),
                cpu_list(theirs)
            ),
        };
        let noun = if self.cpus.len() == 1 { "CPU" } else { "CPUs" };
        format!(
            "strain: {who} may run on {noun} {}, as strain's threads do: each takes CPU time from the other, so the results measure both{pin}",
            cpu_list(&self.cpus)
        )
    }
}

/// `0-3,6` from a sorted list of CPU numbers.
pub fn cpu_list(cpus: &[usize]) -> String {
    let mut parts = Vec::new();
    let mut i = 0;
    while i < cpus.len() {
        let start = cpus[i];
        let mut end = start;
        while i + 1 < cpus.len() && cpus[i + 1] == end + 1 {
            i += 1;
            end = cpus[i];
        }
        parts.push(if start == end { start.to_string() } else { format!("{start}-{end}") });
        i += 1;
    }
    parts.join(",")
}

/// Parses `0-3,6` (the kernel's CPU list format).
fn parse_cpu_list(text: &str) -> Option<BTreeSet<usize>> {
    let mut set = BTreeSet::new();
    for part in text.trim().split(',').filter(|p| !p.is_empty()) {
        let (a, b) = part.split_once('-').unwrap_or((part, part));
        let (a, b): (usize, usize) = (a.trim().parse().ok()?, b.trim().parse().ok()?);
        if b < a || b - a > 65_536 {
            return None;
        }
        set.extend(a..=b);
    }
    Some(set)
}

/// The CPUs this thread may run on (strain's worker threads inherit them).
fn own_cpus() -> Option<BTreeSet<usize>> {
    std::fs::read_to_string("/proc/thread-self/status").ok().and_then(|s| allowed(&s))
}

/// The machine's online CPUs.
fn online_cpus() -> Option<BTreeSet<usize>> {
    std::fs::read_to_string("/sys/devices/system/cpu/online").ok().and_then(|s| parse_cpu_list(&s))
}

/// `Cpus_allowed_list` of a `/proc/.../status` text.
fn allowed(status: &str) -> Option<BTreeSet<usize>> {
    status.lines().find_map(|l| l.strip_prefix("Cpus_allowed_list:")).and_then(parse_cpu_list)
}

/// Inodes of the listening TCP sockets on `port` (IPv4 and IPv6, any local address).
fn tcp_inodes(port: u16) -> BTreeSet<u64> {
    let mut inodes = BTreeSet::new();
    for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
        let Ok(text) = std::fs::read_to_string(table) else { continue };
        for line in text.lines().skip(1) {
            let f: Vec<&str> = line.split_whitespace().collect();
            // sl local_address rem_address st ... inode (the 10th field); 0A is LISTEN.
            let (Some(local), Some(state), Some(inode)) = (f.get(1), f.get(3), f.get(9)) else { continue };
            let listening_port = local.rsplit_once(':').and_then(|(_, p)| u16::from_str_radix(p, 16).ok());
            if *state == "0A" && listening_port == Some(port) {
                inodes.extend(inode.parse::<u64>().ok().filter(|&i| i != 0));
            }
        }
    }
    inodes
}

/// Inodes of the listening Unix-domain sockets bound to `path`.
fn unix_inodes(path: &Path) -> BTreeSet<u64> {
    let Ok(text) = std::fs::read_to_string("/proc/net/unix") else { return BTreeSet::new() };
    let want = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    text.lines()
        .skip(1)
        .filter_map(|line| {
            let f: Vec<&str> = line.split_whitespace().collect();
            // Num RefCount Protocol Flags Type St Inode Path; flag 00010000 is a listener.
            let (flags, inode, bound) = (f.get(3)?, f.get(6)?, f.get(7)?);
            let listening = u32::from_str_radix(flags, 16).ok()? & 0x0001_0000 != 0;
            (listening && Path::new(bound) == want).then(|| inode.parse().ok()).flatten()
        })
        .collect()
}

/// The processes (other than this one) holding any of `inodes`, and the union of the CPUs
/// they may run on (`None` when none was found or none could be read).
fn holders(inodes: &BTreeSet<u64>) -> (Vec<u32>, Option<BTreeSet<usize>>) {
    if inodes.is_empty() {
        return (Vec::new(), None);
    }
    let me = std::process::id();
    let mut pids = Vec::new();
    let mut cpus: Option<BTreeSet<usize>> = None;
    let Ok(procs) = std::fs::read_dir("/proc") else { return (pids, None) };
    for entry in procs.flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else { continue };
        if pid == me || !holds(pid, inodes) {
            continue;
        }
        pids.push(pid);
        if let Some(set) = std::fs::read_to_string(format!("/proc/{pid}/status")).ok().and_then(|s| allowed(&s)) {
            cpus.get_or_insert_with(BTreeSet::new).extend(set);
        }
    }
    pids.sort_unstable();
    (pids, cpus)
}

/// Whether this process holds one of `inodes`.
fn held_here(inodes: &BTreeSet<u64>) -> bool {
    holds(std::process::id(), inodes)
}

/// Whether process `pid` has a descriptor on one of `inodes`.
fn holds(pid: u32, inodes: &BTreeSet<u64>) -> bool {
    let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else { return false };
    fds.flatten().any(|fd| {
        std::fs::read_link(fd.path()).ok().and_then(|l| {
            let l = l.to_str()?.strip_prefix("socket:[")?.strip_suffix(']')?.parse::<u64>().ok()?;
            Some(inodes.contains(&l))
        }) == Some(true)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_lists_read_and_print_as_the_kernel_writes_them() {
        // (text, CPUs, printed back)
        for (text, cpus, back) in [
            ("0-1\n", vec![0, 1], "0-1"),
            ("0", vec![0], "0"),
            ("0-3,6,8-9", vec![0, 1, 2, 3, 6, 8, 9], "0-3,6,8-9"),
            ("", vec![], ""),
        ] {
            let set = parse_cpu_list(text).unwrap();
            assert_eq!(set.iter().copied().collect::<Vec<_>>(), cpus, "{text:?}");
            assert_eq!(cpu_list(&cpus), back);
        }
        assert_eq!(parse_cpu_list("3-1"), None);
        assert_eq!(parse_cpu_list("x"), None);
    }

    #[test]
    fn a_listener_of_this_process_is_not_taken_for_another_server() {
        // This process's own socket is skipped: the built-in origin says so itself.
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        assert!(!tcp_inodes(port).is_empty());
        assert_eq!(holders(&tcp_inodes(port)).0, Vec::<u32>::new());
        let here = shared_cpus(Listening::Tcp(l.local_addr().unwrap())).unwrap();
        assert_eq!((here.pid, here.process.as_deref()), (Some(std::process::id()), Some("strain")));
        assert_eq!(shared_cpus(Listening::Tcp("10.1.2.3:80".parse().unwrap())), None);
    }

    #[test]
    fn the_warning_names_the_server_and_how_to_pin() {
        let s = SharedCpus { cpus: vec![0, 1], pid: Some(4242), process: Some("nginx".into()) };
        assert_eq!(
            s.warning_on("127.0.0.1:8080", &[0, 1]),
            "strain: the server at 127.0.0.1:8080 (nginx, pid 4242) may run on CPUs 0-1, as strain's threads do: \
             each takes CPU time from the other, so the results measure both; pin them apart, e.g. taskset -c 0 \
             strain ... and taskset -acp 1 4242"
        );
        let one = SharedCpus { cpus: vec![3], pid: None, process: None };
        assert!(one.warning_on("[::1]:80", &[3]).ends_with("CPU 3, as strain's threads do: each takes CPU time from the other, so the results measure both; run them on separate machines"));
        let four = SharedCpus { cpus: vec![0, 1, 2, 3], pid: None, process: None };
        assert!(four.warning_on("x", &[0, 1, 2, 3]).ends_with("taskset -c 0-1 strain ... and the server on CPUs 2-3"));
    }
}
