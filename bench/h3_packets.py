#!/usr/bin/env python3
"""Packets per request over HTTP/3, both ways (issue 33, goal 3).

Starts Caddy as bench/h3.py does (on --server-cpu), runs strain --http3 for
--duration at -c40 -m1 and at -c4 -m10 (pinned to --gen-cpu), and reports
the packets strain sent per request (its JSON's http3.packets_sent) and the
UDP datagrams the server sent per response: the machine's UDP OutDatagrams
(/proc/net/snmp) over the run, less strain's.  Everything on loopback; run it
on an otherwise quiet machine, since the datagram counter is system-wide.

Example:  python3 bench/h3_packets.py --strain target/dist/strain
"""

import json
import os
import subprocess
import sys
import tempfile

import h3
from driver import cli


def udp_out():
    """The machine's UDP datagrams sent so far."""
    with open("/proc/net/snmp") as f:
        rows = [line.split() for line in f if line.startswith("Udp:")]
    return int(dict(zip(rows[0][1:], rows[1][1:]))["OutDatagrams"])


def main(stack):
    """Packets per request each way at two shapes."""
    ap = cli.parser(__doc__.split("\n\n")[0], duration=3.0)
    ap.add_argument("--caddy", default="/usr/bin/caddy")
    args = cli.parse(ap)
    cli.require(("caddy", "openssl", "taskset"), "apt-get install -y caddy openssl")
    caddy = stack.enter_context(h3.Caddy(args.caddy, args.server_cpu))
    out = os.path.join(stack.enter_context(tempfile.TemporaryDirectory()), "r.json")
    rows = []
    for conns, streams in ((40, 1), (4, 10)):
        before = udp_out()
        subprocess.run(["taskset", "-c", str(args.gen_cpu), args.strain, "--http3", "-k", "-t1",
                        "-c%d" % conns, "-m%d" % streams, "-d%s" % cli.fmt_dur(args.duration),
                        "--json", out, caddy.url], capture_output=True, timeout=args.duration + 60)
        total = udp_out() - before
        with open(out) as f:
            j = json.load(f)
        requests, sent = j["requests"], j["http3"]["packets_sent"]
        rows.append({"connections": conns, "streams": streams, "requests": requests,
                     "strain_packets_per_request": sent / requests,
                     "server_datagrams_per_response": (total - sent) / requests})
        cli.log("-c%d -m%d: %d requests, strain %.2f packets/request, server %.2f datagrams/response"
                % (conns, streams, requests, sent / requests, (total - sent) / requests))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"strain": args.strain, "rows": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(cli.run(main))
