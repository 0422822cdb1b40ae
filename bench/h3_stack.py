#!/usr/bin/env python3
"""Issue 44's TLS stack: strain's HTTP/3 (quiche, BoringSSL) against a loop on quinn and h3.

What it measures
----------------
Issue 44 asks whether strain's HTTP/3 can move from quiche (BoringSSL, built
with cmake and C++) to quinn with hyperium's h3 over rustls, so that strain
has one TLS stack in pure Rust: only if quinn holds at least 0.95x of
quiche on each of bench/h3.py's figures, measured in the same runs.

The quinn side is bench/quinn-h3 (``quinn-h3-loop C M SECONDS URL``): one
thread, a current-thread tokio runtime, C connections of M streams in a
closed loop, each response read to its end and counted, nothing else.  It
is the least a quinn-based strain would do per request, so its figures
bound a switch from above: if the loop falls short, strain on quinn would.

Against bench/h3.py's Caddy (same Caddyfile, CPU 1), both tools pinned to
CPU 0, one thread, interleaved in each round (the order reversed every
other round), R rounds (``--rounds``, default 5):

    taskset -c 0 STRAIN --http3 -k -t1 -cC -mM -d10s --json FILE URL     # strain-h3
    taskset -c 0 QUINN C M 10 URL                                        # quinn-h3

at (C, M) = (4, 10) and (40, 1), requests per CPU-second (user+sys from
wait4 on GNU time's pid, as bench/h3.py does); then peak RSS at -c1000 -m1
for 5 s (the first of ``--mem-connections`` at which both work).  The
summary gives the medians and quinn/strain.

Build the loop first:
    cargo build --release --manifest-path bench/quinn-h3/Cargo.toml --target-dir target/quinn-h3

Example:  python3 bench/h3_stack.py --strain target/dist/strain \\
              --quinn target/quinn-h3/release/quinn-h3-loop --json bench/results/h3-stack-DATE.json
"""

import os
import statistics
import sys
import tempfile

import h3
from driver import cli, measure, proc, report
from driver.cli import SetupError, log
from driver.report import f_kib, f_num

NAMES = ("strain-h3", h3.QUINN)
SHAPES = ((4, 10), (40, 1))


def options():
    """bench/h3.py's options that apply, plus the quinn loop's path."""
    ap = cli.parser(__doc__.splitlines()[0], "rounds", "settle", duration=10.0)
    ap.set_defaults(rounds=5)
    ap.add_argument("--quinn", default=os.path.join(cli.REPO, "target", "quinn-h3", "release",
                                                   "quinn-h3-loop"),
                    help="bench/quinn-h3's binary")
    ap.add_argument("--caddy", default="/usr/bin/caddy", help="caddy binary")
    cli.memory_options(ap, "1000,500,200", streams=1)
    args = cli.parse(ap)
    cli.int_list(args, "mem_connections")
    for path, what in ((args.caddy, "caddy"), (args.quinn, "the quinn loop"),
                       ("/usr/bin/time", "GNU time")):
        if not (os.path.isfile(path) and os.access(path, os.X_OK)):
            raise SetupError("%s not found at %s" % (what, path))
    args.quinn = os.path.abspath(args.quinn)
    args.baseline = None
    return args


def main(stack):
    """Caddy, the closed-loop rounds at each shape, the memory runs, the summary."""
    args = options()
    proc.raise_nofile()
    tmpdir = stack.enter_context(tempfile.TemporaryDirectory(prefix="strain-bench-h3-stack-"))
    caddy = stack.enter_context(h3.Caddy(args.caddy, args.server_cpu))
    args.url = caddy.url
    log("caddy: %s on CPU %d" % (caddy.url, args.server_cpu))
    lines = ["| shape | strain-h3 req/CPU-s | quinn-h3 req/CPU-s | quinn/strain | per round |",
             "| --- | ---: | ---: | ---: | --- |"]
    result = {"closed": [], "memory": []}
    for conns, streams in SHAPES:
        runs = {n: [] for n in NAMES}
        for i, tool in measure.schedule(args.rounds, NAMES):
            run = h3.one_run(tool, args, caddy, tmpdir, "c%dm%dr%d" % (conns, streams, i),
                             conns, streams, args.duration)
            run["round"] = i
            runs[tool].append(run)
            result["closed"].append(run)
            log("  -c%d -m%d round %d %-9s %9s req/CPU-s  %9s req/s  gen CPU %3.0f%%  caddy CPU "
                "%3.0f%%  other CPU %3.0f%%%s" % (
                    conns, streams, i, tool, f_num(run["req_per_cpu_s"]), f_num(run["rps"]),
                    100 * (run["gen_cpu_share"] or 0), 100 * (run["caddy_cpu_share"] or 0),
                    100 * (run["other_cpu_share"] or 0), report.flags(run)))
        med = {n: statistics.median(r["req_per_cpu_s"] or 0 for r in runs[n]) for n in NAMES}
        pairs = ["%.2f" % ((q["req_per_cpu_s"] or 0) / s["req_per_cpu_s"])
                 for s, q in zip(runs["strain-h3"], runs[h3.QUINN]) if s["req_per_cpu_s"]]
        lines.append("| -t1 -c%d -m%d | %s | %s | **%.2fx** | %s |" % (
            conns, streams, f_num(med["strain-h3"]), f_num(med[h3.QUINN]),
            med[h3.QUINN] / med["strain-h3"] if med["strain-h3"] else 0, ", ".join(pairs)))
    if args.mem_connections:
        mem, n = h3.memory_runs(args, caddy, tmpdir, NAMES)
        result["memory"] = mem
        at = [r for r in mem if r["connections"] == n] if n else []
        if at:
            rss = {r["tool"]: r["maxrss_kb"] for r in at}
            lines.append("")
            lines.append("Peak RSS at -t1 -c%d -m1: strain-h3 %s, quinn-h3 %s: quinn/strain %.2fx "
                         "(lower is better)" % (n, f_kib(rss["strain-h3"]), f_kib(rss[h3.QUINN]),
                                                 rss[h3.QUINN] / rss["strain-h3"]))
    text = "\n".join(lines)
    print(text)
    if args.json:
        report.write_results(args.json, args, {}, {"summary_text": text, **result})


if __name__ == "__main__":
    sys.exit(cli.run(main))
