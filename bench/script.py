#!/usr/bin/env python3
"""Lua scripting benchmark: what a request() hook costs, strain against wrk.

What it measures
----------------
Issue 4 asks that a Lua ``request()`` hook keep strain at >= 0.8x of its own
unscripted throughput per CPU, and at >= 1.0x of wrk running the same
script.  The script is bench/counter.lua: a ``request()`` that increments a
counter and returns ``wrk.format(nil, "/item/" .. counter)``, so every
request is built anew in Lua (no static request rendered once).

Against the private nginx of bench/core.py (one worker pinned to CPU 1 with
``taskset -c 1``, ``return 200 "hello world\\n"`` for every path,
``keepalive_requests 1000000000``) on 127.0.0.1, for R rounds (``--rounds``,
default 3; the order is reversed every other round) the script runs

    taskset -c 0 wrk    -t1 -c50 -d10s -s bench/counter.lua URL   # wrk+script
    taskset -c 0 STRAIN -t1 -c50 -d10s -s bench/counter.lua URL   # strain+script
    taskset -c 0 STRAIN -t1 -c50 -d10s URL                        # strain

after a 2 s unrecorded wrk warm-up.  As in bench/core.py, each run's CPU is
the generator's own user+sys from ``os.wait4()`` on its pid (taskset execs
the tool), the request count comes from the ``N requests in T, X read``
line, and the figure compared is requests per CPU-second.  Before each run
the script waits up to ``--settle`` seconds for the machine to go quiet;
``other CPU`` is what the rest of the machine used meanwhile.

The two headline ratios are of medians over rounds of requests per
CPU-second:

    strain+script / strain      (requirement >= 0.8x)
    strain+script / wrk+script  (requirement >= 1.0x)

Paired per-round ratios are shown too, as a measure of the spread.

Before the rounds, a path check runs each scripted tool for 1 s with one
connection against a small HTTP/1.1 server inside this script and records
the request paths it received: they must be consecutive, /item/N,
/item/N+1, ..., which shows the script was really in effect.  (strain's
start at /item/1; wrk's at /item/2, because wrk calls request() once in the
first thread's Lua state before the run, to count pipelined requests, and
does not send that request.)  Skip it with ``--no-path-check``.

``--json OUT`` writes all raw numbers (each run's output included); the
Markdown summary on stdout is ready for docs/benchmarks.md.

Requirements: wrk (Debian's, with LuaJIT), nginx (``nginx-light``),
taskset.  Python 3 standard library only; the shared helpers are imported
from bench/core.py.

Example:  python3 bench/script.py --strain target/release/strain --json /tmp/script.json
"""

import argparse
import datetime
import json
import os
import re
import signal
import socket
import sys
import threading
import time

# Reuse bench/core.py's helpers (see bench/rate.py).
sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from core import (  # noqa: E402
    write_results,
    REPO, BenchError, Nginx, check_tools, display, f_num, f_ratio, fmt_dur, log,
    machine_info, measured_run, median, parse_duration, raise_nofile, ratio, run_measured,
    tool_version,
)

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "counter.lua")

# Variants, in the order of odd rounds.
VARIANTS = ("wrk+script", "strain+script", "strain")


def variant_argv(variant, args, url, duration, connections):
    tool = args.strain if variant.startswith("strain") else "wrk"
    argv = ["taskset", "-c", str(args.gen_cpu), tool, "-t1", "-c%d" % connections,
            "-d%s" % fmt_dur(duration)]
    if variant.endswith("+script"):
        argv += ["-s", args.script]
    return argv + [url]


# --------------------------------------------------------------------------
# Path check: which requests does each tool send with the script?


class PathServer:
    """A tiny keep-alive HTTP/1.1 server on 127.0.0.1 that answers every
    request with 200 "hello world\\n" and keeps the first request paths."""

    def __init__(self, keep=2000):
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.port = self.sock.getsockname()[1]
        self.url = "http://127.0.0.1:%d/" % self.port
        self.keep = keep
        self.paths = []
        self.count = 0
        self.lock = threading.Lock()
        self.stopping = False
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    def reset(self):
        with self.lock:
            self.paths = []
            self.count = 0

    def _accept(self):
        while not self.stopping:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn):
        reply = (b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n"
                 b"Content-Length: 12\r\n\r\nhello world\n")
        buf = b""
        conn.settimeout(5)
        try:
            while True:
                while b"\r\n\r\n" in buf:
                    head, buf = buf.split(b"\r\n\r\n", 1)
                    line = head.split(b"\r\n", 1)[0].decode("latin-1")
                    parts = line.split()
                    with self.lock:
                        self.count += 1
                        if len(self.paths) < self.keep and len(parts) >= 2:
                            self.paths.append(parts[1])
                    conn.sendall(reply)
                data = conn.recv(65536)
                if not data:
                    return
                buf += data
        except OSError:
            return
        finally:
            conn.close()

    def close(self):
        self.stopping = True
        self.sock.close()


def path_check(variant, args, server):
    server.reset()
    argv = variant_argv(variant, args, server.url, 1.0, 1)
    res = run_measured(argv, timeout=30)
    time.sleep(0.2)
    with server.lock:
        paths = list(server.paths)
        count = server.count
    # wrk calls request() once in thread 1's Lua state before the run (to
    # count pipelined requests) and never sends that one, so its paths start
    # at /item/2; strain's start at /item/1 (docs/SCRIPTING.md).
    m = re.fullmatch(r"/item/(\d+)", paths[0]) if paths else None
    start = int(m.group(1)) if m else None
    ok = start is not None and paths == ["/item/%d" % (start + i) for i in range(len(paths))]
    return {
        "variant": variant,
        "argv": argv,
        "exit": res["exit"],
        "requests_received": count,
        "first_paths": paths[:5],
        "last_path": paths[-1] if paths else None,
        "paths_checked": len(paths),
        "first_number": start,
        "consecutive": ok,
        "stdout": res["stdout"][-4000:],
        "stderr": res["stderr"][-4000:],
    }


# --------------------------------------------------------------------------
# One measured run


def script_run(variant, args, nginx, rnd):
    argv = variant_argv(variant, args, nginx.url, args.duration, args.connections)
    # Let the previous run's connections close on the server side.
    time.sleep(1)
    run, res, _ = measured_run(argv, args, nginx)
    reqs = run["requests"]
    run.update({
        "variant": variant,
        "round": rnd,
        "user_us_per_req": (1e6 * res["utime"] / reqs) if reqs else None,
        "sys_us_per_req": (1e6 * res["stime"] / reqs) if reqs else None,
        "stdout": res["stdout"][-20000:],
        "stderr": res["stderr"][-4000:],
    })
    return run


def print_run_line(run):
    log("  round %d %-13s %10s req  %6.2f s cpu (user %.2f sys %.2f)  %10s req/CPU-s  "
        "user %5.2f us/req  %10s req/s  gen CPU %3.0f%%  nginx CPU %3.0f%%  other CPU %3.0f%%%s" % (
            run["round"], run["variant"], f_num(run["requests"]), run["cpu"], run["utime"],
            run["stime"], f_num(run["req_per_cpu_s"]), run["user_us_per_req"] or 0,
            f_num(run["rps"]), 100 * (run["gen_cpu_share"] or 0),
            100 * (run["nginx_cpu_share"] or 0), 100 * (run["other_cpu_share"] or 0),
            ("  !! " + "; ".join(run["problems"])) if run["problems"] else ""))


# --------------------------------------------------------------------------
# Summary


def summarize(args, info, runs, checks, cmds):
    lines = []
    w = lambda s="": lines.append(s)
    by = {v: [r for r in runs if r["variant"] == v] for v in VARIANTS}
    med = {v: {
        "req_per_cpu_s": median([r["req_per_cpu_s"] for r in by[v]]),
        "rps": median([r["rps"] for r in by[v]]),
        "user_us_per_req": median([r["user_us_per_req"] for r in by[v]]),
        "sys_us_per_req": median([r["sys_us_per_req"] for r in by[v]]),
        "gen_cpu_share": median([r["gen_cpu_share"] for r in by[v]]),
    } for v in VARIANTS}
    rounds = sorted({r["round"] for r in runs})

    def paired(a, b):
        out = []
        for i in rounds:
            ra = [r for r in by[a] if r["round"] == i]
            rb = [r for r in by[b] if r["round"] == i]
            if ra and rb:
                out.append(ratio(ra[0]["req_per_cpu_s"], rb[0]["req_per_cpu_s"]))
        return out

    r_self = ratio(med["strain+script"]["req_per_cpu_s"], med["strain"]["req_per_cpu_s"])
    r_wrk = ratio(med["strain+script"]["req_per_cpu_s"], med["wrk+script"]["req_per_cpu_s"])
    result = {
        "medians": med,
        "ratio_strain_script_over_strain": r_self,
        "ratio_strain_script_over_wrk_script": r_wrk,
        "paired_strain_script_over_strain": paired("strain+script", "strain"),
        "paired_strain_script_over_wrk_script": paired("strain+script", "wrk+script"),
        "requirements": {
            "strain_script_ge_0.8x_strain": None if r_self is None else r_self >= 0.8,
            "strain_script_ge_1.0x_wrk_script": None if r_wrk is None else r_wrk >= 1.0,
        },
        "path_checks": [{k: c[k] for k in ("variant", "requests_received", "first_paths",
                                            "last_path", "first_number", "consecutive")}
                        for c in checks],
    }

    w("Date: %s; machine: %s CPUs, %s, Linux %s; %s; %s; %s." % (
        datetime.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z"),
        info["nproc"], info["cpu_model"], info["kernel"], info["wrk"], info["nginx"],
        info.get("strain", "")))
    w()
    w("Requests per CPU-second (%d rounds, -t1 -c%d -d%s, script bench/counter.lua, generator "
      "on CPU %d, nginx on CPU %d):" % (args.rounds, args.connections, fmt_dur(args.duration),
                                        args.gen_cpu, args.server_cpu))
    w()
    w("| run | req/CPU-s per run | median req/CPU-s | vs strain | vs wrk+script "
      "| median user, sys us/req | median gen CPU | median req/s (wall) |")
    w("|---|---|---|---|---|---|---|---|")
    for v in VARIANTS:
        m = med[v]
        w("| %s | %s | %s | %s | %s | %s, %s | %s | %s |" % (
            v, ", ".join(f_num(r["req_per_cpu_s"]) for r in by[v]), f_num(m["req_per_cpu_s"]),
            f_ratio(ratio(m["req_per_cpu_s"], med["strain"]["req_per_cpu_s"])),
            f_ratio(ratio(m["req_per_cpu_s"], med["wrk+script"]["req_per_cpu_s"])),
            f_num(m["user_us_per_req"], "{:.2f}"), f_num(m["sys_us_per_req"], "{:.2f}"),
            "n/a" if m["gen_cpu_share"] is None else "%.0f%%" % (100 * m["gen_cpu_share"]),
            f_num(m["rps"])))
    w()
    w("Per run (in the order run):")
    w()
    w("| round | run | requests | CPU s (user+sys) | req/CPU-s | req/s | gen CPU | nginx CPU "
      "| other CPU | problems |")
    w("|---|---|---|---|---|---|---|---|---|---|")
    for r in runs:
        w("| %d | %s | %s | %.2f (%.2f+%.2f) | %s | %s | %.0f%% | %.0f%% | %.0f%% | %s |" % (
            r["round"], r["variant"], f_num(r["requests"]), r["cpu"], r["utime"], r["stime"],
            f_num(r["req_per_cpu_s"]), f_num(r["rps"]), 100 * (r["gen_cpu_share"] or 0),
            100 * (r["nginx_cpu_share"] or 0), 100 * (r["other_cpu_share"] or 0),
            "; ".join(r["problems"]) or "-"))
    w()
    w("Ratios of medians of req/CPU-s: strain+script / strain = %s (requirement >= 0.8x: %s); "
      "strain+script / wrk+script = %s (requirement >= 1.0x: %s)." % (
          f_ratio(r_self), yn(result["requirements"]["strain_script_ge_0.8x_strain"]),
          f_ratio(r_wrk), yn(result["requirements"]["strain_script_ge_1.0x_wrk_script"])))
    w()
    w("Paired per-round ratios: strain+script / strain %s; strain+script / wrk+script %s." % (
        ", ".join(f_ratio(x) for x in result["paired_strain_script_over_strain"]),
        ", ".join(f_ratio(x) for x in result["paired_strain_script_over_wrk_script"])))
    w()
    if checks:
        w("Path check (1 s, -c1, against a test server in the script): %s." % "; ".join(
            "%s sent %s requests, the first %d checked consecutive: %s (%s ... %s)" % (
                c["variant"], f_num(c["requests_received"]), c["paths_checked"],
                yn(c["consecutive"]), " ".join(c["first_paths"][:3]), c["last_path"])
            for c in checks))
        w()
    w("Commands (URL = http://127.0.0.1:PORT/ of the private nginx, STRAIN = %s):" % args.strain)
    w()
    w("```")
    for c in cmds:
        w(c)
    w("```")
    return "\n".join(lines), result


def yn(v):
    return "n/a" if v is None else ("yes" if v else "NO")


# --------------------------------------------------------------------------


def main():
    ap = argparse.ArgumentParser(
        description="Benchmark a Lua request() hook: strain with and without the script, "
                    "and wrk with it; requests per CPU-second.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    ap.add_argument("--strain", default="target/release/strain",
                    help="strain binary (relative paths: to the current directory, "
                         "else to the repository root)")
    ap.add_argument("--script", default=SCRIPT, help="the Lua script")
    ap.add_argument("--rounds", type=int, default=3,
                    help="rounds; the order is reversed every other round")
    ap.add_argument("--duration", type=parse_duration, default=10.0,
                    help="duration of each run")
    ap.add_argument("--connections", type=int, default=50, help="connections")
    ap.add_argument("--warmup", type=parse_duration, default=2.0,
                    help="unreported wrk run before the first round (0 to skip)")
    ap.add_argument("--no-path-check", action="store_true",
                    help="skip the check of the paths each scripted tool sends")
    ap.add_argument("--settle", type=float, default=30.0,
                    help="before each run, wait up to this many seconds for the rest of "
                         "the machine to go quiet (<0.15 CPUs busy over 1 s); 0 to skip")
    ap.add_argument("--gen-cpu", type=int, default=0, help="CPU for the load generator")
    ap.add_argument("--server-cpu", type=int, default=1, help="CPU for nginx")
    ap.add_argument("--json", metavar="OUT", help="write raw numbers to OUT")
    args = ap.parse_args()
    args.mem_connections = 0   # for core.check_tools
    args.syscalls = False

    if not os.path.isabs(args.strain) and not os.path.exists(args.strain):
        alt = os.path.join(REPO, args.strain)
        if os.path.exists(alt):
            args.strain = alt
    args.strain = os.path.abspath(args.strain)
    args.script = os.path.abspath(args.script)

    def on_term(signum, frame):
        raise KeyboardInterrupt
    signal.signal(signal.SIGTERM, on_term)

    try:
        check_tools(args)
        if not os.path.isfile(args.script):
            raise BenchError("script not found: %s" % args.script)
    except BenchError as e:
        log("error: %s" % e)
        return 2

    nofile = raise_nofile()
    info = machine_info()
    info["strain"] = tool_version([args.strain, "--version"])
    info["rlimit_nofile"] = nofile
    log("machine: %s" % json.dumps(info))

    checks = []
    if not args.no_path_check:
        server = PathServer()
        try:
            for v in ("wrk+script", "strain+script"):
                c = path_check(v, args, server)
                checks.append(c)
                log("path check %-13s %s requests, first %s, last %s, consecutive: %s%s" % (
                    v, f_num(c["requests_received"]), " ".join(c["first_paths"]),
                    c["last_path"], yn(c["consecutive"]),
                    "" if c["exit"] == 0 else "  (exit %s)" % c["exit"]))
        finally:
            server.close()

    nginx = Nginx(args.server_cpu, nofile)
    runs, cmds = [], []
    nginx_errors = ""
    try:
        nginx.start()
        log("nginx: %s (pid %d, workers %s), dir %s" % (
            nginx.url, nginx.proc.pid, nginx.worker_pids(), nginx.dir))
        cmds.append("taskset -c %d nginx -p DIR/ -e DIR/error.log -c DIR/nginx.conf"
                    "   # worker_processes 1; return 200 \"hello world\\n\"" % args.server_cpu)
        if args.warmup > 0:
            log("warm-up: wrk %s" % fmt_dur(args.warmup))
            run_measured(variant_argv("wrk", args, nginx.url, args.warmup, args.connections),
                         timeout=args.warmup + 30)
        log("script: %d rounds of %s, -t1 -c%d -d%s" % (
            args.rounds, "/".join(VARIANTS), args.connections, fmt_dur(args.duration)))
        for i in range(1, args.rounds + 1):
            order = VARIANTS if i % 2 == 1 else tuple(reversed(VARIANTS))
            for v in order:
                run = script_run(v, args, nginx, i)
                runs.append(run)
                print_run_line(run)
                if i == 1:
                    shown = display(run["argv"], args.strain)
                    cmds.append(shown.replace(args.script, "bench/counter.lua")
                                if args.script == SCRIPT else shown)
        nginx_errors = nginx.errors()
    except KeyboardInterrupt:
        log("interrupted; stopping nginx")
        return 130
    except BenchError as e:
        log("error: %s" % e)
        return 1
    finally:
        nginx.cleanup()

    text, result = summarize(args, info, runs, checks, cmds)
    print(text)
    if nginx_errors.strip():
        log("nginx error.log (tail):\n" + nginx_errors)

    if args.json:
        write_results(args.json, args, info, {
            "script_text": open(args.script).read(),
            "summary": result,
            "runs": runs,
            "path_checks": checks,
            "commands": cmds,
            "nginx_error_log_tail": nginx_errors,
        }, skip_options=("json", "mem_connections", "syscalls"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
