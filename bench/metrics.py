#!/usr/bin/env python3
"""Live metrics overhead (issue 22): strain with and without --metrics-listen, scraped every second.

What it measures
----------------
``--metrics-listen ADDR`` makes strain serve Prometheus text at
http://ADDR/metrics while the test runs.  The tally it serves is fed from
the interval rows on the coordinating thread and answered by a thread of
its own, so the workers' hot path should not see it.  Issue 22 asks:
"exporting must not cost the load loop: closed-loop requests per
CPU-second and rate-mode CPU with --metrics-listen scraped every second
are within 2 % of without."  This script measures exactly that, as ratios
of runs interleaved in the same invocation (the machine is small, shared
and noisy; see docs/benchmarks.md).

Against the private nginx of bench/core.py (bench/driver/servers.py: one
worker pinned to CPU 1 with ``taskset -c 1``, ``return 200 "hello
world\\n"``), for R rounds (``--rounds``, default 5; the order of the two
variants is reversed every other round) it runs

1. closed loop:   taskset -c 0 STRAIN -t1 -c50 -d10s URL
                  taskset -c 0 STRAIN -t1 -c50 -d10s --metrics-listen 127.0.0.1:PORT URL
2. rate mode:     taskset -c 0 STRAIN -t1 -c50 -d10s -R20000 URL
                  taskset -c 0 STRAIN -t1 -c50 -d10s -R20000 --metrics-listen 127.0.0.1:PORT URL

(all closed-loop rounds first, then all rate rounds).  PORT is a free
loopback port picked for each run.  While a ``with`` run goes, a thread of
this script GETs http://127.0.0.1:PORT/metrics once a second (a new
connection each time, as a scraper may), from one second after the start
until strain exits.  A scrape counts as successful when the answer is a
200 whose body has ``strain_requests_total``; each run needs at least
``--min-scrapes`` (default 8) of them, else the run is marked and the
script exits 1 after its summary.  The requests total of every scrape is
kept (it must never go down) with the scrape's round-trip time.

For each run the generator's own user+sys CPU seconds come from
``os.wait4()`` on its pid (taskset execs strain, so the pid is strain; the
metrics thread is part of that process, so its CPU is counted), as in
bench/core.py.  Requests and elapsed time come from strain's ``N requests
in T`` line.  Figures:

- closed loop: requests per generator CPU-second, per run and median, and
  the ratio with/without of the medians (higher is better, 1.00 = no
  cost), plus the paired per-round ratios.
- rate mode: generator CPU seconds per run (the job is fixed: 20,000/s
  for 10 s, so about 200,000 requests, checked within ``--rate-tolerance``,
  default 1 %), the ratio with/without of the medians (lower is better:
  above 1.00 means exporting costs CPU) and the paired per-round ratios.
  CPU us per request is shown as well.

The goal is both ratios within ``--band`` (default 0.02, i.e. 0.98-1.02).
Context columns as in bench/core.py and bench/rate.py: ``gen CPU`` (CPU /
wall), ``nginx CPU``, ``other CPU`` (the rest of the machine, in CPUs,
from /proc/stat; high means a disturbed run).  ``threads`` sums strain's
threads as sampled from /proc/PID/task every 0.5 s (the last sample of
each thread, so slightly under the total): their context switches per
second, the CPU seconds of the ``strain-metrics`` thread, the one that
answers scrapes, and of the coordinating thread (``strain``, the main
thread, which cuts the interval rows and feeds the tally); /proc counts
CPU in 10 ms ticks.  Before each run the script waits up to
``--settle`` seconds (default 30) for the machine to go quiet, and one
second for the previous run's connections to close.

Everything stays on 127.0.0.1 and every child process has a timeout; nginx
runs from a private temporary directory and is stopped on exit, exception
or Ctrl-C.  Python 3 standard library only; the shared helpers come from
bench/driver/.  Requirements: nginx (Debian ``nginx-light``), taskset.

Example:  python3 bench/metrics.py --strain target/dist/strain --json /tmp/metrics.json
"""

import os
import sys
import threading
import time

from driver import cli, measure, proc, report, tools
from driver.cli import BenchError, SetupError, fmt_dur, log
from driver.report import f_num, f_ratio, flags, pct, ratio
from driver.servers import free_port, hello_nginx, http_get

VARIANTS = ("without", "with")
MODES = ("closed", "rate")


class Scraper:
    """GETs /metrics on `port` every `every` seconds from one period after
    start() until stop(); keeps every attempt."""

    def __init__(self, port, every):
        self.port, self.every = port, every
        self.attempts = []
        self.started_at = None
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._loop, daemon=True)

    def start(self):
        """Starts scraping (called as the generator starts)."""
        self.started_at = time.monotonic()
        self.thread.start()

    def stop(self):
        """Stops and waits for the thread (a scrape in progress times out in 2 s)."""
        self.done.set()
        if self.started_at is not None:
            self.thread.join(5)

    def _loop(self):
        due = self.started_at + self.every
        while not self.done.wait(max(0.0, due - time.monotonic())):
            t0 = time.monotonic()
            r = http_get(self.port, "/metrics")
            rtt = time.monotonic() - t0
            ok = (r is not None and " 200 " in r[0] + " "
                  and b"strain_requests_total" in r[2])
            self.attempts.append({"t": round(t0 - self.started_at, 3), "ok": ok,
                                  "rtt_ms": round(1000 * rtt, 2),
                                  "bytes": len(r[2]) if r else None,
                                  "requests_total": requests_total(r[2]) if ok else None,
                                  "status": r[0] if r else None})
            due += self.every
            while due < time.monotonic():  # a slow scrape: skip, do not burst
                due += self.every

    def summary(self):
        """Successful scrapes, attempts, and whether the totals never went down."""
        ok = [a for a in self.attempts if a["ok"]]
        totals = [a["requests_total"] for a in ok]
        return {"scrapes_ok": len(ok), "scrape_attempts": len(self.attempts),
                "scrape_totals_monotonic": all(b >= a for a, b in zip(totals, totals[1:])),
                "scrape_rtt_ms_max": max((a["rtt_ms"] for a in ok), default=None),
                "scrape_last_requests_total": totals[-1] if totals else None,
                "scrape_bytes": ok[-1]["bytes"] if ok else None}


def requests_total(body):
    """The sum of the strain_requests_total{status=...} samples in a scrape."""
    total = 0.0
    for line in body.decode("utf-8", "replace").splitlines():
        if line.startswith("strain_requests_total"):
            try:
                total += float(line.rsplit(None, 1)[1])
            except (IndexError, ValueError):
                pass
    return total


class ThreadSampler:
    """The last seen CPU seconds and context switches of each thread of a
    process, from /proc/PID/task, sampled at most every `every` seconds."""

    def __init__(self, every=0.5):
        self.every, self.last, self.seen = every, None, {}

    def __call__(self, pid, elapsed):
        if self.last is not None and elapsed - self.last < self.every:
            return
        self.last = elapsed
        try:
            tids = [int(t) for t in os.listdir("/proc/%d/task" % pid)]
        except OSError:
            return
        for tid in tids:
            base = "/proc/%d/task/%d" % (pid, tid)
            try:
                with open(base + "/comm") as f:
                    comm = f.read().strip()
                with open(base + "/stat") as f:
                    data = f.read()
            except OSError:
                continue
            fields = data[data.rindex(")") + 2:].split()
            cpu = (int(fields[11]) + int(fields[12])) / measure.clk_tck()
            ctx = self._ctx(base)
            self.seen[tid] = {"comm": comm, "cpu": cpu,
                              "ctx": sum(ctx) if ctx and None not in ctx else None}

    @staticmethod
    def _ctx(base):
        found = {}
        try:
            with open(base + "/status") as f:
                for line in f:
                    k, _, v = line.partition(":")
                    if k in ("voluntary_ctxt_switches", "nonvoluntary_ctxt_switches"):
                        found[k] = int(v.split()[0])
        except (OSError, ValueError, IndexError):
            return None
        return [found.get("voluntary_ctxt_switches"), found.get("nonvoluntary_ctxt_switches")]

    def summary(self, wall):
        """Threads seen, their context switches per second, the metrics thread's CPU."""
        ctx = [t["ctx"] for t in self.seen.values() if t["ctx"] is not None]
        mt = [t for t in self.seen.values() if t["comm"] == "strain-metrics"]
        by = {}
        for t in self.seen.values():
            by[t["comm"]] = by.get(t["comm"], 0.0) + t["cpu"]
        return {"threads": sorted(t["comm"] for t in self.seen.values()),
                "thread_cpu": by, "coordinator_cpu": by.get("strain"),
                "thread_ctx_per_s": sum(ctx) / wall if ctx and wall else None,
                "metrics_thread_cpu": sum(t["cpu"] for t in mt) if mt else None,
                "metrics_thread_ctx": sum(t["ctx"] or 0 for t in mt) if mt else None}


def strain_argv(args, mode, port):
    """The pinned command line of one run, without its URL."""
    argv = [args.strain, "-t1", "-c%d" % args.connections, "-d%s" % fmt_dur(args.duration)]
    if mode == "rate":
        argv.append("-R%d" % args.rate)
    if port is not None:
        argv += ["--metrics-listen", "127.0.0.1:%d" % port]
    return proc.pinned(args.gen_cpu, argv)


def one_run(mode, variant, rnd, args, nginx):
    """One measured run of strain, scraped every second when `variant` is "with"."""
    port = free_port() if variant == "with" else None
    argv = strain_argv(args, mode, port) + [nginx.url]
    scraper = Scraper(port, args.scrape_every) if port else None
    sampler = ThreadSampler()

    def poll(pid, elapsed):
        if scraper is not None and scraper.started_at is None:
            scraper.start()
        sampler(pid, elapsed)

    time.sleep(1)  # let the previous run's connections close on the server side
    try:
        run = measure.measured(argv, args.duration + 30, args.settle,
                               {"nginx_cpu": nginx.cpu_seconds}, poll=poll)
    finally:
        if scraper is not None:
            scraper.stop()
    parsed = tools.parse_wrk(run["stdout"])
    reqs = parsed.get("requests")
    run.update({k: parsed.get(k) for k in ("requests", "rps", "elapsed", "socket_errors",
                                           "non_2xx")})
    run.update(mode=mode, variant=variant, round=rnd, metrics_port=port,
               stdout=run["stdout"][-8000:], stderr=run["stderr"][-4000:],
               problems=tools.problems(run, parsed),
               req_per_cpu_s=reqs / run["cpu"] if reqs and run["cpu"] > 0 else None,
               cpu_us_per_req=1e6 * run["cpu"] / reqs if reqs else None)
    run.update(sampler.summary(run["wall"]))
    if mode == "rate" and reqs:
        want = args.rate * args.duration
        run["requests_vs_target"] = (reqs - want) / want
        if abs(run["requests_vs_target"]) > args.rate_tolerance:
            run["problems"].append("requests %d, %+.2f%% off %d" % (
                reqs, 100 * run["requests_vs_target"], want))
    if scraper is not None:
        run["scrapes"] = scraper.attempts
        run.update(scraper.summary())
        if run["scrapes_ok"] < args.min_scrapes:
            run["problems"].append("only %d successful scrapes of %d (need %d)" % (
                run["scrapes_ok"], run["scrape_attempts"], args.min_scrapes))
        if not run["scrape_totals_monotonic"]:
            run["problems"].append("scraped requests total went down")
    return run


def print_run_line(run):
    """The progress line of one run."""
    scr = ""
    if run["variant"] == "with":
        scr = "  scrapes %d/%d (last total %s, max rtt %s ms)  metrics thread %s s cpu" % (
            run["scrapes_ok"], run["scrape_attempts"], f_num(run["scrape_last_requests_total"]),
            f_num(run["scrape_rtt_ms_max"], "{:.1f}"),
            f_num(run["metrics_thread_cpu"], "{:.2f}"))
    scr += "  coordinator %s s cpu" % f_num(run["coordinator_cpu"], "{:.2f}")
    log("  %s round %d %-7s %9s req in %6.3f s  cpu %.2f s (user %.2f sys %.2f)  %9s req/CPU-s"
        "  %5.2f us/req  gen CPU %3.0f%%  nginx %3.0f%%  other %3.0f%%  ctx/s %s%s%s" % (
            run["mode"], run["round"], run["variant"], f_num(run["requests"]),
            run["elapsed"] or 0, run["cpu"], run["utime"], run["stime"],
            f_num(run["req_per_cpu_s"]), run["cpu_us_per_req"] or 0,
            100 * (run["gen_cpu_share"] or 0), 100 * (run["nginx_cpu_share"] or 0),
            100 * (run["other_cpu_share"] or 0), f_num(run["thread_ctx_per_s"]), scr,
            flags(run)))


def in_band(r, band):
    """True when ratio r is within 1 +- band."""
    return None if r is None else abs(r - 1.0) <= band + 1e-12


def per_run_rows(runs, figure_cols):
    """The rows of a per-run table: common columns around `figure_cols(run)`."""
    return [[r["round"], r["variant"], f_num(r["requests"]),
             "%.2f (%.2f+%.2f)" % (r["cpu"], r["utime"], r["stime"])] + figure_cols(r) +
            [pct(r["gen_cpu_share"], "%.0f%%"), pct(r["nginx_cpu_share"], "%.0f%%"),
             pct(r["other_cpu_share"], "%.0f%%"), f_num(r["thread_ctx_per_s"]),
             "-" if r["variant"] == "without" else "%d of %d" % (r["scrapes_ok"],
                                                                  r["scrape_attempts"]),
             "-" if r.get("metrics_thread_cpu") is None else "%.2f" % r["metrics_thread_cpu"],
             f_num(r.get("coordinator_cpu"), "{:.2f}"),
             "; ".join(r["problems"]) or "-"] for r in runs]


TAIL = ["gen CPU", "nginx CPU", "other CPU", "strain ctx switches/s", "scrapes ok",
        "metrics thread CPU s", "coordinating thread CPU s"]


def summarize(args, info, runs, cmds):
    """The Markdown summary and the summary numbers for --json."""
    rep = report.Report()
    rep.header(info, info["nginx"], info["strain"])
    result = {"band": args.band}
    lo, hi = 1 - args.band, 1 + args.band
    closed = [r for r in runs if r["mode"] == "closed"]
    rate = [r for r in runs if r["mode"] == "rate"]
    if closed:
        rep.para("Closed loop, %d rounds of `-t1 -c%d -d%s` without and with `--metrics-listen` "
                 "(scraped every %gs), generator on CPU %d, nginx on CPU %d; requests per "
                 "generator CPU-second (higher is better):" % (
                     args.rounds, args.connections, fmt_dur(args.duration), args.scrape_every,
                     args.gen_cpu, args.server_cpu))
        tp, wall = report.ratio_table(rep, closed, "variant", VARIANTS, "req_per_cpu_s",
                                      "without", ("req/CPU-s per run", "median req/CPU-s"))
        paired = tp["paired"]["with"]
        r = tp["ratios"]["with"]
        result["closed"] = {"median_req_per_cpu_s": tp["medians"], "median_rps": wall["medians"],
                            "ratio_with_over_without": r, "paired_ratios": paired,
                            "within_band": in_band(r, args.band)}
        rep.para("**with/without, median req/CPU-s: %s** (goal %.2f-%.2f: %s); paired by "
                 "round: %s." % (f_ratio(r), lo, hi, report.yn(in_band(r, args.band)),
                                 ", ".join(f_ratio(p) for p in paired)))
        rep.para("Per run (in the order run; CPU = user+sys of strain from wait4):")
        rep.table(["round", "variant", "requests", "CPU s (user+sys)", "req/CPU-s", "req/s"] +
                  TAIL + ["problems"],
                  per_run_rows(closed, lambda r: [f_num(r["req_per_cpu_s"]), f_num(r["rps"])]))
    if rate:
        k = f_num(args.rate / 1000, "{:g}k")
        rep.para("Rate mode, %d rounds of `-t1 -c%d -d%s -R%d` without and with "
                 "`--metrics-listen` (scraped every %gs); generator CPU seconds per run "
                 "(lower is better; the ratio with/without above 1.00 is what exporting "
                 "costs):" % (args.rounds, args.connections, fmt_dur(args.duration), args.rate,
                              args.scrape_every))
        cpu = report.compare(rate, "variant", VARIANTS, "cpu", "without")
        per = report.compare(rate, "variant", VARIANTS, "cpu_us_per_req", "without")
        reqs = report.compare(rate, "variant", VARIANTS, "requests", "without")
        rep.table(["variant", "runs", "CPU s per run", "median CPU s", "ratio vs without",
                   "median CPU us/req", "ratio vs without", "median requests"],
                  [[n, len(cpu["by"][n]), ", ".join("%.3f" % x["cpu"] for x in cpu["by"][n]),
                    f_num(cpu["medians"][n], "{:.3f}"), f_ratio(cpu["ratios"][n]),
                    f_num(per["medians"][n], "{:.2f}"), f_ratio(per["ratios"][n]),
                    f_num(reqs["medians"][n])] for n in VARIANTS])
        r = cpu["ratios"]["with"]
        paired = cpu["paired"]["with"]
        result["rate"] = {"median_cpu_s": cpu["medians"], "median_cpu_us_per_req": per["medians"],
                          "median_requests": reqs["medians"], "ratio_with_over_without": r,
                          "ratio_cpu_per_request": per["ratios"]["with"],
                          "paired_ratios": paired, "within_band": in_band(r, args.band)}
        rep.para("**with/without, median CPU s: %s** (lower is better; goal %.2f-%.2f: %s); "
                 "paired by round: %s. Per request: %s." % (
                     f_ratio(r), lo, hi, report.yn(in_band(r, args.band)),
                     ", ".join(f_ratio(p) for p in paired), f_ratio(per["ratios"]["with"])))
        rep.para("Per run (in the order run; CPU = user+sys of strain from wait4; target %s "
                 "requests):" % f_num(args.rate * args.duration))
        rep.table(["round", "variant", "requests", "CPU s (user+sys)", "CPU us/req",
                   "CPU at %s/s" % k] + TAIL + ["problems"],
                  per_run_rows(rate, lambda r: [f_num(r["cpu_us_per_req"], "{:.2f}"),
                                                pct(r["cpu"] / r["requests"] * args.rate
                                                    if r["requests"] else None)]))
    sc = [r for r in runs if r["variant"] == "with"]
    if sc:
        rep.para("Scrapes: %d-%d successful per `with` run (at least %d needed), answer %s "
                 "bytes, round trip at most %s ms; the scraped requests total never went "
                 "down: %s." % (min(r["scrapes_ok"] for r in sc), max(r["scrapes_ok"] for r in sc),
                                args.min_scrapes, f_num(report.median([r["scrape_bytes"]
                                                                       for r in sc])),
                                f_num(max((r["scrape_rtt_ms_max"] or 0) for r in sc), "{:.1f}"),
                                report.yn(all(r["scrape_totals_monotonic"] for r in sc))))
    rep.nginx_commands(args.strain, cmds, "; PORT = a free loopback port per run, "
                       "GET http://127.0.0.1:PORT/metrics every %gs from this script" %
                       args.scrape_every)
    return rep.text(), result


def main(stack):
    """Closed-loop rounds, then rate rounds, each without and with --metrics-listen."""
    ap = cli.parser(__doc__.splitlines()[0], "warmup", "settle", rounds=5, duration=10.0,
                    connections=50)
    ap.add_argument("--rate", type=int, default=20000, help="requests/s of the rate-mode runs")
    ap.add_argument("--modes", default=",".join(MODES),
                    help="comma-separated subset of %s" % ", ".join(MODES))
    ap.add_argument("--scrape-every", type=float, default=1.0, help="seconds between scrapes")
    ap.add_argument("--min-scrapes", type=int, default=8,
                    help="successful scrapes each 'with' run needs")
    ap.add_argument("--band", type=float, default=0.02,
                    help="goal: both ratios with/without within 1 +- this")
    ap.add_argument("--rate-tolerance", type=float, default=0.01,
                    help="largest relative deviation of a rate run's requests from "
                         "rate x duration")
    args = cli.parse(ap)
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    if args.baseline:
        raise SetupError("--baseline is not used here: this script compares one build "
                         "with and without --metrics-listen")
    if not modes or any(m not in MODES for m in modes):
        raise SetupError("--modes takes a subset of %s" % ", ".join(MODES))
    if args.rounds < 1 or args.connections < 1 or args.rate < 1:
        raise SetupError("--rounds, --connections and --rate must be positive")
    cli.require(("nginx", "taskset"), "apt-get install -y nginx-light "
                "(taskset is in util-linux)")

    nofile = proc.raise_nofile()
    info = cli.machine_info({"nginx": ["nginx", "-v"], "strain": [args.strain, "--version"]})
    info["rlimit_nofile"] = nofile
    nginx, cmd = hello_nginx(stack, args.server_cpu, nofile)
    cmds = [cmd]
    names = {args.strain: "STRAIN"}
    if args.warmup > 0:
        log("warm-up: strain %s" % fmt_dur(args.warmup))
        proc.run(proc.pinned(args.gen_cpu, [args.strain, "-t1", "-c%d" % args.connections,
                                            "-d%s" % fmt_dur(args.warmup), nginx.url]),
                 timeout=args.warmup + 30)

    runs = []
    for mode in modes:
        log("%s: %d rounds without/with --metrics-listen, -t1 -c%d -d%s%s" % (
            mode, args.rounds, args.connections, fmt_dur(args.duration),
            " -R%d" % args.rate if mode == "rate" else ""))
        for i, variant in measure.schedule(args.rounds, VARIANTS):
            runs.append(one_run(mode, variant, i, args, nginx))
            print_run_line(runs[-1])
            if i == 1:
                shown = [("127.0.0.1:PORT" if a.startswith("127.0.0.1:") else a)
                         for a in runs[-1]["argv"]]
                cmds.append(proc.display(shown, names))
    text, result = summarize(args, info, runs, cmds)
    report.finish(args, info, text, {"summary": result, "runs": runs, "commands": cmds}, nginx)
    bad = [r for r in runs if r["variant"] == "with" and r["scrapes_ok"] < args.min_scrapes]
    if bad:
        raise BenchError("%d 'with' run(s) had fewer than %d successful scrapes" % (
            len(bad), args.min_scrapes))


if __name__ == "__main__":
    sys.exit(cli.run(main))
