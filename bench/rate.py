#!/usr/bin/env python3
"""Constant-rate benchmark: strain -R against h2load --rps and oha -q.

What it measures
----------------
In constant-rate mode (wrk2's ``-R``) a load generator's job is to send a
fixed number of requests per second on schedule; the less CPU it spends
doing so, the less it disturbs what it measures and the higher the rate one
core can hold.  Every tool here is given the same job:

    20,000 requests/s over 100 connections for 15 s, one thread,
    generator pinned to CPU 0, server pinned to CPU 1,

against the private nginx of ``bench/core.py`` (one worker, ``return 200
"hello world\\n"``, ``keepalive_requests 1000000000``) on 127.0.0.1.  For R
rounds (``--rounds``, default 3; the order of the tools is reversed every
other round) it runs

    taskset -c 0 STRAIN -t1 -c100 -d15s -R20000 --json FILE URL
    taskset -c 0 h2load --h1 -t1 -c100 --rps=200 -D 15 URL    # 200/s per client
    taskset -c 0 oha --no-tui -z 15s -c 100 -q 20000 --output-format json URL

each one under ``/usr/bin/time -f '%M %U %S %w %c'`` (GNU time) for the
tool's peak RSS and context switches (see bench/core.py's memory_run for why
GNU time rather than this script must be the parent).  For each run it
records:

- ``gen CPU``: the generator's user+sys CPU seconds divided by the wall
  seconds of the run.  The CPU seconds come from ``os.wait4()`` on GNU
  time's pid: Linux reports a reaped child's usage together with that of
  the descendants it reaped itself, so this is the tool's own CPU plus GNU
  time's (about a millisecond).  GNU time's own ``%U %S`` of the tool is
  kept as a cross-check.
- ``CPU us/req``: CPU seconds / requests completed, and ``CPU at 20k/s``
  = CPU per request x the target rate, the share of one core the tool
  would need to hold exactly 20,000 requests/s.  When a tool completes
  the full rate in the nominal duration the two CPU figures agree; the
  second is fairer when one does not.
- requests completed (2xx responses) and the achieved rate (requests /
  the duration the tool itself reports), and whether that is within
  ``--tolerance`` (default 0.5 %) of the target.  For strain also what its
  ``--json`` report says about the schedule: requests sent, sent late,
  late for want of a free connection, and never sent.
- ``nginx CPU`` and ``other CPU`` (what the rest of the machine used
  meanwhile, from /proc/stat, in CPUs) as in bench/core.py.  Before each
  run the script waits up to ``--settle`` seconds for the machine to go
  quiet.
- ``ctx switches/s``: context switches per second of the generator (GNU
  time's ``%w + %c``) and of nginx's worker (/proc/PID/status).  An
  event-loop process switches out each time it sleeps, so this is about
  how often it wakes up.  At a fixed rate this matters as much as system
  calls per request: a tool that sends its requests in bursts lets both
  sides handle many per wake-up, one that spreads them evenly wakes both
  sides for nearly every request.

The headline is, per tool, the median over rounds of ``CPU at 20k/s`` and
the ratio strain/peer of those medians (< 1 favours strain).  Issue 3 asks
for strain's CPU per request below every peer's (ratio < 1.0) with the rate
held within 0.5 %, and sets the goal strain <= 0.75x h2load.

Options for comparing strain's own settings in the same run:
``--strain-args "..."`` adds arguments to every strain command line, and
the tool ``strain-alt`` (``--tools strain,strain-alt,h2load``) runs the
same binary with ``--alt-args`` (default ``--tick 0``) added as well; it
is reported like a peer (ratio strain/strain-alt) but ignored by the
requirement checks.

wrk2 is not packaged for Debian and is not built here; it is skipped.  A
tool that is not installed is skipped with a note (h2load: ``apt-get
install -y nghttp2-client``; oha: ``cargo install --locked oha``).

Everything stays on 127.0.0.1 and every child process has a timeout; nginx
runs from a private temporary directory and is stopped on exit, exception
or Ctrl-C.  Python 3 standard library only; the shared helpers (nginx,
wait4 runner, settle, machine info) are imported from bench/core.py.

Example:  python3 bench/rate.py --strain target/release/strain --json /tmp/rate.json
"""

import argparse
import datetime
import json
import os
import re
import shlex
import shutil
import signal
import sys
import tempfile
import time

# Reuse bench/core.py's helpers.  "core" is not a standard-library module,
# so putting this directory first on sys.path shadows nothing; no .pyc is
# written into the repository.
sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from core import (  # noqa: E402
    write_results,
    REPO, BenchError, Nginx, display, f_num, f_ratio, fmt_dur, log, machine_busy_seconds,
    machine_info, median, parse_duration, parse_report, raise_nofile, ratio, run_measured,
    settle, tool_version,
)

TOOLS = ("strain", "h2load", "oha", "strain-alt")
DEFAULT_TOOLS = ("strain", "h2load", "oha")
# Tools that run the strain binary.  "strain-alt" is the same binary with
# --alt-args added (e.g. "--tick 0"), to compare two settings in one run; it
# is a reference, not a peer: the issue-3 requirements ignore it.
STRAINS = ("strain", "strain-alt")

# Figures quoted in issue 3 (measured earlier on this machine with the same
# protocol): generator CPU as a share of one core while holding 20,000 req/s.
ISSUE_FIGURES = {"h2load": 17.9, "wrk2": 18.8, "oha": 21.8}


# --------------------------------------------------------------------------
# Command lines


def tool_argv(tool, args, url, json_path):
    cpu = ["taskset", "-c", str(args.gen_cpu)]
    dur = fmt_dur(args.duration)
    if tool in STRAINS:
        extra = args.strain_args + (args.alt_args if tool == "strain-alt" else [])
        return cpu + [args.strain, "-t1", "-c%d" % args.connections, "-d%s" % dur,
                      "-R%d" % args.rate] + extra + ["--json", json_path, url]
    if tool == "h2load":
        # --rps is per client; -D takes seconds.  -t1: one thread like the others.
        return cpu + [args.h2load, "--h1", "-t1", "-c%d" % args.connections,
                      "--rps=%s" % per_client_rps(args), "-D", "%g" % args.duration, url]
    if tool == "oha":
        return cpu + [args.oha, "--no-tui", "-z", dur, "-c", str(args.connections),
                      "-q", str(args.rate), "--output-format", "json", url]
    raise ValueError(tool)


def per_client_rps(args):
    per = args.rate / args.connections
    return ("%d" % per) if per == int(per) else ("%g" % per)


# --------------------------------------------------------------------------
# Parsing each tool's report


def parse_strain(run, json_path):
    out = {}
    try:
        with open(json_path) as f:
            doc = json.load(f)
    except (OSError, ValueError) as e:
        run["problems"].append("no --json report (%s)" % e)
        doc = None
    if doc:
        out["requests"] = doc.get("requests")
        out["duration"] = doc.get("duration_s")
        status = doc.get("status") or {}
        out["ok"] = sum(v for k, v in status.items() if str(k).startswith(("2", "3")))
        out["errors"] = doc.get("errors")
        out["rate"] = doc.get("rate")
        out["latency_p50_us"] = (doc.get("latency_us") or {}).get("percentiles", {}).get("50")
        out["latency_p99_us"] = (doc.get("latency_us") or {}).get("percentiles", {}).get("99")
        # Keep the report without its per-interval series (bulky).
        run["tool_report"] = {k: v for k, v in doc.items() if k != "intervals"}
    text = parse_report(run["stdout"])
    out["text_requests"] = text.get("requests")
    out["text_elapsed"] = text.get("elapsed")
    if out.get("requests") is None:
        out["requests"] = text.get("requests")
        out["duration"] = text.get("elapsed")
    if doc and out["requests"] is not None and out["text_requests"] is not None \
            and out["requests"] != out["text_requests"]:
        run["problems"].append("text says %d requests, --json %d" % (
            out["text_requests"], out["requests"]))
    return out


H2_REQ = re.compile(r"^requests: (\d+) total, (\d+) started, (\d+) done, (\d+) succeeded, "
                    r"(\d+) failed, (\d+) errored, (\d+) timeout", re.M)
H2_FIN = re.compile(r"^finished in ([0-9.]+)(us|ms|s|m|h), ([0-9.]+) req/s", re.M)
H2_STATUS = re.compile(r"^status codes: (\d+) 2xx, (\d+) 3xx, (\d+) 4xx, (\d+) 5xx", re.M)
UNIT = {"us": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


def parse_h2load(run):
    out = {}
    text = run["stdout"]
    m = H2_REQ.search(text)
    if not m:
        run["problems"].append("no 'requests: N total' line")
        return out
    total, started, done, succeeded, failed, errored, timeout = map(int, m.groups())
    out.update(total=total, started=started, done=done, succeeded=succeeded,
               failed=failed, errored=errored, timeouts=timeout)
    out["requests"] = succeeded
    m = H2_STATUS.search(text)
    if m:
        out["status"] = dict(zip(("2xx", "3xx", "4xx", "5xx"), map(int, m.groups())))
        out["ok"] = out["status"]["2xx"] + out["status"]["3xx"]
    m = H2_FIN.search(text)
    if m:
        out["duration"] = float(m.group(1)) * UNIT[m.group(2)]
        out["reported_rps"] = float(m.group(3))
    if failed or errored or timeout:
        run["problems"].append("h2load: %d failed, %d errored, %d timeout" % (
            failed, errored, timeout))
    return out


def parse_oha(run):
    out = {}
    try:
        doc = json.loads(run["stdout"])
    except ValueError:
        run["problems"].append("oha stdout is not JSON")
        return out
    summary = doc.get("summary") or {}
    status = doc.get("statusCodeDistribution") or {}
    errors = doc.get("errorDistribution") or {}
    ok = sum(v for k, v in status.items() if str(k).startswith(("2", "3")))
    out["status"] = status
    out["errors"] = errors
    out["ok"] = ok
    out["requests"] = ok
    out["responses"] = sum(status.values())
    out["error_count"] = sum(errors.values())
    out["duration"] = summary.get("total")
    out["success_rate"] = summary.get("successRate")
    out["reported_rps"] = summary.get("requestsPerSec")
    lat = doc.get("latencyPercentiles") or {}
    if lat.get("p50") is not None:
        out["latency_p50_us"] = lat["p50"] * 1e6
    if lat.get("p99") is not None:
        out["latency_p99_us"] = lat["p99"] * 1e6
    # Keep the report without the latency histogram details.
    run["tool_report"] = {k: v for k, v in doc.items()
                          if k not in ("responseTimeHistogram", "firstByteHistogram", "details")}
    # With -z on HTTP/1, oha aborts the requests in flight at the deadline and
    # counts them as errors; that is how it ends a run, not a failure.
    out["aborted_at_deadline"] = errors.get("aborted due to deadline", 0)
    real = {k: v for k, v in errors.items() if k != "aborted due to deadline"}
    if real:
        run["problems"].append("oha errors: %s" % ", ".join(
            "%s x%d" % kv for kv in real.items()))
    return out


# --------------------------------------------------------------------------
# One run


def nginx_ctx_switches(nginx):
    """Voluntary + involuntary context switches so far of nginx's workers
    (a worker switches out each time it sleeps in epoll_wait)."""
    total = 0
    for pid in nginx.worker_pids():
        try:
            with open("/proc/%d/status" % pid) as f:
                for line in f:
                    if line.startswith(("voluntary_ctxt_switches:",
                                        "nonvoluntary_ctxt_switches:")):
                        total += int(line.split()[1])
        except (OSError, ValueError, IndexError):
            return None
    return total


def rate_run(tool, args, nginx, tmpdir, rnd):
    json_path = os.path.join(tmpdir, "%s-%d.json" % (tool, rnd))
    time_path = os.path.join(tmpdir, "time-%s-%d.txt" % (tool, rnd))
    for p in (json_path, time_path):
        if os.path.exists(p):
            os.unlink(p)
    inner = tool_argv(tool, args, nginx.url, json_path)
    argv = ["/usr/bin/time", "-f", "%M %U %S %w %c", "-o", time_path] + inner
    # Let the previous run's connections close on the server side.
    time.sleep(1)
    busy_before = settle(args.settle) if args.settle > 0 else None
    ng0, m0, cs0 = nginx.cpu_seconds(), machine_busy_seconds(), nginx_ctx_switches(nginx)
    res = run_measured(argv, timeout=args.duration + 60)
    ng1, m1, cs1 = nginx.cpu_seconds(), machine_busy_seconds(), nginx_ctx_switches(nginx)
    other = None
    if m0 is not None and m1 is not None and res["wall"]:
        other = max(0.0, (m1 - m0) - res["cpu"] - (ng1 - ng0)) / res["wall"]

    run = {
        "tool": tool,
        "round": rnd,
        "argv": inner,
        "wrapper": argv[:5],
        "exit": res["exit"],
        "timed_out": res["timed_out"],
        "wall": res["wall"],
        "utime": res["utime"],
        "stime": res["stime"],
        "cpu": res["cpu"],
        "nginx_cpu": ng1 - ng0,
        "nginx_cpu_share": (ng1 - ng0) / res["wall"] if res["wall"] else None,
        "other_cpu_share": other,
        "busy_before": busy_before,
        "stdout": res["stdout"][-20000:],
        "stderr": res["stderr"][-4000:],
        "problems": [],
    }
    if res["timed_out"]:
        run["problems"].append("timed out")
    if res["exit"] != 0:
        run["problems"].append("exit %s" % res["exit"])

    run["maxrss_kb"] = None
    run["time_cpu"] = None
    run["gen_ctx_switches"] = None
    run["nginx_ctx_switches"] = (cs1 - cs0) if cs0 is not None and cs1 is not None else None
    try:
        with open(time_path) as f:
            last = f.read().strip().splitlines()[-1].split()
        run["maxrss_kb"] = int(last[0])
        run["time_cpu"] = float(last[1]) + float(last[2])
        run["gen_ctx_switches"] = int(last[3]) + int(last[4])
    except (OSError, ValueError, IndexError):
        run["problems"].append("no GNU time output")
    wall = res["wall"] or None
    run["gen_wakeups_per_s"] = (run["gen_ctx_switches"] / wall
                                if wall and run["gen_ctx_switches"] is not None else None)
    run["nginx_wakeups_per_s"] = (run["nginx_ctx_switches"] / wall
                                  if wall and run["nginx_ctx_switches"] is not None else None)

    if tool in STRAINS:
        parsed = parse_strain(run, json_path)
    elif tool == "h2load":
        parsed = parse_h2load(run)
    else:
        parsed = parse_oha(run)
    run["parsed"] = parsed

    reqs = parsed.get("requests")
    dur = parsed.get("duration")
    run["requests"] = reqs
    run["duration"] = dur
    run["achieved_rps"] = (reqs / dur) if reqs is not None and dur else None
    run["rate_error"] = ((run["achieved_rps"] - args.rate) / args.rate
                         if run["achieved_rps"] is not None else None)
    run["rate_held"] = (abs(run["rate_error"]) <= args.tolerance
                        if run["rate_error"] is not None else None)
    run["gen_cpu_share"] = res["cpu"] / res["wall"] if res["wall"] else None
    run["cpu_us_per_req"] = (1e6 * res["cpu"] / reqs) if reqs else None
    run["cpu_share_at_rate"] = (res["cpu"] / reqs * args.rate) if reqs else None
    if reqs is not None and parsed.get("ok") is not None and parsed["ok"] < reqs:
        run["problems"].append("only %d of %d responses 2xx/3xx" % (parsed["ok"], reqs))
    if run["rate_held"] is False:
        run["problems"].append("rate off by %+.2f%%" % (100 * run["rate_error"]))
    if tool in STRAINS:
        rate = parsed.get("rate") or {}
        if rate.get("unsent"):
            run["problems"].append("%d unsent" % rate["unsent"])
    return run


def print_run_line(run):
    extra = ""
    if run["tool"] in STRAINS:
        rate = run["parsed"].get("rate") or {}
        if rate:
            extra = "  sent %s late %s (no conn %s) unsent %s" % (
                f_num(rate.get("sent")), f_num(rate.get("late")),
                f_num(rate.get("late_no_connection")), f_num(rate.get("unsent")))
    log("  round %d %-10s %9s req in %6.3f s = %9s req/s (%+.2f%%)  cpu %.2f s (user %.2f sys %.2f)"
        "  gen CPU %5.1f%%  at-rate %5.1f%%  %5.1f us/req  nginx %3.0f%%  other %3.0f%%"
        "  RSS %s KiB  ctx/s gen %s nginx %s%s%s" % (
            run["round"], run["tool"], f_num(run["requests"]), run["duration"] or 0,
            f_num(run["achieved_rps"]), 100 * (run["rate_error"] or 0), run["cpu"],
            run["utime"], run["stime"], 100 * (run["gen_cpu_share"] or 0),
            100 * (run["cpu_share_at_rate"] or 0), run["cpu_us_per_req"] or 0,
            100 * (run["nginx_cpu_share"] or 0), 100 * (run["other_cpu_share"] or 0),
            run["maxrss_kb"], f_num(run["gen_wakeups_per_s"]),
            f_num(run["nginx_wakeups_per_s"]), extra,
            ("  !! " + "; ".join(run["problems"])) if run["problems"] else ""))


# --------------------------------------------------------------------------
# Summary


def pct(x, fmt="%.1f%%"):
    return "n/a" if x is None else fmt % (100 * x)


def summarize(args, info, tools, skipped, runs, cmds):
    lines = []
    w = lambda s="": lines.append(s)
    by = {t: [r for r in runs if r["tool"] == t] for t in tools}
    med = {t: {
        "cpu_share_at_rate": median([r["cpu_share_at_rate"] for r in by[t]]),
        "gen_cpu_share": median([r["gen_cpu_share"] for r in by[t]]),
        "cpu_us_per_req": median([r["cpu_us_per_req"] for r in by[t]]),
        "achieved_rps": median([r["achieved_rps"] for r in by[t]]),
        "requests": median([r["requests"] for r in by[t]]),
        "maxrss_kb": median([r["maxrss_kb"] for r in by[t]]),
        "gen_wakeups_per_s": median([r["gen_wakeups_per_s"] for r in by[t]]),
        "nginx_wakeups_per_s": median([r["nginx_wakeups_per_s"] for r in by[t]]),
    } for t in tools}
    ratios = {}
    for t in tools:
        if t == "strain" or "strain" not in tools:
            continue
        ratios[t] = {
            "cpu_per_request": ratio(med["strain"]["cpu_share_at_rate"], med[t]["cpu_share_at_rate"]),
            "gen_cpu_share": ratio(med["strain"]["gen_cpu_share"], med[t]["gen_cpu_share"]),
        }
    strain_runs = by.get("strain", [])
    held = [r["rate_held"] for r in strain_runs]
    peers = {t: v for t, v in ratios.items() if t not in STRAINS}
    req = {
        "strain_cpu_per_request_below_every_peer":
            (all(v["cpu_per_request"] is not None and v["cpu_per_request"] < 1.0
                 for v in peers.values()) if peers else None),
        "strain_rate_held_every_run": (all(held) if held else None),
        "goal_strain_le_0.75x_h2load":
            (ratios["h2load"]["cpu_per_request"] <= 0.75
             if ratios.get("h2load") and ratios["h2load"]["cpu_per_request"] is not None
             else None),
    }
    result = {"medians": med, "ratios_strain_over_peer": ratios, "requirements": req,
              "issue_figures_cpu_pct": ISSUE_FIGURES, "skipped": skipped}

    w("Date: %s; machine: %s CPUs, %s, Linux %s; %s; %s; %s; %s." % (
        datetime.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z"),
        info["nproc"], info["cpu_model"], info["kernel"], info["nginx"],
        info.get("strain", ""), info.get("h2load", "h2load n/a"), info.get("oha", "oha n/a")))
    w()
    w("%d rounds, each tool -t1 -c%d for %s at %s req/s, generator on CPU %d, nginx on CPU %d:" % (
        args.rounds, args.connections, fmt_dur(args.duration), f_num(args.rate),
        args.gen_cpu, args.server_cpu))
    w()
    if args.strain_args or "strain-alt" in tools:
        w("strain ran with %s; strain-alt is the same binary with %s added (a reference "
          "for strain's own settings, not a peer; the requirements ignore it)." % (
              ("extra arguments `%s`" % " ".join(args.strain_args)) if args.strain_args
              else "its default settings",
              "`%s`" % " ".join(args.alt_args)))
        w()
    w("| tool | CPU at %s/s per run | median CPU at %s/s | median gen CPU (CPU s / wall s) "
      "| median CPU us/req | ratio strain/tool (CPU per request) | median achieved req/s "
      "| rate held (±%.1f%%) | median ctx switches/s gen, nginx | median peak RSS |" % (
          f_num(args.rate / 1000, "{:g}k"), f_num(args.rate / 1000, "{:g}k"),
          100 * args.tolerance))
    w("|---|---|---|---|---|---|---|---|---|---|")
    for t in tools:
        rs = by[t]
        m = med[t]
        w("| %s | %s | %s | %s | %s | %s | %s | %d of %d runs | %s, %s | %s |" % (
            t, ", ".join(pct(r["cpu_share_at_rate"]) for r in rs),
            pct(m["cpu_share_at_rate"]), pct(m["gen_cpu_share"]),
            f_num(m["cpu_us_per_req"], "{:.2f}"),
            "-" if t == "strain" else f_ratio(ratios.get(t, {}).get("cpu_per_request")),
            f_num(m["achieved_rps"]),
            sum(1 for r in rs if r["rate_held"]), len(rs),
            f_num(m["gen_wakeups_per_s"]), f_num(m["nginx_wakeups_per_s"]),
            "n/a" if m["maxrss_kb"] is None else "%.1f MiB" % (m["maxrss_kb"] / 1024)))
    for t in skipped:
        w("| %s | skipped: %s | | | | | | | | |" % (t, skipped[t]))
    w()
    w("Per run (in the order run; CPU = user+sys of the generator from wait4; "
      "achieved = requests / the duration the tool reports):")
    w()
    w("| round | tool | requests | duration | achieved req/s | vs target | CPU s (user+sys) "
      "| gen CPU | CPU at %s/s | CPU us/req | nginx CPU | other CPU | ctx switches/s gen, nginx "
      "| peak RSS | strain schedule | problems |" % f_num(args.rate / 1000, "{:g}k"))
    w("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in runs:
        sched = "-"
        if r["tool"] in STRAINS:
            rate = r["parsed"].get("rate") or {}
            if rate:
                sched = "sent %s, late %s (no free conn %s), unsent %s" % (
                    f_num(rate.get("sent")), f_num(rate.get("late")),
                    f_num(rate.get("late_no_connection")), f_num(rate.get("unsent")))
        w("| %d | %s | %s | %s | %s | %s | %.2f (%.2f+%.2f) | %s | %s | %s | %s | %s | %s, %s | %s | %s | %s |" % (
            r["round"], r["tool"], f_num(r["requests"]),
            "n/a" if r["duration"] is None else "%.3f s" % r["duration"],
            f_num(r["achieved_rps"]),
            "n/a" if r["rate_error"] is None else "%+.2f%%" % (100 * r["rate_error"]),
            r["cpu"], r["utime"], r["stime"], pct(r["gen_cpu_share"]),
            pct(r["cpu_share_at_rate"]), f_num(r["cpu_us_per_req"], "{:.2f}"),
            pct(r["nginx_cpu_share"], "%.0f%%"), pct(r["other_cpu_share"], "%.0f%%"),
            f_num(r["gen_wakeups_per_s"]), f_num(r["nginx_wakeups_per_s"]),
            "n/a" if r["maxrss_kb"] is None else "%.1f MiB" % (r["maxrss_kb"] / 1024),
            sched, "; ".join(r["problems"]) or "-"))
    w()
    if ratios:
        w("Ratios strain/peer of median CPU per request: %s. Of median gen CPU "
          "(CPU s / wall s): %s." % (
              ", ".join("%s %s" % (t, f_ratio(v["cpu_per_request"])) for t, v in ratios.items()),
              ", ".join("%s %s" % (t, f_ratio(v["gen_cpu_share"])) for t, v in ratios.items())))
        w()
    w("Figures quoted in issue 3 (measured earlier on this machine, CPU share at 20k/s): %s." %
      ", ".join("%s %.1f%%" % kv for kv in ISSUE_FIGURES.items()))
    w()
    yn = lambda v: "n/a" if v is None else ("yes" if v else "NO")
    w("Requirement, strain CPU per request below every peer's: %s. Rate held within %.1f%% in "
      "every strain run: %s. Goal, strain <= 0.75x h2load: %s." % (
          yn(req["strain_cpu_per_request_below_every_peer"]), 100 * args.tolerance,
          yn(req["strain_rate_held_every_run"]), yn(req["goal_strain_le_0.75x_h2load"])))
    w()
    w("Commands (URL = http://127.0.0.1:PORT/ of the private nginx, STRAIN = %s; each run "
      "under /usr/bin/time -f '%%M %%U %%S %%w %%c' -o FILE):" % args.strain)
    w()
    w("```")
    for c in cmds:
        w(c)
    w("```")
    return "\n".join(lines), result


# --------------------------------------------------------------------------


def main():
    ap = argparse.ArgumentParser(
        description="Benchmark strain's constant-rate mode against h2load and oha: "
                    "generator CPU while holding a fixed request rate.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    ap.add_argument("--strain", default="target/release/strain",
                    help="strain binary (relative paths: to the current directory, "
                         "else to the repository root)")
    ap.add_argument("--h2load", default="h2load", help="h2load binary")
    ap.add_argument("--oha", default="oha", help="oha binary (also looked for in ~/.cargo/bin)")
    ap.add_argument("--tools", default=",".join(DEFAULT_TOOLS),
                    help="comma-separated subset of %s (strain-alt: the strain binary "
                         "with --alt-args added)" % ", ".join(TOOLS))
    ap.add_argument("--strain-args", default="",
                    help="extra arguments for every strain run (shell-style quoting), "
                         "e.g. \"--tick 0\"")
    ap.add_argument("--alt-args", default="--tick 0",
                    help="extra arguments for the strain-alt tool, after --strain-args")
    ap.add_argument("--rounds", type=int, default=3,
                    help="rounds; the tools' order is reversed every other round")
    ap.add_argument("--rate", type=int, default=20000, help="target requests/s, in total")
    ap.add_argument("--connections", type=int, default=100, help="connections")
    ap.add_argument("--duration", type=parse_duration, default=15.0, help="duration of each run")
    ap.add_argument("--tolerance", type=float, default=0.005,
                    help="largest relative deviation of the achieved rate counted as held")
    ap.add_argument("--warmup", type=parse_duration, default=2.0,
                    help="unreported strain run at the target rate before the first round "
                         "(0 to skip)")
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

    def on_term(signum, frame):
        raise KeyboardInterrupt
    signal.signal(signal.SIGTERM, on_term)

    args.strain_args = shlex.split(args.strain_args)
    args.alt_args = shlex.split(args.alt_args)
    tools = [t.strip() for t in args.tools.split(",") if t.strip()]
    bad = [t for t in tools if t not in TOOLS]
    if bad:
        log("error: unknown tool(s) %s" % ", ".join(bad))
        return 2
    skipped = {"wrk2": "not packaged for Debian, not built here"}
    missing = [t for t in ("nginx", "taskset") if shutil.which(t) is None]
    if missing:
        log("error: missing %s (apt-get install -y nginx-light; taskset is in util-linux)"
            % ", ".join(missing))
        return 2
    if not os.path.exists("/usr/bin/time"):
        log("error: /usr/bin/time not found (apt-get install -y time)")
        return 2
    if set(STRAINS) & set(tools) and not (os.path.isfile(args.strain) and os.access(args.strain, os.X_OK)):
        log("error: strain binary not found or not executable: %s" % args.strain)
        return 2
    for t, hint in (("h2load", "apt-get install -y nghttp2-client"),
                    ("oha", "cargo install --locked oha")):
        if t not in tools:
            continue
        path = shutil.which(getattr(args, t))
        if path is None and t == "oha":
            cand = os.path.expanduser("~/.cargo/bin/oha")
            if os.access(cand, os.X_OK):
                path = cand
        if path is None:
            log("note: %s not found, skipping it (%s)" % (t, hint))
            skipped[t] = "not installed (%s)" % hint
            tools.remove(t)
        else:
            setattr(args, t, path)
    if args.connections <= 0 or args.rate <= 0:
        log("error: --rate and --connections must be positive")
        return 2
    if "h2load" in tools and args.rate % args.connections:
        log("note: h2load's --rps is per client; %d/%d is not whole, using %s" % (
            args.rate, args.connections, per_client_rps(args)))

    nofile = raise_nofile()
    info = machine_info()
    info.pop("wrk", None)
    info["strain"] = (tool_version([args.strain, "--version"])
                      if set(STRAINS) & set(tools) else "")
    if "h2load" in tools:
        info["h2load"] = tool_version([args.h2load, "--version"])
    if "oha" in tools:
        info["oha"] = tool_version([args.oha, "--version"])
    info["rlimit_nofile"] = nofile
    log("machine: %s" % json.dumps(info))

    nginx = Nginx(args.server_cpu, nofile)
    tmpdir = tempfile.mkdtemp(prefix="strain-bench-rate-")
    runs, cmds = [], []
    nginx_errors = ""
    try:
        nginx.start()
        log("nginx: %s (pid %d, workers %s), dir %s" % (
            nginx.url, nginx.proc.pid, nginx.worker_pids(), nginx.dir))
        cmds.append("taskset -c %d nginx -p DIR/ -e DIR/error.log -c DIR/nginx.conf"
                    "   # worker_processes 1; return 200 \"hello world\\n\"" % args.server_cpu)
        if args.warmup > 0 and set(STRAINS) & set(tools):
            log("warm-up: strain %s at %d/s" % (fmt_dur(args.warmup), args.rate))
            w = tool_argv("strain", args, nginx.url, os.path.join(tmpdir, "warmup.json"))
            w[w.index("-d%s" % fmt_dur(args.duration))] = "-d%s" % fmt_dur(args.warmup)
            run_measured(w, timeout=args.warmup + 30)

        log("rate: %d rounds of %s, -c%d %s at %d/s" % (
            args.rounds, "/".join(tools), args.connections, fmt_dur(args.duration), args.rate))
        for i in range(1, args.rounds + 1):
            order = tools if i % 2 == 1 else list(reversed(tools))
            for tool in order:
                run = rate_run(tool, args, nginx, tmpdir, i)
                runs.append(run)
                print_run_line(run)
                if i == 1:
                    shown = [("h2load" if a == args.h2load and tool == "h2load" else
                              "oha" if a == args.oha and tool == "oha" else a)
                             for a in run["argv"]]
                    cmds.append(display(shown, args.strain).replace(
                        os.path.join(tmpdir, "%s-1.json" % tool), "FILE"))
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

    text, result = summarize(args, info, tools, skipped, runs, cmds)
    print(text)
    if nginx_errors.strip():
        log("nginx error.log (tail):\n" + nginx_errors)

    if args.json:
        write_results(args.json, args, info, {
            "summary": result,
            "runs": runs,
            "commands": cmds,
            "nginx_error_log_tail": nginx_errors,
        })
    return 0


if __name__ == "__main__":
    sys.exit(main())
