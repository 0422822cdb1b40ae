#!/usr/bin/env python3
"""WebSocket benchmark: strain ws against a Go client, same machine, same run (issues 34, 40).

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
   connection.  Each of ``--mem-rounds`` (default: ``--rounds``) rounds runs
   every contender at both counts (with ``--baseline``, the build before
   too), the order reversed every other round; per connection is figured
   per contender and round, and the median reported.

3. Held idle connections against real servers (issue 40, ``--held``, a
   comma-separated subset of ``origin,gorilla,python,node``): peak RSS of

       taskset -c 0 STRAIN ws -t 1 -c N --listen-only -d 6s -T 10s --json FILE URL

   at N = ``--mem-connections`` (10,000) and N = 100, per connection = the
   difference over N - 100, against each server pinned to CPU 1, a fresh
   server for every run:

   - ``origin``: ``strain origin --ws -t 1`` (the --strain build), path /;
   - ``gorilla``: gorilla/websocket's echo example, unchanged
     (target/go-bin/ws-echo, ``bash scripts/ws-servers.sh``), ``-addr``, /echo;
   - ``python``: Python ``websockets`` (tests/servers/python-ws/echo.py under
     target/grpc-venv/bin/python3), path /; its asyncio listener has a
     backlog of 100, so its runs hold ``--python-duration`` (9 s) for the
     4-5 s its 10,000 upgrades take (the -T 10s covers its SYN retries);
   - ``node``: Node's ``ws`` (tests/servers/node/ws-echo.js, NODE_PATH =
     target/node/node_modules), path /.

   Each run's counts are checked: strain's upgrades (``websocket.handshakes``)
   equal N, no drops, closes or connect errors, its intervals' most
   ``open_connections`` equal N (each connection still listening when the run
   drains at -d is waited for -T and then counted as a timeout, so a run
   lasts -d + -T and reports up to N timeouts: kept apart as
   ``drain_timeouts``, not a problem); the server's own sockets (the most file
   descriptors its process held at once, read from /proc every 100 ms, less
   those it held before) reach N; Python's and Node's printed counts
   (``connections`` = N + strain's one upgrade check, ``peak_open`` = N).
   Issue 40 asks for at most 1 KB per connection on strain's side.

Everything stays on 127.0.0.1; every child has a timeout; the origin is
stopped on every way out.  ``--json OUT`` writes the raw numbers.
"""

import json
import os
import re
import signal
import socket
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from driver import cli, measure, proc, report  # noqa: E402
from driver.servers import Server, StrainOrigin  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class WsOrigin(StrainOrigin):
    """taskset -c CPU STRAIN origin --listen 127.0.0.1:PORT -t 1 --ws"""

    def argv(self):
        return super().argv() + ["--ws"]


HELD_SERVERS = ("origin", "gorilla", "python", "node")


class RealWsServer(Server):
    """A WebSocket echo server that is not strain's, pinned to a CPU: gorilla's echo example
    on a port given to it, or Python's / Node's test server, which picks its own port and
    prints `listening PORT` (then, on SIGINT, its counts as one JSON line)."""

    stop_signal = signal.SIGINT

    def __init__(self, kind, cpu, args):
        super().__init__(cpu, None, None)
        self.kind = kind
        self.args = args
        self.path = "/echo" if kind == "gorilla" else "/"

    def argv(self):
        pin = ["taskset", "-c", str(self.cpu)]
        if self.kind == "gorilla":
            return pin + [self.args.gorilla, "-addr=127.0.0.1:%d" % self.port]
        if self.kind == "python":
            return pin + [self.args.python, os.path.join(ROOT, "tests/servers/python-ws/echo.py")]
        return pin + ["node", os.path.join(ROOT, "tests/servers/node/ws-echo.js")]

    def ready(self):
        if self.kind == "gorilla":
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                    return True
            except OSError:
                return False
        m = re.search(r"^listening (\d+)$", self.errors(), re.M)
        if m:
            self.port = int(m.group(1))
        return m is not None

    def counts(self):
        """Python's and Node's counts, printed when stopped (call after stop()), or None."""
        for line in reversed(self.errors().splitlines()):
            if line.startswith("{"):
                try:
                    return json.loads(line)
                except ValueError:
                    return None
        return None


class HeldOrigin(StrainOrigin):
    """strain origin --ws as one of the held runs' servers, path /."""

    path = "/"

    def argv(self):
        return super().argv() + ["--ws"]


class FdWatch:
    """The most file descriptors process `pid` holds at once, sampled every 100 ms from
    /proc/PID/fd until stopped, less those it held at start."""

    def __init__(self, pid):
        self.pid = pid
        self.before = self.fds()
        self.most = self.before
        self.done = threading.Event()
        self.thread = threading.Thread(target=self.watch, daemon=True)
        self.thread.start()

    def fds(self):
        try:
            return len(os.listdir("/proc/%d/fd" % self.pid))
        except OSError:
            return 0

    def watch(self):
        while not self.done.wait(0.1):
            self.most = max(self.most, self.fds())

    def stop(self):
        self.done.set()
        self.thread.join()
        return self.most - self.before


def held_checks(doc, n):
    """strain's side of a held run, from its --json: (figures, problems)."""
    w = (doc or {}).get("websocket") or {}
    rows = (doc or {}).get("intervals") or []
    opened = [r.get("open_connections") for r in rows if r.get("open_connections") is not None]
    errs = {k: v for k, v in ((doc or {}).get("errors") or {}).items() if isinstance(v, int) and v}
    # A listening slot waits for the server's next message; at -d the run drains, waiting -T
    # for them, and counts each still waiting as a timeout: up to one per connection, from the
    # drain, not a problem of the hold (kept apart as "drain_timeouts").
    drain = errs.pop("timeout", 0)
    fig = {"handshakes": w.get("handshakes"), "most_open": max(opened) if opened else None,
           "drops": w.get("drops"), "closes": w.get("closes"), "errors": errs,
           "drain_timeouts": drain}
    problems = []
    if fig["handshakes"] != n:
        problems.append("%s upgrades, not %d" % (fig["handshakes"], n))
    if opened and fig["most_open"] != n:
        problems.append("at most %s open, not %d" % (fig["most_open"], n))
    for k in ("drops", "closes"):
        if fig[k]:
            problems.append("%s %s" % (k, fig[k]))
    if errs:
        problems.append("errors %s" % errs)
    if drain > n:
        problems.append("%d timeouts, more than the connections" % drain)
    return fig, problems


def per_connection(memory, tool_key, n_big, n_small=100):
    """Bytes of peak RSS per connection for each (tool, round) [and server] that has both runs:
    a list of dicts with the pair's figures."""
    out = []
    keys = sorted({tuple(r.get(k) for k in tool_key) for r in memory})
    for key in keys:
        rows = [r for r in memory if tuple(r.get(k) for k in tool_key) == key]
        small = next((r.get("maxrss_kb") for r in rows if r["connections"] == n_small), None)
        big = next((r.get("maxrss_kb") for r in rows if r["connections"] == n_big), None)
        if small and big and n_big > n_small:
            out.append(dict(zip(tool_key, key), small_kb=small, big_kb=big,
                            bytes_per_connection=(big - small) * 1024.0 / (n_big - n_small)))
    return out


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
    ap.add_argument("--mem-rounds", type=int, help="rounds of part 2 (default: --rounds)")
    ap.add_argument("--held", default=",".join(HELD_SERVERS),
                    help="part 3: servers to hold --mem-connections listening connections "
                         "against, of %s ('' to skip)" % ",".join(HELD_SERVERS))
    ap.add_argument("--held-rounds", type=int, help="rounds of part 3 (default: --rounds)")
    ap.add_argument("--held-duration", type=cli.parse_duration, default=6.0)
    ap.add_argument("--python-duration", type=cli.parse_duration, default=9.0,
                    help="part 3: -d of the runs against Python's server")
    ap.add_argument("--gorilla", default=os.path.join(ROOT, "target/go-bin/ws-echo"))
    ap.add_argument("--python", default=os.path.join(ROOT, "target/grpc-venv/bin/python3"))
    ap.add_argument("--node-path", default=os.path.join(ROOT, "target/node/node_modules"))
    ap.add_argument("--parts", default="echo,memory,held", help="comma-separated subset of "
                    "echo, memory, held")
    args = cli.parse(ap)
    args.parts = [x for x in args.parts.split(",") if x]
    args.held = [x for x in args.held.split(",") if x] if "held" in args.parts else []
    for x in args.held:
        if x not in HELD_SERVERS:
            raise cli.SetupError("--held: unknown server %r" % x)
    need = [args.client] if set(args.parts) & {"echo", "memory"} else []
    need += [{"gorilla": args.gorilla, "python": args.python,
              "node": os.path.join(args.node_path, "ws")}[x] for x in args.held if x != "origin"]
    for path in need:
        if not os.path.exists(path):
            raise cli.SetupError("%s is missing: run bash bench/tools.sh, bash "
                                 "scripts/ws-servers.sh and scripts/test.sh's installs" % path)
    os.environ["NODE_PATH"] = args.node_path
    proc.raise_nofile()
    info = cli.machine_info(dict({"strain": [args.strain, "--version"]},
                                 **({"baseline": [args.baseline, "--version"]}
                                    if args.baseline else {})))
    out = {"machine": info, "runs": [], "memory": [], "held": []}
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
        for rnd, name in measure.schedule(args.rounds, list(tools)) if "echo" in args.parts else []:
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
        mem_tools = {
            "strain": lambda n: [args.strain, "ws", "-t", "1", "-c", str(n), "-d", "4s", "-R", "1", "-T", "10s", url],
            "go-client": lambda n: [args.client, "-url", url, "-c", str(n), "-d", "4s", "-size", "16"],
        }
        if args.baseline:
            mem_tools["baseline"] = lambda n: [args.baseline] + mem_tools["strain"](n)[1:]
        mem_rounds = args.mem_rounds or args.rounds
        for rnd, name in (measure.schedule(mem_rounds, list(mem_tools))
                          if args.mem_connections and "memory" in args.parts else []):
            for n in (100, args.mem_connections):
                with tempfile.NamedTemporaryFile() as t:
                    measure.settle(args.settle)
                    res = proc.run(proc.timed(proc.pinned(args.gen_cpu, mem_tools[name](n)), t.name), timeout=120)
                    figures = proc.read_timed(t.name)
                out["memory"].append(dict(tool=name, round=rnd, connections=n, exit=res["exit"], **figures))
                cli.log("round %d memory %-9s %6d connections: peak RSS %s KiB (exit %s)"
                        % (rnd, name, n, figures.get("maxrss_kb"), res["exit"]))

    for rnd, kind in measure.schedule(args.held_rounds or args.rounds, args.held) if args.held else []:
        for n in ((100, args.mem_connections) if rnd % 2 else (args.mem_connections, 100)):
            server = HeldOrigin(args.strain, args.server_cpu) if kind == "origin" else \
                RealWsServer(kind, args.server_cpu, args)
            with server:
                dur = args.python_duration if kind == "python" else args.held_duration
                with tempfile.NamedTemporaryFile(suffix=".json") as f, \
                        tempfile.NamedTemporaryFile() as t:
                    argv = [args.strain, "ws", "-t", "1", "-c", str(n), "--listen-only", "-d",
                            "%gs" % dur, "-T", "10s", "--json", f.name,
                            "ws://127.0.0.1:%d%s" % (server.port, server.path)]
                    measure.settle(args.settle)
                    watch = FdWatch(server.proc.pid)
                    res = proc.run(proc.timed(proc.pinned(args.gen_cpu, argv), t.name),
                                   timeout=dur + 60)
                    most = watch.stop()
                    figures = proc.read_timed(t.name)
                    try:
                        doc = json.load(open(f.name))
                    except (OSError, ValueError):
                        doc = None
                server.stop()
                counts = server.counts() if kind in ("python", "node") else None
            fig, problems = held_checks(doc, n)
            if res["exit"] != 0:
                problems.append("exit %s" % res["exit"])
            if most < n:
                problems.append("the server held at most %d at once" % most)
            if counts is not None and (counts.get("connections") != n + 1
                                       or counts.get("peak_open") != n):
                problems.append("the server counted %s" % counts)
            rec = dict(server=kind, round=rnd, connections=n, exit=res["exit"], cpu=res["cpu"],
                       wall=res["wall"], server_fds_most=most, server_counts=counts,
                       problems=problems, argv=argv, **dict(fig, **figures))
            out["held"].append(rec)
            cli.log("round %d held %-7s %6d: peak RSS %s KiB, %s upgrades, most open %s, server "
                    "held %d%s%s" % (rnd, kind, n, figures.get("maxrss_kb"), fig["handshakes"],
                                     fig["most_open"], most,
                                     " counts %s" % counts if counts else "",
                                     "  !! " + "; ".join(problems) if problems else ""))

    med = {}
    for name in {r["tool"] for r in out["runs"]}:
        med[name] = report.median([r["per_cpu_s"] for r in out["runs"] if r["tool"] == name and r["per_cpu_s"]])
    pairs = per_connection(out["memory"], ("tool", "round"), args.mem_connections)
    per_conn = {name: report.median([p["bytes_per_connection"] for p in pairs if p["tool"] == name])
                for name in sorted({p["tool"] for p in pairs})}
    held_pairs = per_connection(out["held"], ("server", "round"), args.mem_connections)
    held = {kind: report.median([p["bytes_per_connection"] for p in held_pairs if p["server"] == kind])
            for kind in args.held}
    out["summary"] = {"median_per_cpu_s": med, "ratio": report.ratio(med.get("strain"), med.get("go-client")),
                      "bytes_per_idle_connection": per_conn, "memory_pairs": pairs,
                      "held_bytes_per_connection": held, "held_pairs": held_pairs,
                      "held_problems": sum(len(r["problems"]) for r in out["held"])}
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
        print("memory per idle connection, %s: %s B, median of %s (peak RSS at %d vs 100 "
              "connections)" % (name, report.f_num(b), ", ".join(
                  report.f_num(p["bytes_per_connection"]) for p in pairs if p["tool"] == name),
                  args.mem_connections))
    if per_conn.get("strain") and per_conn.get("baseline"):
        print("strain / baseline, bytes per idle connection: %s"
              % report.f_ratio(per_conn["strain"] / per_conn["baseline"]))
    if held:
        print("\n| held listening, %d vs 100 connections | B/connection per round | median | "
              "peak RSS at %d per round | server held at once | problems |"
              % (args.mem_connections, args.mem_connections))
        print("|---|---|---|---|---|---|")
        for kind in args.held:
            ps = [p for p in held_pairs if p["server"] == kind]
            big = [r for r in out["held"] if r["server"] == kind and r["connections"] == args.mem_connections]
            print("| %s | %s | %s | %s | %s | %s |" % (
                kind, ", ".join(report.f_num(p["bytes_per_connection"]) for p in ps),
                report.f_num(held[kind]), ", ".join("%d KiB" % p["big_kb"] for p in ps),
                ", ".join(report.f_num(r["server_fds_most"]) for r in big),
                sum(len(r["problems"]) for r in out["held"] if r["server"] == kind)))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1, default=str)


if __name__ == "__main__":
    sys.exit(cli.run(main))
