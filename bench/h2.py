#!/usr/bin/env python3
"""HTTP/2 benchmark: strain --http2 against h2load, same machine, same run.

What it measures
----------------
Issue 13 gave strain an HTTP/2 client and asks it to be at least as
efficient as h2load (nghttp2's generator, the reference for HTTP/2 load).
As in bench/core.py, only ratios of measurements taken in the same
invocation, interleaved in time, are headline figures.  The server is the
private nginx of bench/core.py (bench/driver/servers.py: one worker pinned
to CPU 1, ``return 200 "hello world\\n"``) with its listener switched to h2c
(``listen 127.0.0.1:PORT backlog=4096 http2;``, nginx 1.22 syntax: that
port speaks HTTP/2 with prior knowledge only).  The generator is pinned to
CPU 0 and runs one thread.

1. Closed loop, requests per generator CPU-second, once per stream count
   ``-m`` in ``--streams`` (default 1 and 10).  For R rounds (``--rounds``,
   default 3; the order of the two tools is reversed every other round)

       taskset -c 0 h2load -t1 -c50 -m1 -D 10 URL
       taskset -c 0 STRAIN --http2 -t1 -c50 -m1 -d10s URL

   The requests are h2load's ``succeeded`` count (``requests: N total, N
   started, N done, N succeeded, ...``) over its ``finished in`` time, and
   strain's ``N requests in T`` line; the CPU is the tool's own user+sys
   from ``os.wait4()`` on its pid, as in bench/core.py.  Headline per -m:
   ``median(strain) / median(h2load)`` of requests per CPU-second (issue 13
   requires >= 1.0 at -m1 and -m10).  ``nginx CPU`` near 100 % means the
   server was the bottleneck; ``other CPU`` is the rest of the machine (a
   disturbed run).  Before each run the script waits up to ``--settle``
   seconds for the machine to go quiet.  Other load moves this figure a lot
   (a slowed server lets the generator handle more responses per wake-up:
   up to 2.6x here), so the summary also gives the medians and their ratio
   over the quiet runs alone (other CPU <= 5 %).

2. Fixed rate, 20,000 requests/s over -c100 -m1 for 15 s (``--rate``,
   ``--rate-connections``, ``--rate-duration``), rounds interleaved:

       taskset -c 0 STRAIN -t1 -c100 -d15s -R20000 --http2 -m1 --json FILE URL
       taskset -c 0 h2load -t1 -c100 --rps=200 -D 15 URL   # --rps is per client

   each under GNU time, measured exactly as bench/rate.py measures (this
   script calls its rate_run()): generator CPU as a share of the wall time,
   CPU per request, the achieved rate and whether it is within
   ``--tolerance`` (0.5 %) of the target.  Issue 13 requires strain's
   generator CPU below h2load's (ratio < 1.0), both holding the rate.

3. Memory: peak RSS at ``-t1 -c1000 -m100`` for 5 s (``--mem-connections``,
   ``--mem-streams``, ``--mem-duration``), ``ru_maxrss`` taken by GNU time
   as the tool's parent (see bench/driver/proc.py, timed(), for why), with
   the server-side ESTABLISHED sockets counted half-way through to check
   that the connections were really open.  Reported beside each other with
   the ratio strain/h2load; issue 13 sets no bound.

Every run prints one line as it finishes; at the end comes a Markdown
summary ready for docs/benchmarks.md.  ``--json OUT`` writes the raw
numbers.  Everything stays on 127.0.0.1, every child has a timeout, nginx
runs from a private temporary directory and is stopped on every way out.

Requirements: h2load (Debian ``nghttp2-client``), nginx (``nginx-light``),
GNU time, taskset.  The script installs nothing; it stops with a one-line
error naming what is missing.  Python 3 standard library only.

Example:  python3 bench/h2.py --strain target/dist/strain --json /tmp/h2.json
"""

import argparse
import os
import sys
import tempfile
import time

import rate
from driver import cli, measure, proc, report, tools
from driver.cli import SetupError, fmt_dur, log
from driver.report import f_kib, f_num, f_ratio, flags, pct, ratio
from driver.servers import hello_nginx

TOOLS = ("h2load", "strain")
INSTALL = "apt-get install -y nghttp2-client nginx-light time (taskset is in util-linux)"
# Most "other CPU" (CPUs busy outside the generator and nginx) of a run counted
# as quiet.  Requests per CPU-second swing by 2x with other load on this
# 2-core machine (a server slowed by it lets the generator batch more
# responses per wake-up), so the summary also compares the quiet runs alone.
QUIET = 0.05
# h2load's requests per generator CPU-second quoted in issue 13 (same machine
# and protocol, nginx saturated), by -m.
ISSUE_FIGURES = {1: 91000, 10: 86000}


def gen_argv(tool, args, connections, streams, duration):
    """A closed-loop HTTP/2 command line of `tool` without its URL, pinned to --gen-cpu."""
    if tool in ("strain", "baseline"):
        argv = [args.strain if tool == "strain" else args.baseline, "--http2", "-t1", "-c%d" % connections, "-m%d" % streams,
                "-d%s" % fmt_dur(duration)]
    else:
        argv = [args.h2load, "-t1", "-c%d" % connections, "-m%d" % streams,
                "-D", "%g" % duration]
    return proc.pinned(args.gen_cpu, argv)


def parse(tool, run):
    """(requests completed, duration the tool reports) of a closed-loop or
    memory run; what went wrong goes to run["problems"]."""
    if tool in ("strain", "baseline"):
        parsed = tools.parse_wrk(run["stdout"])
        run["problems"] = tools.problems(run, parsed)
        return parsed.get("requests"), parsed.get("elapsed")
    run["problems"] = tools.exit_problems(run)
    parsed = tools.parse_h2load(run)
    if parsed.get("ok") is not None and parsed["ok"] < parsed["requests"]:
        run["problems"].append("only %d of %d responses 2xx/3xx" % (parsed["ok"],
                                                                    parsed["requests"]))
    return parsed.get("requests"), parsed.get("duration")


def closed_run(tool, args, streams, nginx, rnd):
    """One closed-loop run at -c--connections -m`streams`: requests per CPU-second."""
    argv = gen_argv(tool, args, args.connections, streams, args.duration) + [nginx.url]
    time.sleep(1)  # let the previous run's connections close on the server side
    run = measure.measured(argv, args.duration + 30, args.settle,
                           {"nginx_cpu": nginx.cpu_seconds})
    reqs, dur = parse(tool, run)
    run.update(tool=tool, round=rnd, streams=streams, requests=reqs, duration=dur,
               rps=(reqs / dur) if reqs and dur else None,
               req_per_cpu_s=(reqs / run["cpu"]) if reqs and run["cpu"] > 0 else None)
    log("  -m%-3d round %d %-6s %10s req  %6.2f s cpu (user %.2f sys %.2f)  %9s req/CPU-s  "
        "%9s req/s  gen CPU %3.0f%%  nginx CPU %3.0f%%  other CPU %3.0f%%%s" % (
            streams, rnd, tool, f_num(reqs), run["cpu"], run["utime"], run["stime"],
            f_num(run["req_per_cpu_s"]), f_num(run["rps"]), 100 * (run["gen_cpu_share"] or 0),
            100 * (run["nginx_cpu_share"] or 0), 100 * (run["other_cpu_share"] or 0),
            flags(run)))
    return run


def memory_run(tool, args, nginx, tmpdir):
    """Peak RSS at many connections and streams (ru_maxrss via GNU time), and
    the server's ESTABLISHED sockets half-way through."""
    inner = gen_argv(tool, args, args.mem_connections, args.mem_streams,
                     args.mem_duration) + [nginx.url]
    time_out = os.path.join(tmpdir, "time-%s.txt" % tool)
    state = {"established": None}

    def poll(pid, elapsed):
        if state["established"] is None and elapsed >= args.mem_duration / 2:
            state["established"] = measure.established_on_port(nginx.port)

    time.sleep(1)
    run = measure.measured(proc.timed(inner, time_out), args.mem_duration + 60, args.settle,
                           poll=poll)
    reqs, _ = parse(tool, run)
    maxrss = proc.read_timed(time_out).get("maxrss_kb")
    if maxrss is None:
        run["problems"].append("no GNU time output")
    run.update(tool=tool, argv=inner, maxrss_kb=maxrss, requests=reqs,
               established_mid_run=state["established"])
    log("  %-6s peak RSS %s  established mid-run %s  requests %s%s" % (
        tool, f_kib(maxrss), f_num(state["established"]), f_num(reqs), flags(run)))
    return run


def rate_args(args):
    """The options bench/rate.py's rate_run() reads, for strain --http2 and h2load over h2c."""
    r = argparse.Namespace(**vars(args))
    r.duration, r.connections = args.rate_duration, args.rate_connections
    r.strain_args, r.alt_args, r.h2load_args = ["--http2", "-m1"], [], []
    return r


def summarize_closed(rep, args, runs):
    """Per -m: the ratio table of requests per CPU-second; returns the figures."""
    out = {}
    for m in args.streams:
        ms = [r for r in runs if r["streams"] == m]
        rep.para("Closed loop -t1 -c%d -m%d, %s per run, %d rounds; requests per generator "
                 "CPU-second:" % (args.connections, m, fmt_dur(args.duration), args.rounds))
        names = cli.contenders(args, TOOLS)
        fig, wall = report.ratio_table(rep, ms, "tool", names, "req_per_cpu_s", "h2load",
                                       ("req/CPU-s per run", "median req/CPU-s"))
        nginx = report.median([r["nginx_cpu_share"] for r in ms])
        out[m] = {"median_req_per_cpu_s": fig["medians"], "median_rps": wall["medians"],
                  "ratio_req_per_cpu_s": fig["ratios"]["strain"],
                  "paired_ratios_req_per_cpu_s": fig["paired"]["strain"],
                  "median_nginx_cpu_share": nginx}
        if args.baseline:
            out[m]["ratio_req_per_cpu_s_vs_baseline"] = ratio(fig["medians"].get("strain"),
                                                              fig["medians"].get("baseline"))
            rep.para("strain/baseline median req/CPU-s: %s." % f_ratio(
                out[m]["ratio_req_per_cpu_s_vs_baseline"]))
        rep.para("Paired per-round ratios strain/h2load: %s; median nginx CPU %s." % (
            ", ".join(f_ratio(p) for p in fig["paired"]["strain"]), pct(nginx, "%.0f%%")))
        quiet = {t: [r["req_per_cpu_s"] for r in ms if r["tool"] == t
                     and r["other_cpu_share"] is not None and r["other_cpu_share"] <= QUIET]
                 for t in names}
        qmed = {t: report.median(v) for t, v in quiet.items()}
        out[m]["quiet_median_req_per_cpu_s"] = qmed
        out[m]["quiet_ratio_req_per_cpu_s"] = ratio(qmed["strain"], qmed["h2load"])
        rep.para("Quiet runs only (other CPU <= %.0f%%): %s; ratio of medians strain/h2load "
                 "%s." % (100 * QUIET, "; ".join(
                     "%s %s (%d runs)" % (t, f_num(qmed[t]), len(quiet[t])) for t in names),
                          f_ratio(out[m]["quiet_ratio_req_per_cpu_s"])))
    rep.para("Closed-loop runs (in the order run):")
    rep.table(["-m", "round", "tool", "requests", "CPU s (user+sys)", "req/CPU-s", "req/s",
               "gen CPU", "nginx CPU", "other CPU", "problems"],
              [[r["streams"], r["round"], r["tool"], f_num(r["requests"]),
                "%.2f (%.2f+%.2f)" % (r["cpu"], r["utime"], r["stime"]),
                f_num(r["req_per_cpu_s"]), f_num(r["rps"]), pct(r["gen_cpu_share"], "%.0f%%"),
                pct(r["nginx_cpu_share"], "%.0f%%"), pct(r["other_cpu_share"], "%.0f%%"),
                "; ".join(r["problems"]) or "-"] for r in runs])
    return out


def summarize_rate(rep, args, runs):
    """The fixed-rate table: generator CPU share of wall, rate held; returns the figures."""
    share = report.compare(runs, "tool", TOOLS, "gen_cpu_share", "h2load")
    per_req = report.compare(runs, "tool", TOOLS, "cpu_us_per_req", "h2load")
    achieved = report.compare(runs, "tool", TOOLS, "achieved_rps", "h2load")
    by = share["by"]
    held = {t: all(r["rate_held"] for r in by[t]) if by[t] else None for t in TOOLS}
    out = {"median_gen_cpu_share": share["medians"], "median_cpu_us_per_req": per_req["medians"],
           "median_achieved_rps": achieved["medians"],
           "ratio_gen_cpu_share": share["ratios"]["strain"],
           "ratio_cpu_per_request": per_req["ratios"]["strain"], "rate_held_every_run": held}
    rep.para("Fixed rate %s req/s, -t1 -c%d -m1, %s per run, %d rounds:" % (
        f_num(args.rate), args.rate_connections, fmt_dur(args.rate_duration), args.rounds))
    rep.table(["tool", "gen CPU (% of wall) per run", "median gen CPU", "ratio vs h2load",
               "median CPU us/req", "ratio vs h2load", "median achieved req/s",
               "rate held (±%.1f%%)" % (100 * args.tolerance), "median peak RSS"],
              [[t, ", ".join(pct(r["gen_cpu_share"]) for r in by[t]),
                pct(share["medians"][t]), f_ratio(share["ratios"][t]),
                f_num(per_req["medians"][t], "{:.2f}"), f_ratio(per_req["ratios"][t]),
                f_num(achieved["medians"][t]),
                "%d of %d runs" % (sum(1 for r in by[t] if r["rate_held"]), len(by[t])),
                f_kib(report.median([r["maxrss_kb"] for r in by[t]]))] for t in TOOLS])
    rate.runs_table(rep, args, runs)
    return out


def summarize(args, info, closed, rated, mem, cmds):
    """The Markdown summary and the summary numbers for --json."""
    rep = report.Report()
    rep.header(info, info["nginx"], info["h2load"], info["strain"])
    result, req = {}, {}
    if closed:
        result["closed"] = summarize_closed(rep, args, closed)
        for m, v in result["closed"].items():
            r = v["ratio_req_per_cpu_s"]
            req["strain_ge_1.0x_h2load_req_per_cpu_s_m%d" % m] = None if r is None else r >= 1.0
        rep.para("h2load's requests per generator CPU-second quoted in issue 13: %s." % ", ".join(
            "-m%d %s" % (m, f_num(v)) for m, v in ISSUE_FIGURES.items()))
    if rated:
        result["rate"] = v = summarize_rate(rep, args, rated)
        r = v["ratio_gen_cpu_share"]
        req["strain_gen_cpu_below_h2load_at_rate"] = None if r is None else r < 1.0
        req["both_held_rate_every_run"] = (None if None in v["rate_held_every_run"].values()
                                           else all(v["rate_held_every_run"].values()))
    if mem:
        rss = {r["tool"]: r["maxrss_kb"] for r in mem}
        result["memory"] = {"maxrss_kb": rss,
                            "ratio_maxrss": ratio(rss.get("strain"), rss.get("h2load"))}
        if args.baseline:
            result["memory"]["ratio_maxrss_vs_baseline"] = ratio(rss.get("strain"),
                                                                 rss.get("baseline"))
        rep.para("Memory, -t1 -c%d -m%d for %s (peak RSS = ru_maxrss via GNU time):" % (
            args.mem_connections, args.mem_streams, fmt_dur(args.mem_duration)))
        rep.table(["tool", "peak RSS", "ratio vs h2load", "established mid-run", "requests",
                   "problems"],
                  [[r["tool"], "n/a" if r["maxrss_kb"] is None else
                    "%.1f MiB (%d KiB)" % (r["maxrss_kb"] / 1024, r["maxrss_kb"]),
                    f_ratio(ratio(r["maxrss_kb"], rss.get("h2load"))),
                    f_num(r["established_mid_run"]), f_num(r["requests"]),
                    "; ".join(r["problems"]) or "-"] for r in mem])
    result["requirements"] = req
    rep.para("Requirements (issue 13): %s." % "; ".join(
        "%s: %s" % (k, report.yn(v)) for k, v in req.items()))
    rep.nginx_commands(args.strain, cmds, "; fixed-rate runs under /usr/bin/time -f '%M %U "
                       "%S %w %c' -o FILE, memory runs under /usr/bin/time -f '%M %U %S' -o FILE")
    return rep.text(), result


def options():
    """The command line: bench/core.py's common options plus each part's own."""
    ap = cli.parser(__doc__.splitlines()[0], "rounds", "warmup", "settle", duration=10.0,
                    connections=50)
    ap.add_argument("--h2load", default="h2load", help="h2load binary")
    ap.add_argument("--streams", default="1,10",
                    help="comma-separated -m values of the closed-loop runs (empty to skip)")
    ap.add_argument("--rate", type=int, default=20000,
                    help="target requests/s of the fixed-rate runs (0 to skip)")
    ap.add_argument("--rate-connections", type=int, default=100,
                    help="connections, fixed-rate runs")
    ap.add_argument("--rate-duration", type=cli.parse_duration, default=15.0,
                    help="duration of each fixed-rate run")
    ap.add_argument("--tolerance", type=float, default=0.005,
                    help="largest relative deviation of the achieved rate counted as held")
    cli.memory_options(ap, 1000, streams=100)
    args = cli.parse(ap)
    cli.int_list(args, "streams")
    if any(m <= 0 for m in args.streams) or args.rate < 0 or args.rate_connections <= 0:
        raise SetupError("--streams, --rate-connections must be positive, --rate >= 0")
    if args.rate and args.rate % args.rate_connections:
        raise SetupError("h2load's --rps is per client: --rate %d is not a multiple of "
                         "--rate-connections %d" % (args.rate, args.rate_connections))
    return args


def main(stack):
    """Closed-loop rounds per -m, fixed-rate rounds, memory runs, then the summary."""
    args = options()
    cli.require((args.h2load, "nginx", "taskset", "/usr/bin/time"), INSTALL)
    args.h2load = cli.find_tool(args.h2load) or args.h2load
    nofile = proc.raise_nofile()
    if args.mem_connections and nofile < args.mem_connections + 100:
        log("warning: RLIMIT_NOFILE is %d, below the %d needed for -c%d" % (
            nofile, args.mem_connections + 100, args.mem_connections))
    info = cli.machine_info({"nginx": ["nginx", "-v"], "h2load": [args.h2load, "--version"],
                             "strain": [args.strain, "--version"]})
    info["rlimit_nofile"] = nofile
    tmpdir = stack.enter_context(tempfile.TemporaryDirectory(prefix="strain-bench-h2-"))
    nginx, cmd = hello_nginx(stack, args.server_cpu, nofile, h2c=True)
    cmds = [cmd]
    names = {args.strain: "STRAIN", args.h2load: "h2load"}
    if args.baseline:
        names[args.baseline] = "BASELINE"
    if args.warmup > 0:
        log("warm-up: h2load %s" % fmt_dur(args.warmup))
        proc.run(gen_argv("h2load", args, args.connections, 1, args.warmup) + [nginx.url],
                 timeout=args.warmup + 30)

    closed = []
    for m in args.streams:
        log("closed loop: %d rounds of h2load and strain, -t1 -c%d -m%d %s" % (
            args.rounds, args.connections, m, fmt_dur(args.duration)))
        for i, tool in measure.schedule(args.rounds, cli.contenders(args, TOOLS)):
            closed.append(closed_run(tool, args, m, nginx, i))
            if i == 1:
                cmds.append(proc.display(closed[-1]["argv"], names))

    rated = []
    if args.rate:
        rargs = rate_args(args)
        log("fixed rate: %d rounds, -c%d -m1 %s at %d/s" % (
            args.rounds, args.rate_connections, fmt_dur(args.rate_duration), args.rate))
        for i, tool in measure.schedule(args.rounds, TOOLS):
            rated.append(rate.rate_run(tool, rargs, nginx, tmpdir, i))
            rate.print_run_line(rated[-1])
            if i == 1:
                cmds.append(proc.display(rated[-1]["argv"], dict(
                    names, **{os.path.join(tmpdir, "%s-1.json" % tool): "FILE"})))

    mem = []
    if args.mem_connections:
        log("memory: -t1 -c%d -m%d %s" % (args.mem_connections, args.mem_streams,
                                          fmt_dur(args.mem_duration)))
        for tool in cli.contenders(args, TOOLS):
            mem.append(memory_run(tool, args, nginx, tmpdir))
            cmds.append(proc.display(mem[-1]["argv"], names))

    text, result = summarize(args, info, closed, rated, mem, cmds)
    report.finish(args, info, text, {"summary": result, "closed_runs": closed,
                                     "rate_runs": rated, "memory_runs": mem,
                                     "commands": cmds}, nginx)


if __name__ == "__main__":
    sys.exit(cli.run(main))
