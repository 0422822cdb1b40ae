#!/usr/bin/env python3
"""Replay benchmark (issue 31): strain replay against --targets, RSS over a 1 GB log, GoReplay.

What it measures
----------------
``strain replay FILE... URL`` sends a recording's requests again, each when it
is due.  Three questions, each answered in the same invocation against the
private nginx of bench/core.py (bench/driver/servers.py: one worker, pinned
to CPU 1, ``return 200 "hello world\\n"``), every generator pinned to CPU 0:

1. **What does replaying cost, against rate mode at the same mean rate?**
   The script writes a JSON-lines recording (``{"time", "method", "url"}``)
   of ``--requests`` (300,000) requests spanning (N-1)/``--rate`` s (15 s at
   20,000/s) over ``--paths`` (50) distinct paths, chosen with Zipf-like
   weights from a seeded generator.  The pattern is irregular but
   deterministic: ``--burst`` (100 ms) windows of about 2x the mean rate
   alternate with silent windows of the same length; inside a burst the
   times are seeded uniform random (Poisson-like spacing); the whole is
   scaled so that the first request is at 0 and the mean rate is exactly
   ``--rate``.  The same requests, in the same order, go into a vegeta JSON
   targets file (``{"method", "url"}``, src/workload/targets.rs) and, as a
   reference, into a second recording with the same paths evenly spaced
   (``replay-even``: no bursts, the pace rate mode keeps).  For ``--rounds``
   rounds (order reversed every other round) it runs

       taskset -c 0 STRAIN replay -t1 -c100 --json F REC URL            # replay
       taskset -c 0 STRAIN replay -t1 -c100 --json F REC_EVEN URL       # replay-even
       taskset -c 0 STRAIN -t1 -c100 -R20000 -d15s --targets TF --json F URL   # targets
       ... the first and the third with -n 1                             # replay-n1, targets-n1

   each under ``/usr/bin/time -f '%M %U %S %w %c'`` (peak RSS, context
   switches).  CPU is user+sys of the whole strain process from ``wait4()``
   (as bench/rate.py): for a replay that includes its reader thread, which
   reads the file twice (one scan before any load, to refuse a bad record
   and to learn the count and span, then again while the load runs).  The
   ``-n 1`` runs do everything but the load (start, the scan or the
   targets file's parse, one request, the report, the JSON with one entry
   per target for ``--targets``): their CPU is each mode's fixed cost, and
   ``full - fixed`` the cost of the 300,000 requests themselves.  Also
   from ``--json``: ``thread_cpu_s`` (the worker threads' CPU while
   measuring, without the reader thread and the start/stop), ``rate``
   (sent, late, late for want of a connection, unsent) and, for replays,
   ``replay`` (send lag p50/p99/max, requests queued, skipped counts).
   The headline is the ratio replay/targets of the medians of CPU per
   request (the issue's goal: at most 1.1x).

2. **Does RSS stay flat while a large log streams?**  The script writes a
   ``--big-gb`` (1 GB) nginx combined log into ``--big-dir`` (/tmp), about
   330 bytes a line, ``--big-line-rate`` (1,000) lines a recorded second,
   and deletes it at the end.  It runs

       taskset -c 0 STRAIN replay -t1 -c100 -n 1 --json F BIG URL          # the scan alone
       taskset -c 0 STRAIN replay -t1 -c100 -R50000 -d60s --json F BIG URL

   and samples, once a second, strain's VmRSS and VmHWM (/proc/PID/status)
   and how far into the file strain's descriptors on it are
   (/proc/PID/fdinfo, ``pos``).  The load starts when the first connection
   to nginx is ESTABLISHED (/proc/net/tcp, polled every 10 ms); the time
   until then is the scan of the whole file.  Reported: RSS during the
   scan, over the load's first 10 s and last 10 s, the largest sample and
   the peak (GNU time), against the bytes read.

3. **GoReplay's file replay, same recording, same schedule.**  For each
   mean rate of ``--timing-rates`` (20,000/s: part 1's recording; 200/s:
   the same pattern over the same span, a rate at which GoReplay's pacing
   can be judged apart from its throughput) and with a ``gor`` binary
   (``--gor``; looked for on PATH and in /tmp/gobin), the recording goes
   into GoReplay's file format (a block per request:
   ``1 <id> <timestamp ns> 0\\n<raw HTTP request>\\n🐵🙈🙉\\n``, protocol.go
   and input_file.go of buger/goreplay) and into JSON lines with the same
   requests, each URL carrying its index (``?i=N``).  A second nginx, the
   same but logging ``$msec $request_uri`` (buffered), takes

       taskset -c 0 gor --input-file REC.gor --output-http URL --output-http-workers 100 --exit-after T
       taskset -c 0 STRAIN replay -t1 -c100 --json F REC_IDS URL

   each against a fresh nginx.  gor does not exit at the end of its file:
   T is twice the span + 5 s (at most ``--gor-exit-after``), and what has
   not reached nginx by then is counted as missing.  From its access log:
   for request i arriving at a_i (``$msec``, when nginx logged it, 1 ms
   resolution) and recorded
   at offset o_i, the timing error is (a_i - o_i) - min_j (a_j - o_j), i.e.
   how much later than the schedule it arrived, the schedule anchored on
   the request that arrived most nearly on time.  Reported: p50, p99, max,
   requests logged, and each tool's CPU.  Without a gor binary the part is
   skipped, with the reason (``--gor-note``, e.g. the build error).

4. **How fast is a recording read?** (``--parts read``, issue 41.)  The
   script writes, seeded, a ``--read-mb`` (300 MB) recording in each of
   ``--read-formats``: an nginx combined log (clients, GET/HEAD, a dozen
   path shapes with ids and queries, statuses 200/304/301/302/404/403/500,
   sizes, referers and nine user agents varied), strain's JSON lines
   (``{"time","method","url","header"}``, vegeta's header lists) and Caddy's
   JSON access log, ``--read-line-rate`` (1,000) records a recorded
   second, plus a 100-record file of each.  For ``--rounds`` rounds (the
   builds' order reversed every other round) strain and ``--baseline``
   (the build before; left out of a format it refuses) each run

       taskset -c 0 STRAIN replay -t1 -c1 -n 1 FILE http://127.0.0.1:FREE/

   against a port nothing listens on: the scan of the whole file (checked:
   the record count strain prints is the file's), one connection refused
   and retried for about 2 s, the report, exit 1.  Read CPU = that run's
   user+sys less the same run's on the 100-record file; MB/s = bytes / read
   CPU.  It slightly overstates the scan: the second pass, while the
   connection is refused, reads the reorder window's 5 s of records and
   the 2 s due (about 7,000 records, under 1 % of each file).

Everything stays on 127.0.0.1 and every child process has a timeout; the
nginx servers run from private temporary directories and are stopped on
exit, exception or Ctrl-C; the generated files are deleted.  Python 3
standard library only; nginx, the wait4 runner, settle, and the report
helpers come from bench/driver/.

Example:  python3 bench/replay.py --json /tmp/replay.json
"""

import hashlib
import json
import os
import random
import re
import shlex
import sys
import tempfile
import time

from driver import cli, measure, proc, report, tools
from driver.cli import BenchError, SetupError, fmt_dur, log
from driver.report import f_kib, f_num, f_ratio, median, pct, ratio
from driver.servers import HELLO, Nginx, hello_nginx

# Part 1's contenders: full runs, then the -n 1 runs that give each one's fixed cost.
FULL = ("replay", "targets", "replay-even")
FIXED = {"replay-n1": "replay", "targets-n1": "targets"}
GOAL_RATIO = 1.1
# 2026-11-26T10:00:00Z: the recordings' first request.
EPOCH = 1795687200
SEPARATOR = "\n\U0001f435\U0001f648\U0001f649\n"  # GoReplay's payloadSeparator
# The nginx of part 3: HELLO, logging when each request was answered (ms) and its URI.
TIMED = """
    log_format replay_timing '$msec $request_uri';""" + HELLO.replace(
    "        location / {",
    "        access_log {dir}/access.log replay_timing buffer=1m flush=1s;\n"
    "        location / {")
GOR_BUILD = "GOBIN=/tmp/gobin go install github.com/buger/goreplay@latest"


# ---------------------------------------------------------------------------
# The recordings.

def burst_offsets(n, rate, burst_s, seed):
    """n sorted offsets in microseconds, first 0, mean rate `rate`: windows of
    `burst_s` with requests at seeded uniform times alternating with silent ones."""
    rng = random.Random(seed)
    span = (n - 1) / rate
    windows = max(1, int(round(span / (2 * burst_s))))
    times = []
    for w in range(windows):
        k = n // windows + (1 if w < n % windows else 0)
        start = 2 * w * burst_s
        times.extend(sorted(start + rng.random() * burst_s for _ in range(k)))
    t0, t1 = times[0], times[-1]
    scale = span / (t1 - t0) if t1 > t0 else 0.0
    return [int(round((t - t0) * scale * 1e6)) for t in times]


def even_offsets(n, rate):
    """n offsets in microseconds, 1/rate apart."""
    return [int(round(i * 1e6 / rate)) for i in range(n)]


def path_choices(n, paths, seed):
    """n path numbers among `paths`, Zipf-like (weight 1/(k+1)), seeded."""
    rng = random.Random(seed + 1)
    return rng.choices(range(paths), weights=[1 / (k + 1) for k in range(paths)], k=n)


def epoch_text(us):
    """EPOCH + us microseconds as Unix seconds with six decimals."""
    s, frac = divmod(us, 1000000)
    return "%d.%06d" % (EPOCH + s, frac)


def clf_stamp(seconds):
    """The CLF time (`26/Nov/2026:10:00:00 +0000`) `seconds` after EPOCH."""
    tm = time.gmtime(EPOCH + seconds)
    return "%02d/%s/%d:%02d:%02d:%02d +0000" % (tm.tm_mday, MONTHS[tm.tm_mon - 1], tm.tm_year,
                                                tm.tm_hour, tm.tm_min, tm.tm_sec)


def write_lines(path, lines):
    """Writes an iterable of text lines in bulk; returns the size in bytes."""
    with open(path, "w", buffering=1 << 20) as f:
        f.writelines(lines)
    return os.path.getsize(path)


def write_jsonl(path, offsets, choice, ids=False):
    """The JSON-lines recording: time, method, url (with ?i=N when `ids`)."""
    q = (lambda i: "?i=%d" % i) if ids else (lambda i: "")
    return write_lines(path, ('{"time":%s,"method":"GET","url":"http://recorded.example/p/%02d%s"}\n'
                              % (epoch_text(us), p, q(i))
                              for i, (us, p) in enumerate(zip(offsets, choice))))


def write_targets(path, base_url, choice):
    """The same requests as a vegeta JSON targets file on `base_url`."""
    return write_lines(path, ('{"method":"GET","url":"%sp/%02d"}\n' % (base_url, p)
                              for p in choice))


def write_gor(path, offsets, choice):
    """The same requests, ?i=N included, in GoReplay's file format."""
    return write_lines(path, ("1 %024x %d 0\nGET /p/%02d?i=%d HTTP/1.1\r\nHost: recorded.example\r\n"
                              "User-Agent: strain-bench\r\n\r\n%s"
                              % (i, (EPOCH * 1000000 + us) * 1000, p, i, SEPARATOR)
                              for i, (us, p) in enumerate(zip(offsets, choice))))


MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
UA = ("Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) "
      "Chrome/120.0.0.0 Safari/537.36")


def write_big_log(path, size, per_second, seed):
    """An nginx combined log of about `size` bytes, `per_second` lines in each
    recorded second from EPOCH.  Returns (bytes, lines, recorded seconds)."""
    rng = random.Random(seed)
    # Each second's lines are the same `per_second` bodies around its $time_local.
    pre, post = [], []
    for k in range(per_second):
        pre.append("10.%d.%d.%d - - [" % (rng.randrange(256), rng.randrange(256),
                                          rng.randrange(1, 255)))
        post.append(('] "GET /static/p%02d/assets/item-%06d.html?ref=campaign-%04d&utm_source='
                     'newsletter&utm_medium=email HTTP/1.1" 200 %d "https://www.example.com/'
                     'section/%02d/article-%06d.html" "%s"\n') % (
                         k % 50, rng.randrange(10 ** 6), rng.randrange(10 ** 4),
                         rng.randrange(200, 60000), rng.randrange(100), rng.randrange(10 ** 6), UA))
    written = lines = seconds = 0
    with open(path, "w", buffering=1 << 22) as f:
        while written < size:
            stamp = clf_stamp(seconds)
            chunk = "".join(a + stamp + b for a, b in zip(pre, post))
            f.write(chunk)
            written += len(chunk)
            lines += per_second
            seconds += 1
    return os.path.getsize(path), lines, seconds


# ---------------------------------------------------------------------------
# Part 1: replay against --targets.

def part1_argv(name, args, files, url, json_path):
    """The command line of contender `name`, pinned to --gen-cpu."""
    base = [args.strain]
    if name in ("replay", "replay-n1", "replay-even"):
        rec = files["rec_even"] if name == "replay-even" else files["rec"]
        argv = base + ["replay", "-t1", "-c%d" % args.connections] + args.strain_args
        argv += ["-n", "1"] if name == "replay-n1" else []
        argv += ["--json", json_path, rec, url]
    else:
        argv = base + ["-t1", "-c%d" % args.connections, "-R%d" % args.rate] + args.strain_args
        argv += (["-n", "1"] if name == "targets-n1"
                 else ["-d%s" % fmt_dur(args.requests / args.rate)])
        argv += ["--targets", files["targets"], "--json", json_path, url]
    return proc.pinned(args.gen_cpu, argv)


def measured_strain(argv, args, nginx, tmpdir, tag, timeout, poll=None):
    """One measured strain run under GNU time: CPU (wait4), peak RSS, context
    switches, its --json figures.  argv's --json file is tmpdir/tag.json."""
    json_path = os.path.join(tmpdir, tag + ".json")
    time_path = os.path.join(tmpdir, tag + "-time.txt")
    time.sleep(1)  # let the previous run's connections close on the server side
    run = measure.measured(proc.timed(argv, time_path, "MUSwc"), timeout, args.settle,
                           {"nginx_cpu": nginx.cpu_seconds}, poll=poll)
    run.update(argv=argv, stdout=run["stdout"][-20000:], stderr=run["stderr"][-4000:],
               problems=tools.exit_problems(run))
    t = proc.read_timed(time_path, "MUSwc")
    if not t:
        run["problems"].append("no GNU time output")
    run["maxrss_kb"] = t.get("maxrss_kb")
    run["gen_ctx_switches"] = t["voluntary_ctx"] + t["involuntary_ctx"] if t else None
    parsed = tools.parse_strain(run, json_path)
    run["parsed"] = parsed
    doc = run.get("tool_report") or {}
    if isinstance(doc.get("targets"), list):
        # --targets: one entry per line of the file (300,000): keep their sum.
        t = doc["targets"]
        doc["targets"] = {"count": len(t), "requests": sum(x.get("requests", 0) for x in t),
                          "errors": sum(x.get("errors", 0) for x in t), "first": t[:3]}
    reqs, dur = parsed.get("requests"), parsed.get("duration")
    threads = doc.get("thread_cpu_s") or []
    run.update(requests=reqs, duration=dur,
               achieved_rps=reqs / dur if reqs and dur else None,
               cpu_us_per_req=1e6 * run["cpu"] / reqs if reqs else None,
               worker_cpu=sum(threads) if threads else None,
               worker_us_per_req=1e6 * sum(threads) / reqs if reqs and threads else None,
               rate=parsed.get("rate") or {}, replay=doc.get("replay"))
    if reqs is None:
        run["problems"].append("no request count")
    elif parsed.get("ok") is not None and parsed["ok"] < reqs:
        run["problems"].append("only %d of %d responses 2xx/3xx" % (parsed["ok"], reqs))
    if run["rate"].get("unsent"):
        run["problems"].append("%d unsent" % run["rate"]["unsent"])
    return run


def part1_run(name, rnd, args, files, nginx, tmpdir):
    """One run of contender `name` in round `rnd`."""
    tag = "%s-%d" % (name, rnd)
    argv = part1_argv(name, args, files, nginx.url, os.path.join(tmpdir, tag + ".json"))
    run = measured_strain(argv, args, nginx, tmpdir, tag, args.requests / args.rate + 120)
    run.update(tool=name, round=rnd)
    if name in FULL and run["requests"] is not None and run["requests"] != args.requests:
        run["problems"].append("%d of %d requests" % (run["requests"], args.requests))
    return run


def lag_text(run):
    """A replay's send lag p50/p99/max, or '-'."""
    lag = (run.get("replay") or {}).get("lag_us")
    return "-" if not lag else "%s / %s / %s us" % (f_num(lag.get("p50")), f_num(lag.get("p99")),
                                                    f_num(lag.get("max")))


def schedule_text(run):
    """sent, late, late for want of a free connection, unsent."""
    r = run["rate"]
    return ("sent %s, late %s (no conn %s), unsent %s" % tuple(
        f_num(r.get(k)) for k in ("sent", "late", "late_no_connection", "unsent"))) if r else "-"


def print_part1(run):
    log("  round %d %-11s %9s req in %7.3f s  cpu %.2f s (user %.2f sys %.2f)  %6.2f us/req  "
        "workers %s us/req  nginx %3.0f%%  other %3.0f%%  RSS %s  %s  lag %s%s" % (
            run["round"], run["tool"], f_num(run["requests"]), run["duration"] or 0, run["cpu"],
            run["utime"], run["stime"], run["cpu_us_per_req"] or 0,
            f_num(run["worker_us_per_req"], "{:.2f}"), 100 * (run["nginx_cpu_share"] or 0),
            100 * (run["other_cpu_share"] or 0), f_kib(run["maxrss_kb"]), schedule_text(run),
            lag_text(run), report.flags(run)))


def part1_summary(args, runs):
    """Medians, the fixed-cost split and the ratios to targets."""
    names = [n for n in FULL + tuple(FIXED) if any(r["tool"] == n for r in runs)]
    keys = ("cpu", "cpu_us_per_req", "worker_us_per_req", "wall", "maxrss_kb",
            "nginx_cpu_share", "achieved_rps")
    med = {n: {k: median([r[k] for r in runs if r["tool"] == n]) for k in keys} for n in names}
    cmp = report.compare([r for r in runs if r["tool"] in FULL], "tool",
                         [n for n in FULL if n in names], "cpu_us_per_req", "targets")
    wcmp = report.compare([r for r in runs if r["tool"] in FULL], "tool",
                          [n for n in FULL if n in names], "worker_us_per_req", "targets")
    steady = {}
    for full, fixed in (("replay", "replay-n1"), ("targets", "targets-n1")):
        if full in med and fixed in med and med[full]["cpu"] is not None:
            f = med[fixed]["cpu"] or 0.0
            steady[full] = {"fixed_cpu_s": f, "fixed_share": ratio(f, med[full]["cpu"]),
                            "steady_us_per_req": 1e6 * (med[full]["cpu"] - f) / args.requests}
    steady_ratio = (ratio(steady["replay"]["steady_us_per_req"],
                          steady["targets"]["steady_us_per_req"])
                    if "replay" in steady and "targets" in steady else None)
    headline = cmp["ratios"].get("replay")
    return {"medians": med,
            "ratio_over_targets_cpu_per_request": cmp["ratios"],
            "paired_ratios_cpu_per_request": cmp["paired"],
            "ratio_over_targets_worker_cpu_per_request": wcmp["ratios"],
            "fixed_cost": steady, "ratio_steady_replay_over_targets": steady_ratio,
            "goal_replay_le_1.1x_targets": None if headline is None else headline <= GOAL_RATIO}


# ---------------------------------------------------------------------------
# Part 2: RSS over a large log.

def fd_positions(pid, path):
    """File offsets of pid's descriptors open on `path`."""
    out = []
    try:
        fds = os.listdir("/proc/%d/fd" % pid)
    except OSError:
        return out
    for fd in fds:
        try:
            if os.readlink("/proc/%d/fd/%s" % (pid, fd)) != path:
                continue
            with open("/proc/%d/fdinfo/%s" % (pid, fd)) as f:
                m = re.search(r"^pos:\s*(\d+)", f.read(), re.M)
            if m:
                out.append(int(m.group(1)))
        except OSError:
            continue
    return out


class RssSampler:
    """poll() for proc.run: finds strain under GNU time, notes when its first
    connection to `port` is up, and samples RSS and the file offset each second."""

    def __init__(self, port, path):
        self.port, self.path = port, path
        self.pid = None
        self.load_start = None
        self.samples = []
        self.next_at = 0.0

    def __call__(self, pid, elapsed):
        if self.pid is None:
            kids = measure.children_of(pid)
            if not kids:
                return
            self.pid = kids[0]
        if self.load_start is None and (measure.established_on_port(self.port) or 0) > 0:
            self.load_start = elapsed
            self.sample(elapsed, "load start")
        if elapsed >= self.next_at:
            while self.next_at <= elapsed:
                self.next_at += 1.0
            self.sample(elapsed, "scan" if self.load_start is None else "load")

    def sample(self, elapsed, phase):
        v = measure.status_fields(self.pid, "VmRSS", "VmHWM", "Threads")
        if v is None:
            return
        pos = fd_positions(self.pid, self.path)
        self.samples.append({"t": round(elapsed, 3), "phase": phase, "rss_kb": v[0],
                             "hwm_kb": v[1], "threads": v[2], "file_pos": pos})


def quiet_port(port, wait=10):
    """Waits until no ESTABLISHED server-side socket is left on `port`."""
    deadline = time.monotonic() + wait
    while (measure.established_on_port(port) or 0) > 0 and time.monotonic() < deadline:
        time.sleep(0.1)


def part2(args, nginx, tmpdir, stack):
    """The big log: its scan alone, then a 60 s replay with RSS sampled."""
    path = os.path.join(args.big_dir, "strain-bench-replay-%d.log" % os.getpid())
    stack.callback(lambda: os.path.exists(path) and os.unlink(path))
    t0 = time.monotonic()
    size, lines, seconds = write_big_log(path, int(args.big_gb * 1e9), args.big_line_rate,
                                         args.seed)
    gen_s = time.monotonic() - t0
    log("big log: %s, %s bytes, %s lines over %s recorded s, written in %.1f s" % (
        path, f_num(size), f_num(lines), f_num(seconds), gen_s))
    out = {"file": {"bytes": size, "lines": lines, "recorded_seconds": seconds,
                    "line_rate": args.big_line_rate, "generated_in_s": gen_s}}

    # The scan alone: everything before the load, one request, the report.
    quiet_port(nginx.port)
    argv = proc.pinned(args.gen_cpu, [args.strain, "replay", "-t1", "-c%d" % args.connections,
                                      "-n", "1"] + args.strain_args +
                       ["--json", os.path.join(tmpdir, "big-n1.json"), path, nginx.url])
    sampler = RssSampler(nginx.port, path)
    scan = measured_strain(argv, args, nginx, tmpdir, "big-n1", 600, poll=sampler)
    scan.update(tool="big-n1", round=1, samples=sampler.samples, load_start_s=sampler.load_start)
    log("  scan alone (-n 1): wall %.2f s, cpu %.2f s, first connection at %s s, peak RSS %s%s" % (
        scan["wall"], scan["cpu"], f_num(sampler.load_start, "{:.2f}"), f_kib(scan["maxrss_kb"]),
        report.flags(scan)))
    out["scan_run"] = scan

    quiet_port(nginx.port)
    argv = proc.pinned(args.gen_cpu, [args.strain, "replay", "-t1", "-c%d" % args.connections,
                                      "-R%d" % args.big_rate, "-d%s" % fmt_dur(args.big_duration)]
                       + args.strain_args + ["--json", os.path.join(tmpdir, "big.json"), path,
                                            nginx.url])
    sampler = RssSampler(nginx.port, path)
    run = measured_strain(argv, args, nginx, tmpdir, "big", args.big_duration + 600, poll=sampler)
    run.update(tool="big", round=1, samples=sampler.samples, load_start_s=sampler.load_start)
    out["run"] = run
    out["summary"] = rss_summary(run, size)
    s = out["summary"]
    log("  big replay: %s req in %.1f s, scan %s s, RSS scan %s, first 10 s %s, last 10 s %s, "
        "max %s, peak %s, file read %s%s" % (
            f_num(run["requests"]), run["duration"] or 0, f_num(s["scan_s"], "{:.2f}"),
            f_kib(s["scan_rss_max_kb"]), f_kib(s["first10_rss_median_kb"]),
            f_kib(s["last10_rss_median_kb"]), f_kib(s["rss_max_kb"]), f_kib(run["maxrss_kb"]),
            pct(s["file_read_share"]), report.flags(run)))
    os.unlink(path)
    return out


def rss_summary(run, size):
    """RSS during the scan, the load's first and last 10 s, the largest; bytes read."""
    samples, start = run["samples"], run["load_start_s"]
    load = [s for s in samples if start is not None and s["t"] >= start and s["rss_kb"]]
    scan = [s for s in samples if s["phase"] == "scan" and s["rss_kb"]]
    end = load[-1]["t"] if load else None
    first = [s["rss_kb"] for s in load if s["t"] < start + 10] if load else []
    last = [s["rss_kb"] for s in load if s["t"] >= end - 10] if load else []
    pos = [max(s["file_pos"]) for s in load if s["file_pos"]]
    return {"scan_s": start, "scan_rss_max_kb": max((s["rss_kb"] for s in scan), default=None),
            "first10_rss_median_kb": median(first), "first10_rss_max_kb": max(first, default=None),
            "last10_rss_median_kb": median(last), "last10_rss_max_kb": max(last, default=None),
            "rss_max_kb": max((s["rss_kb"] for s in samples if s["rss_kb"]), default=None),
            "growth_kb": (median(last) - median(first)) if first and last else None,
            "file_pos_last": max(pos, default=None),
            "file_read_share": max(pos) / size if pos and size else None,
            "samples_in_load": len(load)}


# ---------------------------------------------------------------------------
# Part read (issue 41): how fast the scan reads a recording, against --baseline.

# Varied fields of the read part's recordings: (weight, value).
READ_METHODS = ((95, "GET"), (5, "HEAD"))
READ_STATUSES = ((70, 200), (12, 304), (6, 301), (5, 302), (4, 404), (2, 403), (1, 500))
READ_UAS = (
    UA,
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:121.0) Gecko/20100101 Firefox/121.0",
    "Mozilla/5.0 (Macintosh; Intel Mac OS X 14_2) AppleWebKit/605.1.15 (KHTML, like Gecko) "
    "Version/17.2 Safari/605.1.15",
    "Mozilla/5.0 (iPhone; CPU iPhone OS 17_2 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like "
    "Gecko) Version/17.2 Mobile/15E148 Safari/604.1",
    "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)",
    "curl/8.5.0", "python-requests/2.31.0", "Go-http-client/1.1", "-")
READ_PATHS = ("/", "/index.html", "/static/css/site-%d.css", "/static/js/app.%x.js",
              "/img/products/%d.jpg", "/api/v1/items/%d", "/api/v1/search?q=term%d&page=%d",
              "/blog/2026/11/post-%d.html", "/favicon.ico", "/robots.txt",
              "/account/orders?id=%d&sort=desc", "/downloads/file-%d.tar.gz")
READ_FORMATS = ("combined", "jsonl", "caddy")


def weighted(rng, table):
    """One value of a (weight, value) table."""
    return rng.choices([v for _, v in table], weights=[w for w, _ in table])[0]


def read_request(rng):
    """(method, target, status, user agent, referer, size) of one varied request."""
    tpl = rng.choice(READ_PATHS)
    target = tpl % tuple(rng.randrange(10 ** 6) for _ in range(tpl.count("%")))
    ref = "-" if rng.random() < 0.4 else "https://www.example.com/section/%d/page-%d.html" % (
        rng.randrange(100), rng.randrange(10 ** 5))
    return (weighted(rng, READ_METHODS), target, weighted(rng, READ_STATUSES),
            rng.choice(READ_UAS), ref, rng.randrange(0, 200000))


def read_bodies(n, seed):
    """n varied requests, seeded: a read part's recording cycles through them."""
    rng = random.Random(seed)
    return [read_request(rng) for _ in range(n)], rng


def write_read_combined(path, size, per_second, seed):
    """A combined access log of about `size` bytes, `per_second` lines a
    recorded second, each line's client, method, target, status, size,
    referer and user agent varied (seeded).  Returns (bytes, records)."""
    bodies, rng = read_bodies(20011, seed)
    clients = ["%d.%d.%d.%d" % (rng.randrange(1, 224), rng.randrange(256), rng.randrange(256),
                                rng.randrange(1, 255)) for _ in range(4999)]
    posts = ['%s - - [{}] "%s %s HTTP/1.1" %d %d "%s" "%s"\n'.replace("{}", "%%s")
             % (clients[i % len(clients)], m, t, st, sz if m == "GET" else 0, ref, ua)
             for i, (m, t, st, ua, ref, sz) in enumerate(bodies)]
    written = lines = seconds = 0
    k = 0
    with open(path, "w", buffering=1 << 22) as f:
        while written < size:
            stamp = clf_stamp(seconds)
            chunk = "".join(posts[(k + j) % len(posts)] % stamp for j in range(per_second))
            k = (k + per_second * 7 + 3) % len(posts)
            f.write(chunk)
            written += len(chunk)
            lines += per_second
            seconds += 1
    return os.path.getsize(path), lines


def write_read_jsonl(path, size, per_second, seed):
    """strain's JSON-lines recording, `{"time","method","url","header"}`, the
    same varied requests as write_read_combined (User-Agent, Accept, Referer
    when recorded), times to the microsecond.  Returns (bytes, records)."""
    bodies, rng = read_bodies(20011, seed)
    posts = []
    for m, t, _, ua, ref, _ in bodies:
        hdr = {"User-Agent": [ua], "Accept": ["*/*"]}  # vegeta's: each a list of values
        if ref != "-":
            hdr["Referer"] = [ref]
        posts.append(',"method":"%s","url":"http://127.0.0.1:8080%s","header":%s}\n' % (
            m, t, json.dumps(hdr, separators=(",", ":"))))
    written = lines = 0
    k = 0
    step = 1000000 // per_second
    with open(path, "w", buffering=1 << 22) as f:
        while written < size:
            chunk = "".join('{"time":%s%s' % (epoch_text((lines + j) * step + rng.randrange(step)),
                                               posts[(k + j) % len(posts)])
                            for j in range(per_second))
            k = (k + per_second * 7 + 3) % len(posts)
            f.write(chunk)
            written += len(chunk)
            lines += per_second
    return os.path.getsize(path), lines


def write_read_caddy(path, size, per_second, seed):
    """Caddy's JSON access log (logger http.log.access), the same varied
    requests, `ts` Unix seconds with fractions.  Returns (bytes, records)."""
    bodies, rng = read_bodies(20011, seed)
    posts = []
    for i, (m, t, st, ua, ref, sz) in enumerate(bodies):
        hdrs = {"User-Agent": [ua], "Accept": ["*/*"]}
        if ref != "-":
            hdrs["Referer"] = [ref]
        req = {"remote_ip": "10.%d.%d.%d" % (i % 256, (i * 7) % 256, 1 + i % 254),
               "remote_port": str(1024 + i % 60000), "client_ip": "10.%d.%d.%d" % (
                   i % 256, (i * 7) % 256, 1 + i % 254),
               "proto": "HTTP/1.1", "method": m, "host": "example.test", "uri": t,
               "headers": hdrs}
        posts.append(',"logger":"http.log.access","msg":"handled request","request":%s,'
                     '"bytes_read":0,"user_id":"","duration":%s,"size":%d,"status":%d,'
                     '"resp_headers":{"Server":["Caddy"],"Content-Type":["text/html; '
                     'charset=utf-8"]}}\n' % (json.dumps(req, separators=(",", ":")),
                                            "%.7f" % (rng.random() / 50), sz, st))
    written = lines = 0
    k = 0
    step = 1000000 // per_second
    with open(path, "w", buffering=1 << 22) as f:
        while written < size:
            chunk = "".join('{"level":"info","ts":%s%s' % (
                epoch_text((lines + j) * step + rng.randrange(step)),
                posts[(k + j) % len(posts)]) for j in range(per_second))
            k = (k + per_second * 7 + 3) % len(posts)
            f.write(chunk)
            written += len(chunk)
            lines += per_second
    return os.path.getsize(path), lines


READ_WRITERS = {"combined": write_read_combined, "jsonl": write_read_jsonl,
                "caddy": write_read_caddy}


def scanned_count(text):
    """The record count strain's first lines give for the recording (`N requests over`)."""
    m = re.search(r"^\s*([\d,]+) requests over", text, re.M)
    return int(m.group(1).replace(",", "")) if m else None


def read_run(binary, name, fmt, path, records, size, rnd, args, url, tmpdir):
    """One scan of `path` by `binary`: `replay -t1 -c1 -n 1` at a port where
    nothing listens, so the run is the scan, one refused connection attempt
    (retried about 2 s) and the report; exit 1 "no connection ... succeeded"."""
    tag = "read-%s-%s-%s-%d" % (fmt, name, "tiny" if records < 1000 else "big", rnd)
    time_path = os.path.join(tmpdir, tag + "-time.txt")
    argv = proc.pinned(args.gen_cpu, [binary, "replay", "-t1", "-c1", "-n", "1"]
                       + args.strain_args + [path, url])
    run = measure.measured(proc.timed(argv, time_path, "MUSwc"), 600, args.settle)
    t = proc.read_timed(time_path, "MUSwc")
    scanned = scanned_count(run["stdout"])
    problems = []
    if not t:
        problems.append("no GNU time output")
    if run["timed_out"]:
        problems.append("timed out")
    if scanned != records:
        problems.append("scanned %s records of %s" % (scanned, records))
    if run["exit"] != 1 or "succeeded" not in run["stderr"]:
        problems.append("exit %s (expected 1, nothing connected)" % run["exit"])
    run.update(argv=argv, stdout=run["stdout"][-3000:], stderr=run["stderr"][-2000:],
               tool=name, format=fmt, round=rnd, bytes=size, records=records,
               scanned=scanned, maxrss_kb=t.get("maxrss_kb"), problems=problems,
               tag=tag)
    return run


def part_read(args, tmpdir, stack):
    """Writes one recording a format (--read-mb each, and a 100-record one for
    the fixed cost), then for --rounds rounds scans each with strain and
    --baseline (order alternating; the baseline only on the formats it reads)."""
    from driver.servers import free_port
    port = free_port()  # bound and released: nothing listens on it
    url = "http://127.0.0.1:%d/" % port
    builds = [("strain", args.strain)] + ([("baseline", args.baseline)] if args.baseline else [])
    files = {}
    for fmt in args.read_formats:
        big = os.path.join(args.read_dir, "strain-bench-read-%d.%s" % (os.getpid(), fmt))
        tiny = big + ".tiny"
        for p in (big, tiny):
            stack.callback(lambda p=p: os.path.exists(p) and os.unlink(p))
        t0 = time.monotonic()
        size, records = READ_WRITERS[fmt](big, int(args.read_mb * 1e6), args.read_line_rate,
                                          args.seed)
        gen_s = time.monotonic() - t0
        tsize, trecords = READ_WRITERS[fmt](tiny, 1, 100, args.seed)
        files[fmt] = {"path": big, "bytes": size, "records": records, "generated_in_s": gen_s,
                      "tiny_path": tiny, "tiny_bytes": tsize, "tiny_records": trecords,
                      "sha256": sha256(big), "first_lines": first_lines(big, 2)}
        log("read: %s %s bytes, %s records, written in %.1f s" % (fmt, f_num(size),
                                                                  f_num(records), gen_s))
    # Which builds read which format: a build that refuses a format's tiny file
    # (not exit 1 after a whole scan) is left out of it, with its message.
    refused = {}
    for fmt, f in files.items():
        for name, binary in builds:
            r = read_run(binary, name, fmt, f["tiny_path"], f["tiny_records"], f["tiny_bytes"],
                         0, args, url, tmpdir)
            if r["problems"]:
                refused[(fmt, name)] = {"exit": r["exit"], "problems": r["problems"],
                                        "stderr": r["stderr"][-600:], "stdout": r["stdout"][-600:]}
                log("read: %s cannot read %s: exit %s: %s" % (
                    name, fmt, r["exit"], (r["stderr"].strip().splitlines() or ["-"])[-1]))
    runs = []
    for rnd in range(1, args.rounds + 1):
        order = builds if rnd % 2 == 1 else list(reversed(builds))
        for fmt, f in files.items():
            for name, binary in order:
                if (fmt, name) in refused:
                    continue
                tiny = read_run(binary, name, fmt, f["tiny_path"], f["tiny_records"],
                                f["tiny_bytes"], rnd, args, url, tmpdir)
                big = read_run(binary, name, fmt, f["path"], f["records"], f["bytes"], rnd,
                               args, url, tmpdir)
                net = big["cpu"] - tiny["cpu"]
                big.update(fixed_cpu=tiny["cpu"], fixed_maxrss_kb=tiny["maxrss_kb"],
                           fixed_problems=tiny["problems"], read_cpu=net,
                           mb_per_s=f["bytes"] / 1e6 / net if net > 0 else None,
                           mb_per_s_gross=f["bytes"] / 1e6 / big["cpu"] if big["cpu"] else None,
                           ns_per_record=1e9 * net / f["records"] if net > 0 else None)
                runs.append(big)
                log("  round %d %-8s %-8s cpu %.2f s (user %.2f sys %.2f) - fixed %.3f s = "
                    "%.2f s: %s MB/s (%s ns/record)  wall %.2f s  RSS %s%s" % (
                        rnd, fmt, name, big["cpu"], big["utime"], big["stime"], tiny["cpu"], net,
                        f_num(big["mb_per_s"], "{:.1f}"), f_num(big["ns_per_record"]),
                        big["wall"], f_kib(big["maxrss_kb"]),
                        report.flags(big) + report.flags(tiny)))
    summary = {}
    for fmt in files:
        names = [n for n, _ in builds if (fmt, n) not in refused]
        fr = [r for r in runs if r["format"] == fmt]
        med = {n: {k: median([r[k] for r in fr if r["tool"] == n])
                   for k in ("mb_per_s", "mb_per_s_gross", "read_cpu", "cpu", "fixed_cpu",
                             "ns_per_record", "wall", "maxrss_kb")} for n in names}
        s = {"medians": med}
        if "baseline" in names and "strain" in names:
            cmp = report.compare(fr, "tool", names, "mb_per_s", "baseline")
            s.update(ratio_new_over_baseline=cmp["ratios"]["strain"],
                     paired_ratios=cmp["paired"]["strain"])
        summary[fmt] = s
    return {"files": files, "url_port": port, "refused": {"%s/%s" % k: v
                                                         for k, v in refused.items()},
            "runs": runs, "summary": summary}


def read_text(args, rd):
    """The read part's tables."""
    rep = report.Report()
    rep.para("Part read: `replay -t1 -c1 -n 1 FILE URL` against a port nothing listens on (the "
             "scan of the whole file, one refused connection retried ~2 s, the report; exit 1); "
             "read CPU = user+sys of that run minus the same run's on a 100-record file of the "
             "same format (the fixed cost), MB/s = bytes / read CPU:")
    rep.table(["format", "bytes", "records", "build", "read CPU s per round", "MB/s per round",
               "median MB/s", "median ns/record", "median MB/s (gross)", "median peak RSS",
               "ratio vs baseline", "per-round ratios"],
              [[fmt, f_num(f["bytes"]), f_num(f["records"]), n,
                ", ".join("%.2f" % r["read_cpu"] for r in rd["runs"]
                          if r["format"] == fmt and r["tool"] == n),
                ", ".join(f_num(r["mb_per_s"], "{:.1f}") for r in rd["runs"]
                          if r["format"] == fmt and r["tool"] == n),
                f_num(m["mb_per_s"], "{:.1f}"), f_num(m["ns_per_record"]),
                f_num(m["mb_per_s_gross"], "{:.1f}"), f_kib(m["maxrss_kb"]),
                f_ratio(rd["summary"][fmt].get("ratio_new_over_baseline")) if n == "strain"
                else "", ", ".join(f_ratio(x) for x in rd["summary"][fmt].get("paired_ratios", []))
                if n == "strain" else ""]
               for fmt, f in rd["files"].items()
               for n, m in rd["summary"][fmt]["medians"].items()])
    for k, v in rd["refused"].items():
        rep.para("Not read: %s: exit %s, %s" % (k, v["exit"], " ".join(
            (v["stderr"].strip().splitlines() or ["-"])[-1:])))
    return rep.text()


# ---------------------------------------------------------------------------
# Part 3: GoReplay and timing error.

def timing_errors(log_path, offsets):
    """From an access log of '$msec $request_uri' lines: how much later than the
    recorded schedule (anchored on the earliest) each ?i=N request arrived."""
    arrivals = {}
    dups = other = 0
    with open(log_path) as f:
        for line in f:
            parts = line.split()
            m = re.search(r"[?&]i=(\d+)", parts[1]) if len(parts) == 2 else None
            if not m:
                other += 1
                continue
            i = int(m.group(1))
            if i in arrivals or i >= len(offsets):
                dups += 1
                continue
            arrivals[i] = float(parts[0])
    if not arrivals:
        return {"logged": 0, "duplicates": dups, "other_lines": other}
    base = min(arrivals[i] - offsets[i] / 1e6 for i in arrivals)
    errs = sorted(arrivals[i] - offsets[i] / 1e6 - base for i in arrivals)
    later = sorted(arrivals[i] - offsets[i] / 1e6 - base for i in arrivals
                   if offsets[i] >= 1000000)

    def q(xs, p):
        return xs[min(len(xs) - 1, int(p * len(xs)))] * 1e3 if xs else None
    first = min(arrivals.values())
    last = max(arrivals.values())
    return {"logged": len(arrivals), "missing": len(offsets) - len(arrivals), "duplicates": dups,
            "other_lines": other, "err_p50_ms": q(errs, 0.5), "err_p99_ms": q(errs, 0.99),
            "err_max_ms": errs[-1] * 1e3, "after_1s_logged": len(later),
            "after_1s_err_p50_ms": q(later, 0.5), "after_1s_err_p99_ms": q(later, 0.99),
            "after_1s_err_max_ms": later[-1] * 1e3 if later else None,
            "arrival_span_s": last - first, "recorded_span_s": offsets[-1] / 1e6,
            "last_recorded_logged_s": max(offsets[i] for i in arrivals) / 1e6}


def timing_recordings(args, offsets, choice, tmpdir):
    """Part 3's recordings, one per --timing-rates rate over part 1's span: the
    offsets (part 1's own at --rate), JSON lines with ?i=N and, with gor, its file."""
    span = offsets[-1] / 1e6
    recs = []
    for rate in args.timing_rates:
        if rate == args.rate:
            offs, ch = offsets, choice
        else:
            n = max(2, int(round(rate * span)) + 1)
            offs = burst_offsets(n, (n - 1) / span, args.burst, args.seed)
            ch = path_choices(n, args.paths, args.seed)
        rec = {"rate": rate, "requests": len(offs), "offsets": offs,
               "rec_ids": os.path.join(tmpdir, "rec-ids-%d.jsonl" % rate),
               "gor": os.path.join(tmpdir, "rec-%d.gor" % rate)}
        write_jsonl(rec["rec_ids"], offs, ch, ids=True)
        if args.gor:
            write_gor(rec["gor"], offs, ch)
        recs.append(rec)
    return recs


def part3(args, recs, stack, tmpdir, nofile):
    """GoReplay and strain replay against a fresh logging nginx each, per recording."""
    out = {"runs": []}
    order = ["gor", "strain"] if args.gor else ["strain"]
    for rec, name in ((rec, name) for rec in recs for name in order):
        offsets = rec["offsets"]
        span = offsets[-1] / 1e6
        exit_after = int(min(args.gor_exit_after, 2 * span + 5))
        ng = Nginx(args.server_cpu, nofile, server=TIMED)
        stack.callback(ng.close)
        ng.start()
        if name == "gor":
            host = ng.url.rstrip("/")
            argv = proc.pinned(args.gen_cpu, [args.gor, "--input-file", rec["gor"],
                                              "--output-http", host, "--output-http-workers",
                                              str(args.connections), "--exit-after",
                                              "%ds" % exit_after])
            time_path = os.path.join(tmpdir, "gor-%d-time.txt" % rec["rate"])
            time.sleep(1)
            run = measure.measured(proc.timed(argv, time_path, "MUSwc"),
                                   exit_after + 60, args.settle,
                                   {"nginx_cpu": ng.cpu_seconds})
            t = proc.read_timed(time_path, "MUSwc")
            run.update(argv=argv, stdout=run["stdout"][-8000:], stderr=run["stderr"][-8000:],
                       problems=tools.exit_problems(run), maxrss_kb=t.get("maxrss_kb"))
        else:
            argv = proc.pinned(args.gen_cpu, [args.strain, "replay", "-t1",
                                              "-c%d" % args.connections] + args.strain_args +
                               ["--json", os.path.join(tmpdir, "timing-strain-%d.json"
                                                       % rec["rate"]), rec["rec_ids"], ng.url])
            run = measured_strain(argv, args, ng, tmpdir, "timing-strain-%d" % rec["rate"],
                                  span + 120)
        ng.stop()  # flushes the buffered access log
        run.update(tool=name, recording_rate=rec["rate"],
                   timing=timing_errors(os.path.join(ng.dir, "access.log"), offsets))
        tm = run["timing"]
        logged = tm.get("logged") or 0
        run["cpu_us_per_logged"] = 1e6 * run["cpu"] / logged if logged else None
        if logged < len(offsets):
            run["problems"].append("%d of %d requests reached nginx" % (logged, len(offsets)))
        log("  timing %-6s %6d/s logged %s, error p50 %s ms p99 %s ms max %s ms, span %s s "
            "(recorded %.3f s), cpu %.2f s = %s us/req, RSS %s%s" % (
                name, rec["rate"], f_num(logged), f_num(tm.get("err_p50_ms"), "{:.1f}"),
                f_num(tm.get("err_p99_ms"), "{:.1f}"), f_num(tm.get("err_max_ms"), "{:.1f}"),
                f_num(tm.get("arrival_span_s"), "{:.3f}"), offsets[-1] / 1e6, run["cpu"],
                f_num(run["cpu_us_per_logged"], "{:.2f}"), f_kib(run.get("maxrss_kb")),
                report.flags(run)))
        out["runs"].append(run)
    return out


# ---------------------------------------------------------------------------
# The report.

def summarize(args, info, runs, s1, big, timing, cmds, notes):
    rep = report.Report()
    rep.header(info, info["nginx"], info.get("strain", ""),
               info.get("gor") or "GoReplay: %s" % (args.gor_note or "not run"))
    k = f_num(args.rate / 1000, "{:g}k")
    rep.para("Part 1: %d rounds; a recording of %s requests over %.3f s (mean %s/s, bursts of "
             "%g ms at ~2x the mean alternating with silence, %d paths), replayed with "
             "`strain replay -t1 -c%d`, against the same requests as a targets file at "
             "`-R%d -d%s`; generator on CPU %d, nginx on CPU %d. CPU = user+sys of the whole "
             "strain process (reader thread, scan, report included) from wait4." % (
                 args.rounds, f_num(args.requests), (args.requests - 1) / args.rate, k,
                 1000 * args.burst, args.paths, args.connections, args.rate,
                 fmt_dur(args.requests / args.rate), args.gen_cpu, args.server_cpu))
    med = s1["medians"]
    rows = []
    for n in FULL + tuple(FIXED):
        if n not in med:
            continue
        by = [r for r in runs if r["tool"] == n]
        full = n in FULL
        rows.append([n, ", ".join("%.2f" % r["cpu"] for r in by), "%.2f" % (med[n]["cpu"] or 0),
                     f_num(med[n]["cpu_us_per_req"], "{:.2f}") if full else "-",
                     f_ratio(s1["ratio_over_targets_cpu_per_request"].get(n)) if full else "-",
                     f_num(med[n]["worker_us_per_req"], "{:.2f}") if full else "-",
                     f_ratio(s1["ratio_over_targets_worker_cpu_per_request"].get(n))
                     if full else "-",
                     "%.2f s" % (med[n]["wall"] or 0), f_kib(med[n]["maxrss_kb"])])
    rep.table(["contender", "CPU s per run", "median CPU s", "median CPU us/req",
               "ratio to targets", "median worker-thread us/req", "ratio to targets",
               "median wall", "median peak RSS"], rows)
    fc = s1["fixed_cost"]
    if fc:
        rep.para("Fixed cost (median CPU of the `-n 1` run: start, %s, one request, report) and "
                 "the rest per request: %s. Ratio replay/targets of the rest: %s." % (
                     "the scan of the recording or the parse of the targets file",
                     "; ".join("%s %.3f s = %s of its full run, then %.2f us/req" % (
                         n, v["fixed_cpu_s"], pct(v["fixed_share"]), v["steady_us_per_req"])
                         for n, v in fc.items()),
                     f_ratio(s1["ratio_steady_replay_over_targets"])))
    rep.para("Per run (in the order run; lag = the replay's send lag p50 / p99 / max from "
             "its --json; schedule from its `rate` section):")
    rep.table(["round", "contender", "requests", "duration", "achieved req/s",
               "CPU s (user+sys)", "CPU us/req", "worker us/req", "nginx CPU", "other CPU",
               "peak RSS", "schedule", "send lag", "problems"],
              [[r["round"], r["tool"], f_num(r["requests"]),
                "n/a" if r["duration"] is None else "%.3f s" % r["duration"],
                f_num(r["achieved_rps"]), "%.2f (%.2f+%.2f)" % (r["cpu"], r["utime"], r["stime"]),
                f_num(r["cpu_us_per_req"], "{:.2f}"), f_num(r["worker_us_per_req"], "{:.2f}"),
                pct(r["nginx_cpu_share"], "%.0f%%"), pct(r["other_cpu_share"], "%.0f%%"),
                f_kib(r["maxrss_kb"]), schedule_text(r), lag_text(r),
                "; ".join(r["problems"]) or "-"] for r in runs])
    paired = s1["paired_ratios_cpu_per_request"].get("replay") or []
    rep.para("Replay/targets, CPU per request: ratio of medians **%s** (per round: %s); goal "
             "<= %.1fx: %s." % (
                 f_ratio(s1["ratio_over_targets_cpu_per_request"].get("replay")),
                 ", ".join(f_ratio(x) for x in paired), GOAL_RATIO,
                 report.yn(s1["goal_replay_le_1.1x_targets"])))

    if big:
        f, s, r, sc = big["file"], big["summary"], big["run"], big["scan_run"]
        rep.para("Part 2: a %s-byte nginx combined log (%s lines, %s a recorded second, %s "
                 "recorded seconds) replayed with `-R%d -d%s -t1 -c%d`, RSS sampled each second:" % (
                     f_num(f["bytes"]), f_num(f["lines"]), f_num(f["line_rate"]),
                     f_num(f["recorded_seconds"]), args.big_rate, fmt_dur(args.big_duration),
                     args.connections))
        rep.table(["figure", "value"], [
            ["scan of the whole file (start to first connection), the 60 s run",
             f_num(s["scan_s"], "{:.2f} s")],
            ["`-n 1` run (scan + one request + report): wall, CPU, first connection",
             "%.2f s, %.2f s, %s" % (sc["wall"], sc["cpu"],
                                     f_num(sc["load_start_s"], "{:.2f} s"))],
            ["scan rate", f_num(f["bytes"] / s["scan_s"] / 1e6 if s["scan_s"] else None,
                                "{:,.0f} MB/s")],
            ["RSS during the scan (max sample)", f_kib(s["scan_rss_max_kb"])],
            ["RSS, load's first 10 s (median / max)", "%s / %s" % (
                f_kib(s["first10_rss_median_kb"]), f_kib(s["first10_rss_max_kb"]))],
            ["RSS, load's last 10 s (median / max)", "%s / %s" % (
                f_kib(s["last10_rss_median_kb"]), f_kib(s["last10_rss_max_kb"]))],
            ["growth, last 10 s - first 10 s (medians)", f_num(s["growth_kb"], "{:+,.0f} KiB")],
            ["largest RSS sample / peak RSS (GNU time)", "%s / %s" % (
                f_kib(s["rss_max_kb"]), f_kib(r["maxrss_kb"]))],
            ["bytes of the file read by the end", "%s (%s)" % (
                f_num(s["file_pos_last"]), pct(s["file_read_share"]))],
            ["requests, duration, achieved", "%s in %s s = %s/s" % (
                f_num(r["requests"]), f_num(r["duration"], "{:.2f}"), f_num(r["achieved_rps"]))],
            ["schedule", schedule_text(r)], ["send lag p50 / p99 / max", lag_text(r)],
            ["CPU (user+sys), nginx CPU", "%.2f s (%.2f us/req), %s" % (
                r["cpu"], r["cpu_us_per_req"] or 0, pct(r["nginx_cpu_share"], "%.0f%%"))],
            ["problems", "; ".join(r["problems"]) or "-"]])
        pts = [x for x in r["samples"] if x["phase"] != "load"] + [
            x for x in r["samples"] if x["phase"] == "load" and int(x["t"]) % 5 == 0]
        pts.sort(key=lambda x: x["t"])
        rep.para("RSS samples (every 5 s, and the scan's):")
        rep.table(["t", "phase", "VmRSS", "VmHWM", "file offset(s)"],
                  [["%.1f s" % x["t"], x["phase"], f_kib(x["rss_kb"]), f_kib(x["hwm_kb"]),
                    ", ".join(f_num(p) for p in x["file_pos"]) or "-"] for x in pts])

    rep.para("Part 3: timing error against the recorded schedule (part 1's pattern at each "
             "mean rate over the same span, each URL with ?i=N; nginx logs `$msec "
             "$request_uri`, 1 ms resolution; error = (arrival - recorded offset) - the smallest "
             "such; 'after 1 s' leaves out the requests recorded in the first second, when "
             "the connections are being opened):")
    if timing and timing["runs"]:
        rep.table(["tool", "mean rate", "requests", "logged", "error p50 / p99 / max",
                   "after 1 s: p50 / p99 / max", "arrival span (recorded)",
                   "last recorded offset logged",
                   "CPU s (user+sys)", "CPU us/req logged", "peak RSS", "problems"],
                  [[r["tool"], f_num(r["recording_rate"]),
                    f_num(r["timing"].get("logged", 0) + r["timing"].get("missing", 0)),
                    f_num(r["timing"].get("logged")),
                    " / ".join(f_num(r["timing"].get(k), "{:.1f}") for k in (
                        "err_p50_ms", "err_p99_ms", "err_max_ms")) + " ms",
                    " / ".join(f_num(r["timing"].get(k), "{:.1f}") for k in (
                        "after_1s_err_p50_ms", "after_1s_err_p99_ms", "after_1s_err_max_ms"))
                    + " ms",
                    "%s s (%s s)" % (f_num(r["timing"].get("arrival_span_s"), "{:.3f}"),
                                     f_num(r["timing"].get("recorded_span_s"), "{:.3f}")),
                    f_num(r["timing"].get("last_recorded_logged_s"), "{:.3f} s"),
                    "%.2f (%.2f+%.2f)" % (r["cpu"], r["utime"], r["stime"]),
                    f_num(r["cpu_us_per_logged"], "{:.2f}"), f_kib(r.get("maxrss_kb")),
                    "; ".join(r["problems"]) or "-"] for r in timing["runs"]])
    if not args.gor:
        rep.para("GoReplay: not run (%s)." % (args.gor_note or "no gor binary; build with `%s`"
                                              % GOR_BUILD))
    for n in notes:
        rep.para("Note: " + n)
    rep.nginx_commands(args.strain, cmds, "; REC = the recording, TF = the targets file, each "
                       "run under /usr/bin/time -f '%M %U %S %w %c' -o FILE")
    return rep.text()


def gor_version(path):
    """The module version `go version -m` finds in a gor binary, or "?"."""
    text = cli.tool_version(["sh", "-c", "go version -m %s | grep -m1 '^\\s*mod\\s'"
                             % shlex.quote(path)])
    return text.split()[2] if len(text.split()) >= 3 else "?"


def first_lines(path, n):
    """The first n lines of a text file."""
    with open(path) as f:
        return [f.readline() for _ in range(n)]


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def main(stack):
    ap = cli.parser(__doc__.splitlines()[0], "warmup", "settle", rounds=5,
                    connections=100)
    ap.add_argument("--requests", type=int, default=300000, help="requests in the recording")
    ap.add_argument("--rate", type=int, default=20000, help="the recording's mean rate, req/s")
    ap.add_argument("--burst", type=float, default=0.1,
                    help="seconds of each burst (and of each silence) in the recording")
    ap.add_argument("--paths", type=int, default=50, help="distinct paths in the recording")
    ap.add_argument("--seed", type=int, default=31, help="seed of the recording's times and paths")
    ap.add_argument("--strain-args", default="", help="extra arguments for every strain run")
    ap.add_argument("--parts", default="1,2,3",
                    help="which parts to run (comma-separated): 1, 2, 3, read")
    ap.add_argument("--read-mb", type=float, default=300.0,
                    help="size of each of the read part's recordings, MB (1e6)")
    ap.add_argument("--read-dir", default="/tmp", help="where the read part's recordings go")
    ap.add_argument("--read-line-rate", type=int, default=1000,
                    help="records a recorded second in the read part's recordings")
    ap.add_argument("--read-formats", default=",".join(READ_FORMATS),
                    help="the read part's formats (comma-separated): " + ", ".join(READ_FORMATS))
    ap.add_argument("--big-gb", type=float, default=1.0, help="size of part 2's log, GB (1e9)")
    ap.add_argument("--big-dir", default="/tmp", help="where part 2's log is written")
    ap.add_argument("--big-line-rate", type=int, default=1000,
                    help="lines a recorded second in part 2's log")
    ap.add_argument("--big-rate", type=int, default=50000, help="-R of part 2's replay")
    ap.add_argument("--big-duration", type=cli.parse_duration, default=60.0,
                    help="-d of part 2's replay")
    ap.add_argument("--gor", default=None,
                    help="GoReplay binary (default: gor or goreplay on PATH or in /tmp/gobin)")
    ap.add_argument("--gor-note", default="",
                    help="why there is no GoReplay (e.g. the build error), for the report")
    ap.add_argument("--gor-exit-after", type=float, default=60.0,
                    help="the longest gor's --exit-after may be, seconds (it does not exit at "
                         "the file's end; it is given twice the span + 5 s, at most this)")
    ap.add_argument("--timing-rates", default="20000,200",
                    help="part 3's mean rates (comma-separated), each over part 1's span")
    args = cli.parse(ap)
    args.strain_args = shlex.split(args.strain_args)
    cli.int_list(args, "timing_rates")
    parts = {p.strip() for p in args.parts.split(",") if p.strip()}
    args.read_formats = [x.strip() for x in args.read_formats.split(",") if x.strip()]
    if parts - {"1", "2", "3", "read"} or set(args.read_formats) - set(READ_FORMATS):
        raise SetupError("--parts takes 1, 2, 3, read; --read-formats %s"
                         % ", ".join(READ_FORMATS))
    if args.requests < 2 or args.rate <= 0 or args.connections <= 0:
        raise SetupError("--requests must be at least 2, --rate and --connections positive")
    cli.require(("nginx", "taskset", "/usr/bin/time"),
                "apt-get install -y nginx-light time (taskset is in util-linux)")
    if "3" in parts:
        args.gor = args.gor or cli.find_tool("gor", ("/tmp/gobin/gor", "/tmp/gobin/goreplay",
                                                     "~/go/bin/goreplay"))
        if args.gor is None and cli.find_tool("goreplay"):
            args.gor = cli.find_tool("goreplay")
        if args.gor is None:
            log("note: no gor binary (%s); part 3 runs strain only" % (
                args.gor_note or "build with: " + GOR_BUILD))
    else:
        args.gor = None

    nofile = proc.raise_nofile()
    info = cli.machine_info({"nginx": ["nginx", "-v"], "strain": [args.strain, "--version"]})
    info["rlimit_nofile"] = nofile
    info["strain_sha256"] = sha256(args.strain)
    if args.baseline:
        info["baseline"] = cli.tool_version([args.baseline, "--version"])
        info["baseline_sha256"] = sha256(args.baseline)
    tmpdir = stack.enter_context(tempfile.TemporaryDirectory(prefix="strain-bench-replay-"))
    rd = None
    if "read" in parts:
        log("part read: %g MB of %s, %d rounds%s" % (
            args.read_mb, "/".join(args.read_formats), args.rounds,
            ", against --baseline" if args.baseline else ""))
        rd = part_read(args, tmpdir, stack)
        rd["commands"] = [proc.display(r["argv"], {args.strain: "STRAIN", args.baseline:
                                                   "BASELINE", r["argv"][-2]: "FILE"})
                          for r in rd["runs"][:1]]
    if not parts & {"1", "2", "3"}:
        text = read_text(args, rd)
        report.finish(args, info, text, {"read": rd, "notes": []})
        return
    if args.gor:
        info["gor"] = "GoReplay %s (sha256 %s)" % (gor_version(args.gor), sha256(args.gor)[:16])
    nginx, cmd = hello_nginx(stack, args.server_cpu, nofile)
    cmds, notes = [cmd], []

    # The recordings.
    t0 = time.monotonic()
    offsets = burst_offsets(args.requests, args.rate, args.burst, args.seed)
    choice = path_choices(args.requests, args.paths, args.seed)
    files = {"rec": os.path.join(tmpdir, "rec.jsonl"),
             "rec_even": os.path.join(tmpdir, "rec-even.jsonl"),
             "targets": os.path.join(tmpdir, "targets.jsonl")}
    sizes = {"rec": write_jsonl(files["rec"], offsets, choice),
             "rec_even": write_jsonl(files["rec_even"], even_offsets(args.requests, args.rate),
                                     choice),
             "targets": write_targets(files["targets"], nginx.url, choice)}
    recs = timing_recordings(args, offsets, choice, tmpdir) if "3" in parts else []
    per_100ms = [0] * (offsets[-1] // 100000 + 1)
    for us in offsets:
        per_100ms[us // 100000] += 1
    recording = {"requests": args.requests, "span_s": offsets[-1] / 1e6,
                 "mean_rate": (args.requests - 1) / (offsets[-1] / 1e6), "bytes": sizes,
                 "peak_100ms_rate": max(per_100ms) * 10,
                 "silent_100ms_windows": sum(1 for c in per_100ms if c == 0),
                 "first_lines": first_lines(files["rec"], 3)}
    log("recordings written in %.1f s: %s" % (time.monotonic() - t0, recording))
    names = {args.strain: "STRAIN", files["rec"]: "REC", files["rec_even"]: "REC_EVEN",
             files["targets"]: "TF"}
    for rec in recs:
        names.update({rec["rec_ids"]: "REC_IDS_%d" % rec["rate"],
                      rec["gor"]: "REC_%d.gor" % rec["rate"],
                      os.path.join(tmpdir, "timing-strain-%d.json" % rec["rate"]): "FILE"})
    if args.gor:
        names[args.gor] = "gor"

    if args.warmup > 0:
        log("warm-up: strain %s at %d/s" % (fmt_dur(args.warmup), args.rate))
        proc.run(proc.pinned(args.gen_cpu, [args.strain, "-t1", "-c%d" % args.connections,
                                            "-d%s" % fmt_dur(args.warmup), "-R%d" % args.rate,
                                            nginx.url]), timeout=args.warmup + 30)

    runs, s1 = [], {"medians": {}, "ratio_over_targets_cpu_per_request": {},
                    "paired_ratios_cpu_per_request": {},
                    "ratio_over_targets_worker_cpu_per_request": {}, "fixed_cost": {},
                    "ratio_steady_replay_over_targets": None, "goal_replay_le_1.1x_targets": None}
    if "1" in parts:
        log("part 1: %d rounds of %s" % (args.rounds, "/".join(FULL + tuple(FIXED))))
        for rnd, name in measure.schedule(args.rounds, list(FULL) + list(FIXED)):
            runs.append(part1_run(name, rnd, args, files, nginx, tmpdir))
            print_part1(runs[-1])
            if rnd == 1:
                cmds.append(proc.display(runs[-1]["argv"], dict(names, **{
                    os.path.join(tmpdir, "%s-1.json" % name): "FILE"})))
        s1 = part1_summary(args, runs)

    big = None
    if "2" in parts:
        log("part 2: a %g GB log" % args.big_gb)
        big = part2(args, nginx, tmpdir, stack)
        for r in (big["scan_run"], big["run"]):
            cmds.append(proc.display(r["argv"], dict(names, **{
                os.path.join(tmpdir, "big-n1.json"): "FILE", os.path.join(tmpdir, "big.json"):
                "FILE", r["argv"][-2]: "BIG.log"})))

    timing = None
    if "3" in parts:
        log("part 3: timing error%s" % (" with GoReplay" if args.gor else ""))
        timing = part3(args, recs, stack, tmpdir, nofile)
        cmds.append("taskset -c %d nginx ...   # the same, plus log_format replay_timing "
                    "'$msec $request_uri'; access_log DIR/access.log replay_timing "
                    "buffer=1m flush=1s;" % args.server_cpu)
        for r in timing["runs"]:
            cmds.append(proc.display(r["argv"], names))

    if sha256(args.strain) != info["strain_sha256"]:
        notes.append("the strain binary changed during the run (sha256 at start %s)"
                     % info["strain_sha256"])
    text = summarize(args, info, runs, s1, big, timing, cmds, notes)
    if rd is not None:
        text += "\n" + read_text(args, rd)
    report.finish(args, info, text, {"read": rd, "recording": recording, "part1": {"summary": s1,
                                                                       "runs": runs},
                                     "part2": big, "part3": timing, "commands": cmds,
                                     "notes": notes}, nginx)


if __name__ == "__main__":
    sys.exit(cli.run(main))
