#!/usr/bin/env python3
"""Server-Sent Events benchmark: strain sse against a Go client, same machine, same run (issue 42).

What it measures
----------------
1. Events per generator CPU-second at ``--streams`` (100) held streams, each
   sent ``--rate`` (500) events a second by ``strain origin --sse RATE -t 1``
   pinned to CPU 1; every generator on CPU 0:

       taskset -c 1 STRAIN origin --listen 127.0.0.1:PORT -t 1 --sse 500
       taskset -c 0 STRAIN sse -t 1 -c 100 -d 5s -T 30s --json FILE URL
       GOMAXPROCS=1 taskset -c 0 sse-go -url URL -c 100 -d 5s

   sse-go (bench/sse-go, built by ``bash bench/tools.sh`` into target/go-bin)
   is a goroutine per stream on net/http reading it line by line, the usual
   shape of a Go client; it prints ``{"events":N,"bytes":B,"streams":S}``.
   The origin sets the pace (streams x rate events a second in all), so both
   tools receive the same events and the figure is what each spends on them;
   the rate is chosen so that the origin is well below its CPU (its share of
   the run's wall time is reported, and flagged above 90%) while the client
   is busy.  Events: strain's ``requests`` from its JSON (checked equal to
   its ``sse.events``, with ``sse.streams`` = streams, none ended, no
   errors), sse-go's ``events`` (with ``streams`` = streams).  Each is
   checked against the origin's own count of events sent (``sse_events`` of
   /_strain/stats, read before and after the run): the origin counts an
   event when it queues it, the tool when it has read it, so the origin's
   count may exceed the tool's by the events in flight at the end, but by
   no more than 1% or one event per stream, whichever is larger, and the
   tool's may never exceed it.  CPU: user+sys of the tool from
   ``os.wait4()``.  Rounds alternate the order.  Headline: median(strain) /
   median(sse-go) of events per CPU-second; issue 42 asks for at least 2x.

2. Memory per held idle stream: peak RSS (GNU time) of

       taskset -c 0 STRAIN sse -t 1 -c N -d 4s -T 30s --json FILE URL
       GOMAXPROCS=1 taskset -c 0 sse-go -url URL -c N -d 4s

   at N = ``--mem-streams`` (10,000) and N = ``--mem-small`` (100), against
   ``strain origin --sse 0.2 -t 1`` (each stream's first event at once, the
   next only 5 s later: the streams sit idle); per stream = the difference
   over the streams between.  -T 30s: no event wait times out.  Checks:
   strain's ``sse.streams`` equals N (no errors), sse-go's ``streams``
   equals N, and the origin's ``sse_streams`` grew by N.  The origin
   listens with a backlog of 128, so 10,000 connections at once overflow it
   and some wait for SYN retries (1 s, 3 s, 7 s); the kernel's
   ListenOverflows over each run is recorded to tell that apart.  Each of
   ``--mem-rounds`` (default: ``--rounds``) rounds runs every contender at
   both counts, the order reversed every other round; per stream is figured
   per contender and round, and the median reported.  Issue 42 asks for at
   most 1 KB per idle stream on strain's side.

With ``--baseline PATH`` an earlier strain build runs as ``baseline`` in
the same rounds of both parts, if it has ``strain sse`` (else it is
skipped, with a note).  Everything stays on 127.0.0.1; every child has a
timeout; each origin is stopped on every way out.  ``--json OUT`` writes
the raw numbers.
"""

import json
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from driver import cli, measure, proc, report  # noqa: E402
from driver.servers import StrainOrigin  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class SseOrigin(StrainOrigin):
    """taskset -c CPU STRAIN origin --listen 127.0.0.1:PORT -t 1 --sse RATE [--sse-size B]"""

    def __init__(self, strain, cpu, rate, size=0):
        super().__init__(strain, cpu)
        self.rate = rate
        self.size = size

    def argv(self):
        return super().argv() + ["--sse", "%g" % self.rate] + (
            ["--sse-size", str(self.size)] if self.size else [])


def has_sse(binary):
    """Whether a strain build has the `sse` command (its --help lists it)."""
    try:
        p = subprocess.run([binary, "--help"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return bool(re.search(r"^\s+sse\s", p.stdout, re.M))


def origin_counts(origin):
    """(sse_streams, sse_events) of the origin's stats, or (None, None)."""
    s = origin.stats() or {}
    return s.get("sse_streams"), s.get("sse_events")


def delta(before, after):
    return None if before is None or after is None else after - before


def listen_overflows():
    """The kernel's TcpExt ListenOverflows so far (SYNs dropped at a full accept queue)."""
    try:
        with open("/proc/net/netstat") as f:
            rows = [line.split() for line in f if line.startswith("TcpExt:")]
        return int(dict(zip(rows[0], rows[1]))["ListenOverflows"])
    except (OSError, IndexError, KeyError, ValueError):
        return None


def tool_counts(name, stdout, json_path):
    """What a run's tool counted: dict(events, streams, ended, errors, sse_events) from
    strain's --json, or (events, streams) from sse-go's line; None where unreadable."""
    if name == "go-client":
        try:
            doc = json.loads(stdout.strip().splitlines()[-1])
        except (ValueError, IndexError):
            return {"events": None, "streams": None}
        return {"events": doc.get("events"), "streams": doc.get("streams"), "bytes": doc.get("bytes")}
    try:
        with open(json_path) as f:
            doc = json.load(f)
    except (OSError, ValueError):
        return {"events": None, "streams": None}
    sse = doc.get("sse") or {}
    errs = {k: v for k, v in (doc.get("errors") or {}).items() if isinstance(v, int) and v}
    return {"events": doc.get("requests"), "streams": sse.get("streams"), "ended": sse.get("ended"),
            "sse_events": sse.get("events"), "data_bytes": sse.get("data_bytes"),
            "refused": sse.get("refused") or {}, "not_event_stream": sse.get("not_event_stream"),
            "errors": errs}


def count_problems(name, counts, streams, served=None):
    """What is wrong with a run's counts: a list of short sentences.  `served` (the origin's
    events sent over the run) is checked against the tool's events, allowing the tail in
    flight at the end: up to 1% or one event per stream, whichever is larger."""
    problems = []
    n = counts.get("events")
    if n is None:
        problems.append("no event count")
    if counts.get("streams") != streams:
        problems.append("%s streams, not %d" % (counts.get("streams"), streams))
    if name != "go-client":
        if counts.get("sse_events") != n:
            problems.append("requests %s but sse.events %s" % (n, counts.get("sse_events")))
        for k in ("ended", "not_event_stream"):
            if counts.get(k):
                problems.append("%s %s" % (k, counts[k]))
        if counts.get("refused"):
            problems.append("refused %s" % counts["refused"])
        if counts.get("errors"):
            problems.append("errors %s" % counts["errors"])
    if served is not None and n is not None:
        tail = served - n
        if tail < 0:
            problems.append("%d events more than the origin sent (%d)" % (-tail, served))
        elif tail > max(0.01 * served, streams):
            problems.append("%d events fewer than the origin sent (%d)" % (tail, served))
    return problems


def per_stream(memory, n_big, n_small):
    """Bytes of peak RSS per stream for each (tool, round) with both runs: a list of dicts."""
    out = []
    for key in sorted({(r["tool"], r["round"]) for r in memory}):
        rows = [r for r in memory if (r["tool"], r["round"]) == key]
        small = next((r.get("maxrss_kb") for r in rows if r["streams"] == n_small), None)
        big = next((r.get("maxrss_kb") for r in rows if r["streams"] == n_big), None)
        if small and big and n_big > n_small:
            out.append(dict(tool=key[0], round=key[1], small_kb=small, big_kb=big,
                            bytes_per_stream=(big - small) * 1024.0 / (n_big - n_small)))
    return out


def main(stack):
    ap = cli.parser(__doc__.split("\n\n")[0], "rounds", "settle", duration=5.0)
    ap.add_argument("--streams", type=int, default=100, help="part 1: streams held (-c)")
    ap.add_argument("--rate", type=float, default=500.0,
                    help="part 1: events a second on each stream (the origin's --sse)")
    ap.add_argument("--size", type=int, default=0,
                    help="part 1: each event's data in bytes (the origin's --sse-size; 0: its "
                         "own 'event SEQ')")
    ap.add_argument("--timeout", type=cli.parse_duration, default=30.0,
                    help="strain's -T in both parts (no event wait may time out)")
    ap.add_argument("--mem-streams", type=int, default=10000,
                    help="part 2: streams of the big runs (0 to skip)")
    ap.add_argument("--mem-small", type=int, default=100, help="part 2: streams of the small runs")
    ap.add_argument("--mem-rate", type=float, default=0.2,
                    help="part 2: events a second on each stream (idle streams)")
    ap.add_argument("--mem-duration", type=cli.parse_duration, default=4.0,
                    help="part 2: -d of each run")
    ap.add_argument("--mem-rounds", type=int, help="rounds of part 2 (default: --rounds)")
    ap.add_argument("--client", default=os.path.join(ROOT, "target/go-bin/sse-go"))
    ap.add_argument("--parts", default="events,memory",
                    help="comma-separated subset of events, memory")
    args = cli.parse(ap)
    args.parts = [x for x in args.parts.split(",") if x]
    for x in args.parts:
        if x not in ("events", "memory"):
            raise cli.SetupError("--parts: unknown part %r" % x)
    if not os.path.exists(args.client):
        raise cli.SetupError("%s is missing: run bash bench/tools.sh" % args.client)
    if not has_sse(args.strain):
        raise cli.SetupError("%s has no sse command" % args.strain)
    baseline = args.baseline
    if baseline and not has_sse(baseline):
        cli.log("baseline %s has no sse command: skipped" % baseline)
        baseline = None
    proc.raise_nofile()
    os.environ["GOMAXPROCS"] = "1"
    info = cli.machine_info(dict({"strain": [args.strain, "--version"]},
                                 **({"baseline": [args.baseline, "--version"]}
                                    if args.baseline else {})))
    out = {"machine": info, "options": {k: v for k, v in vars(args).items() if k != "json"},
           "baseline_skipped": bool(args.baseline and not baseline), "runs": [], "memory": []}
    timeout = "%gs" % args.timeout

    def strain_argv(binary, c, d, url, f):
        return [binary, "sse", "-t", "1", "-c", str(c), "-d", cli.fmt_dur(d), "-T", timeout,
                "--json", f, url]

    def go_argv(c, d, url):
        return [args.client, "-url", url, "-c", str(c), "-d", cli.fmt_dur(d)]

    def contenders(url):
        tools = {"strain": lambda c, d, f: strain_argv(args.strain, c, d, url, f),
                 "go-client": lambda c, d, f: go_argv(c, d, url)}
        if baseline:
            tools["baseline"] = lambda c, d, f: strain_argv(baseline, c, d, url, f)
        return tools

    if "events" in args.parts:
        with SseOrigin(args.strain, args.server_cpu, args.rate, args.size) as origin:
            tools = contenders(origin.url)
            for rnd, name in measure.schedule(args.rounds, list(tools)):
                with tempfile.NamedTemporaryFile(suffix=".json") as f:
                    argv = proc.pinned(args.gen_cpu, tools[name](args.streams, args.duration, f.name))
                    _, before = origin_counts(origin)
                    rec = measure.measured(argv, timeout=args.duration + 60, settle_s=args.settle,
                                           counters={"server_cpu": origin.cpu_seconds})
                    _, after = origin_counts(origin)
                    counts = tool_counts(name, rec["stdout"], f.name)
                served = delta(before, after)
                problems = count_problems(name, counts, args.streams, served)
                if rec["exit"] != 0:
                    problems.append("exit %s" % rec["exit"])
                if (rec.get("server_cpu_share") or 0) > 0.9:
                    problems.append("the origin was busy %s of the run" % report.pct(rec["server_cpu_share"]))
                n = counts["events"]
                rec.update(tool=name, round=rnd, events=n, counts=counts, origin_sent=served,
                           per_cpu_s=n / rec["cpu"] if n and rec["cpu"] else None, problems=problems)
                rec.pop("stdout", None)
                out["runs"].append(rec)
                cli.log("round %d %-9s %s events, cpu %.2fs, %s events/CPU-s; origin sent %s, busy "
                        "%s%s" % (rnd, name, n, rec["cpu"], report.f_num(rec["per_cpu_s"]), served,
                                  report.pct(rec.get("server_cpu_share")), report.flags(rec)))

    big, small = args.mem_streams, args.mem_small
    if "memory" in args.parts and big:
        with SseOrigin(args.strain, args.server_cpu, args.mem_rate) as origin:
            tools = contenders(origin.url)
            for rnd, name in measure.schedule(args.mem_rounds or args.rounds, list(tools)):
                for n in ((small, big) if rnd % 2 else (big, small)):
                    with tempfile.NamedTemporaryFile(suffix=".json") as f, \
                            tempfile.NamedTemporaryFile() as t:
                        argv = proc.pinned(args.gen_cpu, tools[name](n, args.mem_duration, f.name))
                        measure.settle(args.settle)
                        before, over0 = origin_counts(origin)[0], listen_overflows()
                        res = proc.run(proc.timed(argv, t.name), timeout=args.mem_duration + 120)
                        after, over1 = origin_counts(origin)[0], listen_overflows()
                        figures = proc.read_timed(t.name)
                        counts = tool_counts(name, res["stdout"], f.name)
                    opened = delta(before, after)
                    problems = count_problems(name, counts, n)
                    if opened != n:
                        problems.append("the origin opened %s streams, not %d" % (opened, n))
                    if res["exit"] != 0:
                        problems.append("exit %s" % res["exit"])
                    rec = dict(tool=name, round=rnd, streams=n, exit=res["exit"], wall=res["wall"],
                               counts=counts, origin_streams=opened,
                               listen_overflows=delta(over0, over1), problems=problems, argv=argv,
                               **figures)
                    out["memory"].append(rec)
                    cli.log("round %d memory %-9s %6d streams: peak RSS %s KiB, wall %.1fs, %s "
                            "streams, listen overflows %s%s"
                            % (rnd, name, n, figures.get("maxrss_kb"), res["wall"], counts.get("streams"),
                               rec["listen_overflows"], report.flags(rec)))

    names = [n for n in ("strain", "go-client", "baseline") if any(r["tool"] == n for r in out["runs"])]
    med = {n: report.median([r["per_cpu_s"] for r in out["runs"] if r["tool"] == n]) for n in names}
    pairs = per_stream(out["memory"], big, small)
    mem_names = [n for n in ("strain", "go-client", "baseline") if any(p["tool"] == n for p in pairs)]
    per = {n: report.median([p["bytes_per_stream"] for p in pairs if p["tool"] == n]) for n in mem_names}
    problems = sum(len(r["problems"]) for r in out["runs"] + out["memory"])
    out["summary"] = {"median_events_per_cpu_s": med,
                      "ratio": report.ratio(med.get("strain"), med.get("go-client")),
                      "ratio_vs_baseline": report.ratio(med.get("strain"), med.get("baseline")),
                      "bytes_per_idle_stream": per, "memory_pairs": pairs, "problems": problems}

    if names:
        print("\n| events, %d streams x %g/s | events per CPU-second, per round | median | events "
              "(origin sent), per round | origin CPU busy |" % (args.streams, args.rate))
        print("|---|---|---|---|---|")
        for n in names:
            rs = [r for r in out["runs"] if r["tool"] == n]
            print("| %s | %s | %s | %s | %s |" % (
                n, ", ".join(report.f_num(r["per_cpu_s"]) for r in rs), report.f_num(med[n]),
                ", ".join("%s (%s)" % (report.f_num(r["events"]), report.f_num(r["origin_sent"]))
                          for r in rs),
                ", ".join(report.pct(r.get("server_cpu_share"), "%.0f%%") for r in rs)))
        print("\nstrain / go-client, events per CPU-second: %s (issue 42 asks >= 2x)"
              % report.f_ratio(out["summary"]["ratio"]))
        if "baseline" in med:
            print("strain / baseline, events per CPU-second: %s"
                  % report.f_ratio(out["summary"]["ratio_vs_baseline"]))
    if pairs:
        print("\n| idle streams | peak RSS at %d, per round | at %d, per round | B per stream, per "
              "round | median |" % (small, big))
        print("|---|---|---|---|---|")
        for n in mem_names:
            ps = [p for p in pairs if p["tool"] == n]
            print("| %s | %s | %s | %s | %s |" % (
                n, ", ".join("%d KiB" % p["small_kb"] for p in ps),
                ", ".join("%d KiB" % p["big_kb"] for p in ps),
                ", ".join(report.f_num(p["bytes_per_stream"]) for p in ps), report.f_num(per[n])))
        print("\nstrain, bytes per idle stream: %s (issue 42 asks <= 1,024)"
              % report.f_num(per.get("strain")))
        if per.get("strain") and per.get("go-client"):
            print("go-client / strain, bytes per idle stream: %s"
                  % report.f_ratio(per["go-client"] / per["strain"]))
        if per.get("strain") and per.get("baseline"):
            print("strain / baseline, bytes per idle stream: %s"
                  % report.f_ratio(per["strain"] / per["baseline"]))
    if out["baseline_skipped"]:
        print("\nbaseline %s has no sse command: skipped" % args.baseline)
    if problems:
        print("\n%d problem(s) in the runs' counts: see the lines marked !! above" % problems)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1, default=str)


if __name__ == "__main__":
    sys.exit(cli.run(main))
