#!/usr/bin/env python3
"""Core-engine benchmark: strain against wrk, closed loop, same machine, same run.

What it measures
----------------
strain is meant to be a faster drop-in for wrk.  On a small, shared machine
absolute numbers (requests/s) move by tens of percent from one minute to the
next, so this script only reports figures that are *ratios of measurements
taken in the same invocation*, interleaved in time:

1. Throughput per CPU.  A private nginx (1 worker, pinned to CPU 1 with
   ``taskset -c 1``) answers ``GET /`` with ``hello world\\n``.  For R rounds
   (``--rounds``, default 3) the script runs, one after the other,

       taskset -c 0 wrk    -t1 -c50 -d10s URL
       taskset -c 0 strain -t1 -c50 -d10s URL

   For each run it takes the generator's *own* user+sys CPU time from
   ``os.wait4()`` on that child's pid (taskset execs the tool, so the pid is
   the tool), parses the request count from the ``N requests in T, X read``
   line and computes requests per CPU-second.  The headline is
   ``median(strain) / median(wrk)`` of requests per CPU-second.  Requests/s
   (wall clock) are reported too, for context only: with one generator core
   and one server core, whichever side is slower caps the wall rate.
   Columns ``gen CPU`` and ``nginx CPU`` give each side's CPU use as a share
   of the wall time of the run; a generator well under 100 % means the
   server (or something else) was the bottleneck, not the generator.
   ``other CPU`` is what the rest of the machine used meanwhile (in CPUs,
   from /proc/stat): a high figure means the run was disturbed by other
   load; compare such runs with care.  Before each run the script waits up
   to ``--settle`` seconds (default 30) for the machine to go quiet.

2. Memory.  Peak RSS (``ru_maxrss`` from ``wait4()`` of that process)
   for ``-t1 -c10000 -d5s`` against the same nginx, for each tool, and the
   ratio strain/wrk.  The wait4() here is done by GNU time
   (``/usr/bin/time -f %M``, Debian package ``time``) as the tool's parent,
   not by this script: Linux carries the high-water RSS of the image a
   process replaces at exec into its ru_maxrss, so any process forked from
   this Python script reports at least Python's own RSS (14-20 MiB), which
   would hide a small generator's real figure.  A child of GNU time starts
   from a ~2 MiB floor.  Without /usr/bin/time the script falls back to the
   last VmHWM sampled from /proc/PID/status (every ~10 ms); that column is
   shown as a cross-check in any case.  ``estab`` is the number of ESTABLISHED server-side
   sockets on the nginx port sampled half-way through the run (from
   /proc/net/tcp), to check that the 10,000 connections really were open.
   The script raises its own soft RLIMIT_NOFILE to the hard limit so the
   children inherit it.

3. Optionally (``--syscalls``, needs ``strace``): each tool runs for 3 s
   under ``strace -c -f`` and the script divides the total number of system
   calls by the number of requests.  strace slows the tools down a lot; only
   the calls-per-request figure means anything here.

Reading the output
------------------
Every run prints one line as it finishes.  At the end comes a Markdown
summary (tables plus the exact commands), ready to paste into
docs/benchmarks.md.  Ratios > 1 for req/CPU-s favour strain; ratios < 1 for
RSS and syscalls/request favour strain.  ``--json OUT`` writes all raw
numbers (each run's output included).

Everything stays on 127.0.0.1 and every child process has a timeout; nginx
runs from a private temporary directory and is stopped on exit, exception
or Ctrl-C.

Requirements: wrk, nginx (Debian ``nginx-light``), taskset; GNU time for
exact peak RSS; strace for ``--syscalls``.  Install with
``apt-get install -y wrk nginx-light`` (and ``time``, ``strace``).
Python 3 standard library only.

Example:  python3 bench/core.py --strain target/release/strain --syscalls --json /tmp/core.json
"""

import argparse
import datetime
import json
import os
import platform
import random
import re
import resource
import shlex
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

NGINX_HTTP_COMMON = """\
{user}worker_processes 1;
daemon off;
pid {dir}/nginx.pid;
error_log {dir}/error.log warn;
worker_rlimit_nofile {nofile};

events {{
    worker_connections 20000;
    multi_accept on;
}}

http {{
    access_log off;
    keepalive_requests 1000000000;
    keepalive_timeout 120s;
    client_body_temp_path {dir}/client_body;
    proxy_temp_path {dir}/proxy;
    fastcgi_temp_path {dir}/fastcgi;
    uwsgi_temp_path {dir}/uwsgi;
    scgi_temp_path {dir}/scgi;
    default_type text/plain;
{body}
}}
"""

HELLO_SERVER = """
    server {{
        listen 127.0.0.1:{port} backlog=4096;
        location / {{
            return 200 "hello world\\n";
        }}
    }}"""


class BenchError(Exception):
    pass


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def parse_duration(text):
    """Seconds from a wrk-style duration: 500ms, 10, 10s, 2m, 1h."""
    m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*(ms|s|m|h)?\s*", text)
    if not m:
        raise argparse.ArgumentTypeError("bad duration %r" % text)
    value = float(m.group(1))
    unit = m.group(2) or "s"
    return value * {"ms": 0.001, "s": 1, "m": 60, "h": 3600}[unit]


def fmt_dur(seconds):
    if seconds == int(seconds):
        return "%ds" % int(seconds)
    return "%dms" % int(round(seconds * 1000))


def free_port():
    """A free 127.0.0.1 port below the ephemeral range, so that no client
    socket of the generators can ever share the server's port number (keeps
    the /proc/net/tcp count of server-side sockets exact)."""
    lo = 32768
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            lo = int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        pass
    candidates = list(range(max(1024, lo - 8000), lo))
    random.shuffle(candidates)
    for port in candidates[:200]:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def clk_tck():
    return os.sysconf("SC_CLK_TCK")


def proc_cpu_seconds(pid):
    """utime+stime of a live process (all threads), from /proc/PID/stat."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            data = f.read()
    except OSError:
        return None
    fields = data[data.rindex(")") + 2:].split()
    # fields[0] is field 3 (state); utime is field 14, stime field 15.
    return (int(fields[11]) + int(fields[12])) / clk_tck()


def machine_busy_seconds():
    """CPU seconds all CPUs spent not idle since boot, from /proc/stat."""
    try:
        with open("/proc/stat") as f:
            fields = [int(x) for x in f.readline().split()[1:]]
    except (OSError, ValueError):
        return None
    # user nice system idle iowait irq softirq steal [guest guest_nice]
    busy = sum(fields[:8]) - fields[3] - fields[4]
    return busy / clk_tck()


def settle(max_wait, threshold=0.15):
    """Wait (at most max_wait s) until the rest of the machine is quiet:
    less than `threshold` CPUs busy over one second.  Returns the busy
    CPUs seen in the last second waited."""
    deadline = time.monotonic() + max_wait
    while True:
        b0, t0 = machine_busy_seconds(), time.monotonic()
        time.sleep(1)
        b1, t1 = machine_busy_seconds(), time.monotonic()
        if b0 is None or b1 is None:
            return None
        busy = (b1 - b0) / (t1 - t0)
        if busy < threshold or time.monotonic() >= deadline:
            return busy


def children_of(pid):
    try:
        with open("/proc/%d/task/%d/children" % (pid, pid)) as f:
            return [int(x) for x in f.read().split()]
    except OSError:
        return []


def vm_hwm_kb(pid):
    """Peak RSS so far of pid's current memory image (VmHWM), in KiB."""
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return None


def established_on_port(port):
    """ESTABLISHED IPv4 sockets whose local port is `port` (server side)."""
    want = ":%04X" % port
    n = 0
    try:
        with open("/proc/net/tcp") as f:
            next(f)
            for line in f:
                parts = line.split(None, 4)
                if parts[1].endswith(want) and parts[3] == "01":
                    n += 1
    except OSError:
        return None
    return n


# --------------------------------------------------------------------------
# Running a child with a timeout and its own rusage.


def run_measured(argv, timeout, poll=None):
    """Run argv, wait for it with os.wait4 (its own rusage, not the
    cumulative RUSAGE_CHILDREN), kill it past `timeout` seconds.

    Returns dict(stdout, stderr, exit, wall, utime, stime, cpu, maxrss_kb,
    timed_out).  `poll(pid, elapsed)` is called about every 10 ms while the
    child runs.

    maxrss_kb here is NOT usable as the child's peak RSS: Linux keeps, in
    the child's rusage, the high-water RSS of the memory image it replaced
    at exec, i.e. of this Python process (about 14-20 MiB).  Memory runs
    use GNU time as the parent instead, see memory_run()."""
    out = tempfile.TemporaryFile()
    err = tempfile.TemporaryFile()
    start = time.monotonic()
    proc = subprocess.Popen(argv, stdout=out, stderr=err, stdin=subprocess.DEVNULL)
    timed_out = False
    try:
        while True:
            pid, status, ru = os.wait4(proc.pid, os.WNOHANG)
            if pid == proc.pid:
                break
            now = time.monotonic() - start
            if poll is not None:
                poll(proc.pid, now)
            if now > timeout:
                timed_out = True
                proc.kill()
                pid, status, ru = os.wait4(proc.pid, 0)
                break
            time.sleep(0.01)
    except BaseException:
        # Ctrl-C or anything else: do not leave the generator running.
        try:
            proc.kill()
            os.wait4(proc.pid, 0)
        except (OSError, ChildProcessError):
            pass
        proc.returncode = -9
        raise
    wall = time.monotonic() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    out.seek(0)
    err.seek(0)
    res = {
        "stdout": out.read().decode("utf-8", "replace"),
        "stderr": err.read().decode("utf-8", "replace"),
        "exit": proc.returncode,
        "wall": wall,
        "utime": ru.ru_utime,
        "stime": ru.ru_stime,
        "cpu": ru.ru_utime + ru.ru_stime,
        "maxrss_kb": ru.ru_maxrss,
        "timed_out": timed_out,
    }
    out.close()
    err.close()
    return res


SIZE_UNITS = {"B": 1, "KB": 1024, "MB": 1024 ** 2, "GB": 1024 ** 3, "TB": 1024 ** 4}
TIME_UNITS = {"us": 1e-6, "ms": 1e-3, "s": 1, "m": 60, "h": 3600}


def parse_report(text):
    """Pull the figures out of wrk-format text output."""
    r = {}
    m = re.search(r"^\s*(\d+) requests in ([0-9.]+)(us|ms|s|m|h), ([0-9.]+)([KMGT]?B) read",
                  text, re.M)
    if m:
        r["requests"] = int(m.group(1))
        r["elapsed"] = float(m.group(2)) * TIME_UNITS[m.group(3)]
        r["bytes_read"] = float(m.group(4)) * SIZE_UNITS[m.group(5)]
    m = re.search(r"^Requests/sec:\s*([0-9.]+)", text, re.M)
    if m:
        r["rps"] = float(m.group(1))
    m = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", text)
    if m:
        r["socket_errors"] = {k: int(v) for k, v in
                              zip(("connect", "read", "write", "timeout"), m.groups())}
    m = re.search(r"Non-2xx or 3xx responses: (\d+)", text)
    if m:
        r["non_2xx"] = int(m.group(1))
    return r


# --------------------------------------------------------------------------
# nginx


class Nginx:
    def __init__(self, cpu, nofile):
        self.dir = tempfile.mkdtemp(prefix="strain-bench-nginx-")
        self.port = free_port()
        self.cpu = cpu
        self.nofile = nofile
        self.proc = None
        self.url = "http://127.0.0.1:%d/" % self.port

    def conf_text(self):
        """The nginx.conf to run; a subclass serves something else."""
        return NGINX_HTTP_COMMON.format(user="", dir=self.dir, nofile=self.nofile,
                                        body=HELLO_SERVER.format(port=self.port))

    def start(self):
        conf = os.path.join(self.dir, "nginx.conf")
        with open(conf, "w") as f:
            f.write(self.conf_text())
        self.argv = ["taskset", "-c", str(self.cpu), "nginx",
                     "-p", self.dir + "/", "-e", os.path.join(self.dir, "error.log"),
                     "-c", conf]
        self.log = open(os.path.join(self.dir, "stdout.log"), "wb")
        # Own session: a Ctrl-C in the terminal reaches only this script,
        # which then stops nginx itself.
        self.proc = subprocess.Popen(self.argv, stdout=self.log, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL, start_new_session=True)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise BenchError("nginx exited at start (code %s):\n%s" % (
                    self.proc.returncode, self.errors()))
            if self._probe():
                return
            time.sleep(0.05)
        raise BenchError("nginx did not answer on %s within 10 s:\n%s" % (self.url, self.errors()))

    def _probe(self):
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=1) as s:
                s.sendall(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
                data = b""
                while True:
                    chunk = s.recv(4096)
                    if not chunk:
                        break
                    data += chunk
            return data.startswith(b"HTTP/1.1 200") and data.endswith(b"hello world\n")
        except OSError:
            return False

    def worker_pids(self):
        try:
            with open("/proc/%d/task/%d/children" % (self.proc.pid, self.proc.pid)) as f:
                return [int(x) for x in f.read().split()]
        except OSError:
            return []

    def cpu_seconds(self):
        total = 0.0
        for pid in self.worker_pids():
            v = proc_cpu_seconds(pid)
            if v is not None:
                total += v
        return total

    def errors(self):
        try:
            with open(os.path.join(self.dir, "error.log")) as f:
                return f.read()[-4000:]
        except OSError:
            return ""

    def stop(self):
        if self.proc is None:
            return
        if self.proc.poll() is None:
            try:
                self.proc.send_signal(signal.SIGTERM)  # fast shutdown
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=10)
        # Workers are in nginx's own process group; make sure none is left.
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except OSError:
            pass
        self.log.close()
        self.proc = None

    def cleanup(self):
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)


# --------------------------------------------------------------------------


def check_tools(args):
    missing = [t for t in ("wrk", "nginx", "taskset") if shutil.which(t) is None]
    if missing:
        raise BenchError("missing %s; install with: apt-get install -y wrk nginx-light"
                         " (taskset is in util-linux)" % ", ".join(missing))
    if not (os.path.isfile(args.strain) and os.access(args.strain, os.X_OK)):
        raise BenchError("strain binary not found or not executable: %s "
                         "(build it with cargo build --release, or pass --strain PATH)"
                         % args.strain)
    if args.mem_connections and not os.path.exists("/usr/bin/time"):
        log("note: /usr/bin/time not found, peak RSS falls back to sampled VmHWM "
            "(apt-get install -y time)")
    if args.syscalls and shutil.which("strace") is None:
        log("note: strace not found, skipping --syscalls (apt-get install -y strace)")
        args.syscalls = False
    if os.cpu_count() is not None and os.cpu_count() < 2:
        log("warning: fewer than 2 CPUs; generator and server will share a core")


def raise_nofile():
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    return soft


def tool_version(argv):
    try:
        p = subprocess.run(argv, capture_output=True, text=True, timeout=10)
        text = (p.stdout + p.stderr).strip().splitlines()
        return text[0].strip() if text else ""
    except (OSError, subprocess.TimeoutExpired):
        return ""


def machine_info():
    model = ""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return {
        "nproc": os.cpu_count(),
        "cpu_model": model,
        "kernel": platform.release(),
        "wrk": tool_version(["wrk", "-v"]),
        "nginx": tool_version(["nginx", "-v"]),
        "python": platform.python_version(),
    }


def gen_argv(tool, binary, cpu, threads, conns, dur, url):
    return ["taskset", "-c", str(cpu), binary, "-t%d" % threads, "-c%d" % conns,
            "-d%s" % dur, url]


def display(argv, strain_path):
    """A command line with the private URL replaced by URL for the docs."""
    out = []
    for a in argv:
        if a.startswith("http://127.0.0.1:"):
            a = "URL"
        elif a == strain_path:
            a = "STRAIN"
        out.append(a)
    return " ".join(shlex.quote(a) if a not in ("URL", "STRAIN") else a for a in out)


def median(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def ratio(a, b):
    if a is None or b is None or b == 0:
        return None
    return a / b


def f_num(x, fmt="{:,.0f}"):
    return "n/a" if x is None else fmt.format(x)


def f_ratio(x):
    return "n/a" if x is None else "%.2fx" % x


def problems_of(res, parsed):
    p = []
    if res["timed_out"]:
        p.append("timed out")
    if res["exit"] != 0:
        p.append("exit %s" % res["exit"])
    if "requests" not in parsed:
        p.append("no 'N requests in' line")
    se = parsed.get("socket_errors")
    if se and any(se.values()):
        p.append("socket errors %s" % ", ".join("%s %d" % kv for kv in se.items() if kv[1]))
    if parsed.get("non_2xx"):
        p.append("non-2xx %d" % parsed["non_2xx"])
    return p


def measured_run(argv, args, nginx):
    """Runs one generator after the machine settles and measures it, nginx and the rest.

    Returns the run's record (shared by every bench script), the raw result and the parsed
    wrk-style report."""
    busy_before = settle(args.settle) if args.settle > 0 else None
    ng0, m0 = nginx.cpu_seconds(), machine_busy_seconds()
    res = run_measured(argv, timeout=args.duration + 30)
    ng1, m1 = nginx.cpu_seconds(), machine_busy_seconds()
    other = None
    if m0 is not None and m1 is not None and res["wall"]:
        # Everything else the machine did meanwhile (other processes, this
        # script's own polling, interrupts): the noise indicator.
        other = max(0.0, (m1 - m0) - res["cpu"] - (ng1 - ng0)) / res["wall"]
    parsed = parse_report(res["stdout"])
    reqs = parsed.get("requests")
    run = {
        "argv": argv,
        "requests": reqs,
        "rps": parsed.get("rps"),
        "elapsed": parsed.get("elapsed"),
        "bytes_read": parsed.get("bytes_read"),
        "utime": res["utime"],
        "stime": res["stime"],
        "cpu": res["cpu"],
        "wall": res["wall"],
        "gen_cpu_share": res["cpu"] / res["wall"] if res["wall"] else None,
        "nginx_cpu": ng1 - ng0,
        "nginx_cpu_share": (ng1 - ng0) / res["wall"] if res["wall"] else None,
        "other_cpu_share": other,
        "busy_before": busy_before,
        "req_per_cpu_s": (reqs / res["cpu"]) if reqs and res["cpu"] > 0 else None,
        "exit": res["exit"],
        "socket_errors": parsed.get("socket_errors"),
        "non_2xx": parsed.get("non_2xx"),
        "stdout": res["stdout"],
        "stderr": res["stderr"],
        "problems": problems_of(res, parsed),
    }
    return run, res, parsed


def throughput_run(tool, binary, args, nginx):
    argv = gen_argv(tool, binary, args.gen_cpu, 1, args.connections,
                    fmt_dur(args.duration), nginx.url)
    run, _, _ = measured_run(argv, args, nginx)
    return {"tool": tool, **run}


def memory_run(tool, binary, args, nginx, tmpdir):
    """Peak RSS at many connections.

    The figure is ru_maxrss from wait4() of the tool's own process, taken by
    GNU time (/usr/bin/time -f %M) as its parent: a process forked from this
    Python script inherits Python's RSS as a floor for ru_maxrss (see
    run_measured), one forked from GNU time only a ~2 MiB one.  As a cross
    check, VmHWM of the tool's process is sampled from /proc every ~10 ms;
    the last sample is the peak up to ~10 ms before exit."""
    inner = gen_argv(tool, binary, args.gen_cpu, 1, args.mem_connections,
                     fmt_dur(args.mem_duration), nginx.url)
    time_out = os.path.join(tmpdir, "time-%s.txt" % tool)
    if os.path.exists("/usr/bin/time"):
        argv = ["/usr/bin/time", "-f", "%M %U %S", "-o", time_out] + inner
    else:
        argv = inner
    # Let the previous run's sockets close on the server, and the machine settle.
    time.sleep(1)
    if args.settle > 0:
        settle(args.settle)

    state = {"hwm": None, "established": None}

    def poll(pid, elapsed):
        target = pid
        if argv is not inner:
            kids = children_of(pid)
            if not kids:
                return
            target = kids[0]
        h = vm_hwm_kb(target)
        if h is not None:
            state["hwm"] = max(state["hwm"] or 0, h)
        if state["established"] is None and elapsed >= args.mem_duration / 2:
            state["established"] = established_on_port(nginx.port)

    res = run_measured(argv, timeout=args.mem_duration + 60, poll=poll)
    parsed = parse_report(res["stdout"])
    maxrss = None
    method = None
    if argv is not inner:
        try:
            with open(time_out) as f:
                last = f.read().strip().splitlines()[-1].split()
            maxrss = int(last[0])
            method = "ru_maxrss via GNU time"
        except (OSError, ValueError, IndexError):
            pass
    if maxrss is None:
        maxrss = state["hwm"]
        method = "VmHWM sampled (no /usr/bin/time)"
    run = {
        "tool": tool,
        "argv": argv,
        "maxrss_kb": maxrss,
        "maxrss_method": method,
        "vmhwm_sampled_kb": state["hwm"],
        "requests": parsed.get("requests"),
        "rps": parsed.get("rps"),
        "wall": res["wall"],
        "established_mid_run": state["established"],
        "exit": res["exit"],
        "socket_errors": parsed.get("socket_errors"),
        "non_2xx": parsed.get("non_2xx"),
        "stdout": res["stdout"],
        "stderr": res["stderr"],
    }
    run["problems"] = problems_of(res, parsed)
    return run


def parse_strace_total(path):
    calls = None
    per = {}
    with open(path) as f:
        for line in f:
            parts = line.split()
            if not parts or parts[0].startswith(("%", "-")):
                continue
            name = parts[-1]
            # columns: %time seconds usecs/call calls [errors] syscall
            try:
                n = int(parts[3])
            except (IndexError, ValueError):
                continue
            if name == "total":
                calls = n
            else:
                per[name] = n
    return calls, per


def syscall_run(tool, binary, args, nginx, tmpdir):
    out = os.path.join(tmpdir, "strace-%s.txt" % tool)
    dur = fmt_dur(args.syscall_duration)
    argv = ["taskset", "-c", str(args.gen_cpu), "strace", "-c", "-f", "-o", out,
            binary, "-t1", "-c%d" % args.connections, "-d%s" % dur, nginx.url]
    res = run_measured(argv, timeout=args.syscall_duration + 60)
    parsed = parse_report(res["stdout"])
    calls, per = (None, {})
    if os.path.exists(out):
        calls, per = parse_strace_total(out)
    reqs = parsed.get("requests")
    top = sorted(per.items(), key=lambda kv: -kv[1])[:8]
    run = {
        "tool": tool,
        "argv": argv,
        "requests": reqs,
        "syscalls": calls,
        "syscalls_per_request": (calls / reqs) if calls and reqs else None,
        "top_syscalls": top,
        "per_request_top": [(k, v / reqs) for k, v in top] if reqs else None,
        "exit": res["exit"],
        "stdout": res["stdout"],
        "stderr": res["stderr"],
    }
    run["problems"] = problems_of(res, parsed)
    if calls is None:
        run["problems"].append("no strace total")
    return run


def print_run_line(kind, i, run):
    if kind == "tp":
        log("  round %d %-6s %10s req  %7.2f s cpu (user %.2f sys %.2f)  %10s req/CPU-s  "
            "%10s req/s  gen CPU %3.0f%%  nginx CPU %3.0f%%  other CPU %3.0f%%%s" % (
                i, run["tool"], f_num(run["requests"]), run["cpu"], run["utime"], run["stime"],
                f_num(run["req_per_cpu_s"]), f_num(run["rps"]),
                100 * (run["gen_cpu_share"] or 0), 100 * (run["nginx_cpu_share"] or 0),
                100 * (run["other_cpu_share"] or 0),
                ("  !! " + "; ".join(run["problems"])) if run["problems"] else ""))


def summarize(args, info, tp_runs, mem_runs, sc_runs, cmds):
    lines = []
    w = lambda s="": lines.append(s)
    by = {"wrk": [r for r in tp_runs if r["tool"] == "wrk"],
          "strain": [r for r in tp_runs if r["tool"] == "strain"]}
    med = {t: median([r["req_per_cpu_s"] for r in rs]) for t, rs in by.items()}
    med_rps = {t: median([r["rps"] for r in rs]) for t, rs in by.items()}
    paired = [ratio(s["req_per_cpu_s"], wr["req_per_cpu_s"])
              for wr, s in zip(by["wrk"], by["strain"])]
    result = {
        "median_req_per_cpu_s": med,
        "median_rps": med_rps,
        "ratio_req_per_cpu_s": ratio(med["strain"], med["wrk"]),
        "ratio_rps": ratio(med_rps["strain"], med_rps["wrk"]),
        "paired_ratios_req_per_cpu_s": paired,
    }

    w("Date: %s; machine: %s CPUs, %s, Linux %s; %s; %s." % (
        datetime.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z"),
        info["nproc"], info["cpu_model"], info["kernel"], info["wrk"], info["nginx"]))
    w()
    w("Throughput per CPU (%d rounds, -t1 -c%d -d%s, generator on CPU %d, nginx on CPU %d):" % (
        args.rounds, args.connections, fmt_dur(args.duration), args.gen_cpu, args.server_cpu))
    w()
    w("| tool | runs | req/CPU-s per run | median req/CPU-s | ratio vs wrk | median req/s (wall) | ratio vs wrk |")
    w("|---|---|---|---|---|---|---|")
    for t in ("wrk", "strain"):
        rs = by[t]
        w("| %s | %d | %s | %s | %s | %s | %s |" % (
            t, len(rs), ", ".join(f_num(r["req_per_cpu_s"]) for r in rs), f_num(med[t]),
            f_ratio(ratio(med[t], med["wrk"])), f_num(med_rps[t]),
            f_ratio(ratio(med_rps[t], med_rps["wrk"]))))
    w()
    w("Per run (in the order run):")
    w()
    w("| round | tool | requests | CPU s (user+sys) | req/CPU-s | req/s | gen CPU | nginx CPU | other CPU | problems |")
    w("|---|---|---|---|---|---|---|---|---|---|")
    for r in tp_runs:
        w("| %d | %s | %s | %.2f (%.2f+%.2f) | %s | %s | %.0f%% | %.0f%% | %.0f%% | %s |" % (
            r["round"], r["tool"], f_num(r["requests"]), r["cpu"], r["utime"], r["stime"],
            f_num(r["req_per_cpu_s"]), f_num(r["rps"]), 100 * (r["gen_cpu_share"] or 0),
            100 * (r["nginx_cpu_share"] or 0), 100 * (r["other_cpu_share"] or 0),
            "; ".join(r["problems"]) or "-"))
    w()
    w("Paired per-round ratios strain/wrk of req/CPU-s: %s" %
      ", ".join(f_ratio(p) for p in paired))
    w()

    if mem_runs:
        rss = {r["tool"]: r["maxrss_kb"] for r in mem_runs}
        result["maxrss_kb"] = rss
        result["ratio_maxrss"] = ratio(rss.get("strain"), rss.get("wrk"))
        w("Memory (-t1 -c%d -d%s):" % (args.mem_connections, fmt_dur(args.mem_duration)))
        w()
        w("| tool | peak RSS | ratio vs wrk | VmHWM sampled | established mid-run | requests | problems |")
        w("|---|---|---|---|---|---|---|")
        for r in mem_runs:
            w("| %s | %s | %s | %s | %s | %s | %s |" % (
                r["tool"],
                "n/a" if r["maxrss_kb"] is None else
                "%.1f MiB (%d KiB)" % (r["maxrss_kb"] / 1024, r["maxrss_kb"]),
                f_ratio(ratio(r["maxrss_kb"], rss.get("wrk"))),
                "n/a" if r["vmhwm_sampled_kb"] is None else "%d KiB" % r["vmhwm_sampled_kb"],
                f_num(r["established_mid_run"]), f_num(r["requests"]),
                "; ".join(r["problems"]) or "-"))
        w()
        w("Peak RSS method: %s." % ", ".join(sorted({r["maxrss_method"] for r in mem_runs})))
        w()

    if sc_runs:
        spr = {r["tool"]: r["syscalls_per_request"] for r in sc_runs}
        result["syscalls_per_request"] = spr
        result["ratio_syscalls_per_request"] = ratio(spr.get("strain"), spr.get("wrk"))
        w("System calls (under strace -c -f, -t1 -c%d -d%s):" % (
            args.connections, fmt_dur(args.syscall_duration)))
        w()
        w("| tool | requests | syscalls | syscalls/request | ratio vs wrk | top calls per request |")
        w("|---|---|---|---|---|---|")
        for r in sc_runs:
            top = ", ".join("%s %.2f" % (k, v) for k, v in (r["per_request_top"] or [])[:5])
            w("| %s | %s | %s | %s | %s | %s |" % (
                r["tool"], f_num(r["requests"]), f_num(r["syscalls"]),
                f_num(r["syscalls_per_request"], "{:.2f}"),
                f_ratio(ratio(r["syscalls_per_request"], spr.get("wrk"))), top or "-"))
        w()

    w("Commands (URL = http://127.0.0.1:PORT/ of the private nginx, STRAIN = %s):" % args.strain)
    w()
    w("```")
    for c in cmds:
        w(c)
    w("```")
    return "\n".join(lines), result


def write_results(path, args, info, sections, skip_options=("json",)):
    """Writes a run's raw numbers as JSON: date, machine, options, then `sections` in order."""
    doc = {
        "date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
        "machine": info,
        "options": {k: v for k, v in vars(args).items() if k not in skip_options},
    }
    doc.update(sections)
    with open(path, "w") as f:
        json.dump(doc, f, indent=2, default=str)
    log("raw numbers written to %s" % path)


def main():
    ap = argparse.ArgumentParser(
        description="Benchmark strain against wrk: requests per CPU-second, peak RSS at "
                    "10k connections, optional syscalls per request.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    ap.add_argument("--strain", default="target/release/strain",
                    help="strain binary (relative paths: to the current directory, "
                         "else to the repository root)")
    ap.add_argument("--rounds", type=int, default=3, help="wrk/strain pairs for throughput")
    ap.add_argument("--duration", type=parse_duration, default=10.0,
                    help="duration of each throughput run")
    ap.add_argument("--connections", type=int, default=50, help="connections, throughput runs")
    ap.add_argument("--mem-connections", type=int, default=10000,
                    help="connections, memory runs (0 to skip)")
    ap.add_argument("--mem-duration", type=parse_duration, default=5.0,
                    help="duration of each memory run")
    ap.add_argument("--syscalls", action="store_true",
                    help="also count syscalls per request under strace")
    ap.add_argument("--syscall-duration", type=parse_duration, default=3.0,
                    help="duration of each strace run")
    ap.add_argument("--warmup", type=parse_duration, default=2.0,
                    help="unreported wrk run before the first round (0 to skip)")
    ap.add_argument("--settle", type=float, default=30.0,
                    help="before each run, wait up to this many seconds for the rest of "
                         "the machine to go quiet (<0.15 CPUs busy over 1 s); 0 to skip")
    ap.add_argument("--gen-cpu", type=int, default=0, help="CPU for the load generator")
    ap.add_argument("--server-cpu", type=int, default=1, help="CPU for nginx")
    ap.add_argument("--json", metavar="OUT", help="write raw numbers to OUT")
    args = ap.parse_args()

    if not os.path.isabs(args.strain) and not os.path.exists(args.strain):
        alt = os.path.join(REPO, args.strain)
        if os.path.exists(alt):
            args.strain = alt
    args.strain = os.path.abspath(args.strain)

    # SIGTERM behaves like Ctrl-C so that `finally` stops nginx.
    def on_term(signum, frame):
        raise KeyboardInterrupt
    signal.signal(signal.SIGTERM, on_term)

    try:
        check_tools(args)
    except BenchError as e:
        log("error: %s" % e)
        return 2

    nofile = raise_nofile()
    need = args.mem_connections + 100
    if args.mem_connections and nofile < need:
        log("warning: RLIMIT_NOFILE is %d, below the %d needed for -c%d" % (
            nofile, need, args.mem_connections))

    info = machine_info()
    info["strain"] = tool_version([args.strain, "--version"])
    info["rlimit_nofile"] = nofile
    log("machine: %s" % json.dumps(info))

    nginx = Nginx(args.server_cpu, nofile)
    tmpdir = tempfile.mkdtemp(prefix="strain-bench-")
    tp_runs, mem_runs, sc_runs, cmds = [], [], [], []
    binaries = {"wrk": "wrk", "strain": args.strain}
    try:
        nginx.start()
        log("nginx: %s (pid %d, workers %s), dir %s" % (
            nginx.url, nginx.proc.pid, nginx.worker_pids(), nginx.dir))
        cmds.append("taskset -c %d nginx -p DIR/ -e DIR/error.log -c DIR/nginx.conf"
                    "   # worker_processes 1; return 200 \"hello world\\n\"" % args.server_cpu)

        if args.warmup > 0:
            log("warm-up: wrk %s" % fmt_dur(args.warmup))
            run_measured(gen_argv("wrk", "wrk", args.gen_cpu, 1, args.connections,
                                  fmt_dur(args.warmup), nginx.url),
                         timeout=args.warmup + 30)

        log("throughput: %d rounds of wrk then strain, -t1 -c%d -d%s" % (
            args.rounds, args.connections, fmt_dur(args.duration)))
        for i in range(1, args.rounds + 1):
            for tool in ("wrk", "strain"):
                run = throughput_run(tool, binaries[tool], args, nginx)
                run["round"] = i
                tp_runs.append(run)
                print_run_line("tp", i, run)
                if i == 1:
                    cmds.append(display(run["argv"], args.strain))

        if args.mem_connections:
            log("memory: -t1 -c%d -d%s" % (args.mem_connections, fmt_dur(args.mem_duration)))
            for tool in ("wrk", "strain"):
                run = memory_run(tool, binaries[tool], args, nginx, tmpdir)
                mem_runs.append(run)
                cmds.append(display(run["argv"], args.strain).replace(
                    os.path.join(tmpdir, "time-%s.txt" % tool), "FILE"))
                log("  %-6s peak RSS %s KiB (%s; VmHWM sampled %s KiB)  established mid-run %s"
                    "  requests %s%s" % (
                    tool, run["maxrss_kb"], run["maxrss_method"], run["vmhwm_sampled_kb"],
                    run["established_mid_run"],
                    f_num(run["requests"]),
                    ("  !! " + "; ".join(run["problems"])) if run["problems"] else ""))

        if args.syscalls:
            log("syscalls: strace -c -f, -d%s" % fmt_dur(args.syscall_duration))
            for tool in ("wrk", "strain"):
                run = syscall_run(tool, binaries[tool], args, nginx, tmpdir)
                sc_runs.append(run)
                cmds.append(display(run["argv"], args.strain).replace(
                    os.path.join(tmpdir, "strace-%s.txt" % tool), "FILE"))
                log("  %-6s %s syscalls / %s requests = %s per request%s" % (
                    tool, f_num(run["syscalls"]), f_num(run["requests"]),
                    f_num(run["syscalls_per_request"], "{:.2f}"),
                    ("  !! " + "; ".join(run["problems"])) if run["problems"] else ""))

        nginx_errors = nginx.errors()
    except KeyboardInterrupt:
        log("interrupted; stopping nginx")
        return 130
    except BenchError as e:
        log("error: %s" % e)
        return 1
    finally:
        nginx.cleanup()
        shutil.rmtree(tmpdir, ignore_errors=True)

    text, result = summarize(args, info, tp_runs, mem_runs, sc_runs, cmds)
    print(text)
    if nginx_errors.strip():
        log("nginx error.log (tail):\n" + nginx_errors)

    if args.json:
        write_results(args.json, args, info, {
            "summary": result,
            "throughput_runs": tp_runs,
            "memory_runs": mem_runs,
            "syscall_runs": sc_runs,
            "commands": cmds,
            "nginx_error_log_tail": nginx_errors,
        })
    return 0


if __name__ == "__main__":
    sys.exit(main())
