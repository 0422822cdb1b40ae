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

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import core  # noqa: E402

LOGGING_SERVER = """
    server {{
        listen 127.0.0.1:{port} backlog=4096;
        access_log {dir}/access.log;
        location / {{
            return 200 "hello world\\n";
        }}
    }}"""


class LoggingNginx(core.Nginx):
    def conf_text(self):
        return core.NGINX_HTTP_COMMON.format(user="", dir=self.dir, nofile=self.nofile,
                                             body=LOGGING_SERVER.format(port=self.port, dir=self.dir))

    def logged(self):
        with open(os.path.join(self.dir, "access.log"), "rb") as f:
            return sum(1 for _ in f)


def rss_kb(pid):
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--strain", default=os.path.join(core.REPO, "target/release/strain"))
    ap.add_argument("--duration", type=int, default=600, help="seconds")
    ap.add_argument("--rate", type=int, default=20000)
    ap.add_argument("--connections", type=int, default=1000)
    ap.add_argument("--gen-cpu", type=int, default=0)
    ap.add_argument("--server-cpu", type=int, default=1)
    ap.add_argument("--json", metavar="OUT", help="write raw numbers to OUT")
    args = ap.parse_args()
    nofile = core.raise_nofile()
    nginx = LoggingNginx(args.server_cpu, nofile)
    samples = []
    try:
        nginx.start()
        # The readiness probe is one request in the log: count from here.
        time.sleep(0.2)
        logged_before = nginx.logged()
        with tempfile.TemporaryDirectory(prefix="strain-soak-") as tmp:
            out = os.path.join(tmp, "result.json")
            argv = ["taskset", "-c", str(args.gen_cpu), os.path.abspath(args.strain), "-t2",
                    "-c%d" % args.connections, "-R%d" % args.rate, "-d%ds" % args.duration,
                    "--json", out, nginx.url]
            start = time.monotonic()
            proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                    stdin=subprocess.DEVNULL)
            while proc.poll() is None:
                r = rss_kb(proc.pid)
                if r is not None:
                    samples.append((time.monotonic() - start, r))
                time.sleep(1)
            text = proc.stdout.read().decode()
            with open(out) as f:
                result = json.load(f)
        time.sleep(1.5)  # nginx writes its log buffer on request completion; let it settle
        logged = nginx.logged() - logged_before
    finally:
        nginx.cleanup()
    minute = [kb for t, kb in samples if t <= 60]
    rss_1m = minute[-1] if minute else None
    rss_end = samples[-1][1] if samples else None
    growth = (rss_end - rss_1m) / rss_1m * 100 if rss_1m and rss_end else None
    total = result["requests"]
    print(text)
    print("| duration | rate | requests (strain) | requests (nginx log) | errors | RSS at 1 min | RSS at end | growth |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    errs = sum(v for k, v in result["errors"].items() if isinstance(v, int))
    print("| %ds | %d/s | %d | %d | %d | %s KiB | %s KiB | %s |" % (
        args.duration, args.rate, total, logged, errs, rss_1m, rss_end,
        "n/a" if growth is None else "%+.2f%%" % growth))
    print("counts %s; RSS growth %s" % ("exact" if total == logged else "DIFFER",
                                        "< 5%" if growth is not None and growth < 5 else "NOT < 5%"))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"args": vars(args), "machine": core.machine_info(), "rss_samples": samples,
                       "strain_requests": total, "nginx_logged": logged, "result": result}, f)
    return 0 if total == logged and growth is not None and growth < 5 else 1


if __name__ == "__main__":
    sys.exit(main())
