#!/usr/bin/env python3
"""False alarms of ``strain compare``: how often do two runs of the same server differ?

What it measures
----------------
``strain compare BASE NEW`` says a metric is faster or slower when its
per-interval samples differ significantly (Mann-Whitney U, p < 0.01) and the
whole 95% confidence interval of the change lies beyond
``--fail-on-regression`` (5% by default); see docs/COMPARE.md.  Two runs of
the same build against the same server should show no change.  For each of
P pairs (``--pairs``, default 20) and each mode, this script runs

    taskset -c GEN  STRAIN -t1 -c4 -d4s --interval 250ms --json A.json URL     # closed loop
    taskset -c GEN  STRAIN -t1 -c4 -d4s --interval 250ms --json B.json URL
    taskset -c GEN  STRAIN -t1 -c16 -R2000 -d4s --interval 250ms ... (A, B)    # rate mode
    COMPARE compare --json OUT.json A.json B.json

against one ``strain origin -t 1`` (bench/driver/servers.py, StrainOrigin)
pinned to ``--server-cpu``, and counts, per metric (throughput, p50, p90,
p99, error rate), the pairs whose verdict is not "same", and the pairs whose
exit code is 98 (a regression).  Every pair is a false alarm by
construction: nothing changed between A and B.  ``--compare`` names the
binary that judges (default: ``--strain``), so a release build of the load
generator can be judged by a newer debug build of ``compare``.

Then, for Q comparisons (``--pooled``, default 10), rate mode only, four
runs interleaved A1 B1 A2 B2 are compared as ``compare A1 A2 -- B1 B2``:
what docs/COMPARE.md recommends on a busy machine.  ``--pairs 0`` skips
the single pairs.

The headline is the number of comparisons (per mode) that exit 98.
"""

import json
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from driver import cli, proc, report, servers  # noqa: E402

METRICS = ["throughput", "p50", "p90", "p99", "error_rate"]
MODES = {
    "closed loop": ["-t", "1", "-c", "4"],
    "rate 2000/s": ["-t", "1", "-c", "16", "-R", "2000"],
}


def load(args, url, path, flags):
    """One short run writing its JSON to `path`."""
    argv = proc.pinned(args.gen_cpu, [args.strain] + flags + [
        "-d", cli.fmt_dur(args.duration), "--interval", "250ms", "--json", path, url])
    res = proc.run(argv, timeout=args.duration + 20)
    if res["exit"] != 0 or not os.path.exists(path):
        raise cli.BenchError("load run failed (exit %s): %s" % (res["exit"], res["stderr"][-500:]))


def judge(args, files, out, mode, i):
    """`strain compare FILES...`: a record of its exit code, verdicts and changes."""
    res = proc.run([args.compare, "compare", "--json", out] + files, timeout=30)
    if res["exit"] not in (0, 98):
        raise cli.BenchError("compare failed (exit %s): %s" % (res["exit"], res["stderr"][-500:]))
    with open(out) as f:
        c = json.load(f)
    verdicts = {m["metric"]: m["verdict"] for m in c["metrics"]}
    changes = {m["metric"]: m["change_pct"] for m in c["metrics"]}
    cli.log("%s %d: exit %d, %s" % (mode, i, res["exit"], ", ".join(
        "%s %s %+.1f%%" % (m, verdicts[m], changes[m]) if changes[m] is not None
        else "%s %s" % (m, verdicts[m]) for m in METRICS)))
    return {"mode": mode, "pair": i, "exit": res["exit"], "verdicts": verdicts,
            "change_pct": changes, "samples": [c["base_samples"], c["new_samples"]]}


def main(stack):
    ap = cli.parser(__doc__.split("\n")[0], duration=4.0)
    ap.add_argument("--pairs", type=int, default=20, help="pairs of runs per mode")
    ap.add_argument("--pooled", type=int, default=10,
                    help="comparisons of 2+2 interleaved rate-mode runs")
    ap.add_argument("--compare", help="strain binary that runs `compare` (default: --strain)")
    args = cli.parse(ap)
    args.compare = os.path.abspath(args.compare or args.strain)
    info = cli.machine_info({"strain": [args.strain, "--version"]})
    tmp = stack.enter_context(tempfile.TemporaryDirectory(prefix="strain-compare-"))
    origin = stack.enter_context(servers.StrainOrigin(args.strain, args.server_cpu))
    url = "http://127.0.0.1:%d/" % origin.port
    runs = []
    modes = list(MODES) if args.pairs > 0 else []
    for mode in modes:
        flags = MODES[mode]
        for i in range(1, args.pairs + 1):
            a, b = os.path.join(tmp, "a.json"), os.path.join(tmp, "b.json")
            load(args, url, a, flags)
            load(args, url, b, flags)
            runs.append(judge(args, [a, b], os.path.join(tmp, "c.json"), mode, i))
    pooled = "rate 2000/s, 2+2 interleaved"
    for i in range(1, args.pooled + 1):
        files = [os.path.join(tmp, n) for n in ("a1.json", "b1.json", "a2.json", "b2.json")]
        for f in files:
            load(args, url, f, MODES["rate 2000/s"])
        runs.append(judge(args, [files[0], files[2], "--", files[1], files[3]],
                          os.path.join(tmp, "c.json"), pooled, i))
    if args.pooled > 0:
        modes.append(pooled)
    rep = report.Report()
    rep.header(info, "strain: " + info["strain"])
    rep.para("%d single pairs per mode and %d pooled comparisons (2+2 interleaved runs) of %s "
             "runs with 250 ms intervals against one strain origin (the same server for A and "
             "B); compare's --fail-on-regression is the default 5%%."
             % (args.pairs, args.pooled, cli.fmt_dur(args.duration)))
    rows = []
    for mode in modes:
        mine = [r for r in runs if r["mode"] == mode]
        alarms = [sum(r["verdicts"][m] != "same" for r in mine) for m in METRICS]
        rows.append([mode, len(mine), sum(r["exit"] == 98 for r in mine)] + alarms)
    rep.table(["mode", "comparisons", "exit 98"] + ["not same: " + m for m in METRICS], rows)
    cli.log("")
    report.finish(args, info, rep.text(), {"runs": runs})


if __name__ == "__main__":
    sys.exit(cli.run(main))
