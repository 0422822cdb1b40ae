#!/usr/bin/env python3
"""gRPC benchmark: strain grpc against ghz, same machine, same run (issues 32 and 40).

What it measures
----------------
Issue 32 gave strain a gRPC client (``strain grpc``) and asks how it
compares with ghz, the usual gRPC load generator, and with strain's own
HTTP/2.  As everywhere in bench/, only ratios of measurements taken in the
same invocation, interleaved in time, are headline figures: the machine has
2 cores shared with other work.  Every generator is pinned to CPU 0
(``--gen-cpu``), every server to CPU 1 (``--server-cpu``); strain runs one
thread (``-t 1``), ghz one Go processor (``--cpus 1``).  Every generator
runs under GNU time (``/usr/bin/time -f '%M %U %S'``) for its peak RSS; its
CPU is user+sys from ``os.wait4()`` on GNU time's pid (the tool's own plus
GNU time's ~1 ms), as in bench/rate.py.

Servers (all on 127.0.0.1, all stopped on every way out):

- grpc-go's Greeter and RouteGuide: ``target/go-bin/grpc-servers``
  (tests/servers/grpc-go, built by ``bash bench/tools.sh``).  Its admin
  port's ``GET /counts`` (zeroed by ``GET /reset`` before each run) gives
  the calls the server itself saw ending OK: each run's count is checked
  against the tool's, and the memory runs read the calls open mid-run.
- ``strain origin --grpc -t 1``: the echo service strain.echo.v1.Echo.
- ``strain origin -t 1 --body-size B``: plain HTTP, spoken here as h2c.

Both tools get the same schema file (``--proto``), so neither uses
reflection.  ghz's ``-c`` is its number of workers, each with one call at a
time, and ``--connections`` the connections they share evenly; strain's
``-c`` is connections and ``-m`` calls in flight on each.  So "50 calls in
flight over 50 connections" is ``strain -c 50 -m 1`` and ``ghz -c 50
--connections 50``.

1. Unary calls per generator CPU-second (``--unary-duration``, default 5 s,
   ``--connections`` 50, ``--in-flight`` 1 call at a time on each),
   helloworld.Greeter/SayHello ``{"name":"x"}``:

       taskset -c 0 STRAIN grpc --call helloworld.Greeter/SayHello --proto HELLO
           -D '{"name":"x"}' -t 1 -c 50 -m 1 -d 5s --json FILE URL
       taskset -c 0 ghz --insecure --proto HELLO --call helloworld.Greeter.SayHello
           -d '{"name":"x"}' -c 50 --connections 50 -z 5s --duration-stop wait --cpus 1 ADDR

   Calls = the calls that ended OK (strain: ``grpc.codes.ok`` of --json;
   ghz: ``[OK] N responses``).  A duration rather than ``-n``: ghz makes
   about a quarter of strain's calls per second here, so the same ``-n``
   would make its runs 4x as long; ``--duration-stop wait`` lets ghz's calls
   in flight at the end finish rather than be cut (as Unavailable).
   Headline: median(strain) / median(ghz) of calls per CPU-second (goal
   >= 2.5x), and peak RSS of each.  With ``--in-flight M`` strain runs
   ``-c C -m M`` and ghz ``-c C*M --connections C`` (M calls in flight on
   each connection for both).  With ``--baseline PATH`` an earlier strain
   build runs here too, as ``baseline``, in the same rounds (strain /
   baseline is then reported): the engine's before and after.

1b. ``routeguide`` (issue 40): unary calls per generator CPU-second on
   grpc-go's route_guide as grpc-go ships it, in protobuf edition 2023,
   ``routeguide.RouteGuide/GetFeature`` ``{"latitude": 409146138,
   "longitude": -746188906}``, ``--rg-in-flight`` (50) calls in flight on
   ``--rg-connections`` (1) connection, ghz's default shape:

       taskset -c 0 STRAIN grpc --call routeguide.RouteGuide/GetFeature
           --proto PROTOS/route_guide.proto -D DATA -t 1 -c 1 -m 50 -d 5s URL
       taskset -c 0 ghz --insecure --protoset PROTOS/servers.protoset
           --call routeguide.RouteGuide.GetFeature -d DATA -c 50 --connections 1
           -z 5s --duration-stop wait --cpus 1 ADDR

   ghz v0.120.0 reads .proto files with protoparse, which refuses
   ``edition = "2023"`` ("syntax error: unexpected identifier"): with
   ``--ghz-schema auto`` (the default) the script first asks ghz for one
   call through the .proto and, if it fails, gives ghz the descriptor set
   grpc-servers writes (``-write-protoset``, copied to PROTOS by
   scripts/grpc-servers.sh), recording ghz's message.  strain always reads
   the editions .proto.  Goal: strain >= 5x ghz.  The baseline is not run
   here (builds before issue 40 refuse editions schemas).

2. Fixed rate (``--rate`` 10,000 calls/s, ``--rate-duration`` 10 s, same
   connections): ``STRAIN grpc ... -R 10000 -d 10s`` against ``ghz ...
   --rps 10000 -z 10s``.  CPU per call of each, the achieved rate (calls /
   the duration the tool reports) and the generator's CPU share of the wall
   time.  ghz is known not to hold the rate on one core; what it did is
   recorded, and the CPU per call is the fair comparison then.

3. Memory per stream: routeguide.RouteGuide/RouteChat (bidi), each call
   sending ``--mem-messages`` (8) notes one a second and then closing its
   side; ``--mem-connections`` x ``--mem-streams`` (100 x 100 = 10,000)
   calls at once, once each:

       STRAIN grpc --call routeguide.RouteGuide/RouteChat ... -t 1 -c 100 -m 100
           --stream-rate 1 --stream-messages 8 -n 10000 URL
       ghz ... --call routeguide.RouteGuide.RouteChat -c 10000 --connections 100
           -n 10000 --stream-interval 1s --stream-call-count 8 --cpus 1 ADDR

   and a run with few streams (``-m 1``, 100 calls, ``--mem-base-messages``
   3).  Per stream = (peak RSS of the big run - that of the small run) /
   (10,000 - 100), per tool and round; the server's open calls are read
   half-way through to check that the 10,000 were really open at once.

4. Unary gRPC against strain's own HTTP/2 (``--h2-duration`` 5 s, same
   connections): ``STRAIN grpc --call strain.echo.v1.Echo/Unary -D
   '{"message":"xx...x"}'`` (an EchoRequest of ``--message-bytes`` 100
   bytes) against ``strain origin --grpc``, and ``STRAIN --http2 -t 1 -c 50
   -m 1`` (GET /) against ``strain origin --body-size B``, B = the echo
   reply's message bytes (measured with one call at start) + the 5-byte
   gRPC message prefix.  The two are not symmetric: the gRPC request
   carries a DATA frame (prefix + 100 bytes) and its answer a trailers
   HEADERS frame (grpc-status) that the GET and its answer do not.
   Headline: strain gRPC / strain HTTP/2 requests per CPU-second (goal >= 0.8).
   A third contender, ``h2path``, is the same GET of the gRPC method's path
   (/strain.echo.v1.Echo/Unary): nghttp2 never indexes ``:path`` in HPACK,
   so GET / sends it as one static-table byte while each gRPC call
   Huffman-codes its path anew; grpc/h2path shows what is left without that.

Each part runs ``--rounds`` (3) rounds, the order of the two contenders
reversed every other round; the summary gives per-run figures, the median,
the spread (min-max over runs, and the paired per-round ratios) and each
goal met or not.  Before each run the script waits up to ``--settle``
seconds (default 3 here, to keep the default run near 5 minutes) for the
machine to go quiet; ``other CPU`` says how busy the rest of the machine
was during the run.  ``--parts`` picks parts; ``--json OUT`` writes the raw
numbers.

Requirements: ``bash bench/tools.sh`` (ghz v0.120.0 and grpc-servers into
target/go-bin, protos into target/grpc-protos), GNU time, taskset,
a release strain.  Python 3 standard library only.

Example:  python3 bench/grpc.py --json /tmp/grpc.json
"""

import json
import os
import re
import signal
import socket
import sys
import tempfile
import time

from driver import cli, measure, proc, report, tools
from driver.cli import BenchError, SetupError, fmt_dur, log
from driver.report import f_kib, f_num, f_ratio, flags, pct
from driver.servers import Server, StrainOrigin, free_port, http_get

TOOLS = ("strain", "ghz")
PARTS = ("unary", "routeguide", "rate", "memory", "h2")
GOALS = {"unary": 2.5, "routeguide": 5.0, "h2": 0.8}
INSTALL = "bash bench/tools.sh; apt-get install -y time (taskset is in util-linux)"
HELLO_DATA = '{"name":"x"}'
NOTE_DATA = '{"location":{"latitude":1,"longitude":2},"message":"x"}'
RG_DATA = '{"latitude": 409146138, "longitude": -746188906}'
RG_CALL = "routeguide.RouteGuide/GetFeature"
ECHO_PROTO = os.path.join(cli.REPO, "src", "grpc", "proto", "echo.proto")
GRPC_PREFIX = 5  # a gRPC message's compressed flag and 4-byte length
ECHO_PATH = "/strain.echo.v1.Echo/Unary"
# Part 4's contenders: the gRPC call, the GET / the goal is set against, and the same GET
# of the gRPC method's path (a diagnostic: nghttp2 never indexes :path, so a GET / sends it
# from HPACK's static table while every gRPC call Huffman-codes its path anew).
H2_TOOLS = ("grpc", "h2", "h2path")


# ---------------------------------------------------------------- pure parts

def varint_len(n):
    """Bytes of n as a protobuf varint."""
    size = 1
    while n >= 0x80:
        n >>= 7
        size += 1
    return size


def echo_message_len(total):
    """The length L of EchoRequest.message (field 1, a string) that makes the
    encoded EchoRequest `total` bytes: 1 tag byte + varint(L) + L."""
    for length in range(total, -1, -1):
        if 1 + varint_len(length) + length == total:
            return length
    raise ValueError("no EchoRequest of exactly %d bytes" % total)


def parse_ghz(text):
    """ghz's summary text: count, total seconds, its req/s, the status
    distribution (name -> calls) and the OK calls."""
    import re
    out = {"codes": {}}
    m = re.search(r"^\s*Count:\s*(\d+)", text, re.M)
    if m:
        out["count"] = int(m.group(1))
    m = re.search(r"^\s*Total:\s*([0-9.]+)\s*(ns|us|µs|ms|s|m|h)\b", text, re.M)
    if m:
        out["total_s"] = float(m.group(1)) * {"ns": 1e-9, "us": 1e-6, "µs": 1e-6,
                                               **tools.TIME_UNITS}[m.group(2)]
    m = re.search(r"^\s*Requests/sec:\s*([0-9.]+)", text, re.M)
    if m:
        out["rps"] = float(m.group(1))
    part = text.split("Status code distribution:", 1)
    if len(part) == 2:
        block = part[1].split("Error distribution:", 1)[0]
        for name, n in re.findall(r"^\s*\[([A-Za-z]+)\]\s+(\d+) responses", block, re.M):
            out["codes"][name] = out["codes"].get(name, 0) + int(n)
    out["ok"] = out["codes"].get("OK", 0) if "count" in out else None
    return out


def per_stream_kib(big_kb, base_kb, big_streams, base_streams):
    """KiB of peak RSS each stream adds: the difference of two runs' peak RSS
    over the difference of their streams; None if anything is missing."""
    if None in (big_kb, base_kb, big_streams, base_streams) or big_streams <= base_streams:
        return None
    return (big_kb - base_kb) / (big_streams - base_streams)


def spread(values):
    """(min, max) of the values that are not None, or None."""
    xs = [x for x in values if x is not None]
    return (min(xs), max(xs)) if xs else None


def f_spread(values, fmt=f_num):
    """The spread as text: "min-max"."""
    s = spread(values)
    return "n/a" if s is None else "%s-%s" % (fmt(s[0]), fmt(s[1]))


def goal_verdict(value, goal):
    """(met or not, a sentence) for a ratio that must be >= goal."""
    if value is None:
        return None, "n/a (no figure)"
    if value >= goal:
        return True, "met (%.2fx >= %.2gx)" % (value, goal)
    return False, "missed: %.2fx, %.0f%% short of %.2gx" % (value, 100 * (1 - value / goal), goal)


# ---------------------------------------------------------------- servers

class GrpcGo(Server):
    """taskset -c CPU grpc-servers -addr 127.0.0.1:PORT -admin 127.0.0.1:ADMIN"""

    def __init__(self, binary, cpu):
        super().__init__(cpu, "/counts", lambda r: r[0].startswith("HTTP/1.1 200"))
        self.binary = binary
        self.admin = free_port()
        self.addr = "127.0.0.1:%d" % self.port
        self.url = "http://" + self.addr

    def argv(self):
        return ["taskset", "-c", str(self.cpu), self.binary, "-addr", self.addr,
                "-admin", "127.0.0.1:%d" % self.admin]

    def ready(self):
        r = http_get(self.admin, "/counts")
        return r is not None and self.probe_ok(r)

    def counts(self):
        """The server's /counts document, or None."""
        r = http_get(self.admin, "/counts")
        try:
            return json.loads(r[2]) if r else None
        except ValueError:
            return None

    def reset(self):
        http_get(self.admin, "/reset")


class GrpcOrigin(Server):
    """taskset -c CPU STRAIN origin --grpc --listen 127.0.0.1:PORT -t 1"""

    stop_signal = signal.SIGINT  # the origin prints what it served

    def __init__(self, strain, cpu):
        super().__init__(cpu, None, None)
        self.strain = strain
        self.addr = "127.0.0.1:%d" % self.port
        self.url = "http://" + self.addr

    def argv(self):
        return ["taskset", "-c", str(self.cpu), self.strain, "origin", "--grpc",
                "--listen", self.addr, "-t", "1"]

    def ready(self):
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                return True
        except OSError:
            return False


class BodyOrigin(StrainOrigin):
    """taskset -c CPU STRAIN origin --listen 127.0.0.1:PORT -t 1 --body-size B"""

    def __init__(self, strain, cpu, body_size):
        super().__init__(strain, cpu)
        self.body_size = body_size

    def argv(self):
        return super().argv() + ["--body-size", str(self.body_size)]


# ---------------------------------------------------------------- runs

def strain_grpc(args, call, proto, data, url, json_path, *extra, binary=None):
    """A strain grpc command line, pinned (`binary`: another strain build)."""
    return proc.pinned(args.gen_cpu, [binary or args.strain, "grpc", "--call", call, "--proto",
                                      proto, "-D", data, "-t", "1"] + list(extra)
                       + ["--json", json_path, url])


def ghz(args, call, proto, data, addr, *extra, schema=None):
    """A ghz command line, pinned; `schema` replaces ["--proto", proto] (e.g. --protoset)."""
    return proc.pinned(args.gen_cpu, [args.ghz, "--insecure"] + (schema or ["--proto", proto])
                       + ["--call", call, "-d", data] + list(extra) + ["--cpus", "1", addr])


def ghz_call(call):
    """A method as ghz names it: package.Service.Method (strain: package.Service/Method)."""
    return call.replace("/", ".")


def routeguide_argv(tool, args, greeter, json_path):
    """The command line of a routeguide run: GetFeature, rg_in_flight calls on each of
    rg_connections connections, against grpc-go's editions route_guide."""
    rg = os.path.join(args.protos, "route_guide.proto")
    c, m, dur = args.rg_connections, args.rg_in_flight, fmt_dur(args.rg_duration)
    if tool == "strain":
        return strain_grpc(args, RG_CALL, rg, RG_DATA, greeter.url, json_path,
                           "-c", str(c), "-m", str(m), "-d", dur)
    return ghz(args, ghz_call(RG_CALL), rg, RG_DATA, greeter.addr, "-c", str(c * m),
               "--connections", str(c), "-z", dur, "--duration-stop", "wait",
               schema=args.ghz_schema_argv)


def probe_ghz_editions(args, greeter):
    """Whether ghz reads the editions route_guide.proto: one GetFeature call through it.
    (reads it, ghz's output)"""
    rg = os.path.join(args.protos, "route_guide.proto")
    res = proc.run(ghz(args, ghz_call(RG_CALL), rg, RG_DATA, greeter.addr, "-n", "1", "-c", "1"),
                   timeout=30)
    text = (res["stdout"] + res["stderr"]).strip()
    return parse_ghz(text).get("ok") == 1, text[-600:]


def unary_argv(tool, args, part, greeter, json_path):
    """The command line of a unary (closed-loop or fixed-rate) run against the Greeter."""
    hello = os.path.join(args.protos, "helloworld.proto")
    c = str(args.connections)
    if part == "unary":
        dur = fmt_dur(args.unary_duration)
        if tool in ("strain", "baseline"):
            return strain_grpc(args, "helloworld.Greeter/SayHello", hello, HELLO_DATA,
                               greeter.url, json_path, "-c", c, "-m", str(args.in_flight),
                               "-d", dur, binary=args.baseline if tool == "baseline" else None)
        return ghz(args, "helloworld.Greeter.SayHello", hello, HELLO_DATA, greeter.addr,
                   "-c", str(args.connections * args.in_flight), "--connections", c,
                   "-z", dur, "--duration-stop", "wait")
    dur = fmt_dur(args.rate_duration)
    if tool == "strain":
        return strain_grpc(args, "helloworld.Greeter/SayHello", hello, HELLO_DATA, greeter.url,
                           json_path, "-c", c, "-m", "1", "-R", str(args.rate), "-d", dur)
    return ghz(args, "helloworld.Greeter.SayHello", hello, HELLO_DATA, greeter.addr,
               "-c", c, "--connections", c, "--rps", str(args.rate), "-z", dur,
               "--duration-stop", "wait")


def memory_argv(tool, args, greeter, json_path, streams_per_conn, messages):
    """The command line of a RouteChat run holding connections x streams_per_conn calls."""
    rg = os.path.join(args.protos, "route_guide.proto")
    calls = args.mem_connections * streams_per_conn
    if tool == "strain":
        return strain_grpc(args, "routeguide.RouteGuide/RouteChat", rg, NOTE_DATA, greeter.url,
                           json_path, "-c", str(args.mem_connections), "-m",
                           str(streams_per_conn), "--stream-rate", "1", "--stream-messages",
                           str(messages), "-n", str(calls))
    return ghz(args, "routeguide.RouteGuide.RouteChat", rg, NOTE_DATA, greeter.addr,
               "-c", str(calls), "--connections", str(args.mem_connections), "-n", str(calls),
               "--stream-interval", "1s", "--stream-call-count", str(messages))


def h2_argv(tool, args, origin, json_path):
    """The command line of part 4: strain grpc Echo/Unary or strain --http2 GET /."""
    c, dur = str(args.connections), fmt_dur(args.h2_duration)
    if tool == "grpc":
        data = json.dumps({"message": "x" * echo_message_len(args.message_bytes)})
        return strain_grpc(args, "strain.echo.v1.Echo/Unary", ECHO_PROTO, data, origin.url,
                           json_path, "-c", c, "-m", "1", "-d", dur)
    url = origin.url + (ECHO_PATH[1:] if tool == "h2path" else "")
    return proc.pinned(args.gen_cpu, [args.strain, "--http2", "-t", "1", "-c", c, "-m", "1",
                                      "-d", dur, "--json", json_path, url])


def read_strain_grpc(run, json_path):
    """OK calls, duration, messages and errors from strain grpc's --json."""
    doc = tools.load_strain_json(json_path, run)
    if not doc:
        return {}
    g = doc.get("grpc") or {}
    codes = g.get("codes") or {}
    out = {"calls": codes.get("ok", 0), "duration": doc.get("duration_s"),
           "codes": codes, "messages_sent": g.get("messages_sent"),
           "messages_received": g.get("messages_received"),
           "reply_bytes": g.get("message_bytes_received"), "requests": doc.get("requests")}
    bad = {k: v for k, v in codes.items() if k != "ok" and v}
    if bad:
        run["problems"].append("gRPC codes %s" % bad)
    errs = {k: v for k, v in (doc.get("errors") or {}).items() if isinstance(v, int) and v}
    if errs:
        run["problems"].append("errors %s" % errs)
    for k in ("http_errors", "missing_status", "bad_messages"):
        if g.get(k):
            run["problems"].append("%s %d" % (k, g[k]))
    if (doc.get("rate") or {}).get("unsent"):
        run["problems"].append("%d unsent" % doc["rate"]["unsent"])
    return out


def measured_run(part, tool, rnd, inner, server, args, tmpdir, json_path, poll=None,
                 timeout=None):
    """One generator run under GNU time, with the server's CPU around it; the
    figures each part reads: calls (OK), duration, rate, CPU per call, peak RSS."""
    time_path = os.path.join(tmpdir, "time-%s-%s-%d.txt" % (part, tool, rnd))
    if isinstance(server, GrpcGo):
        server.reset()
    time.sleep(1)  # let the previous run's connections close on the server side
    run = measure.measured(proc.timed(inner, time_path), timeout or 120, args.settle,
                           {"server_cpu": server.cpu_seconds}, poll=poll)
    run.update(part=part, tool=tool, round=rnd, argv=inner, stdout=run["stdout"][-8000:],
               stderr=run["stderr"][-4000:], problems=tools.exit_problems(run))
    t = proc.read_timed(time_path)
    run["maxrss_kb"] = t.get("maxrss_kb")
    if not t:
        run["problems"].append("no GNU time output")
    if tool == "ghz":
        g = parse_ghz(run["stdout"])
        run["parsed"] = g
        calls, dur = g.get("ok"), g.get("total_s")
        if g.get("count") is None:
            run["problems"].append("no ghz summary")
        elif calls != g["count"]:
            run["problems"].append("ghz codes %s" % g["codes"])
    elif tool in ("h2", "h2path"):
        parsed = tools.parse_strain(run, json_path)
        run["parsed"] = {k: v for k, v in parsed.items() if k != "rate"}
        calls, dur = parsed.get("ok"), parsed.get("duration")
        if parsed.get("non_2xx"):
            run["problems"].append("non-2xx %d" % parsed["non_2xx"])
    else:
        parsed = read_strain_grpc(run, json_path)
        run["parsed"] = parsed
        calls, dur = parsed.get("calls"), parsed.get("duration")
    if isinstance(server, GrpcGo):
        c = server.counts() or {}
        run["server_ok"] = (c.get("codes") or {}).get("OK")
        run["server_connections"] = c.get("connections")
        if calls is not None and run["server_ok"] != calls:
            run["problems"].append("server counted %s OK calls, the tool %s" % (
                run["server_ok"], calls))
    if not calls:
        run["problems"].append("no calls")
    cpu = run["cpu"]
    run.update(calls=calls, duration=dur,
               rate=(calls / dur) if calls and dur else None,
               calls_per_cpu_s=(calls / cpu) if calls and cpu > 0 else None,
               cpu_us_per_call=(1e6 * cpu / calls) if calls else None)
    return run


def run_line(r, extra=""):
    log("  %-6s round %d %-6s %9s calls in %6.2f s = %9s/s  cpu %.2f s (user %.2f sys %.2f)  "
        "%9s calls/CPU-s  %6.2f us/call  RSS %s  server CPU %3.0f%%  other CPU %3.0f%%%s%s" % (
            r["part"], r["round"], r["tool"], f_num(r["calls"]), r["duration"] or 0,
            f_num(r["rate"]), r["cpu"], r["utime"], r["stime"], f_num(r["calls_per_cpu_s"]),
            r["cpu_us_per_call"] or 0, f_kib(r["maxrss_kb"]),
            100 * (r["server_cpu_share"] or 0), 100 * (r["other_cpu_share"] or 0), extra,
            flags(r)))


# ---------------------------------------------------------------- summary

def runs_table(rep, runs, extra_cols=()):
    """Every run of a part, in the order run."""
    rep.table(["round", "tool", "calls (OK)", "duration", "calls/s", "CPU s (user+sys)",
               "calls/CPU-s", "CPU us/call", "peak RSS", "server CPU", "other CPU"]
              + [c[0] for c in extra_cols] + ["problems"],
              [[r["round"], r["tool"], f_num(r["calls"]),
                "n/a" if r["duration"] is None else "%.2f s" % r["duration"], f_num(r["rate"]),
                "%.2f (%.2f+%.2f)" % (r["cpu"], r["utime"], r["stime"]),
                f_num(r["calls_per_cpu_s"]), f_num(r["cpu_us_per_call"], "{:.2f}"),
                f_kib(r["maxrss_kb"]), pct(r["server_cpu_share"], "%.0f%%"),
                pct(r["other_cpu_share"], "%.0f%%")] + [c[1](r) for c in extra_cols]
               + ["; ".join(r["problems"]) or "-"] for r in runs])


def headline(rep, runs, names, figure, base, label, fmt=f_num):
    """Per contender: per-run figures, median, spread, ratio to `base`; the paired ratios."""
    c = report.compare(runs, "tool", names, figure, base)
    rep.table(["tool", label + " per run", "median", "spread (min-max)",
               "ratio of medians vs " + base, "paired per-round ratios"],
              [[n, ", ".join(fmt(r[figure]) for r in c["by"][n]), fmt(c["medians"][n]),
                f_spread([r[figure] for r in c["by"][n]], fmt), f_ratio(c["ratios"][n]),
                "-" if n == base else ", ".join(f_ratio(p) for p in c["paired"][n])]
               for n in names])
    return c


def summarize_unary(rep, args, runs, part="unary"):
    names = tuple(n for n in ("strain", "ghz", "baseline") if any(r["tool"] == n for r in runs))
    if part == "unary":
        conns, inflight = args.connections, args.in_flight
        rep.para("**1. Unary calls per generator CPU-second**: helloworld.Greeter/SayHello, "
                 "%d calls in flight over %d connections, %s per run, %d rounds:" % (
                     conns * inflight, conns, fmt_dur(args.unary_duration), args.rounds))
    else:
        conns, inflight = args.rg_connections, args.rg_in_flight
        rep.para("**1b. Unary calls per generator CPU-second, editions route_guide**: %s %s, "
                 "%d calls in flight over %d connection(s), %s per run, %d rounds; strain "
                 "reads route_guide.proto (edition 2023), ghz %s:" % (
                     RG_CALL, RG_DATA, conns * inflight, conns, fmt_dur(args.rg_duration),
                     args.rounds, " ".join([os.path.basename(a) for a in args.ghz_schema_argv or []]
                                          or ["--proto", "the same"])))
    c = headline(rep, runs, names, "calls_per_cpu_s", "ghz", "calls/CPU-s")
    rss = report.compare(runs, "tool", names, "maxrss_kb", "ghz")
    wall = report.compare(runs, "tool", names, "rate", "ghz")
    rep.para("Median calls/s (wall): %s; median peak RSS: %s (strain/ghz %s)." % (
        ", ".join("%s %s" % (n, f_num(wall["medians"][n])) for n in names),
        ", ".join("%s %s" % (n, f_kib(rss["medians"][n])) for n in names),
        f_ratio(rss["ratios"]["strain"])))
    out = {"median_calls_per_cpu_s": c["medians"], "ratio": c["ratios"]["strain"],
           "paired": c["paired"]["strain"], "median_rps": wall["medians"],
           "median_maxrss_kb": rss["medians"], "ratio_maxrss": rss["ratios"]["strain"]}
    if "baseline" in names:
        b = report.compare(runs, "tool", names, "calls_per_cpu_s", "baseline")
        out.update(ratio_vs_baseline=b["ratios"]["strain"], paired_vs_baseline=b["paired"]["strain"])
        rep.para("strain / baseline (the build before), calls per CPU-second: ratio of medians "
                 "%s, paired per round %s." % (f_ratio(b["ratios"]["strain"]), ", ".join(
                     f_ratio(x) for x in b["paired"]["strain"])))
    runs_table(rep, runs, [("server OK calls", lambda r: f_num(r.get("server_ok"))),
                           ("server connections", lambda r: f_num(r.get("server_connections")))])
    return out


def summarize_rate(rep, args, runs):
    rep.para("**2. Fixed rate, %s calls/s** asked, %d connections, %s per run, %d rounds "
             "(CPU per call = CPU s / OK calls; achieved = OK calls / the duration the tool "
             "reports):" % (f_num(args.rate), args.connections, fmt_dur(args.rate_duration),
                            args.rounds))
    per = headline(rep, runs, TOOLS, "cpu_us_per_call", "ghz", "CPU us/call",
                   lambda x: f_num(x, "{:.2f}"))
    ach = report.compare(runs, "tool", TOOLS, "rate", "ghz")
    share = report.compare(runs, "tool", TOOLS, "gen_cpu_share", "ghz")
    rep.table(["tool", "achieved calls/s per run", "median achieved", "vs asked",
               "gen CPU (CPU s / wall s) per run", "median gen CPU", "median peak RSS"],
              [[t, ", ".join(f_num(r["rate"]) for r in ach["by"][t]), f_num(ach["medians"][t]),
                "n/a" if ach["medians"][t] is None else
                "%+.1f%%" % (100 * (ach["medians"][t] / args.rate - 1)),
                ", ".join(pct(r["gen_cpu_share"]) for r in share["by"][t]),
                pct(share["medians"][t]),
                f_kib(report.median([r["maxrss_kb"] for r in ach["by"][t]]))] for t in TOOLS])
    runs_table(rep, runs, [("server OK calls", lambda r: f_num(r.get("server_ok")))])
    return {"median_cpu_us_per_call": per["medians"], "ratio_cpu_per_call": per["ratios"]["strain"],
            "paired_cpu_per_call": per["paired"]["strain"], "median_achieved": ach["medians"],
            "median_gen_cpu_share": share["medians"]}


def memory_rounds(runs, args):
    """One record per tool and round: both runs' peak RSS and the KiB per stream."""
    big_n = args.mem_connections * args.mem_streams
    base_n = args.mem_connections
    out = []
    for r in runs:
        if r["kind"] != "big":
            continue
        base = next((b for b in runs if b["kind"] == "base" and b["tool"] == r["tool"]
                     and b["round"] == r["round"]), None)
        out.append({"tool": r["tool"], "round": r["round"], "big_kb": r["maxrss_kb"],
                    "base_kb": base and base["maxrss_kb"], "open_mid_run": r.get("open_mid_run"),
                    "kib_per_stream": per_stream_kib(r["maxrss_kb"], base and base["maxrss_kb"],
                                                     big_n, base_n)})
    return out


def summarize_memory(rep, args, runs):
    big_n = args.mem_connections * args.mem_streams
    rep.para("**3. Memory per stream**: routeguide.RouteGuide/RouteChat (bidi), %s calls at "
             "once over %d connections, each sending %d notes one a second; against %d calls "
             "(one per connection) of %d notes; per stream = (peak RSS big - peak RSS small) / "
             "%s streams; %d rounds:" % (f_num(big_n), args.mem_connections, args.mem_messages,
                                         args.mem_connections, args.mem_base_messages,
                                         f_num(big_n - args.mem_connections), args.rounds))
    rounds = memory_rounds(runs, args)
    c = headline(rep, rounds, TOOLS, "kib_per_stream", "ghz", "KiB/stream",
                 lambda x: f_num(x, "{:.2f}"))
    rep.table(["tool", "peak RSS, %s streams, per run" % f_num(big_n),
               "peak RSS, %d streams, per run" % args.mem_connections,
               "server's open calls mid-run"],
              [[t, ", ".join(f_kib(x["big_kb"]) for x in rounds if x["tool"] == t),
                ", ".join(f_kib(x["base_kb"]) for x in rounds if x["tool"] == t),
                ", ".join(f_num(x["open_mid_run"]) for x in rounds if x["tool"] == t)]
               for t in TOOLS])
    runs_table(rep, runs, [("streams", lambda r: f_num(r["streams"])),
                           ("server OK calls", lambda r: f_num(r.get("server_ok")))])
    return {"median_kib_per_stream": c["medians"], "ratio": c["ratios"]["strain"],
            "paired": c["paired"]["strain"], "rounds": rounds}


def summarize_h2(rep, args, runs, checks):
    rep.para("**4. Unary gRPC against strain's own HTTP/2**, both strain, %d connections "
             "-m 1, %s per run, %d rounds: `grpc` = Echo/Unary with a %d-byte EchoRequest "
             "against `strain origin --grpc` (reply: %s message bytes + %d prefix); `h2` = "
             "GET / against `strain origin --body-size %s`, over h2c; `h2path` = the same GET "
             "of %s (the gRPC call's :path):" % (
                 args.connections, fmt_dur(args.h2_duration), args.rounds, args.message_bytes,
                 checks.get("reply_message_bytes"), GRPC_PREFIX, checks.get("body_size"),
                 ECHO_PATH))
    c = headline(rep, runs, H2_TOOLS, "calls_per_cpu_s", "h2", "requests/CPU-s")
    p = report.compare(runs, "tool", H2_TOOLS, "calls_per_cpu_s", "h2path")
    rep.para("grpc/h2path (same :path): ratio of medians %s, paired per round %s." % (
        f_ratio(p["ratios"]["grpc"]), ", ".join(f_ratio(x) for x in p["paired"]["grpc"])))
    runs_table(rep, runs)
    return {"median_req_per_cpu_s": c["medians"], "ratio": c["ratios"]["grpc"],
            "paired": c["paired"]["grpc"], "ratio_vs_same_path": p["ratios"]["grpc"],
            "paired_vs_same_path": p["paired"]["grpc"], "checks": checks}


# ---------------------------------------------------------------- main

def options():
    ap = cli.parser(__doc__.splitlines()[0], "rounds", "warmup", connections=50, settle=3.0)
    ap.add_argument("--ghz", default=os.path.join(cli.REPO, "target", "go-bin", "ghz"))
    ap.add_argument("--grpc-servers", default=os.path.join(cli.REPO, "target", "go-bin",
                                                           "grpc-servers"))
    ap.add_argument("--protos", default=os.path.join(cli.REPO, "target", "grpc-protos"),
                    help="directory with helloworld.proto and route_guide.proto")
    ap.add_argument("--parts", default=",".join(PARTS), help="comma-separated subset of "
                    + ", ".join(PARTS))
    ap.add_argument("--unary-duration", type=cli.parse_duration, default=5.0)
    ap.add_argument("--in-flight", type=int, default=1,
                    help="part 1: calls in flight on each connection (strain -m; ghz -c is "
                         "connections x this)")
    ap.add_argument("--rg-connections", type=int, default=1, help="routeguide: connections")
    ap.add_argument("--rg-in-flight", type=int, default=50,
                    help="routeguide: calls in flight on each connection")
    ap.add_argument("--rg-duration", type=cli.parse_duration, default=5.0)
    ap.add_argument("--ghz-schema", choices=("auto", "proto", "protoset"), default="auto",
                    help="routeguide: how ghz gets the editions schema: the .proto, the "
                         "descriptor set PROTOS/servers.protoset, or the .proto if ghz reads it")
    ap.add_argument("--rate", type=int, default=10000, help="calls/s of part 2")
    ap.add_argument("--rate-duration", type=cli.parse_duration, default=10.0)
    ap.add_argument("--mem-connections", type=int, default=100)
    ap.add_argument("--mem-streams", type=int, default=100, help="calls per connection, part 3")
    ap.add_argument("--mem-messages", type=int, default=8,
                    help="notes each call of the big memory run sends, one a second")
    ap.add_argument("--mem-base-messages", type=int, default=3,
                    help="notes each call of the small memory run sends")
    ap.add_argument("--h2-duration", type=cli.parse_duration, default=5.0)
    ap.add_argument("--message-bytes", type=int, default=100,
                    help="encoded size of part 4's EchoRequest")
    args = cli.parse(ap)
    args.parts = [p.strip() for p in args.parts.split(",") if p.strip()]
    bad = [p for p in args.parts if p not in PARTS]
    if bad:
        raise SetupError("unknown part(s) %s" % ", ".join(bad))
    if args.baseline and not set(args.parts) & {"unary"}:
        raise SetupError("--baseline runs in part unary only (helloworld)")
    if min(args.in_flight, args.rg_connections, args.rg_in_flight) < 1:
        raise SetupError("--in-flight, --rg-connections and --rg-in-flight must be at least 1")
    args.ghz_schema_argv = None
    if args.mem_streams < 2 or args.mem_connections < 1:
        raise SetupError("--mem-streams must be at least 2, --mem-connections at least 1")
    echo_message_len(args.message_bytes)
    return args


def main(stack):
    args = options()
    cli.require(("taskset", "/usr/bin/time"), INSTALL)
    for path in (args.ghz, args.grpc_servers, os.path.join(args.protos, "helloworld.proto"),
                 os.path.join(args.protos, "route_guide.proto")):
        if not os.path.exists(path):
            raise SetupError("missing %s; run: %s" % (path, INSTALL))
    nofile = proc.raise_nofile()
    versions = {"strain": [args.strain, "--version"], "ghz": [args.ghz, "--version"]}
    if args.baseline:
        versions["baseline"] = [args.baseline, "--version"]
    info = cli.machine_info(versions)
    info["ghz"] = "ghz v0.120.0 (bench/tools.sh; it says %r)" % info["ghz"]
    info["rlimit_nofile"] = nofile
    tmpdir = stack.enter_context(tempfile.TemporaryDirectory(prefix="strain-bench-grpc-"))
    names = {args.strain: "STRAIN", args.ghz: "GHZ", ECHO_PROTO: "src/grpc/proto/echo.proto",
             os.path.join(args.protos, "helloworld.proto"): "PROTOS/helloworld.proto",
             os.path.join(args.protos, "route_guide.proto"): "PROTOS/route_guide.proto",
             os.path.join(args.protos, "servers.protoset"): "PROTOS/servers.protoset"}
    if args.baseline:
        names[args.baseline] = "BASELINE"
    cmds = ["taskset -c %d GRPC_SERVERS -addr ADDR -admin ADMIN" % args.server_cpu]
    result, runs = {}, {}
    greeter = None
    checks = {}
    if set(args.parts) & {"unary", "routeguide", "rate", "memory"}:
        greeter = stack.enter_context(GrpcGo(args.grpc_servers, args.server_cpu))
        log("grpc-servers: %s (pid %d), admin 127.0.0.1:%d" % (greeter.addr, greeter.proc.pid,
                                                               greeter.admin))
        if args.warmup > 0:
            log("warm-up: strain %s" % fmt_dur(args.warmup))
            hello = os.path.join(args.protos, "helloworld.proto")
            proc.run(strain_grpc(args, "helloworld.Greeter/SayHello", hello, HELLO_DATA,
                                 greeter.url, os.path.join(tmpdir, "warm.json"), "-c",
                                 str(args.connections), "-d", fmt_dur(args.warmup)),
                     timeout=args.warmup + 30)
    if "routeguide" in args.parts:
        protoset = os.path.join(args.protos, "servers.protoset")
        if args.ghz_schema != "protoset":
            reads, said = probe_ghz_editions(args, greeter)
            checks.update(ghz_reads_editions_proto=reads, ghz_on_editions_proto=said)
            log("ghz --proto route_guide.proto (edition 2023): %s" % (
                "one call OK" if reads else "refused: " + said.splitlines()[-1]))
            if not reads and args.ghz_schema == "proto":
                raise BenchError("ghz does not read the editions .proto:\n" + said)
        if args.ghz_schema == "protoset" or (args.ghz_schema == "auto"
                                             and not checks["ghz_reads_editions_proto"]):
            if not os.path.exists(protoset):
                raise SetupError("missing %s; run: %s" % (protoset, INSTALL))
            args.ghz_schema_argv = ["--protoset", protoset]
        checks["ghz_schema"] = args.ghz_schema_argv or ["--proto", "route_guide.proto"]

    def display(argv, json_path):
        return proc.display(argv, dict(names, **{json_path: "FILE", greeter.url: "URL",
                                                 greeter.addr: "ADDR"}))

    for part in ("unary", "routeguide", "rate"):
        if part not in args.parts:
            continue
        contenders = cli.contenders(args, TOOLS) if part == "unary" else TOOLS
        log("%s: %d rounds of %s" % (part, args.rounds, ", ".join(contenders)))
        runs[part] = []
        for i, tool in measure.schedule(args.rounds, contenders):
            jp = os.path.join(tmpdir, "%s-%s-%d.json" % (part, tool, i))
            if part == "routeguide":
                inner = routeguide_argv(tool, args, greeter, jp)
            else:
                inner = unary_argv(tool, args, part, greeter, jp)
            dur = {"unary": args.unary_duration, "routeguide": args.rg_duration,
                   "rate": args.rate_duration}[part]
            runs[part].append(measured_run(part, tool, i, inner, greeter, args, tmpdir, jp,
                                           timeout=dur + 60))
            run_line(runs[part][-1])
            if i == 1:
                cmds.append(display(inner, jp))

    if "memory" in args.parts:
        log("memory: %d rounds, %d x %d RouteChat streams against %d" % (
            args.rounds, args.mem_connections, args.mem_streams, args.mem_connections))
        runs["memory"] = []
        for i, tool in measure.schedule(args.rounds, TOOLS):
            for kind, m, msgs in (("big", args.mem_streams, args.mem_messages),
                                  ("base", 1, args.mem_base_messages)):
                jp = os.path.join(tmpdir, "mem-%s-%s-%d.json" % (kind, tool, i))
                inner = memory_argv(tool, args, greeter, jp, m, msgs)
                state = {"open": None}

                def poll(pid, elapsed, msgs=msgs, state=state):
                    if state["open"] is None and elapsed >= msgs / 2:
                        state["open"] = (greeter.counts() or {}).get("active")

                r = measured_run("memory", tool, i, inner, greeter, args, tmpdir, jp,
                                 poll=poll, timeout=msgs + 90)
                r.update(kind=kind, streams=args.mem_connections * m, open_mid_run=state["open"])
                runs["memory"].append(r)
                run_line(r, "  streams %d, open mid-run %s" % (r["streams"],
                                                                f_num(state["open"])))
                if i == 1:
                    cmds.append(display(inner, jp))

    if "h2" in args.parts:
        origin = stack.enter_context(GrpcOrigin(args.strain, args.server_cpu))
        jp = os.path.join(tmpdir, "probe.json")
        data = json.dumps({"message": "x" * echo_message_len(args.message_bytes)})
        probe = proc.run([args.strain, "grpc", "--call", "strain.echo.v1.Echo/Unary", "--proto",
                          ECHO_PROTO, "-D", data, "-t", "1", "-c", "1", "-n", "1", "--json", jp,
                          origin.url], timeout=30)
        try:
            with open(jp) as f:
                g = json.load(f).get("grpc") or {}
        except (OSError, ValueError):
            raise BenchError("strain grpc could not call strain origin --grpc's Echo/Unary:\n"
                             + probe["stdout"] + probe["stderr"])
        if (g.get("codes") or {}).get("ok") != 1:
            raise BenchError("Echo/Unary probe did not end OK: %s" % g)
        checks.update(request_message_bytes=g.get("message_bytes_sent"),
                      reply_message_bytes=g.get("message_bytes_received"))
        checks["body_size"] = checks["reply_message_bytes"] + GRPC_PREFIX
        plain = stack.enter_context(BodyOrigin(args.strain, args.server_cpu,
                                               checks["body_size"]))
        for path in ("/", ECHO_PATH):
            r = http_get(plain.port, path)
            checks["h2_origin_body_bytes_%s" % path] = n = len(r[2]) if r else None
            if n != checks["body_size"]:
                raise BenchError("strain origin answered %s with %s bytes, not %d" % (
                    path, n, checks["body_size"]))
        log("h2: strain origin --grpc %s, strain origin --body-size %d %s; request %s bytes, "
            "reply %s bytes" % (origin.url, checks["body_size"], plain.url,
                                checks["request_message_bytes"], checks["reply_message_bytes"]))
        servers = {"grpc": origin, "h2": plain, "h2path": plain}
        runs["h2"] = []
        for i, tool in measure.schedule(args.rounds, H2_TOOLS):
            jp = os.path.join(tmpdir, "h2-%s-%d.json" % (tool, i))
            inner = h2_argv(tool, args, servers[tool], jp)
            runs["h2"].append(measured_run("h2", tool, i, inner, servers[tool], args, tmpdir, jp,
                                           timeout=args.h2_duration + 60))
            run_line(runs["h2"][-1])
            if i == 1:
                cmds.append(proc.display(inner[:-1], dict(names, **{jp: "FILE"})) + " "
                            + {"grpc": "GRPC_ORIGIN", "h2": "H2_ORIGIN/",
                               "h2path": "H2_ORIGIN" + ECHO_PATH}[tool])
        cmds.append("taskset -c %d STRAIN origin --grpc --listen ADDR -t 1   # GRPC_ORIGIN"
                    % args.server_cpu)
        cmds.append("taskset -c %d STRAIN origin --listen ADDR -t 1 --body-size %d   # H2_ORIGIN"
                    % (args.server_cpu, checks["body_size"]))

    rep = report.Report()
    rep.header(info, info["strain"], info["ghz"])
    goals = {}
    if "unary" in runs:
        result["unary"] = summarize_unary(rep, args, runs["unary"])
        goals["strain/ghz unary calls per CPU-second >= 2.5x"] = goal_verdict(
            result["unary"]["ratio"], GOALS["unary"])
    if "routeguide" in runs:
        result["routeguide"] = summarize_unary(rep, args, runs["routeguide"], "routeguide")
        result["routeguide"]["checks"] = {k: v for k, v in checks.items()
                                          if k.startswith("ghz_")}
        goals["strain/ghz GetFeature (editions route_guide) calls per CPU-second >= 5x"] = \
            goal_verdict(result["routeguide"]["ratio"], GOALS["routeguide"])
    if "rate" in runs:
        result["rate"] = summarize_rate(rep, args, runs["rate"])
    if "memory" in runs:
        result["memory"] = summarize_memory(rep, args, runs["memory"])
    if "h2" in runs:
        result["h2"] = summarize_h2(rep, args, runs["h2"], checks)
        goals["strain gRPC / strain HTTP/2 requests per CPU-second >= 0.8x"] = goal_verdict(
            result["h2"]["ratio"], GOALS["h2"])
    result["goals"] = {k: v[0] for k, v in goals.items()}
    rep.para("Goals: %s." % "; ".join("%s: %s" % (k, v[1]) for k, v in goals.items()))
    rep.commands("Commands (GRPC_SERVERS = target/go-bin/grpc-servers, URL = http://ADDR of it, "
                 "PROTOS = target/grpc-protos, GHZ = target/go-bin/ghz, STRAIN = %s; "
                 "each generator under /usr/bin/time -f '%%M %%U "
                 "%%S' -o FILE):" % (args.strain + (", BASELINE = %s" % args.baseline
                                                    if args.baseline else "")), cmds)
    report.finish(args, info, rep.text(), {"summary": result, "runs": runs, "commands": cmds})


if __name__ == "__main__":
    sys.exit(cli.run(main))
