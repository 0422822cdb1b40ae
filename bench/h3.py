#!/usr/bin/env python3
"""HTTP/3 benchmark: strain --http3 against h2load over h3, and against its own HTTP/2 over TLS.

What it measures
----------------
Issue 23 gave strain an HTTP/3 client and asks for requests per generator
CPU-second and peak memory against Caddy, strain over HTTP/3 against the
best peer that builds here, same run, pinned (goal: >= 1.0x the peer), and
strain's HTTP/3 against its own HTTP/2 over TLS to the same server, to show
what QUIC costs.  The peer is h2load (nghttp2 1.52.0, the version Debian
ships) built with HTTP/3 from Debian bookworm's own sources by
bench/build-h2load-h3.sh (Debian's own h2load has no HTTP/3).  As in
bench/core.py and bench/h2.py only ratios of measurements taken in the same
invocation, interleaved in time, are headline figures.

The server is Caddy (Debian's /usr/bin/caddy, 2.6.2) on
https://localhost:PORT, TCP and UDP, pinned to CPU 1 (``taskset -c 1``;
Go then runs with GOMAXPROCS=1), from a private temporary directory (HOME
and the XDG dirs point there) with a self-signed certificate for localhost
made by openssl and this Caddyfile:

    { admin off
      auto_https off
      default_sni localhost
      servers { protocols h1 h2 h3 } }
    https://localhost:PORT { tls DIR/cert.pem DIR/key.pem
                             respond "hello" 200 }

No ``log`` directive, so no access log (writing one costs Caddy CPU per
request).  Every generator is pinned to CPU 0 and runs one thread.

1. Closed loop, requests per generator CPU-second.  For R rounds
   (``--rounds``, default 5; the order is reversed every other round):

       taskset -c 0 STRAIN --http3 -k -t1 -c4 -m10 -d10s --json FILE URL      # strain-h3
       taskset -c 0 h2load --npn-list h3 -t1 -c4 -m10 -D 10 URL               # h2load-h3
       taskset -c 0 STRAIN --http2 -k -t1 -c4 -m10 -d10s --json FILE URL      # strain-h2
       taskset -c 0 BASELINE --http3 -k -t1 -c4 -m10 -d10s --json FILE URL    # with --baseline

   (URL = https://localhost:PORT/; ``-c``, ``-m``, ``-d`` are
   ``--connections``, ``--streams``, ``--duration``.)  strain-h2 speaks
   HTTP/2 over TLS (h2 by ALPN) to the same Caddy: strain-h3/strain-h2 is
   what QUIC costs strain.  Each run is under GNU time
   (``/usr/bin/time -f '%M %U %S' -o FILE``) for the tool's peak RSS; the
   CPU is user+sys from ``os.wait4()`` on GNU time's pid, which Linux
   reports together with that of the child it reaped (the tool; GNU time
   adds about a millisecond), as in bench/rate.py.  Requests: strain's
   ``requests`` in its --json report (complete responses), h2load's
   ``succeeded`` from its ``requests: N total, N started, N done, N
   succeeded, ...`` line.  Headline: median over rounds of requests per
   CPU-second per tool, and the ratios of the medians strain-h3/h2load-h3
   (goal >= 1.0), strain-h3/strain-h2 and strain-h3/baseline-h3, with the
   paired per-round ratios for the spread.  ``caddy CPU`` near 100 % means
   the server was the bottleneck; ``other CPU`` is the rest of the machine
   (in CPUs, from /proc/stat), i.e. a disturbed run.  Before each run the
   script waits up to ``--settle`` seconds for the machine to go quiet, and
   the summary also gives the medians over the quiet runs alone (other CPU
   <= 5 %), as bench/h2.py does.

2. Memory: peak RSS (``ru_maxrss`` via GNU time) of strain-h3 and
   h2load-h3 (and baseline-h3) at ``-t1 -cN -m1`` for 5 s
   (``--mem-duration``).  N is the first of ``--mem-connections`` (default
   1000,500,200) at which every tool's run "works": it exits 0 without a
   timeout, completes at least N requests, strain completes N QUIC
   handshakes without handshake failures, h2load reports no failed or
   errored requests.  (1,000 QUIC handshakes at once are a lot for one
   Caddy core on a 2-core machine: every level tried is reported.)

Every run prints one line as it finishes; at the end comes a Markdown
summary ready for docs/benchmarks.md.  ``--json OUT`` writes the raw
numbers (default: none; the docs' runs use bench/results/h3-DATE.json).
Caddy runs in its own session from a private temporary directory and is
stopped (SIGTERM, then SIGKILL of its process group) on every way out,
Ctrl-C and SIGTERM included; every child has a timeout.

Requirements: caddy (Debian ``caddy``), openssl, GNU time, taskset, and
h2load with HTTP/3 (``bash bench/build-h2load-h3.sh``, which puts it in
target/peers/h2load-h3/prefix/bin/h2load, the default ``--h2load``).  The
script installs nothing; it stops with a one-line error naming what is
missing.  Python 3 standard library only.

Example:  python3 bench/h3.py --strain target/dist/strain --json bench/results/h3-2026-11-25.json
"""

import os
import signal
import socket
import subprocess
import sys
import tempfile
import time

from driver import cli, measure, proc, report, servers, tools
from driver.cli import BenchError, SetupError, fmt_dur, log
from driver.report import f_kib, f_num, f_ratio, flags, pct, ratio

TOOLS = ("strain-h3", "h2load-h3", "strain-h2")
PEER = "h2load-h3"
# bench/quinn-h3's loop on quinn and h3 (bench/h3_stack.py; issue 44's TLS stack).
QUINN = "quinn-h3"
DEFAULT_H2LOAD = os.path.join(cli.REPO, "target", "peers", "h2load-h3", "prefix", "bin", "h2load")
INSTALL = ("apt-get install -y caddy openssl time (taskset is in util-linux); "
           "bash bench/build-h2load-h3.sh for h2load with HTTP/3")
# Most "other CPU" of a run counted as quiet (as in bench/h2.py).
QUIET = 0.05

# Caddy's global options: no admin endpoint, no automatic HTTPS, h3 offered. Shared with
# bench/soak.py, whose site adds an access log.
CADDY_OPTIONS = """{
\tadmin off
\tauto_https off
\tdefault_sni localhost
\tservers {
\t\tprotocols h1 h2 h3
\t}
}
"""
CADDYFILE = CADDY_OPTIONS + """https://localhost:%(port)d {
\ttls %(dir)s/cert.pem %(dir)s/key.pem
\trespond "hello" 200
}
"""


def free_tcp_udp_port():
    """A port free for TCP and UDP on all addresses (Caddy binds :PORT for both)."""
    for _ in range(50):
        port = servers.free_port()
        ok = True
        for kind in (socket.SOCK_STREAM, socket.SOCK_DGRAM):
            with socket.socket(socket.AF_INET, kind) as s:
                try:
                    s.bind(("0.0.0.0", port))
                except OSError:
                    ok = False
        if ok:
            return port
    raise BenchError("no port free for both TCP and UDP")


class Caddy(servers.Server):
    """taskset -c CPU caddy run, h1/h2/h3 on https://localhost:PORT, `respond "hello" 200`."""

    def __init__(self, caddy, cpu):
        super().__init__(cpu, "/", None)
        self.port = free_tcp_udp_port()
        self.url = "https://localhost:%d/" % self.port
        self.caddy = caddy

    def argv(self):
        d = self.dir
        cert = subprocess.run(
            ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
             "-nodes", "-keyout", os.path.join(d, "key.pem"), "-out", os.path.join(d, "cert.pem"),
             "-days", "3", "-subj", "/CN=localhost",
             "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"],
            capture_output=True, text=True, timeout=30)
        if cert.returncode != 0:
            raise BenchError("openssl could not make a certificate: %s" % cert.stderr.strip())
        conf = os.path.join(d, "Caddyfile")
        with open(conf, "w") as f:
            f.write(CADDYFILE % {"port": self.port, "dir": d})
        # env and taskset exec, so the pid is Caddy's.
        return ["env", "HOME=" + d, "XDG_DATA_HOME=" + d, "XDG_CONFIG_HOME=" + d,
                "taskset", "-c", str(self.cpu), self.caddy, "run", "--adapter", "caddyfile",
                "--config", conf]

    def ready(self):
        """An HTTP/1.1 GET over TLS answers "hello", and the h3 listener is up."""
        if "enabling HTTP/3 listener" not in self.errors():
            return False
        data = servers.https_get(self.port, "/")
        return data is not None and data.startswith(b"HTTP/1.1 200") and data.endswith(b"\r\n\r\nhello")


def gen_argv(tool, args, connections, streams, duration, json_path):
    """The command line of `tool` (a TOOLS name or baseline-h3), pinned, with the URL."""
    if tool == PEER:
        argv = [args.h2load, "--npn-list", "h3", "-t1", "-c%d" % connections,
                "-m%d" % streams, "-D", "%g" % duration]
    elif tool == QUINN:
        argv = [args.quinn, str(connections), str(streams), "%g" % duration]
    else:
        binary = args.baseline if tool == "baseline-h3" else args.strain
        argv = [binary, "--http2" if tool == "strain-h2" else "--http3", "-k", "-t1",
                "-c%d" % connections, "-m%d" % streams, "-d%s" % fmt_dur(duration),
                "--json", json_path]
    return proc.pinned(args.gen_cpu, argv) + [args.url]


def parse(tool, run, json_path):
    """Requests completed, duration and what went wrong (into run["problems"])."""
    if tool == PEER:
        run["problems"] = tools.exit_problems(run)
        p = tools.parse_h2load(run)
        if p.get("ok") is not None and p["ok"] < p["requests"]:
            run["problems"].append("only %d of %d responses 2xx/3xx" % (p["ok"], p["requests"]))
        if "Application protocol: h3" not in run["stdout"]:
            run["problems"].append("h2load did not speak h3")
        run["h2load"] = p
        return p.get("requests"), p.get("duration")
    if tool == QUINN:
        run["problems"] = tools.exit_problems(run)
        words = run["stdout"].split()
        if len(words) != 4 or words[0] != "requests" or words[2] != "seconds":
            run["problems"].append("no request count")
            return None, None
        # It exits non-zero when any connection or request fails.
        return int(words[1]), float(words[3])
    run["problems"] = tools.exit_problems(run)
    p = tools.parse_strain(run, json_path)
    doc = run.get("tool_report") or {}
    want = "h2" if tool == "strain-h2" else "h3"
    if doc and doc.get("protocol") != want:
        run["problems"].append("spoke %s, not %s" % (doc.get("protocol"), want))
    errs = {k: v for k, v in (p.get("errors") or {}).items() if isinstance(v, int) and v}
    if errs:
        run["problems"].append("errors %s" % ", ".join("%s %d" % kv for kv in errs.items()))
    if p.get("non_2xx"):
        run["problems"].append("non-2xx %d" % p["non_2xx"])
    h3 = doc.get("http3") or {}
    run["handshakes"] = h3.get("handshakes")
    run["handshake_failures"] = h3.get("handshake_failures") or {}
    if run["handshake_failures"]:
        run["problems"].append("handshake failures %s" % run["handshake_failures"])
    if not p.get("requests"):
        run["problems"].append("no request count")
    return p.get("requests"), p.get("duration")


def kill_tools(pids, binary):
    """SIGKILLs those of `pids` still running `binary` (the tool under GNU time)."""
    for pid in pids:
        try:
            with open("/proc/%d/cmdline" % pid, "rb") as f:
                if f.read().split(b"\0")[0] != binary.encode():
                    continue
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


def one_run(tool, args, caddy, tmpdir, label, connections, streams, duration):
    """One measured run under GNU time: CPU from wait4, peak RSS from GNU time."""
    json_path = os.path.join(tmpdir, "%s-%s.json" % (tool, label))
    time_out = os.path.join(tmpdir, "time-%s-%s.txt" % (tool, label))
    for path in (json_path, time_out):
        if os.path.exists(path):
            os.unlink(path)
    inner = gen_argv(tool, args, connections, streams, duration, json_path)
    time.sleep(1)  # let the previous run's connections close on the server side
    seen = set()

    def poll(pid, elapsed):
        seen.update(measure.children_of(pid))

    try:
        run = measure.measured(proc.timed(inner, time_out), duration + 60, args.settle,
                               {"caddy_cpu": caddy.cpu_seconds}, poll=poll)
    except BaseException:
        # proc.run kills GNU time on Ctrl-C / SIGTERM; its child, the tool, would go on.
        kill_tools(seen, inner[3])
        raise
    reqs, dur = parse(tool, run, json_path)
    timed = proc.read_timed(time_out)
    if not timed:
        run["problems"].append("no GNU time output")
    run.update(tool=tool, inner_argv=inner, requests=reqs, duration=dur,
               maxrss_kb=timed.get("maxrss_kb"), time_utime=timed.get("time_utime"),
               time_stime=timed.get("time_stime"), connections=connections, streams=streams,
               rps=(reqs / dur) if reqs and dur else None,
               req_per_cpu_s=(reqs / run["cpu"]) if reqs and run["cpu"] > 0 else None)
    return run


def closed_run(tool, args, caddy, tmpdir, rnd):
    """One closed-loop run of the comparison."""
    run = one_run(tool, args, caddy, tmpdir, "r%d" % rnd, args.connections, args.streams,
                  args.duration)
    run["round"] = rnd
    log("  round %d %-11s %10s req  %6.2f s cpu (user %.2f sys %.2f)  %9s req/CPU-s  "
        "%9s req/s  peak RSS %s  gen CPU %3.0f%%  caddy CPU %3.0f%%  other CPU %3.0f%%%s" % (
            rnd, run["tool"], f_num(run["requests"]), run["cpu"], run["utime"], run["stime"],
            f_num(run["req_per_cpu_s"]), f_num(run["rps"]), f_kib(run["maxrss_kb"]),
            100 * (run["gen_cpu_share"] or 0), 100 * (run["caddy_cpu_share"] or 0),
            100 * (run["other_cpu_share"] or 0), flags(run)))
    return run


def mem_works(run, n):
    """Whether a memory run at -c n counts (see the docstring), with why not."""
    why = []
    if run["exit"] != 0 or run["timed_out"]:
        why.append("exit %s%s" % (run["exit"], ", timed out" if run["timed_out"] else ""))
    if not run["requests"] or run["requests"] < n:
        why.append("%s requests < %d connections" % (f_num(run["requests"]), n))
    if run["tool"] == QUINN:
        pass
    elif run["tool"] != PEER:
        if (run.get("handshakes") or 0) < n:
            why.append("%s handshakes < %d" % (f_num(run.get("handshakes")), n))
        if run.get("handshake_failures"):
            why.append("handshake failures %s" % run["handshake_failures"])
    else:
        h = run.get("h2load") or {}
        if h.get("failed") or h.get("errored"):
            why.append("h2load %d failed, %d errored" % (h.get("failed"), h.get("errored")))
    return why


def memory_runs(args, caddy, tmpdir, names):
    """Peak RSS at the first working level of --mem-connections; every attempt kept."""
    attempts, chosen = [], None
    for n in args.mem_connections:
        log("memory: -t1 -c%d -m%d %s" % (n, args.mem_streams, fmt_dur(args.mem_duration)))
        level = []
        for tool in names:
            run = one_run(tool, args, caddy, tmpdir, "mem%d" % n, n, args.mem_streams,
                          args.mem_duration)
            run["not_working"] = mem_works(run, n)
            level.append(run)
            log("  -c%-5d %-11s peak RSS %s  requests %s  handshakes %s  CPU %.2f s  caddy CPU "
                "%3.0f%%  other CPU %3.0f%%%s%s" % (
                    n, tool, f_kib(run["maxrss_kb"]), f_num(run["requests"]),
                    f_num(run.get("handshakes")), run["cpu"],
                    100 * (run["caddy_cpu_share"] or 0), 100 * (run["other_cpu_share"] or 0),
                    flags(run), ("  (does not count: %s)" % "; ".join(run["not_working"])
                                 if run["not_working"] else "")))
        attempts.extend(level)
        if all(not r["not_working"] for r in level):
            chosen = n
            break
        log("  -c%d did not work for every tool; trying the next level" % n)
    return attempts, chosen


def summarize(args, info, closed, mem, mem_n, cmds, names):
    """The Markdown summary and the summary numbers for --json."""
    rep = report.Report()
    rep.header(info, info["caddy"], info["h2load"], info["strain"])
    result = {}
    rep.para("Closed loop -t1 -c%d -m%d, %s per run, %d rounds, generator on CPU %d, Caddy on "
             "CPU %d; requests per generator CPU-second:" % (
                 args.connections, args.streams, fmt_dur(args.duration), args.rounds,
                 args.gen_cpu, args.server_cpu))
    fig, wall = report.ratio_table(rep, closed, "tool", names, "req_per_cpu_s", PEER,
                                   ("req/CPU-s per run", "median req/CPU-s"))
    med = fig["medians"]
    vs_h2 = report.compare(closed, "tool", names, "req_per_cpu_s", "strain-h2")
    result["closed"] = {
        "median_req_per_cpu_s": med, "median_rps": wall["medians"],
        "ratio_strain_h3_vs_h2load_h3": fig["ratios"]["strain-h3"],
        "paired_strain_h3_vs_h2load_h3": fig["paired"]["strain-h3"],
        "ratio_strain_h3_vs_strain_h2": vs_h2["ratios"]["strain-h3"],
        "paired_strain_h3_vs_strain_h2": vs_h2["paired"]["strain-h3"],
        "median_caddy_cpu_share": {t: report.median([r["caddy_cpu_share"] for r in fig["by"][t]])
                                   for t in names},
        "median_maxrss_kb": {t: report.median([r["maxrss_kb"] for r in fig["by"][t]])
                             for t in names},
    }
    c = result["closed"]
    lines = [
        "strain-h3/h2load-h3 median req/CPU-s: **%s** (paired by round %s)" % (
            f_ratio(c["ratio_strain_h3_vs_h2load_h3"]),
            ", ".join(f_ratio(p) for p in c["paired_strain_h3_vs_h2load_h3"])),
        "strain-h3/strain-h2 (what QUIC costs strain): **%s** (paired by round %s)" % (
            f_ratio(c["ratio_strain_h3_vs_strain_h2"]),
            ", ".join(f_ratio(p) for p in c["paired_strain_h3_vs_strain_h2"]))]
    if args.baseline:
        vs_b = report.compare(closed, "tool", names, "req_per_cpu_s", "baseline-h3")
        c["ratio_strain_h3_vs_baseline_h3"] = vs_b["ratios"]["strain-h3"]
        c["paired_strain_h3_vs_baseline_h3"] = vs_b["paired"]["strain-h3"]
        lines.append("strain-h3/baseline-h3: **%s** (paired by round %s)" % (
            f_ratio(c["ratio_strain_h3_vs_baseline_h3"]),
            ", ".join(f_ratio(p) for p in c["paired_strain_h3_vs_baseline_h3"])))
    rep.para("; ".join(lines) + ".")
    quiet = {t: [r["req_per_cpu_s"] for r in fig["by"][t] if r["other_cpu_share"] is not None
                 and r["other_cpu_share"] <= QUIET] for t in names}
    qmed = {t: report.median(v) for t, v in quiet.items()}
    c["quiet_median_req_per_cpu_s"] = qmed
    c["quiet_runs"] = {t: len(v) for t, v in quiet.items()}
    c["quiet_ratio_strain_h3_vs_h2load_h3"] = ratio(qmed["strain-h3"], qmed[PEER])
    c["quiet_ratio_strain_h3_vs_strain_h2"] = ratio(qmed["strain-h3"], qmed["strain-h2"])
    rep.para("Quiet runs only (other CPU <= %.0f%%): %s; strain-h3/h2load-h3 %s, "
             "strain-h3/strain-h2 %s." % (
                 100 * QUIET, "; ".join("%s %s (%d runs)" % (t, f_num(qmed[t]), len(quiet[t]))
                                        for t in names),
                 f_ratio(c["quiet_ratio_strain_h3_vs_h2load_h3"]),
                 f_ratio(c["quiet_ratio_strain_h3_vs_strain_h2"])))
    rep.para("Median peak RSS in these runs: %s; median Caddy CPU: %s." % (
        ", ".join("%s %s" % (t, f_kib(c["median_maxrss_kb"][t])) for t in names),
        ", ".join("%s %s" % (t, pct(c["median_caddy_cpu_share"][t], "%.0f%%")) for t in names)))
    rep.para("Closed-loop runs (in the order run):")
    rep.table(["round", "tool", "requests", "CPU s (user+sys)", "req/CPU-s", "req/s",
               "peak RSS", "gen CPU", "caddy CPU", "other CPU", "problems"],
              [[r["round"], r["tool"], f_num(r["requests"]),
                "%.2f (%.2f+%.2f)" % (r["cpu"], r["utime"], r["stime"]),
                f_num(r["req_per_cpu_s"]), f_num(r["rps"]), f_kib(r["maxrss_kb"]),
                pct(r["gen_cpu_share"], "%.0f%%"), pct(r["caddy_cpu_share"], "%.0f%%"),
                pct(r["other_cpu_share"], "%.0f%%"), "; ".join(r["problems"]) or "-"]
               for r in closed])
    if mem:
        chosen = [r for r in mem if r["connections"] == mem_n] if mem_n else []
        rss = {r["tool"]: r["maxrss_kb"] for r in chosen}
        result["memory"] = {"connections": mem_n, "tried": sorted({r["connections"] for r in mem},
                                                                  reverse=True),
                            "maxrss_kb": rss,
                            "ratio_strain_h3_vs_h2load_h3": ratio(rss.get("strain-h3"),
                                                                  rss.get(PEER))}
        if args.baseline:
            result["memory"]["ratio_strain_h3_vs_baseline_h3"] = ratio(rss.get("strain-h3"),
                                                                       rss.get("baseline-h3"))
        rep.para("Memory, -t1 -cN -m%d for %s, N the first of %s at which every tool's run "
                 "works (%s); peak RSS = ru_maxrss via GNU time:" % (
                     args.mem_streams, fmt_dur(args.mem_duration),
                     "/".join(str(n) for n in args.mem_connections),
                     "N = %d" % mem_n if mem_n else "none did"))
        rep.table(["-c", "tool", "peak RSS", "ratio vs h2load-h3", "requests", "handshakes",
                   "CPU s", "caddy CPU", "other CPU", "counts", "problems"],
                  [[r["connections"], r["tool"],
                    "n/a" if r["maxrss_kb"] is None else
                    "%.1f MiB (%d KiB)" % (r["maxrss_kb"] / 1024, r["maxrss_kb"]),
                    f_ratio(ratio(r["maxrss_kb"], next((x["maxrss_kb"] for x in mem
                                                        if x["connections"] == r["connections"]
                                                        and x["tool"] == PEER), None))),
                    f_num(r["requests"]), f_num(r.get("handshakes")), "%.2f" % r["cpu"],
                    pct(r["caddy_cpu_share"], "%.0f%%"), pct(r["other_cpu_share"], "%.0f%%"),
                    "no: " + "; ".join(r["not_working"]) if r["not_working"] else "yes",
                    "; ".join(r["problems"]) or "-"] for r in mem])
    rep.commands("Commands (URL = https://localhost:PORT/ of the private Caddy, STRAIN = %s, "
                 "h2load = %s; every generator run under /usr/bin/time -f '%%M %%U %%S' -o FILE):"
                 % (args.strain, args.h2load), cmds)
    return rep.text(), result


def options():
    """The command line: the shared options plus the peer, the stream count and the memory runs."""
    ap = cli.parser(__doc__.splitlines()[0], "rounds", "warmup", "settle", duration=10.0,
                    connections=4)
    ap.set_defaults(rounds=5)
    ap.add_argument("--streams", type=int, default=10, help="-m of the closed-loop runs")
    ap.add_argument("--h2load", default=DEFAULT_H2LOAD,
                    help="h2load built with HTTP/3 (bash bench/build-h2load-h3.sh)")
    ap.add_argument("--caddy", default="/usr/bin/caddy", help="caddy binary")
    cli.memory_options(ap, "1000,500,200", streams=1, connections_help=(
        "connection counts to try for the memory runs, largest first: the first at which "
        "every tool's run works is reported (empty to skip)"))
    args = cli.parse(ap)
    cli.int_list(args, "mem_connections")
    if args.streams <= 0 or args.connections <= 0 or any(n <= 0 for n in args.mem_connections):
        raise SetupError("--streams, --connections and --mem-connections must be positive")
    return args


def main(stack):
    """Caddy, a warm-up, the closed-loop rounds, the memory runs, then the summary."""
    args = options()
    cli.require(("taskset", "openssl"), INSTALL)
    for path, what in ((args.caddy, "caddy"), ("/usr/bin/time", "GNU time"),
                       (args.h2load, "h2load with HTTP/3")):
        if not (os.path.isfile(path) and os.access(path, os.X_OK)):
            raise SetupError("%s not found at %s; install with: %s" % (what, path, INSTALL))
    args.h2load = os.path.abspath(args.h2load)
    nofile = proc.raise_nofile()
    info = cli.machine_info({"caddy": [args.caddy, "version"],
                             "h2load": [args.h2load, "--version"],
                             "strain": [args.strain, "--version"]})
    info["caddy"] = "caddy " + info["caddy"]
    info["rlimit_nofile"] = nofile
    if args.baseline:
        info["baseline"] = cli.tool_version([args.baseline, "--version"])
    tmpdir = stack.enter_context(tempfile.TemporaryDirectory(prefix="strain-bench-h3-"))
    caddy = stack.enter_context(Caddy(args.caddy, args.server_cpu))
    args.url = caddy.url
    log("caddy: %s on CPU %d, pid %d" % (caddy.url, args.server_cpu, caddy.proc.pid))
    names = cli.contenders(args, TOOLS)
    names = tuple("baseline-h3" if n == "baseline" else n for n in names)
    labels = {args.strain: "STRAIN", args.h2load: "h2load", caddy.url: "URL"}
    if args.baseline:
        labels[args.baseline] = "BASELINE"
    cmds = ["taskset -c %d %s run --adapter caddyfile --config DIR/Caddyfile   # HOME, XDG_* = "
            "DIR; respond \"hello\" 200, protocols h1 h2 h3, no access log" % (
                args.server_cpu, args.caddy)]
    if args.warmup > 0:
        log("warm-up: h2load-h3 %s" % fmt_dur(args.warmup))
        proc.run(gen_argv(PEER, args, args.connections, args.streams, args.warmup, None),
                 timeout=args.warmup + 30)

    log("closed loop: %d rounds of %s, -t1 -c%d -m%d %s" % (
        args.rounds, ", ".join(names), args.connections, args.streams, fmt_dur(args.duration)))
    closed = []
    for i, tool in measure.schedule(args.rounds, names):
        closed.append(closed_run(tool, args, caddy, tmpdir, i))
        if i == 1:
            cmds.append(proc.display(closed[-1]["inner_argv"], dict(
                labels, **{a: "FILE" for a in closed[-1]["inner_argv"] if a.startswith(tmpdir)})))

    mem, mem_n = [], None
    if args.mem_connections:
        mem_names = tuple(n for n in names if n != "strain-h2")
        mem, mem_n = memory_runs(args, caddy, tmpdir, mem_names)
        for r in mem:
            if r["connections"] == (mem_n or args.mem_connections[-1]):
                cmds.append(proc.display(r["inner_argv"], dict(
                    labels, **{a: "FILE" for a in r["inner_argv"] if a.startswith(tmpdir)})))

    text, result = summarize(args, info, closed, mem, mem_n, cmds, names)
    print(text)
    caddy_log = caddy.errors()
    if args.json:
        report.write_results(args.json, args, info, {
            "summary": result, "closed_runs": closed, "memory_runs": mem, "commands": cmds,
            "caddy_log_tail": caddy_log, "summary_text": text})


if __name__ == "__main__":
    sys.exit(cli.run(main))
