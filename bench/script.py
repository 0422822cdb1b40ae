#!/usr/bin/env python3
"""Lua scripting benchmark: what a request() hook costs, strain against wrk.

What it measures
----------------
Issue 4 asks that a Lua ``request()`` hook keep strain at >= 0.8x of its own
unscripted throughput per CPU, and at >= 1.0x of wrk running the same
script.  The script is bench/counter.lua: a ``request()`` that increments a
counter and returns ``wrk.format(nil, "/item/" .. counter)``, so every
request is built anew in Lua (no static request rendered once).

Against the private nginx of bench/driver/servers.py (one worker pinned to CPU 1 with
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
taskset.  Python 3 standard library only; the shared helpers come
from bench/driver/.

Example:  python3 bench/script.py --strain target/dist/strain --json /tmp/script.json
"""

import os
import re
import sys
import time

from driver import cli, measure, proc, report, tools
from driver.cli import fmt_dur, log
from driver.report import f_num, f_ratio, flags, yn
from driver.servers import RecordingServer, hello_nginx

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "counter.lua")

# Variants, in the order of odd rounds.
VARIANTS = ("wrk+script", "strain+script", "strain")


def variant_argv(variant, args, url, duration, connections):
    """The command line of one variant (wrk or strain, with or without the script)."""
    tool = args.strain if variant.startswith("strain") else "wrk"
    argv = [tool, "-t1", "-c%d" % connections, "-d%s" % fmt_dur(duration)]
    if variant.endswith("+script"):
        argv += ["-s", args.script]
    return proc.pinned(args.gen_cpu, argv + [url])


def path_check(variant, args, server):
    """Which paths a scripted tool sends in 1 s on one connection: consecutive
    /item/N shows the script was in effect."""
    server.reset()
    argv = variant_argv(variant, args, server.url, 1.0, 1)
    res = proc.run(argv, timeout=30)
    time.sleep(0.2)
    paths, count = server.seen()
    # wrk calls request() once in thread 1's Lua state before the run (to
    # count pipelined requests) and never sends that one, so its paths start
    # at /item/2; strain's start at /item/1 (docs/SCRIPTING.md).
    m = re.fullmatch(r"/item/(\d+)", paths[0]) if paths else None
    start = int(m.group(1)) if m else None
    ok = start is not None and paths == ["/item/%d" % (start + i) for i in range(len(paths))]
    c = {"variant": variant, "argv": argv, "exit": res["exit"], "requests_received": count,
         "first_paths": paths[:5], "last_path": paths[-1] if paths else None,
         "paths_checked": len(paths), "first_number": start, "consecutive": ok,
         "stdout": res["stdout"][-4000:], "stderr": res["stderr"][-4000:]}
    log("path check %-13s %s requests, first %s, last %s, consecutive: %s%s" % (
        variant, f_num(count), " ".join(c["first_paths"]), c["last_path"], yn(ok),
        "" if res["exit"] == 0 else "  (exit %s)" % res["exit"]))
    return c


def script_run(variant, args, nginx, rnd):
    """One measured run of a variant against nginx."""
    argv = variant_argv(variant, args, nginx.url, args.duration, args.connections)
    time.sleep(1)  # let the previous run's connections close on the server side
    run = tools.measured_wrk(argv, args.duration + 30, args.settle,
                             {"nginx_cpu": nginx.cpu_seconds})
    reqs = run["requests"]
    run.update(variant=variant, round=rnd, stdout=run["stdout"][-20000:],
               stderr=run["stderr"][-4000:],
               user_us_per_req=(1e6 * run["utime"] / reqs) if reqs else None,
               sys_us_per_req=(1e6 * run["stime"] / reqs) if reqs else None)
    log("  round %d %-13s %10s req  %6.2f s cpu (user %.2f sys %.2f)  %10s req/CPU-s  "
        "user %5.2f us/req  %10s req/s  gen CPU %3.0f%%  nginx CPU %3.0f%%  other CPU %3.0f%%%s" % (
            rnd, variant, f_num(reqs), run["cpu"], run["utime"], run["stime"],
            f_num(run["req_per_cpu_s"]), run["user_us_per_req"] or 0, f_num(run["rps"]),
            100 * (run["gen_cpu_share"] or 0), 100 * (run["nginx_cpu_share"] or 0),
            100 * (run["other_cpu_share"] or 0), flags(run)))
    return run


MEDIANS = ("req_per_cpu_s", "rps", "user_us_per_req", "sys_us_per_req", "gen_cpu_share")


def summarize(args, info, runs, checks, cmds):
    """The Markdown summary and the summary numbers for --json."""
    rep = report.Report()
    vs = {b: report.compare(runs, "variant", VARIANTS, "req_per_cpu_s", b)
          for b in ("strain", "wrk+script")}
    med = {v: {k: report.median([r[k] for r in vs["strain"]["by"][v]]) for k in MEDIANS}
           for v in VARIANTS}
    r_self = vs["strain"]["ratios"]["strain+script"]
    r_wrk = vs["wrk+script"]["ratios"]["strain+script"]
    req = {"strain_script_ge_0.8x_strain": None if r_self is None else r_self >= 0.8,
           "strain_script_ge_1.0x_wrk_script": None if r_wrk is None else r_wrk >= 1.0}
    result = {
        "medians": med, "ratio_strain_script_over_strain": r_self,
        "ratio_strain_script_over_wrk_script": r_wrk,
        "paired_strain_script_over_strain": vs["strain"]["paired"]["strain+script"],
        "paired_strain_script_over_wrk_script": vs["wrk+script"]["paired"]["strain+script"],
        "requirements": req,
        "path_checks": [{k: c[k] for k in ("variant", "requests_received", "first_paths",
                                            "last_path", "first_number", "consecutive")}
                        for c in checks],
    }
    rep.header(info, info["wrk"], info["nginx"], info.get("strain", ""))
    rep.para("Requests per CPU-second (%d rounds, -t1 -c%d -d%s, script bench/counter.lua, "
             "generator on CPU %d, nginx on CPU %d):" % (
                 args.rounds, args.connections, fmt_dur(args.duration), args.gen_cpu,
                 args.server_cpu))
    rep.table(["run", "req/CPU-s per run", "median req/CPU-s", "vs strain", "vs wrk+script",
               "median user, sys us/req", "median gen CPU", "median req/s (wall)"],
              [[v, ", ".join(f_num(r["req_per_cpu_s"]) for r in vs["strain"]["by"][v]),
                f_num(med[v]["req_per_cpu_s"]), f_ratio(vs["strain"]["ratios"][v]),
                f_ratio(vs["wrk+script"]["ratios"][v]),
                "%s, %s" % (f_num(med[v]["user_us_per_req"], "{:.2f}"),
                            f_num(med[v]["sys_us_per_req"], "{:.2f}")),
                report.pct(med[v]["gen_cpu_share"], "%.0f%%"), f_num(med[v]["rps"])]
               for v in VARIANTS])
    rep.para("Per run (in the order run):")
    rep.table(["round", "run", "requests", "CPU s (user+sys)", "req/CPU-s", "req/s", "gen CPU",
               "nginx CPU", "other CPU", "problems"],
              [[r["round"], r["variant"], f_num(r["requests"]),
                "%.2f (%.2f+%.2f)" % (r["cpu"], r["utime"], r["stime"]),
                f_num(r["req_per_cpu_s"]), f_num(r["rps"]),
                report.pct(r["gen_cpu_share"], "%.0f%%"),
                report.pct(r["nginx_cpu_share"], "%.0f%%"),
                report.pct(r["other_cpu_share"], "%.0f%%"), "; ".join(r["problems"]) or "-"]
               for r in runs])
    rep.para("Ratios of medians of req/CPU-s: strain+script / strain = %s (requirement >= 0.8x: "
             "%s); strain+script / wrk+script = %s (requirement >= 1.0x: %s)." % (
                 f_ratio(r_self), yn(req["strain_script_ge_0.8x_strain"]),
                 f_ratio(r_wrk), yn(req["strain_script_ge_1.0x_wrk_script"])))
    rep.para("Paired per-round ratios: strain+script / strain %s; strain+script / wrk+script "
             "%s." % tuple(", ".join(f_ratio(x) for x in result[k]) for k in (
                 "paired_strain_script_over_strain", "paired_strain_script_over_wrk_script")))
    if checks:
        rep.para("Path check (1 s, -c1, against a test server in the script): %s." % "; ".join(
            "%s sent %s requests, the first %d checked consecutive: %s (%s ... %s)" % (
                c["variant"], f_num(c["requests_received"]), c["paths_checked"],
                yn(c["consecutive"]), " ".join(c["first_paths"][:3]), c["last_path"])
            for c in checks))
    rep.nginx_commands(args.strain, cmds)
    return rep.text(), result


def main(stack):
    """Path check, then rounds of the three variants, then the summary."""
    ap = cli.parser(__doc__.splitlines()[0], "rounds", "warmup", "settle", duration=10.0,
                    connections=50)
    ap.add_argument("--script", default=SCRIPT, help="the Lua script")
    ap.add_argument("--no-path-check", action="store_true",
                    help="skip the check of the paths each scripted tool sends")
    args = cli.parse(ap)
    args.script = os.path.abspath(args.script)
    cli.require(("wrk", "nginx", "taskset"), "apt-get install -y wrk nginx-light "
                "(taskset is in util-linux)")
    if not os.path.isfile(args.script):
        raise cli.SetupError("script not found: %s" % args.script)
    nofile = proc.raise_nofile()
    info = cli.machine_info({"wrk": ["wrk", "-v"], "nginx": ["nginx", "-v"],
                             "strain": [args.strain, "--version"]})
    info["rlimit_nofile"] = nofile

    checks = []
    if not args.no_path_check:
        with RecordingServer() as server:
            checks = [path_check(v, args, server) for v in ("wrk+script", "strain+script")]

    nginx, cmd = hello_nginx(stack, args.server_cpu, nofile)
    cmds = [cmd]
    if args.warmup > 0:
        log("warm-up: wrk %s" % fmt_dur(args.warmup))
        proc.run(variant_argv("wrk", args, nginx.url, args.warmup, args.connections),
                 timeout=args.warmup + 30)
    log("script: %d rounds of %s, -t1 -c%d -d%s" % (
        args.rounds, "/".join(VARIANTS), args.connections, fmt_dur(args.duration)))
    runs = []
    names = {args.strain: "STRAIN"}
    if args.script == SCRIPT:
        names[SCRIPT] = "bench/counter.lua"
    for i, v in measure.schedule(args.rounds, VARIANTS):
        runs.append(script_run(v, args, nginx, i))
        if i == 1:
            cmds.append(proc.display(runs[-1]["argv"], names))
    text, result = summarize(args, info, runs, checks, cmds)
    with open(args.script) as f:
        script_text = f.read()
    report.finish(args, info, text, {"script_text": script_text, "summary": result, "runs": runs,
                                     "path_checks": checks, "commands": cmds}, nginx)


if __name__ == "__main__":
    sys.exit(cli.run(main))
