#!/usr/bin/env python3
"""Error rates of ``strain compare``: false regressions and detection.

What it measures
----------------
For C comparisons (``--comparisons``, default 20) per scenario, the A/B
runner at its defaults (5 rounds, 1 s warm-up) runs

    taskset -c GEN  STRAIN compare URL_A URL_B LOAD -d 2s --interval 250ms \\
        --save-runs DIR --json OUT.json

against strain origins pinned to ``--server-cpu``:

* A/A closed loop: one origin (``--delay 1ms``) on both sides, ``-t1 -c4``;
* A/A rate mode: the same, ``-t1 -c16 -R2000``;
* A/B 25% slower: origins with ``--delay 4ms`` and ``--delay 5ms`` (p50 about
  +24%), ``-t1 -c16 -R1000``.

Per comparison it records the exit code (98 regression, 97 inconclusive, 0)
and each metric's verdict, and, from the saved runs, judges each round's
pair alone (``compare a-K.json b-K.json``: one run a side).  The A/A
scenarios' single pairs also give the run-to-run noise (the largest change
between two runs of one server, per metric) that one-run comparisons are
held to.  Then ``--auto`` (default 5) A/B comparisons with
``--rounds auto --max-rounds 10``: how many rounds and how long.

The headline: false regressions (exit 98) of 20 A/A comparisons, and
detections (exit 98 with p50 slower) of 20 A/B comparisons.
"""

import json
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from driver import cli, proc, report, servers  # noqa: E402

METRICS = ["throughput", "p50", "p90", "p99", "error_rate"]
SCENARIOS = [
    ("A/A closed loop", ("1ms", "1ms"), ["-t", "1", "-c", "4"]),
    ("A/A rate 2000/s", ("1ms", "1ms"), ["-t", "1", "-c", "16", "-R", "2000"]),
    ("A/B p50 +25%", ("4ms", "5ms"), ["-t", "1", "-c", "16", "-R", "1000"]),
]


class DelayedOrigin(servers.StrainOrigin):
    """A strain origin that answers after a fixed delay."""

    def __init__(self, strain, cpu, delay):
        super().__init__(strain, cpu)
        self.delay = delay

    def argv(self):
        return super().argv() + ["--delay", self.delay]


def judged(path):
    with open(path) as f:
        c = json.load(f)
    return {m["metric"]: m for m in c["metrics"]}


def compare(args, argv, out, timeout):
    """Runs `strain compare ARGV --json OUT`; its exit code, metrics and seconds."""
    t0 = time.time()
    res = proc.run(proc.pinned(args.gen_cpu, [args.strain, "compare", "--json", out] + argv), timeout=timeout)
    took = time.time() - t0
    if res["exit"] not in (0, 97, 98):
        raise cli.BenchError("compare failed (exit %s): %s" % (res["exit"], res["stderr"][-500:]))
    return res["exit"], judged(out), took


def main(stack):
    ap = cli.parser(__doc__.split("\n")[0], duration=2.0)
    ap.add_argument("--comparisons", type=int, default=20, help="A/B runner comparisons per scenario")
    ap.add_argument("--auto", type=int, default=5, help="A/B comparisons with --rounds auto")
    args = cli.parse(ap)
    info = cli.machine_info({"strain": [args.strain, "--version"]})
    tmp = stack.enter_context(tempfile.TemporaryDirectory(prefix="strain-compare-"))
    origins = {}
    for d in ("1ms", "4ms", "5ms"):
        origins[d] = stack.enter_context(DelayedOrigin(args.strain, args.server_cpu, d))
    url = {d: "http://127.0.0.1:%d/" % o.port for d, o in origins.items()}
    records = []
    per_run = args.duration + 1.0
    for name, (da, db), load in SCENARIOS:
        for i in range(1, args.comparisons + 1):
            runs = os.path.join(tmp, "runs-%s-%d" % (name.replace("/", "").replace(" ", ""), i))
            argv = [url[da], url[db]] + load + ["-d", cli.fmt_dur(args.duration), "--interval", "250ms",
                                                "--save-runs", runs]
            code, metrics, took = compare(args, argv, os.path.join(tmp, "c.json"), 10 * per_run * 3 + 60)
            singles = []
            for k in range(1, 6):
                pair = [os.path.join(runs, "a-%d.json" % k), os.path.join(runs, "b-%d.json" % k)]
                if da != db:
                    pair.insert(0, "--allow-different-url")
                c1, m1, _ = compare(args, pair, os.path.join(tmp, "c1.json"), 30)
                singles.append({"exit": c1, "verdicts": {m: m1[m]["verdict"] for m in METRICS},
                                "change_pct": {m: m1[m]["change_pct"] for m in METRICS}})
            rec = {"scenario": name, "i": i, "exit": code, "seconds": took,
                   "verdicts": {m: metrics[m]["verdict"] for m in METRICS},
                   "change_pct": {m: metrics[m]["change_pct"] for m in METRICS},
                   "singles": singles}
            records.append(rec)
            cli.log("%s %d: exit %d in %.0fs, %s; single pairs exit %s" % (
                name, i, code, took, ", ".join("%s %s" % (m, rec["verdicts"][m]) for m in METRICS),
                [s["exit"] for s in singles]))
    autos = []
    for i in range(1, args.auto + 1):
        runs = os.path.join(tmp, "auto-%d" % i)
        argv = [url["4ms"], url["5ms"]] + SCENARIOS[2][2] + ["-d", cli.fmt_dur(args.duration), "--rounds", "auto",
                                                             "--max-rounds", "10", "--save-runs", runs]
        code, metrics, took = compare(args, argv, os.path.join(tmp, "c.json"), 20 * per_run * 3 + 60)
        rounds = len(os.listdir(runs)) // 2
        autos.append({"exit": code, "rounds": rounds, "seconds": took,
                      "verdicts": {m: metrics[m]["verdict"] for m in METRICS}})
        cli.log("auto %d: exit %d after %d rounds in %.0fs" % (i, code, rounds, took))
    rep = report.Report()
    rep.header(info, "strain: " + info["strain"])
    rep.para("%d comparisons per scenario by the A/B runner at its defaults (5 rounds, 1 s warm-up), "
             "%s runs with 250 ms intervals; then each round's pair alone (one run a side)."
             % (args.comparisons, cli.fmt_dur(args.duration)))
    rows = []
    for name, _, _ in SCENARIOS:
        mine = [r for r in records if r["scenario"] == name]
        singles = [s for r in mine for s in r["singles"]]
        rows.append([name, len(mine), sum(r["exit"] == 98 for r in mine), sum(r["exit"] == 97 for r in mine),
                     sum(r["exit"] == 98 and r["verdicts"]["p50"] == "worse" for r in mine),
                     len(singles), sum(s["exit"] == 98 for s in singles), sum(s["exit"] == 97 for s in singles),
                     "%.0f" % (sum(r["seconds"] for r in mine) / max(len(mine), 1))])
    rep.table(["scenario", "runner", "exit 98", "exit 97", "98 on p50", "single pairs", "exit 98", "exit 97",
               "runner s"], rows)
    noise = []
    for m in METRICS[:4]:
        changes = [abs(s["change_pct"][m]) for r in records if r["scenario"].startswith("A/A")
                   for s in r["singles"] if s["change_pct"][m] is not None]
        changes.sort()
        if changes:
            noise.append([m, len(changes), "%.1f" % changes[len(changes) // 2],
                          "%.1f" % changes[int(len(changes) * 0.95)], "%.1f" % changes[-1]])
    rep.table(["metric", "A/A single pairs", "median |change| %", "95th %", "max %"], noise)
    if autos:
        rep.table(["--rounds auto", "exit", "rounds", "seconds"],
                  [[i + 1, a["exit"], a["rounds"], "%.0f" % a["seconds"]] for i, a in enumerate(autos)])
    cli.log("")
    report.finish(args, info, rep.text(), {"runs": records, "auto": autos})


if __name__ == "__main__":
    sys.exit(cli.run(main))
