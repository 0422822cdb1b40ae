#!/usr/bin/env python3
"""WebSocket benchmark: strain ws against a Go client, same machine, same run (issue 34).

What it measures
----------------
1. Echo messages per generator CPU-second at ``--connections`` (1,000)
   connections, each with one message in flight (closed loop), against
   ``strain origin --ws -t 1`` pinned to CPU 1; every generator on CPU 0:

       taskset -c 0 STRAIN ws -t 1 -c 1000 -d 5s --message-size 16 --json FILE URL
       GOMAXPROCS=1 taskset -c 0 ws-bench-client -url URL -c 1000 -d 5s -size 16

   ws-bench-client (bench/ws-go, built by ``bash bench/tools.sh`` into
   target/go-bin) is a goroutine per connection on gorilla/websocket, the
   usual shape of a Go load client.  Messages: strain's ``requests`` from its
   JSON, the client's ``messages N`` line; each is checked against the
   origin's own count of messages echoed (``ws_messages`` of
   /_strain/stats, read before and after).  CPU: user+sys of the tool from
   ``os.wait4()``.  Rounds alternate the order.  Headline: median(strain) /
   median(peer) of messages per CPU-second; with ``--baseline``, strain's
   build before runs in the same rounds.

   With ``--artillery PATH`` (npm's artillery 2.0.34: ``PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm
   install --ignore-scripts artillery@2.0.34``), artillery's ws engine runs too: as many
   virtual users as connections, arriving within 1 s, each sending
   ``--artillery-count`` messages in a loop.  It cannot wait for a reply, so it only sends (the
   origin echoes anyway); its messages are the origin's count, and its CPU includes Node's
   start.  A different workload (no echo awaited), recorded for what it is.

2. Memory per held idle connection: peak RSS (GNU time) of
   ``STRAIN ws -t 1 -c N -d 4s -R 1`` at N = ``--mem-connections`` (10,000)
   and at N = 100; per connection = the difference over the connections
   between (one message a second in all keeps them idle).  The Go client
   at the same counts, for reference.  Issue 34 asks for at most 1 KB per
   connection.

Everything stays on 127.0.0.1; every child has a timeout; the origin is
stopped on every way out.  ``--json OUT`` writes the raw numbers.
"""

import json
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from driver import cli, measure, proc, report  # noqa: E402
from driver.servers import StrainOrigin  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class WsOrigin(StrainOrigin):
    """taskset -c CPU STRAIN origin --listen 127.0.0.1:PORT -t 1 --ws"""

    def argv(self):
        return super().argv() + ["--ws"]


def echoed(origin):
    s = origin.stats() or {}
    return s.get("ws_messages")


def main(stack):
    ap = cli.parser(__doc__.split("\n\n")[0], "rounds", "settle", duration=5.0)
    ap.add_argument("--connections", type=int, default=1000)
    ap.add_argument("--size", type=int, default=16)
    ap.add_argument("--mem-connections", type=int, default=10000)
    ap.add_argument("--client", default=os.path.join(ROOT, "target/go-bin/ws-bench-client"))
    ap.add_argument("--artillery", help="artillery's bin (optional; see the docstring)")
    ap.add_argument("--artillery-count", type=int, default=200)
    args = cli.parse(ap)
    if not os.path.exists(args.client):
        raise cli.SetupError("%s is missing: run bash bench/tools.sh" % args.client)
    proc.raise_nofile()
    out = {"runs": [], "memory": []}
    with WsOrigin(args.strain, args.server_cpu) as origin:
        origin.start()
        url = "ws://127.0.0.1:%d/" % origin.port
        tools = {
            "strain": lambda d, f: [args.strain, "ws", "-t", "1", "-c", str(args.connections), "-d", "%gs" % d,
                                    "--message-size", str(args.size), "--json", f, url],
            "go-client": lambda d, f: [args.client, "-url", url, "-c", str(args.connections), "-d", "%gs" % d,
                                       "-size", str(args.size)],
        }
        if args.artillery:
            scenario = os.path.join(stack.enter_context(tempfile.TemporaryDirectory()), "ws.yml")
            with open(scenario, "w") as f:
                f.write("config:\n  target: \"%s\"\n  phases:\n    - duration: 1\n      arrivalCount: %d\n"
                        "scenarios:\n  - engine: ws\n    flow:\n      - loop:\n          - send: \"%s\"\n"
                        "        count: %d\n" % (url, args.connections, "a" * args.size, args.artillery_count))
            tools["artillery"] = lambda d, f: [args.artillery, "run", "--quiet", scenario]
        if args.baseline:
            tools["baseline"] = lambda d, f: tools["strain"](d, f)[:0] + [args.baseline] + tools["strain"](d, f)[1:]
        os.environ["GOMAXPROCS"] = "1"
        for rnd, name in measure.schedule(args.rounds, list(tools)):
            with tempfile.NamedTemporaryFile(suffix=".json") as f:
                argv = proc.pinned(args.gen_cpu, tools[name](args.duration, f.name))
                before = echoed(origin)
                rec = measure.measured(argv, timeout=args.duration + 60, settle_s=args.settle)
                after = echoed(origin)
                if name == "artillery":
                    n = None if before is None or after is None else after - before
                elif name == "go-client":
                    words = rec["stdout"].split()
                    n = int(words[1]) if len(words) == 2 and words[0] == "messages" else None
                else:
                    try:
                        n = json.load(open(f.name))["requests"]
                    except (OSError, ValueError, KeyError):
                        n = None
            rec.update(tool=name, round=rnd, messages=n,
                       server_echoed=None if before is None or after is None else after - before,
                       per_cpu_s=n / rec["cpu"] if n and rec["cpu"] else None)
            rec.pop("stdout", None)
            out["runs"].append(rec)
            cli.log("round %d %-9s %s messages, cpu %.2fs, %s msg/CPU-s, server echoed %s"
                    % (rnd, name, n, rec["cpu"], report.f_num(rec["per_cpu_s"] or 0), rec["server_echoed"]))
        for name, argv_of in [
            ("strain", lambda n: [args.strain, "ws", "-t", "1", "-c", str(n), "-d", "4s", "-R", "1", "-T", "10s", url]),
            ("go-client", lambda n: [args.client, "-url", url, "-c", str(n), "-d", "4s", "-size", "16"]),
        ] if args.mem_connections else []:
            for n in (100, args.mem_connections):
                with tempfile.NamedTemporaryFile() as t:
                    res = proc.run(proc.timed(proc.pinned(args.gen_cpu, argv_of(n)), t.name), timeout=120)
                    figures = proc.read_timed(t.name)
                out["memory"].append(dict(tool=name, connections=n, exit=res["exit"], **figures))
                cli.log("memory %-9s %6d connections: peak RSS %s KiB (exit %s)"
                        % (name, n, figures.get("maxrss_kb"), res["exit"]))

    med = {}
    for name in {r["tool"] for r in out["runs"]}:
        med[name] = report.median([r["per_cpu_s"] for r in out["runs"] if r["tool"] == name and r["per_cpu_s"]])
    per_conn = {}
    for name in ("strain", "go-client"):
        m = {r["connections"]: r.get("maxrss_kb") for r in out["memory"] if r["tool"] == name}
        small, big = m.get(100), m.get(args.mem_connections)
        if small and big:
            per_conn[name] = (big - small) * 1024.0 / (args.mem_connections - 100)
    out["summary"] = {"median_per_cpu_s": med, "ratio": report.ratio(med.get("strain"), med.get("go-client")),
                      "bytes_per_idle_connection": per_conn}
    if "baseline" in med:
        out["summary"]["ratio_vs_baseline"] = report.ratio(med.get("strain"), med.get("baseline"))
    print("\n| echo, %d connections, %d B messages | messages per CPU-second (median of %d) |"
          % (args.connections, args.size, args.rounds))
    print("|---|---|")
    for name, v in sorted(med.items()):
        print("| %s | %s |" % (name, report.f_num(v or 0)))
    print("\nstrain / go-client: %s" % report.f_ratio(out["summary"]["ratio"]))
    if "ratio_vs_baseline" in out["summary"]:
        print("strain / baseline: %s" % report.f_ratio(out["summary"]["ratio_vs_baseline"]))
    for name, b in per_conn.items():
        print("memory per idle connection, %s: %.0f B (peak RSS at %d vs 100 connections)"
              % (name, b, args.mem_connections))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1, default=str)


if __name__ == "__main__":
    sys.exit(cli.run(main))
