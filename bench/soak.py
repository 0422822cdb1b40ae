#!/usr/bin/env python3
"""Soak: a long constant-rate run against nginx, for leaks and exact counts (issue 9).

A private nginx (1 worker, pinned to --server-cpu) logs every request to an
access log.  strain runs pinned to --gen-cpu:

    strain -t2 -c1000 -R20000 -d10m --json OUT URL

The script samples strain's VmRSS from /proc every second.  It reports the
RSS at the end of the first minute and at the end, and their growth (the
requirement: < 5 %), and compares strain's request total with the number of
lines in nginx's access log (the requirement: equal).  --duration and --rate
make shorter or lighter runs for a quick check.

Everything stays on 127.0.0.1; nginx runs from a private directory and is
stopped on exit.  Needs nginx and taskset.

Example:  python3 bench/soak.py --strain target/release/strain --json /tmp/soak.json
"""

import os
import sys
import tempfile
import time

from driver import cli, measure, proc, report, tools
from driver.servers import Nginx

LOGGING_SERVER = """
    server {
        listen 127.0.0.1:{port} backlog=4096;
        access_log {dir}/access.log;
        location / {
            return 200 "hello world\\n";
        }
    }"""


def main(stack):
    """One long constant-rate run: RSS over time, strain's total against nginx's log."""
    ap = cli.parser(__doc__.split("\n\n")[0], duration=600.0, connections=1000)
    ap.add_argument("--rate", type=int, default=20000)
    args = cli.parse(ap)
    cli.require(("nginx", "taskset"), "apt-get install -y nginx-light")
    nofile = proc.raise_nofile()
    info = cli.machine_info({"nginx": ["nginx", "-v"], "strain": [args.strain, "--version"]})
    tmp = stack.enter_context(tempfile.TemporaryDirectory(prefix="strain-soak-"))
    nginx = stack.enter_context(Nginx(args.server_cpu, nofile, LOGGING_SERVER))
    # The readiness probe is one request in the log: count from here.
    time.sleep(0.2)
    logged_before = nginx.lines("access.log")
    out = os.path.join(tmp, "result.json")
    argv = proc.pinned(args.gen_cpu, [args.strain, "-t2", "-c%d" % args.connections,
                                      "-R%d" % args.rate, "-d%s" % cli.fmt_dur(args.duration),
                                      "--json", out, nginx.url])
    samples = []
    next_sample = [0.0]

    def poll(pid, elapsed):
        if elapsed >= next_sample[0]:
            next_sample[0] += 1
            rss = measure.status_fields(pid, "VmRSS")
            if rss and rss[0] is not None:
                samples.append((elapsed, rss[0]))

    res = proc.run(argv, timeout=args.duration + 60, poll=poll)
    run = {"problems": []}
    result = tools.load_strain_json(out, run)
    if result is None:
        raise cli.BenchError("strain wrote no --json report (exit %s): %s" % (
            res["exit"], res["stderr"][-2000:]))
    time.sleep(1.5)  # nginx writes its log buffer on request completion; let it settle
    logged = nginx.lines("access.log") - logged_before
    minute = [kb for t, kb in samples if t <= 60]
    rss_1m = minute[-1] if minute else None
    rss_end = samples[-1][1] if samples else None
    growth = (rss_end - rss_1m) / rss_1m * 100 if rss_1m and rss_end else None
    total = result["requests"]
    errs = sum(v for v in result["errors"].values() if isinstance(v, int))
    rep = report.Report()
    rep.w(res["stdout"])
    rep.table(["duration", "rate", "requests (strain)", "requests (nginx log)", "errors",
               "RSS at 1 min", "RSS at end", "growth"],
              [[cli.fmt_dur(args.duration), "%d/s" % args.rate, total, logged, errs,
                "%s KiB" % rss_1m, "%s KiB" % rss_end,
                "n/a" if growth is None else "%+.2f%%" % growth]])
    rep.w("counts %s; RSS growth %s" % ("exact" if total == logged else "DIFFER",
                                        "< 5%" if growth is not None and growth < 5 else "NOT < 5%"))
    report.finish(args, info, rep.text(), {"rss_samples": samples, "strain_requests": total,
                                           "nginx_logged": logged, "result": result})
    return 0 if total == logged and growth is not None and growth < 5 else 1


if __name__ == "__main__":
    sys.exit(cli.run(main))
