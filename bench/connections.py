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

With --churn, nginx closes every connection after its response
(keepalive_timeout 0, so each response says Connection: close) and both
tools run -t1 -c48 for --duration: every request is a new connection, and
requests per second are connections per second.

Everything stays on 127.0.0.1; nginx runs from a private directory and is
stopped on exit.  Needs wrk, nginx, taskset.

Example:  python3 bench/connections.py --strain target/dist/strain
"""

import os
import sys
import tempfile

from driver import cli, measure, proc, report, tools
from driver.cli import fmt_dur, log
from driver.report import f_num, f_ratio, median
from driver.servers import HELLO, Nginx, hello_nginx

# HELLO, but every response closes its connection.
CLOSING = HELLO.replace("location / {", "keepalive_timeout 0;\n        location / {")


def one(tool, binary, args, nginx, tmp):
    """One run of `tool` at --connections: requests, socket errors, wall time, TIME_WAIT before."""
    argv = [binary, "-t%d" % args.threads, "-c%d" % args.connections,
            "-d%s" % fmt_dur(args.duration)]
    json_path = os.path.join(tmp, "strain.json")
    if tool == "strain":
        argv += ["--json", json_path] + [a for s in args.source_addr for a in ("--source-addr", s)]
    argv = proc.pinned(args.gen_cpu, argv + [nginx.url])
    tw = measure.time_wait()
    res = proc.run(argv, timeout=args.duration + 30)
    parsed = tools.parse_wrk(res["stdout"])
    errs = parsed.get("socket_errors") or dict.fromkeys(tools.SOCKET_ERRORS, 0)
    run = {"tool": tool, "argv": proc.display(argv, {binary: tool}), "time_wait_before": tw,
           "requests": parsed.get("requests"), "wall_s": res["wall"], "exit": res["exit"],
           "socket_errors": errs, "stdout": res["stdout"], "stderr": res["stderr"][-2000:],
           "problems": []}
    if tool == "strain":
        doc = tools.load_strain_json(json_path, run)
        run["connect_causes"] = ((doc or {}).get("errors") or {}).get("connect_causes")
    log("%-6s requests %8s  connect %5d read %5d write %5d timeout %5d  wall %.2fs  "
        "TIME_WAIT before %s%s" % (tool, run["requests"], errs["connect"], errs["read"],
                                   errs["write"], errs["timeout"], res["wall"], tw,
                                   "  causes %s" % run.get("connect_causes")
                                   if tool == "strain" else ""))
    return run


def main(stack):
    """Runs wrk and strain at many connections and prints the comparison."""
    ap = cli.parser(__doc__.split("\n\n")[0], "rounds", connections=19000, duration=5.0)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--source-addr", action="append", default=[],
                    help="passed to strain as --source-addr (repeatable)")
    ap.add_argument("--churn", action="store_true",
                    help="a new connection per request (-t1 -c48 unless given)")
    args = cli.parse(ap)
    if args.churn and args.connections == 19000:
        args.threads, args.connections = 1, 48
    cli.require(("wrk", "nginx", "taskset"), "apt-get install -y wrk nginx-light")
    nofile = proc.raise_nofile()
    info = cli.machine_info({"wrk": ["wrk", "-v"], "nginx": ["nginx", "-v"],
                             "strain": [args.strain, "--version"]})
    tmp = stack.enter_context(tempfile.TemporaryDirectory(prefix="strain-bench-"))
    if args.churn:
        nginx = stack.enter_context(Nginx(args.server_cpu, nofile, CLOSING))
    else:
        nginx, _ = hello_nginx(stack, args.server_cpu, nofile)
    runs = [one(tool, {"wrk": "wrk", "strain": args.strain}[tool], args, nginx, tmp)
            for _, tool in measure.schedule(args.rounds, ("wrk", "strain"), alternate=False)]

    def med(tool, get):
        return median([get(r) for r in runs if r["tool"] == tool])

    rep = report.Report()
    rep.w()
    rep.table(["tool", "requests (median)", "connect errors", "read", "timeout", "wall (s)"],
              [[tool, f_num(med(tool, lambda r: r["requests"]))] +
               [med(tool, lambda r: r["socket_errors"][k]) for k in ("connect", "read", "timeout")] +
               ["%.2f" % med(tool, lambda r: r["wall_s"])] for tool in ("wrk", "strain")])
    if args.churn:
        rep.w("connections/s (median): wrk %s, strain %s" % tuple(
            f_num(med(t, lambda r: (r["requests"] or 0) / args.duration)) for t in ("wrk", "strain")))
    rep.w("strain/wrk requests: %s" % f_ratio(report.ratio(
        med("strain", lambda r: r["requests"]), med("wrk", lambda r: r["requests"]))))
    report.finish(args, info, rep.text(), {"runs": runs})


if __name__ == "__main__":
    sys.exit(cli.run(main))
