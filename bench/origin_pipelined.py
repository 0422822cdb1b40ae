#!/usr/bin/env python3
"""Server CPU per request, strain origin vs nginx, under a pipelining generator (issue 5).

bench/proxy.py compares the two servers under wrk (one request in flight per connection); there
wrk saturates its core before either server does, so the ratio is within noise of 1.0. Here the
generator is h2load in HTTP/1.1 mode with 16 requests pipelined per connection (-m16), which
loads the servers harder than the generator. Both servers run on CPU 1 with one thread/worker
and serve the same 100-byte body at /d/1/100; h2load runs on CPU 0 for 8 s per run, 3 rounds,
order alternated. The figure is requests completed per CPU-second of the server process (all its
threads, from /proc/PID/stat). Both servers run throughout on free ports; the idle one costs nothing.

Usage: python3 bench/origin_pipelined.py [--strain target/dist/strain]
Needs: apt-get install -y nginx-light nghttp2-client
"""

import re
import sys

from driver import cli, measure, proc, report
from driver.servers import origin_pair

PATH = "/d/1/100"


def run(name, srv, args):
    """One h2load run against one server: requests per CPU-second of that server."""
    argv = proc.pinned(args.gen_cpu, ["h2load", "--h1", "-t1", "-c50", "-m16",
                                      "-D", str(args.seconds), srv.url.rstrip("/") + PATH])
    rec = measure.measured(argv, args.seconds + 30, 0, {"server_cpu": srv.cpu_seconds})
    m = re.search(r"requests: \d+ total, \d+ started, \d+ done, (\d+) succeeded", rec["stdout"])
    if not m or not rec["server_cpu"]:
        raise cli.BenchError("%s: no h2load request count or no server CPU:\n%s" % (
            name, rec["stdout"][-2000:] + rec["stderr"][-2000:]))
    n, cpu = int(m.group(1)), rec["server_cpu"]
    print(f"{name:>6}: {n} requests, server CPU {cpu:.2f} s, {n / cpu:,.0f} req/server-CPU-s",
          flush=True)
    return {"name": name, "requests": n, "server_cpu": cpu, "figure": n / cpu}


def main(stack):
    """Alternating rounds against strain's origin and nginx, then the ratio of medians."""
    ap = cli.parser(__doc__.splitlines()[0], "rounds")
    ap.add_argument("--seconds", type=int, default=8)
    args = cli.parse(ap)
    cli.require(("h2load", "nginx", "taskset"), "apt-get install -y nginx-light nghttp2-client")
    nofile = proc.raise_nofile()
    so, ng = origin_pair(stack, args.strain, args.server_cpu, nofile, PATH, {})
    servers = {"strain": so, "nginx": ng}
    runs = []
    for rnd, name in measure.schedule(args.rounds, list(servers)):
        runs.append(dict(run(name, servers[name], args), round=rnd))
    c = report.compare(runs, "name", list(servers), "figure", "nginx")
    ms, mn = c["medians"]["strain"], c["medians"]["nginx"]
    print(f"median req/server-CPU-s: strain {ms:,.0f}, nginx {mn:,.0f}; ratio {ms / mn:.2f}x "
          f"(per round {[round(x, 2) for x in c['paired']['strain']]})")


if __name__ == "__main__":
    sys.exit(cli.run(main))
