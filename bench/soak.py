#!/usr/bin/env python3
"""Soak: a long constant-rate run, for leaks and exact counts (issues 9 and 33).

A private server logs every request to an access log.  strain runs pinned to
--gen-cpu at a constant rate for 10 minutes (--protocol picks the server and
strain's flags; -c and -m are --connections and --streams):

    h1 (default):  nginx, HTTP/1.1            strain -t2 -c1000 -R20000 -d10m --json OUT URL
    h2:            nginx, h2c (listen http2)  strain --http2 -t2 -c100 -m10 -R20000 -d10m ...
    h3:            Caddy, HTTPS + HTTP/3      strain --http3 -k -t2 -c20 -m40 -R20000 -d10m ...

With --server strain, h3's server is strain's own origin (``origin --tls
--http3``, the --strain binary), which counts the requests it answers in
/_strain/stats instead of a log: it holds rates Caddy does not here.

nginx (one worker) logs to its access.log (a line per request); Caddy
(Debian's /usr/bin/caddy, configured as in bench/h3.py: private HOME, a
self-signed certificate for localhost made by openssl) gets a ``log``
directive writing JSON to access.log, rolling disabled, and the lines whose
msg is "handled request" are counted, there and in Caddy's default log
(its output), where requests go whose Host is not the site's
localhost:PORT (the readiness probe's).  The server is pinned to
--server-cpu (or --server-cpus, a taskset list such as 0,1 to give it both
CPUs).  On the 2-CPU machine of docs/benchmarks.md Caddy pinned to one CPU
holds 8,000/s over HTTP/3 with its access log, not 10,000/s, and on both
CPUs about 16,800/s; nginx holds 20,000/s over HTTP/1.1 and h2c on one.

The script samples strain's VmRSS from /proc every second.  It reports the
RSS at the end of the first minute (--warm-up, for short checks), at the end
and the highest after the first minute, and their growth against the first
minute's (the requirement, --max-growth: < 2 %), and compares strain's request total with the number
of requests in the server's access log (the requirement: equal).  It also
reports the server's CPU share (near 100 % of its CPUs: it could not keep
up) and strain's late and unsent requests: the rate is held if none is
unsent.  --duration and --rate make
shorter or lighter runs for a quick check.

Everything stays on 127.0.0.1 / localhost; the server runs from a private
directory and is stopped on exit.  Needs nginx and taskset; for h3 caddy and
openssl.

Example:  python3 bench/soak.py --protocol h2 --strain target/dist/strain --json /tmp/soak.json
"""

import json
import os
import sys
import tempfile
import time

from driver import cli, measure, proc, report, servers, tools
from driver.servers import Nginx

LOGGING_SERVER = """
    server {
        listen 127.0.0.1:{port} backlog=4096{http2};
        access_log {dir}/access.log;
        location / {
            return 200 "hello world\\n";
        }
    }"""

# The site of bench/h3.py's Caddyfile with an access log (after h3.CADDY_OPTIONS).
LOGGING_SITE = """https://localhost:%(port)d {
\ttls %(dir)s/cert.pem %(dir)s/key.pem
\tlog {
\t\toutput file %(dir)s/access.log {
\t\t\troll_disabled
\t\t}
\t\tformat json
\t}
\trespond "hello" 200
}
"""

# The access log's line for a request, in Caddy's JSON log.
CADDY_REQUEST = b'"msg":"handled request"'

# Per protocol: strain's flags, default connections and streams per connection.
PROTOCOLS = {
    "h1": {"flags": [], "connections": 1000, "streams": None, "name": "http/1.1"},
    "h2": {"flags": ["--http2"], "connections": 100, "streams": 10, "name": "h2"},
    "h3": {"flags": ["--http3", "-k"], "connections": 20, "streams": 40, "name": "h3"},
}


def served(server, paths, marker):
    """Requests the server has answered: its access logs' lines, or strain's
    origin's own count."""
    if paths is None:
        n = server.requests()
        if n is None:
            raise cli.BenchError("strain's origin did not answer /_strain/stats")
        return n
    return count_lines(paths, marker)


def count_lines(paths, marker=None):
    """Lines of the files at `paths` (those containing `marker`, if given)."""
    return sum(count_file_lines(p, marker) for p in paths)


def count_file_lines(path, marker=None):
    """Lines of the file at `path` (those containing `marker`, if given)."""
    n = 0
    with open(path, "rb") as f:
        if marker is None:
            while True:
                chunk = f.read(1 << 24)
                if not chunk:
                    return n
                n += chunk.count(b"\n")
        for line in f:
            if marker in line:
                n += 1
    return n


def rss_figures(samples, minute=60.0):
    """(RSS at the end of the first minute, at the end, the highest after the
    first minute, growth % of the end and of the highest over the first
    minute's) from (elapsed s, KiB) samples; None where there is no sample."""
    first = [kb for t, kb in samples if t <= minute]
    rss_1m = first[-1] if first else None
    rss_end = samples[-1][1] if samples else None
    later = [kb for t, kb in samples if t > minute]
    rss_max = max(later) if later else None

    def growth(kb):
        return (kb - rss_1m) / rss_1m * 100 if rss_1m and kb is not None else None
    return rss_1m, rss_end, rss_max, growth(rss_end), growth(rss_max)


def kib(kb):
    """A RSS figure for the table."""
    return "n/a" if kb is None else "{:,} KiB".format(kb)


def strain_argv(args, url, out):
    """strain's command line for args.protocol, pinned to --gen-cpu."""
    p = PROTOCOLS[args.protocol]
    argv = [args.strain] + p["flags"] + ["-t%d" % args.threads, "-c%d" % args.connections]
    if args.streams is not None:
        argv.append("-m%d" % args.streams)
    argv += ["-R%d" % args.rate, "-d%s" % cli.fmt_dur(args.duration), "--json", out, url]
    return proc.pinned(args.gen_cpu, argv)


class StrainTlsOrigin(servers.Server):
    """taskset -c CPUS STRAIN origin --tls --http3 on 127.0.0.1:PORT (TCP and UDP), which
    counts the requests it answers in /_strain/stats."""

    def __init__(self, strain, cpu):
        super().__init__(cpu, "/_strain/stats", None)
        import h3
        self.port = h3.free_tcp_udp_port()
        self.url = "https://127.0.0.1:%d/" % self.port
        self.strain = strain

    def argv(self):
        threads = len(str(self.cpu).replace("-", ",").split(","))
        return ["taskset", "-c", str(self.cpu), self.strain, "origin", "--listen",
                "127.0.0.1:%d" % self.port, "--tls", "--http3", "-t", str(threads)]

    def requests(self):
        """Requests answered so far, or None when the stats do not answer."""
        data = servers.https_get(self.port, "/_strain/stats", timeout=5)
        try:
            return json.loads(data.split(b"\r\n\r\n", 1)[1])["requests"]
        except (AttributeError, ValueError, KeyError, IndexError):
            return None

    def ready(self):
        return self.requests() is not None


def start_server(stack, args, nofile):
    """The logging server for args.protocol on `stack`: (server, log paths,
    marker of a request's line or None for every line, description); the log
    paths are None for strain's own origin, which counts for itself."""
    cpu = args.server_cpus or args.server_cpu
    if args.server == "strain":
        if args.protocol != "h3":
            raise cli.SetupError("--server strain is for h3 (nginx serves h1 and h2)")
        server = stack.enter_context(StrainTlsOrigin(args.strain, cpu))
        return (server, None, None,
                "strain origin --tls --http3 on CPU %s, counting in /_strain/stats" % cpu)
    if args.protocol == "h3":
        import h3
        cli.require(("caddy", "openssl", "taskset"), "apt-get install -y caddy openssl")

        class LoggingCaddy(h3.Caddy):
            """bench/h3.py's Caddy with an access log."""

            def argv(self):
                argv = h3.Caddy.argv(self)  # makes the certificate, writes the Caddyfile
                with open(os.path.join(self.dir, "Caddyfile"), "w") as f:
                    f.write((h3.CADDY_OPTIONS + LOGGING_SITE) % {"port": self.port, "dir": self.dir})
                return argv

        server = stack.enter_context(LoggingCaddy(args.caddy, cpu))
        # Requests whose Host is not the site's localhost:PORT (the readiness
        # probe's "localhost") go to Caddy's default log, its output.log: count both.
        return (server, [os.path.join(server.dir, n) for n in ("access.log", "output.log")],
                CADDY_REQUEST,
                "caddy on CPU %s, HTTPS and HTTP/3, JSON access log" % cpu)
    cli.require(("nginx", "taskset"), "apt-get install -y nginx-light")
    site = LOGGING_SERVER
    if args.hold_connections:
        site = site.replace("access_log", "client_header_timeout 1h;\n        access_log")
    server = stack.enter_context(Nginx(cpu, nofile, site, h2c=args.protocol == "h2"))
    return (server, [os.path.join(server.dir, "access.log")], None,
            "nginx (1 worker) on CPU %s, %s, access log%s" % (
                cpu, "h2c (listen ... http2)" if args.protocol == "h2" else "HTTP/1.1",
                ", client_header_timeout 1h" if args.hold_connections else ""))


def main(stack):
    """One long constant-rate run: RSS over time, strain's total against the server's log."""
    ap = cli.parser(__doc__.split("\n\n")[0], duration=600.0, connections=None)
    ap.add_argument("--protocol", choices=sorted(PROTOCOLS), default="h1",
                    help="h1: nginx over HTTP/1.1; h2: nginx over h2c; h3: Caddy over HTTP/3")
    ap.add_argument("--rate", type=int, default=20000)
    ap.add_argument("--threads", type=int, default=2, help="strain's -t")
    ap.add_argument("--streams", type=int, default=None,
                    help="strain's -m (default: h2 10, h3 40)")
    ap.add_argument("--server-cpus", metavar="LIST",
                    help="the server's CPUs as taskset takes them (e.g. 0,1), instead of "
                         "--server-cpu")
    ap.add_argument("--caddy", default="/usr/bin/caddy", help="caddy binary (h3)")
    ap.add_argument("--hold-connections", action="store_true",
                    help="nginx: client_header_timeout 1h, so that HTTP/2 connections are not "
                         "closed in GOAWAY waves from 60 s on (its receive timeout since 1.19.7)")
    ap.add_argument("--server", choices=("caddy", "strain"), default="caddy",
                    help="h3's server: Caddy with an access log, or strain's own origin "
                         "(--tls --http3, the --strain binary) counting its requests")
    ap.add_argument("--max-growth", type=float, default=2.0,
                    help="most RSS growth after the first minute, %%")
    ap.add_argument("--warm-up", type=cli.parse_duration, default=60.0,
                    help="the RSS growth counts from the end of this first stretch")
    args = cli.parse(ap)
    p = PROTOCOLS[args.protocol]
    if args.connections is None:
        args.connections = p["connections"]
    if args.protocol == "h1":
        if args.streams is not None:
            raise cli.SetupError("--streams is for h2 and h3")
    elif args.streams is None:
        args.streams = p["streams"]
    nofile = proc.raise_nofile()
    versions = {"strain": [args.strain, "--version"]}
    if args.server == "caddy":
        versions["caddy" if args.protocol == "h3" else "nginx"] = (
            [args.caddy, "version"] if args.protocol == "h3" else ["nginx", "-v"])
    info = cli.machine_info(versions)
    tmp = stack.enter_context(tempfile.TemporaryDirectory(prefix="strain-soak-"))
    server, access_logs, marker, server_desc = start_server(stack, args, nofile)
    cli.log("server: %s at %s, dir %s" % (server_desc, server.url, server.dir))
    # The readiness probes are requests in the log: count from here.
    time.sleep(0.2)
    logged_before = served(server, access_logs, marker)
    out = os.path.join(tmp, "result.json")
    argv = strain_argv(args, server.url, out)
    cli.log("running %s" % proc.display(argv, {args.strain: "STRAIN", out: "OUT"}))
    samples = []
    parts = []
    next_sample = [0.0]

    def poll(pid, elapsed):
        if elapsed >= next_sample[0]:
            next_sample[0] += 1
            rss = measure.status_fields(pid, "VmRSS", "RssAnon", "RssFile")
            if rss and rss[0] is not None:
                samples.append((elapsed, rss[0]))
                # The heap's and the binary's mapped pages apart: code paths first taken
                # late (a reconnect) grow the file part once, a leak the anonymous part.
                parts.append((elapsed, rss[1], rss[2]))
                if int(elapsed) % 60 == 0 and elapsed >= 1:
                    cli.log("  %4.0f s  strain RSS %d KiB (anon %s, file %s)" % (
                        elapsed, rss[0], rss[1], rss[2]))

    server_cpu_before = server.cpu_seconds()
    res = proc.run(argv, timeout=args.duration + 60, poll=poll)
    server_cpu = server.cpu_seconds() - server_cpu_before
    run = {"problems": []}
    result = tools.load_strain_json(out, run)
    if result is None:
        raise cli.BenchError("strain wrote no --json report (exit %s): %s" % (
            res["exit"], res["stderr"][-2000:]))
    time.sleep(1.5)  # the server writes a request's log line on completion; let it settle
    logged = served(server, access_logs, marker) - logged_before
    rss_1m, rss_end, rss_max, growth, growth_max = rss_figures(samples, args.warm_up)
    total = result["requests"]
    errs = sum(v for v in result["errors"].values() if isinstance(v, int))
    status = result.get("status") or {}
    non_2xx = sum(v for k, v in status.items() if not str(k).startswith("2"))
    rate = result.get("rate") or {}
    server_cpus = len((args.server_cpus or str(args.server_cpu)).replace("-", ",").split(","))
    server_share = server_cpu / res["wall"] if res["wall"] else None
    streams = "" if args.streams is None else " x %d streams" % args.streams
    rep = report.Report()
    rep.w(res["stdout"])
    rep.para("Protocol %s (strain spoke %s); server: %s." % (
        args.protocol, result.get("protocol"), server_desc))
    rep.para("Command: %s" % proc.display(argv, {args.strain: "STRAIN", out: "OUT"}))
    after = "after %s" % cli.fmt_dur(args.warm_up)
    rep.table(["protocol", "duration", "rate", "connections", "requests (strain)",
               "requests (server log)", "errors", "RSS at %s" % cli.fmt_dur(args.warm_up),
               "RSS at end", "growth", "max RSS " + after, "max growth"],
              [[args.protocol, cli.fmt_dur(args.duration), "%d/s" % args.rate,
                "%d%s" % (args.connections, streams), total, logged, errs,
                kib(rss_1m), kib(rss_end),
                "n/a" if growth is None else "%+.2f%%" % growth,
                kib(rss_max), "n/a" if growth_max is None else "%+.2f%%" % growth_max]])
    rep.para("strain sent %s, late %s, unsent %s, non-2xx %d; server CPU %.1f s (%.0f%% of "
             "%d CPU%s); strain exit %s%s." % (
                 result.get("sent"), rate.get("late"), rate.get("unsent"), non_2xx, server_cpu,
                 100 * (server_share or 0) / server_cpus, server_cpus,
                 "s" if server_cpus > 1 else "", res["exit"],
                 ", timed out" if res["timed_out"] else ""))
    ok_growth = (growth is not None and growth < args.max_growth
                 and growth_max is not None and growth_max < args.max_growth)
    # Held: every request due was sent, and the answers kept up (no more than
    # a second's worth of them missing at the end).
    held = not rate.get("unsent") and total >= args.rate * (args.duration - 1)
    rep.w("counts %s; RSS growth %s; rate %s" % (
        "exact" if total == logged else "DIFFER (%+d)" % (logged - total),
        ("< %g%%" if ok_growth else "NOT < %g%%") % args.max_growth,
        "held" if held else "NOT held"))
    report.finish(args, info, rep.text(), {
        "protocol": args.protocol, "strain_protocol": result.get("protocol"),
        "server": server_desc, "command": proc.display(argv, {args.strain: "STRAIN",
                                                              out: "OUT"}),
        "rss_samples": samples, "rss_anon_file_samples": parts, "rss_1m_kb": rss_1m, "rss_end_kb": rss_end,
        "rss_max_after_1m_kb": rss_max, "growth_pct": growth, "max_growth_pct": growth_max,
        "strain_requests": total, "server_logged": logged,
        # The name the h1 soak's JSON used for the server's count.
        "nginx_logged": logged if args.protocol != "h3" else None,
        "errors": errs, "rate_held": held, "server_cpu_s": server_cpu,
        "server_cpu_share": server_share,
        "strain_exit": res["exit"], "strain_stderr_tail": res["stderr"][-4000:],
        "result": {k: v for k, v in result.items() if k != "intervals"},
        "intervals": result.get("intervals"),
        "server_log_tail": server.errors() if args.protocol == "h3" else None},
        nginx=server if args.protocol != "h3" else None)
    return 0 if total == logged and ok_growth and errs == 0 and held else 1


if __name__ == "__main__":
    sys.exit(cli.run(main))
