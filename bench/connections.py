#!/usr/bin/env python3
"""19,000 connections: strain against wrk in the same run (issue 9, defect 2).

A private nginx (1 worker, worker_connections 20000, pinned to --server-cpu)
answers GET / on loopback.  For --rounds rounds the script runs, one after
the other, pinned to --gen-cpu:

    wrk    -t2 -c19000 -d5s URL
    strain -t2 -c19000 -d5s URL

and prints, per run: requests, socket errors as the tool reports them, wall
time (the run must end within duration + timeout), and the sockets in
TIME_WAIT when it started (from /proc/net/sockstat: ports held by earlier
runs count against the local port range).  strain's connect errors are also
given by cause from its JSON.  The summary compares medians: strain's
requests / wrk's, and connect errors side by side.

Everything stays on 127.0.0.1; nginx runs from a private directory and is
stopped on exit.  Needs wrk, nginx, taskset.

Example:  python3 bench/connections.py --strain target/release/strain
"""

import argparse
import json
import os
import re
import statistics
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import core  # noqa: E402


def time_wait():
    with open("/proc/net/sockstat") as f:
        m = re.search(r"^TCP:.* tw (\d+)", f.read(), re.M)
    return int(m.group(1)) if m else None


def socket_errors(text):
    m = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", text)
    return tuple(int(x) for x in m.groups()) if m else (0, 0, 0, 0)


def one(tool, binary, args, nginx, tmp):
    argv = ["taskset", "-c", str(args.gen_cpu), binary, "-t%d" % args.threads,
            "-c%d" % args.connections, "-d%ss" % args.duration]
    json_path = os.path.join(tmp, "strain.json")
    if tool == "strain":
        argv += ["--json", json_path] + [a for s in args.source_addr for a in ("--source-addr", s)]
    argv.append(nginx.url)
    tw = time_wait()
    res = core.run_measured(argv, timeout=args.duration + 30)
    parsed = core.parse_report(res["stdout"])
    run = {"tool": tool, "argv": core.display(argv, binary), "time_wait_before": tw,
           "requests": parsed.get("requests"), "wall_s": res["wall"], "exit": res["exit"],
           "socket_errors": socket_errors(res["stdout"]), "stdout": res["stdout"],
           "stderr": res["stderr"][-2000:]}
    if tool == "strain" and os.path.exists(json_path):
        with open(json_path) as f:
            run["connect_causes"] = json.load(f)["errors"].get("connect_causes")
        os.unlink(json_path)
    c, r, w, t = run["socket_errors"]
    core.log("%-6s requests %8s  connect %5d read %5d write %5d timeout %5d  wall %.2fs  "
             "TIME_WAIT before %s%s" % (tool, run["requests"], c, r, w, t, res["wall"], tw,
                                        "  causes %s" % run.get("connect_causes") if tool == "strain" else ""))
    return run


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--strain", default=os.path.join(core.REPO, "target/release/strain"))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--connections", type=int, default=19000)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--duration", type=int, default=5, help="seconds")
    ap.add_argument("--source-addr", action="append", default=[],
                    help="passed to strain as --source-addr (repeatable)")
    ap.add_argument("--gen-cpu", type=int, default=0)
    ap.add_argument("--server-cpu", type=int, default=1)
    ap.add_argument("--json", metavar="OUT", help="write raw numbers to OUT")
    args = ap.parse_args()
    nofile = core.raise_nofile()
    nginx = core.Nginx(args.server_cpu, nofile)
    runs = []
    try:
        nginx.start()
        with tempfile.TemporaryDirectory(prefix="strain-bench-") as tmp:
            for _ in range(args.rounds):
                for tool, binary in (("wrk", "wrk"), ("strain", os.path.abspath(args.strain))):
                    runs.append(one(tool, binary, args, nginx, tmp))
    finally:
        nginx.cleanup()

    def med(tool, key):
        xs = [r[key] for r in runs if r["tool"] == tool and r[key] is not None]
        return statistics.median(xs) if xs else None

    def med_err(tool, i):
        return statistics.median([r["socket_errors"][i] for r in runs if r["tool"] == tool])

    print("\n| tool | requests (median) | connect errors | read | timeout | wall (s) |")
    print("| --- | --- | --- | --- | --- | --- |")
    for tool in ("wrk", "strain"):
        print("| %s | %s | %s | %s | %s | %.2f |" % (tool, core.f_num(med(tool, "requests")),
              med_err(tool, 0), med_err(tool, 1), med_err(tool, 3), med(tool, "wall_s")))
    print("\nstrain/wrk requests: %s" % core.f_ratio(core.ratio(med("strain", "requests"), med("wrk", "requests"))))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"args": vars(args), "machine": core.machine_info(), "runs": runs}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
