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

4. With ``--baseline PATH`` (an earlier strain build) every throughput round,
   memory run and syscall run also runs that build as ``baseline``, and the
   summary adds strain/baseline ratios: the way to show that a change to the
   engine keeps the speed and memory of the build before it.

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

Example:  python3 bench/core.py --strain target/dist/strain --syscalls --json /tmp/core.json
"""

import os
import shutil
import sys
import tempfile
import time

from driver import cli, measure, proc, report, tools
from driver.cli import fmt_dur, log
from driver.report import f_num, f_ratio, flags, ratio
from driver.servers import hello_nginx

TOOLS = ("wrk", "strain")


def gen_argv(binary, args, connections, duration):
    """A closed-loop generator command line without its URL, pinned to --gen-cpu."""
    return proc.pinned(args.gen_cpu, [binary, "-t1", "-c%d" % connections,
                                      "-d%s" % fmt_dur(duration)])


def memory_run(tool, binary, args, nginx, tmpdir):
    """Peak RSS at many connections: ru_maxrss taken by GNU time as the tool's
    parent, VmHWM sampled every ~10 ms as a cross-check (the fallback without
    /usr/bin/time), and the server-side ESTABLISHED sockets half-way through."""
    inner = gen_argv(binary, args, args.mem_connections, args.mem_duration) + [nginx.url]
    time_out = os.path.join(tmpdir, "time-%s.txt" % tool)
    have_time = os.path.exists("/usr/bin/time")
    argv = proc.timed(inner, time_out) if have_time else inner
    state = {"hwm": None, "established": None}

    def poll(pid, elapsed):
        kids = measure.children_of(pid) if have_time else [pid]
        hwm = measure.status_fields(kids[0], "VmHWM") if kids else None
        if hwm and hwm[0] is not None:
            state["hwm"] = max(state["hwm"] or 0, hwm[0])
        if state["established"] is None and elapsed >= args.mem_duration / 2:
            state["established"] = measure.established_on_port(nginx.port)

    time.sleep(1)  # let the previous run's sockets close on the server
    measure.settle(args.settle)
    res = proc.run(argv, timeout=args.mem_duration + 60, poll=poll)
    parsed = tools.parse_wrk(res["stdout"])
    maxrss = proc.read_timed(time_out).get("maxrss_kb")
    run = {"tool": tool, "argv": argv, "maxrss_kb": maxrss if maxrss else state["hwm"],
           "maxrss_method": ("ru_maxrss via GNU time" if maxrss
                             else "VmHWM sampled (no /usr/bin/time)"),
           "vmhwm_sampled_kb": state["hwm"], "established_mid_run": state["established"],
           "wall": res["wall"], "exit": res["exit"], "stdout": res["stdout"],
           "stderr": res["stderr"], "problems": tools.problems(res, parsed)}
    run.update({k: parsed.get(k) for k in ("requests", "rps", "socket_errors", "non_2xx")})
    log("  %-6s peak RSS %s KiB (%s; VmHWM sampled %s KiB)  established mid-run %s  "
        "requests %s%s" % (tool, run["maxrss_kb"], run["maxrss_method"],
                           run["vmhwm_sampled_kb"], run["established_mid_run"],
                           f_num(run["requests"]), flags(run)))
    return run


def syscall_run(tool, binary, args, nginx, tmpdir):
    """System calls per request under strace -c -f."""
    out = os.path.join(tmpdir, "strace-%s.txt" % tool)
    argv = proc.pinned(args.gen_cpu, ["strace", "-c", "-f", "-o", out, binary, "-t1",
                                      "-c%d" % args.connections,
                                      "-d%s" % fmt_dur(args.syscall_duration), nginx.url])
    res = proc.run(argv, timeout=args.syscall_duration + 60)
    parsed = tools.parse_wrk(res["stdout"])
    calls, per = tools.parse_strace(out) if os.path.exists(out) else (None, {})
    reqs = parsed.get("requests")
    top = sorted(per.items(), key=lambda kv: -kv[1])[:8]
    run = {"tool": tool, "argv": argv, "requests": reqs, "syscalls": calls,
           "syscalls_per_request": (calls / reqs) if calls and reqs else None,
           "top_syscalls": top, "per_request_top": [(k, v / reqs) for k, v in top] if reqs else None,
           "exit": res["exit"], "stdout": res["stdout"], "stderr": res["stderr"],
           "problems": tools.problems(res, parsed) + ([] if calls else ["no strace total"])}
    log("  %-6s %s syscalls / %s requests = %s per request%s" % (
        tool, f_num(calls), f_num(reqs), f_num(run["syscalls_per_request"], "{:.2f}"),
        flags(run)))
    return run


def summarize(args, info, tp_runs, mem_runs, sc_runs, cmds):
    """The Markdown summary and the summary numbers for --json."""
    names = cli.contenders(args, TOOLS)
    rep = report.Report()
    rep.header(info, info["wrk"], info["nginx"])
    rep.para("Throughput per CPU (%d rounds, -t1 -c%d -d%s, generator on CPU %d, nginx on "
             "CPU %d):" % (args.rounds, args.connections, fmt_dur(args.duration), args.gen_cpu,
                           args.server_cpu))
    tp, wall = report.ratio_table(rep, tp_runs, "tool", names, "req_per_cpu_s", "wrk",
                                  ("req/CPU-s per run", "median req/CPU-s"))
    result = {"median_req_per_cpu_s": tp["medians"], "median_rps": wall["medians"],
              "ratio_req_per_cpu_s": tp["ratios"]["strain"], "ratio_rps": wall["ratios"]["strain"],
              "paired_ratios_req_per_cpu_s": tp["paired"]["strain"]}
    if args.baseline:
        result["ratio_req_per_cpu_s_vs_baseline"] = ratio(tp["medians"].get("strain"),
                                                          tp["medians"].get("baseline"))
        rep.para("strain/baseline (%s) median req/CPU-s: %s" % (
            args.baseline, f_ratio(result["ratio_req_per_cpu_s_vs_baseline"])))
    rep.para("Per run (in the order run):")
    rep.table(["round", "tool", "requests", "CPU s (user+sys)", "req/CPU-s", "req/s", "gen CPU",
               "nginx CPU", "other CPU", "problems"],
              [[r["round"], r["tool"], f_num(r["requests"]),
                "%.2f (%.2f+%.2f)" % (r["cpu"], r["utime"], r["stime"]),
                f_num(r["req_per_cpu_s"]), f_num(r["rps"]), report.pct(r["gen_cpu_share"], "%.0f%%"),
                report.pct(r["nginx_cpu_share"], "%.0f%%"),
                report.pct(r["other_cpu_share"], "%.0f%%"), "; ".join(r["problems"]) or "-"]
               for r in tp_runs])
    rep.para("Paired per-round ratios strain/wrk of req/CPU-s: %s" %
             ", ".join(f_ratio(p) for p in tp["paired"]["strain"]))
    if mem_runs:
        rss = {r["tool"]: r["maxrss_kb"] for r in mem_runs}
        result.update(maxrss_kb=rss, ratio_maxrss=ratio(rss.get("strain"), rss.get("wrk")))
        if args.baseline:
            result["ratio_maxrss_vs_baseline"] = ratio(rss.get("strain"), rss.get("baseline"))
        rep.para("Memory (-t1 -c%d -d%s):" % (args.mem_connections, fmt_dur(args.mem_duration)))
        rep.table(["tool", "peak RSS", "ratio vs wrk", "VmHWM sampled", "established mid-run",
                   "requests", "problems"],
                  [[r["tool"], "n/a" if r["maxrss_kb"] is None else
                    "%.1f MiB (%d KiB)" % (r["maxrss_kb"] / 1024, r["maxrss_kb"]),
                    f_ratio(ratio(r["maxrss_kb"], rss.get("wrk"))),
                    "n/a" if r["vmhwm_sampled_kb"] is None else "%d KiB" % r["vmhwm_sampled_kb"],
                    f_num(r["established_mid_run"]), f_num(r["requests"]),
                    "; ".join(r["problems"]) or "-"] for r in mem_runs])
        rep.para("Peak RSS method: %s." % ", ".join(sorted({r["maxrss_method"] for r in mem_runs})))
    if sc_runs:
        spr = {r["tool"]: r["syscalls_per_request"] for r in sc_runs}
        result.update(syscalls_per_request=spr,
                      ratio_syscalls_per_request=ratio(spr.get("strain"), spr.get("wrk")))
        rep.para("System calls (under strace -c -f, -t1 -c%d -d%s):" % (
            args.connections, fmt_dur(args.syscall_duration)))
        rep.table(["tool", "requests", "syscalls", "syscalls/request", "ratio vs wrk",
                   "top calls per request"],
                  [[r["tool"], f_num(r["requests"]), f_num(r["syscalls"]),
                    f_num(r["syscalls_per_request"], "{:.2f}"),
                    f_ratio(ratio(r["syscalls_per_request"], spr.get("wrk"))),
                    ", ".join("%s %.2f" % kv for kv in (r["per_request_top"] or [])[:5]) or "-"]
                   for r in sc_runs])
    rep.nginx_commands(args.strain, cmds)
    return rep.text(), result


def main(stack):
    """Throughput rounds, then memory runs, then (optionally) syscall runs."""
    ap = cli.parser(__doc__.splitlines()[0], "rounds", "warmup", "settle", duration=10.0,
                    connections=50)
    cli.memory_options(ap, 10000)
    ap.add_argument("--syscalls", action="store_true",
                    help="also count syscalls per request under strace")
    ap.add_argument("--syscall-duration", type=cli.parse_duration, default=3.0,
                    help="duration of each strace run")
    args = cli.parse(ap)
    cli.require(("wrk", "nginx", "taskset"), "apt-get install -y wrk nginx-light "
                "(taskset is in util-linux)")
    if args.mem_connections and not os.path.exists("/usr/bin/time"):
        log("note: /usr/bin/time not found, peak RSS falls back to sampled VmHWM "
            "(apt-get install -y time)")
    if args.syscalls and shutil.which("strace") is None:
        log("note: strace not found, skipping --syscalls (apt-get install -y strace)")
        args.syscalls = False

    nofile = proc.raise_nofile()
    if args.mem_connections and nofile < args.mem_connections + 100:
        log("warning: RLIMIT_NOFILE is %d, below the %d needed for -c%d" % (
            nofile, args.mem_connections + 100, args.mem_connections))
    info = cli.machine_info({"wrk": ["wrk", "-v"], "nginx": ["nginx", "-v"],
                             "strain": [args.strain, "--version"]})
    info["rlimit_nofile"] = nofile
    binaries = {"wrk": "wrk", "strain": args.strain, "baseline": args.baseline}
    names = {args.strain: "STRAIN", args.baseline: "BASELINE"} if args.baseline else {args.strain: "STRAIN"}
    contenders = cli.contenders(args, TOOLS)
    tmpdir = stack.enter_context(tempfile.TemporaryDirectory(prefix="strain-bench-"))
    nginx, cmd = hello_nginx(stack, args.server_cpu, nofile)
    cmds = [cmd]
    if args.warmup > 0:
        log("warm-up: wrk %s" % fmt_dur(args.warmup))
        proc.run(gen_argv("wrk", args, args.connections, args.warmup) + [nginx.url],
                 timeout=args.warmup + 30)

    log("throughput: %d rounds of wrk then strain, -t1 -c%d -d%s" % (
        args.rounds, args.connections, fmt_dur(args.duration)))
    tp_runs = []
    for i, tool in measure.schedule(args.rounds, contenders, alternate=False):
        argv = gen_argv(binaries[tool], args, args.connections, args.duration) + [nginx.url]
        tp_runs.append(tools.nginx_round(argv, args.duration, args.settle, nginx, tool, i))
        if i == 1:
            cmds.append(proc.display(argv, names))

    mem_runs, sc_runs = [], []
    if args.mem_connections:
        log("memory: -t1 -c%d -d%s" % (args.mem_connections, fmt_dur(args.mem_duration)))
        for tool in contenders:
            mem_runs.append(memory_run(tool, binaries[tool], args, nginx, tmpdir))
            cmds.append(proc.display(mem_runs[-1]["argv"], dict(
                names, **{os.path.join(tmpdir, "time-%s.txt" % tool): "FILE"})))
    if args.syscalls:
        log("syscalls: strace -c -f, -d%s" % fmt_dur(args.syscall_duration))
        for tool in contenders:
            sc_runs.append(syscall_run(tool, binaries[tool], args, nginx, tmpdir))
            cmds.append(proc.display(sc_runs[-1]["argv"], dict(
                names, **{os.path.join(tmpdir, "strace-%s.txt" % tool): "FILE"})))

    text, result = summarize(args, info, tp_runs, mem_runs, sc_runs, cmds)
    report.finish(args, info, text, {
        "summary": result, "throughput_runs": tp_runs, "memory_runs": mem_runs,
        "syscall_runs": sc_runs, "commands": cmds}, nginx)


if __name__ == "__main__":
    sys.exit(cli.run(main))
