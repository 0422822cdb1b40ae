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

against the private nginx of bench/core.py (bench/driver/servers.py: one
worker, ``return 200 "hello world\\n"``, ``keepalive_requests 1000000000``)
on 127.0.0.1.  For R rounds (``--rounds``, default 3; the order of the tools
is reversed every other round) it runs

    taskset -c 0 STRAIN -t1 -c100 -d15s -R20000 --json FILE URL
    taskset -c 0 h2load --h1 -t1 -c100 --rps=200 -D 15 URL    # 200/s per client
    taskset -c 0 oha --no-tui -z 15s -c 100 -q 20000 --output-format json URL

each one under ``/usr/bin/time -f '%M %U %S %w %c'`` (GNU time) for the
tool's peak RSS and context switches (see bench/driver/proc.py, timed(), for
why GNU time rather than this script must be the parent).  For each run it
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

The tool ``floor`` (issue 33) is bench/floor/paced.c, compiled here with ``cc -O2``: the
least a generator can do to hold the rate (one thread, epoll, one request in flight per
connection, due requests written at each 1 ms tick, answers read, nothing recorded).  It is
reported with strain's ratio to it, as a reference, not a peer.  The tool ``floor-uring``
is bench/floor/paced_uring.c, the same job with io_uring (a tick's sends and the re-armed
receives submitted with the wait in one system call), built with ``cc -O2 ... -luring``; it
needs liburing (``apt-get install -y liburing-dev``) and is skipped with a note without it.
It is not a default tool; ask for it with ``--tools strain,floor,floor-uring,h2load``.

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
wait4 runner, settle, reports) come from bench/driver/.

Example:  python3 bench/rate.py --strain target/dist/strain --json /tmp/rate.json
"""

import os
import shlex
import sys
import tempfile
import time

from driver import cli, measure, proc, report, tools
from driver.cli import SetupError, fmt_dur, log
from driver.report import f_kib, f_num, f_ratio, flags, pct, ratio
from driver.servers import hello_nginx

TOOLS = ("strain", "h2load", "oha", "strain-alt", "floor", "floor-uring")
DEFAULT_TOOLS = ("strain", "h2load", "oha", "floor")
# The floor for a held rate (issue 33): bench/floor/paced.c, built here with cc -O2.  A
# reference like strain-alt, not a peer: the requirements ignore it; strain's ratio to it is
# reported.
# floor-uring: bench/floor/paced_uring.c, the same job with io_uring (needs liburing-dev).
REFERENCES = ("strain-alt", "floor", "floor-uring")
FLOORS = ("floor", "floor-uring")
FLOOR_SOURCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "floor", "paced.c")
FLOOR_URING_SOURCE = os.path.join(os.path.dirname(FLOOR_SOURCE), "paced_uring.c")
# Tools that run the strain binary.  "strain-alt" is the same binary with
# --alt-args added (e.g. "--tick 0"), to compare two settings in one run; it
# is a reference, not a peer: the issue-3 requirements ignore it.
STRAINS = ("strain", "strain-alt")
INSTALL = {"h2load": "apt-get install -y nghttp2-client", "oha": "cargo install --locked oha",
           "floor-uring": "apt-get install -y liburing-dev"}

# Figures quoted in issue 3 (measured earlier on this machine with the same
# protocol): generator CPU as a share of one core while holding 20,000 req/s.
ISSUE_FIGURES = {"h2load": 17.9, "wrk2": 18.8, "oha": 21.8}


def tool_argv(tool, args, url, json_path, duration):
    """The command line of `tool` holding --rate for `duration` s, pinned to --gen-cpu."""
    dur = fmt_dur(duration)
    if tool in STRAINS:
        extra = args.strain_args + (args.alt_args if tool == "strain-alt" else [])
        argv = [args.strain, "-t1", "-c%d" % args.connections, "-d%s" % dur,
                "-R%d" % args.rate] + extra + ["--json", json_path, url]
    elif tool == "h2load":
        # --rps is per client; -D takes seconds.  -t1: one thread like the others.
        argv = [args.h2load] + args.h2load_args + ["-t1", "-c%d" % args.connections,
                                                   "--rps=%s" % per_client_rps(args),
                                                   "-D", "%g" % duration, url]
    elif tool in FLOORS:
        hostport = url.split("://", 1)[1].split("/", 1)[0]
        host, port = hostport.rsplit(":", 1)
        argv = [getattr(args, tool.replace("-", "_")), host, port, str(args.connections),
                str(args.rate), "%g" % duration, "1000"]
    else:
        argv = [args.oha, "--no-tui", "-z", dur, "-c", str(args.connections),
                "-q", str(args.rate), "--output-format", "json", url]
    return proc.pinned(args.gen_cpu, argv)


def build_floor(tmpdir):
    """Compiles the floor (bench/floor/paced.c) into `tmpdir`; its path."""
    out = os.path.join(tmpdir, "paced")
    proc.run(["cc", "-O2", "-o", out, FLOOR_SOURCE], timeout=120)
    if not os.path.exists(out):
        raise SetupError("cannot build %s with cc" % FLOOR_SOURCE)
    return out


def build_floor_uring(tmpdir):
    """Compiles the io_uring floor (bench/floor/paced_uring.c) into `tmpdir`: its path, or None
    when liburing's header is missing (the tool is then skipped)."""
    if not os.path.exists("/usr/include/liburing.h"):
        return None
    out = os.path.join(tmpdir, "paced_uring")
    proc.run(["cc", "-O2", "-o", out, FLOOR_URING_SOURCE, "-luring"], timeout=120)
    if not os.path.exists(out):
        raise SetupError("cannot build %s with cc -luring" % FLOOR_URING_SOURCE)
    return out


def parse_floor(run):
    """The floor's one JSON line: requests answered, late, unsent, its duration."""
    import json
    for line in reversed(run["stdout"].splitlines()):
        if line.startswith("{"):
            out = json.loads(line)
            out["ok"] = out["requests"]
            return out
    run["problems"].append("no result line from the floor")
    return {}


def per_client_rps(args):
    """h2load's --rps, which is per connection."""
    per = args.rate / args.connections
    return ("%d" % per) if per == int(per) else ("%g" % per)


def rate_run(tool, args, nginx, tmpdir, rnd):
    """One run of `tool` at the target rate: CPU per request, rate held, wake-ups, RSS."""
    json_path = os.path.join(tmpdir, "%s-%d.json" % (tool, rnd))
    time_path = os.path.join(tmpdir, "time-%s-%d.txt" % (tool, rnd))
    inner = tool_argv(tool, args, nginx.url, json_path, args.duration)
    time.sleep(1)  # let the previous run's connections close on the server side
    run = measure.measured(proc.timed(inner, time_path, "MUSwc"), args.duration + 60,
                           args.settle, {"nginx_cpu": nginx.cpu_seconds,
                                         "nginx_ctx_switches": nginx.ctx_switches})
    run.update(tool=tool, round=rnd, wrapper=run["argv"][:5], argv=inner,
               stdout=run["stdout"][-20000:], stderr=run["stderr"][-4000:],
               problems=tools.exit_problems(run))
    t = proc.read_timed(time_path, "MUSwc")
    if not t:
        run["problems"].append("no GNU time output")
    run["maxrss_kb"] = t.get("maxrss_kb")
    run["time_cpu"] = t["time_utime"] + t["time_stime"] if t else None
    run["gen_ctx_switches"] = t["voluntary_ctx"] + t["involuntary_ctx"] if t else None
    wall = run["wall"] or None
    for who in ("gen", "nginx"):
        n = run["%s_ctx_switches" % who]
        run["%s_wakeups_per_s" % who] = n / wall if wall and n is not None else None

    if tool in STRAINS:
        parsed = tools.parse_strain(run, json_path)
    elif tool == "h2load":
        parsed = tools.parse_h2load(run)
    elif tool in FLOORS:
        parsed = parse_floor(run)
    else:
        parsed = tools.parse_oha(run)
    run["parsed"] = parsed
    reqs, dur = parsed.get("requests"), parsed.get("duration")
    run.update(requests=reqs, duration=dur,
               achieved_rps=(reqs / dur) if reqs is not None and dur else None,
               cpu_us_per_req=(1e6 * run["cpu"] / reqs) if reqs else None,
               cpu_share_at_rate=(run["cpu"] / reqs * args.rate) if reqs else None)
    err = None if run["achieved_rps"] is None else (run["achieved_rps"] - args.rate) / args.rate
    run.update(rate_error=err, rate_held=None if err is None else abs(err) <= args.tolerance)
    if reqs is None:
        run["problems"].append("no request count")
    elif parsed.get("ok") is not None and parsed["ok"] < reqs:
        run["problems"].append("only %d of %d responses 2xx/3xx" % (parsed["ok"], reqs))
    if run["rate_held"] is False:
        run["problems"].append("rate off by %+.2f%%" % (100 * err))
    if (parsed.get("rate") or {}).get("unsent"):
        run["problems"].append("%d unsent" % parsed["rate"]["unsent"])
    return run


def schedule_text(run, fmt):
    """strain's schedule counts (sent, late, late for want of a connection, unsent) in `fmt`."""
    rate = run["parsed"].get("rate") or {} if run["tool"] in STRAINS else {}
    return fmt % tuple(f_num(rate.get(k)) for k in ("sent", "late", "late_no_connection",
                                                     "unsent")) if rate else None


def print_run_line(run):
    """The progress line of one run."""
    extra = schedule_text(run, "  sent %s late %s (no conn %s) unsent %s") or ""
    log("  round %d %-10s %9s req in %6.3f s = %9s req/s (%+.2f%%)  cpu %.2f s (user %.2f sys %.2f)"
        "  gen CPU %5.1f%%  at-rate %5.1f%%  %5.1f us/req  nginx %3.0f%%  other %3.0f%%"
        "  RSS %s KiB  ctx/s gen %s nginx %s%s%s" % (
            run["round"], run["tool"], f_num(run["requests"]), run["duration"] or 0,
            f_num(run["achieved_rps"]), 100 * (run["rate_error"] or 0), run["cpu"],
            run["utime"], run["stime"], 100 * (run["gen_cpu_share"] or 0),
            100 * (run["cpu_share_at_rate"] or 0), run["cpu_us_per_req"] or 0,
            100 * (run["nginx_cpu_share"] or 0), 100 * (run["other_cpu_share"] or 0),
            run["maxrss_kb"], f_num(run["gen_wakeups_per_s"]),
            f_num(run["nginx_wakeups_per_s"]), extra, flags(run)))


MEDIANS = ("cpu_share_at_rate", "gen_cpu_share", "cpu_us_per_req", "achieved_rps", "requests",
           "maxrss_kb", "gen_wakeups_per_s", "nginx_wakeups_per_s")


def runs_table(rep, args, runs):
    """The per-run table of rate runs (also bench/h2.py's)."""
    k = f_num(args.rate / 1000, "{:g}k")
    rep.para("Per run (in the order run; CPU = user+sys of the generator from wait4; "
             "achieved = requests / the duration the tool reports):")
    rep.table(["round", "tool", "requests", "duration", "achieved req/s", "vs target",
               "CPU s (user+sys)", "gen CPU", "CPU at %s/s" % k, "CPU us/req", "nginx CPU",
               "other CPU", "ctx switches/s gen, nginx", "peak RSS", "strain schedule",
               "problems"],
              [[r["round"], r["tool"], f_num(r["requests"]),
                "n/a" if r["duration"] is None else "%.3f s" % r["duration"],
                f_num(r["achieved_rps"]),
                "n/a" if r["rate_error"] is None else "%+.2f%%" % (100 * r["rate_error"]),
                "%.2f (%.2f+%.2f)" % (r["cpu"], r["utime"], r["stime"]),
                pct(r["gen_cpu_share"]), pct(r["cpu_share_at_rate"]),
                f_num(r["cpu_us_per_req"], "{:.2f}"), pct(r["nginx_cpu_share"], "%.0f%%"),
                pct(r["other_cpu_share"], "%.0f%%"),
                "%s, %s" % (f_num(r["gen_wakeups_per_s"]), f_num(r["nginx_wakeups_per_s"])),
                f_kib(r["maxrss_kb"]),
                schedule_text(r, "sent %s, late %s (no free conn %s), unsent %s") or "-",
                "; ".join(r["problems"]) or "-"] for r in runs])


def summarize(args, info, tls, skipped, runs, cmds):
    """The Markdown summary and the summary numbers for --json."""
    rep = report.Report()
    cmp = {k: report.compare(runs, "tool", tls, k, "strain" if "strain" in tls else tls[0])
           for k in MEDIANS}
    by = cmp["requests"]["by"]
    med = {t: {k: cmp[k]["medians"][t] for k in MEDIANS} for t in tls}
    # strain/peer: the inverse of compare()'s peer/strain.
    ratios = {t: {"cpu_per_request": ratio(1, cmp["cpu_share_at_rate"]["ratios"][t]),
                  "gen_cpu_share": ratio(1, cmp["gen_cpu_share"]["ratios"][t])}
              for t in tls if t != "strain" and "strain" in tls}
    held = [r["rate_held"] for r in by.get("strain", [])]
    peers = {t: v for t, v in ratios.items() if t not in STRAINS + REFERENCES}
    h2 = (ratios.get("h2load") or {}).get("cpu_per_request")
    req = {"strain_cpu_per_request_below_every_peer":
           (all(v["cpu_per_request"] is not None and v["cpu_per_request"] < 1.0
                for v in peers.values()) if peers else None),
           "strain_rate_held_every_run": all(held) if held else None,
           "goal_strain_le_0.75x_h2load": None if h2 is None else h2 <= 0.75}
    result = {"medians": med, "ratios_strain_over_peer": ratios, "requirements": req,
              "issue_figures_cpu_pct": ISSUE_FIGURES, "skipped": skipped}

    k = f_num(args.rate / 1000, "{:g}k")
    rep.header(info, info["nginx"], info.get("strain", ""), info.get("h2load", "h2load n/a"),
               info.get("oha", "oha n/a"))
    rep.para("%d rounds, each tool -t1 -c%d for %s at %s req/s, generator on CPU %d, nginx on "
             "CPU %d:" % (args.rounds, args.connections, fmt_dur(args.duration),
                          f_num(args.rate), args.gen_cpu, args.server_cpu))
    if args.strain_args or "strain-alt" in tls:
        rep.para("strain ran with %s; strain-alt is the same binary with %s added (a reference "
                 "for strain's own settings, not a peer; the requirements ignore it)." % (
                     ("extra arguments `%s`" % " ".join(args.strain_args)) if args.strain_args
                     else "its default settings", "`%s`" % " ".join(args.alt_args)))
    rep.table(["tool", "CPU at %s/s per run" % k, "median CPU at %s/s" % k,
               "median gen CPU (CPU s / wall s)", "median CPU us/req",
               "ratio strain/tool (CPU per request)", "median achieved req/s",
               "rate held (±%.1f%%)" % (100 * args.tolerance),
               "median ctx switches/s gen, nginx", "median peak RSS"],
              [[t, ", ".join(pct(r["cpu_share_at_rate"]) for r in by[t]),
                pct(med[t]["cpu_share_at_rate"]), pct(med[t]["gen_cpu_share"]),
                f_num(med[t]["cpu_us_per_req"], "{:.2f}"),
                "-" if t == "strain" else f_ratio(ratios.get(t, {}).get("cpu_per_request")),
                f_num(med[t]["achieved_rps"]),
                "%d of %d runs" % (sum(1 for r in by[t] if r["rate_held"]), len(by[t])),
                "%s, %s" % (f_num(med[t]["gen_wakeups_per_s"]),
                            f_num(med[t]["nginx_wakeups_per_s"])),
                f_kib(med[t]["maxrss_kb"])] for t in tls] +
              [[t, "skipped: %s" % why] + [""] * 8 for t, why in skipped.items()])
    runs_table(rep, args, runs)
    if ratios:
        rep.para("Ratios strain/peer of median CPU per request: %s. Of median gen CPU "
                 "(CPU s / wall s): %s." % tuple(
                     ", ".join("%s %s" % (t, f_ratio(v[key])) for t, v in ratios.items())
                     for key in ("cpu_per_request", "gen_cpu_share")))
    rep.para("Figures quoted in issue 3 (measured earlier on this machine, CPU share at 20k/s): "
             "%s." % ", ".join("%s %.1f%%" % kv for kv in ISSUE_FIGURES.items()))
    rep.para("Requirement, strain CPU per request below every peer's: %s. Rate held within "
             "%.1f%% in every strain run: %s. Goal, strain <= 0.75x h2load: %s." % (
                 report.yn(req["strain_cpu_per_request_below_every_peer"]),
                 100 * args.tolerance, report.yn(req["strain_rate_held_every_run"]),
                 report.yn(req["goal_strain_le_0.75x_h2load"])))
    rep.nginx_commands(args.strain, cmds, "; each run under /usr/bin/time -f '%M %U %S %w %c' "
                       "-o FILE")
    return rep.text(), result


def main(stack):
    """Rounds of every available tool at the target rate, then the summary."""
    ap = cli.parser(__doc__.splitlines()[0], "rounds", "warmup", "settle", duration=15.0,
                    connections=100)
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
    ap.add_argument("--rate", type=int, default=20000, help="target requests/s, in total")
    ap.add_argument("--tolerance", type=float, default=0.005,
                    help="largest relative deviation of the achieved rate counted as held")
    tls = [t.strip() for t in ap.parse_known_args()[0].tools.split(",") if t.strip()]
    args = cli.parse(ap, needs_strain=bool(set(STRAINS) & set(tls)))
    if getattr(args, "baseline", None):
        # Not run here yet: say so rather than report strain alone as if compared.
        raise SetupError("--baseline is not supported by rate.py yet: run it once per build "
                         "with --strain PATH, alternating the builds")
    args.strain_args = shlex.split(args.strain_args)
    args.alt_args = shlex.split(args.alt_args)
    args.h2load_args = ["--h1"]  # bench/h2.py reuses rate_run() over HTTP/2
    bad = [t for t in tls if t not in TOOLS]
    if bad:
        raise SetupError("unknown tool(s) %s" % ", ".join(bad))
    if args.connections <= 0 or args.rate <= 0:
        raise SetupError("--rate and --connections must be positive")
    cli.require(("nginx", "taskset", "/usr/bin/time"),
                "apt-get install -y nginx-light time (taskset is in util-linux)")
    skipped = {"wrk2": "not packaged for Debian, not built here"}
    for t in ("h2load", "oha"):
        path = cli.find_tool(getattr(args, t), ("~/.cargo/bin/oha",) if t == "oha" else ())
        if t in tls and path is None:
            log("note: %s not found, skipping it (%s)" % (t, INSTALL[t]))
            skipped[t] = "not installed (%s)" % INSTALL[t]
            tls.remove(t)
        setattr(args, t, path or getattr(args, t))
    if "h2load" in tls and args.rate % args.connections:
        log("note: h2load's --rps is per client; %d/%d is not whole, using %s" % (
            args.rate, args.connections, per_client_rps(args)))

    nofile = proc.raise_nofile()
    versions = {"nginx": ["nginx", "-v"]}
    if set(STRAINS) & set(tls):
        versions["strain"] = [args.strain, "--version"]
    versions.update({t: [getattr(args, t), "--version"] for t in ("h2load", "oha") if t in tls})
    info = cli.machine_info(versions)
    info["rlimit_nofile"] = nofile
    tmpdir = stack.enter_context(tempfile.TemporaryDirectory(prefix="strain-bench-rate-"))
    if set(FLOORS) & set(tls):
        cli.require(("cc",), "apt-get install -y gcc")
    if "floor" in tls:
        args.floor = build_floor(tmpdir)
    if "floor-uring" in tls:
        args.floor_uring = build_floor_uring(tmpdir)
        if args.floor_uring is None:
            log("note: liburing not found, skipping floor-uring (%s)" % INSTALL["floor-uring"])
            skipped["floor-uring"] = "liburing not installed (%s)" % INSTALL["floor-uring"]
            tls.remove("floor-uring")
    nginx, cmd = hello_nginx(stack, args.server_cpu, nofile)
    cmds = [cmd]
    if args.warmup > 0 and set(STRAINS) & set(tls):
        log("warm-up: strain %s at %d/s" % (fmt_dur(args.warmup), args.rate))
        proc.run(tool_argv("strain", args, nginx.url, os.path.join(tmpdir, "warmup.json"),
                           args.warmup), timeout=args.warmup + 30)

    log("rate: %d rounds of %s, -c%d %s at %d/s" % (
        args.rounds, "/".join(tls), args.connections, fmt_dur(args.duration), args.rate))
    runs = []
    names = {args.strain: "STRAIN", args.h2load: "h2load", args.oha: "oha"}
    if "floor" in tls:
        names[args.floor] = "FLOOR"
    if "floor-uring" in tls:
        names[args.floor_uring] = "FLOOR_URING"
    for i, tool in measure.schedule(args.rounds, tls):
        runs.append(rate_run(tool, args, nginx, tmpdir, i))
        print_run_line(runs[-1])
        if i == 1:
            cmds.append(proc.display(runs[-1]["argv"], dict(
                names, **{os.path.join(tmpdir, "%s-1.json" % tool): "FILE"})))
    text, result = summarize(args, info, tls, skipped, runs, cmds)
    report.finish(args, info, text, {"summary": result, "runs": runs, "commands": cmds}, nginx)


if __name__ == "__main__":
    sys.exit(cli.run(main))
