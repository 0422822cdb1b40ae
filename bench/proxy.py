#!/usr/bin/env python3
"""Proxy and origin benchmark (issue 5): strain's origin server against
nginx, and ``strain proxy`` as a client against wrk, through a caching proxy.

What it measures
----------------
Two closed-loop measurements on 127.0.0.1, each reported only as ratios of
medians taken in the same invocation, with the order of the two contenders
reversed every other round (``--rounds``, default 3):

(a) Origin efficiency.  The *server* is what is measured.  The server is
    pinned to CPU 1, the generator (Debian's wrk) to CPU 0:

        taskset -c 1 STRAIN origin --listen 127.0.0.1:PORT1 -t 1
        taskset -c 1 nginx   # worker_processes 1;
                             # location = /d/1/100 { return 200 "<the same 100 bytes>"; }
        taskset -c 0 wrk -t1 -c50 -d10s http://127.0.0.1:PORT/d/1/100

    nginx answers with the very body strain's origin sends for /d/1/100
    (fetched once at start), ``access_log off``, ``keepalive_requests
    1000000000``.  Both servers run for the whole benchmark; the idle one
    costs nothing (its CPU during the other's runs is recorded as a check).
    For each run the server's CPU seconds are the delta of utime+stime of
    the server process (strain: the origin process, all threads; nginx: its
    worker) from /proc/PID/stat around the wrk run, and requests completed
    come from wrk's ``N requests in`` line.  The figure compared is the
    server's requests per CPU-second; the headline is
    ``median(strain origin) / median(nginx)`` (issue 5: >= 1.0x).
    ``srv CPU`` (the server's CPU as a share of the run's wall time) near
    100 % means the server was saturated; ``B/resp`` (bytes read / requests)
    shows the response sizes, headers included, are comparable.

(b) Client through a caching proxy.  The *generator* is what is measured.
    nginx as a caching reverse proxy (one worker, pinned to CPU 1;
    ``proxy_cache`` with a keys_zone, ``proxy_cache_valid 200 10m``,
    ``proxy_http_version 1.1``, ``proxy_set_header Connection ""``) in front
    of a ``strain origin`` on another port (also on CPU 1; it is idle since
    every request is a cache hit).  The cache is warmed first and a probe
    checks ``X-Cache: HIT``.  Then, generators on CPU 0:

        taskset -c 0 wrk -t1 -c50 -d10s http://127.0.0.1:PROXYPORT/d/0/100
        taskset -c 0 STRAIN proxy --client-only --origin 127.0.0.1:PROXYPORT
            --proxy 127.0.0.1:PROXYPORT --hit-rate 1 --hotset 1 --doc-size 100
            -t 1 -c 50 -d 10s --json FILE

    With ``--hotset 1`` strain requests only /d/0/100 (checked with
    ``--dump-urls`` at start), so wrk is given the same URL and both tools
    fetch the same cached 100-byte object.  ``--client-only`` polls
    ``/_strain/stats`` on the ``--origin`` address once a second; the proxy
    passes ``/_strain/`` to the origin uncached (about 10 extra requests per
    run, not counted in strain's request total, but their cost is in
    strain's CPU).  Each generator's CPU is its own user+sys from
    ``os.wait4()`` (taskset execs the tool).  Requests: wrk's ``N requests
    in`` line; strain's ``requests`` from its --json report (its text line
    is kept as a cross-check).  The headline is generator requests per
    CPU-second, ``median(strain proxy) / median(wrk)`` (issue 5: >= 1.0x).
    The origin's own document counter (``/_strain/stats`` read directly
    before and after each run) confirms that nothing went past the cache.

As in bench/core.py, before each run the script waits up to ``--settle``
seconds for the machine to go quiet, and ``other CPU`` is what the rest of
the machine used meanwhile (in CPUs, from /proc/stat).

``--json OUT`` writes all raw numbers (each run's output included); the
Markdown summary on stdout is ready for docs/benchmarks.md.

Everything stays on 127.0.0.1, every child has a timeout, and every server
is stopped on exit, exception or Ctrl-C.  Requirements: wrk, nginx
(``nginx-light``; needs the proxy and proxy_cache modules, which it has),
taskset.  Python 3 standard library only; the shared helpers come
from bench/driver/.

Example:  python3 bench/proxy.py --strain target/dist/strain --json /tmp/proxy.json
"""

import hashlib
import json
import os
import subprocess
import sys
import tempfile

from driver import cli, measure, proc, report, tools
from driver.cli import BenchError, fmt_dur, log
from driver.report import f_num, f_ratio, flags, pct
from driver.servers import Nginx, StrainOrigin, http_get, origin_pair

PROXY_SERVER = """
    proxy_cache_path {dir}/cache levels=1:2 keys_zone=strain:10m max_size=100m
                     inactive=60m use_temp_path=off;
    upstream origin {
        server 127.0.0.1:{origin_port};
        keepalive 16;
    }
    server {
        listen 127.0.0.1:{port} backlog=4096;
        location / {
            proxy_pass http://origin;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_cache strain;
            proxy_cache_valid 200 10m;
            add_header X-Cache $upstream_cache_status;
        }
        location /_strain/ {
            proxy_pass http://origin;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_cache off;
        }
    }
"""


def wrk_argv(args, port, path, duration):
    """wrk against 127.0.0.1:port/path, pinned to --gen-cpu."""
    return proc.pinned(args.gen_cpu, ["wrk", "-t1", "-c%d" % args.connections,
                                      "-d%s" % fmt_dur(duration),
                                      "http://127.0.0.1:%d%s" % (port, path)])


def origin_docs(stats):
    """Total requests the origin has served, from its /_strain/stats JSON
    (whatever counter it exposes; None if unknown)."""
    if not isinstance(stats, dict):
        return None
    for key in ("requests", "responses", "served", "documents"):
        v = stats.get(key)
        if isinstance(v, (int, float)):
            return v
    return None


def origin_run(which, args, servers, rnd):
    """(a) One wrk run against one server: that server's requests per CPU-second."""
    srv = servers[which]
    idle = servers["nginx" if which == "strain-origin" else "strain-origin"]
    run = tools.measured_wrk(wrk_argv(args, srv.port, args.origin_path, args.duration),
                             args.duration + 30, args.settle,
                             {"server_cpu": srv.cpu_seconds, "idle_server_cpu": idle.cpu_seconds})
    reqs, scpu = run["requests"], run["server_cpu"]
    run.update(part="origin", round=rnd, server=which,
               bytes_per_response=(run["bytes_read"] / reqs) if reqs and run["bytes_read"] else None,
               server_req_per_cpu_s=reqs / scpu if reqs and scpu else None)
    log("  round %d %-13s %10s req  server %5.2f CPU-s (%3.0f%%)  %10s srv req/CPU-s  "
        "%9s req/s  wrk CPU %3.0f%%  %5.1f B/resp  idle srv %.2f s  other CPU %3.0f%%%s" % (
            rnd, which, f_num(reqs), scpu, 100 * (run["server_cpu_share"] or 0),
            f_num(run["server_req_per_cpu_s"]), f_num(run["rps"]),
            100 * (run["gen_cpu_share"] or 0), run["bytes_per_response"] or 0,
            run["idle_server_cpu"], 100 * (run["other_cpu_share"] or 0), flags(run)))
    return run


def proxy_run(tool, args, px, origin, rnd, tmpdir):
    """(b) One generator run through the cache: its own requests per CPU-second."""
    json_path = os.path.join(tmpdir, "strain-proxy-%d.json" % rnd)
    if tool == "wrk":
        argv = wrk_argv(args, px.port, args.proxy_path, args.duration)
    else:
        addr = "127.0.0.1:%d" % px.port
        argv = proc.pinned(args.gen_cpu, [
            args.strain, "proxy", "--client-only", "--origin", addr, "--proxy", addr,
            "--hit-rate", "1", "--hotset", "1", "--doc-size", "100", "-t", "1",
            "-c", str(args.connections), "-d", fmt_dur(args.duration), "--json", json_path])
    st0 = origin.stats()
    run = tools.measured_wrk(argv, args.duration + 30, args.settle,
                             {"proxy_cpu": px.cpu_seconds, "origin_cpu": origin.cpu_seconds})
    st1 = origin.stats()
    run.update(part="proxy", round=rnd, tool=tool)
    if tool == "strain-proxy":
        # --json's request total is the figure; the text line is a cross-check.
        parsed = tools.parse_strain(run, json_path)
        run.update(requests=parsed["requests"], non_2xx=parsed.get("non_2xx"))
        run["req_per_cpu_s"] = (run["requests"] / run["cpu"]
                                if run["requests"] and run["cpu"] > 0 else None)
    d0, d1 = origin_docs(st0), origin_docs(st1)
    run.update(origin_stats_before=st0, origin_stats_after=st1,
               origin_requests_during_run=(d1 - d0) if d0 is not None and d1 is not None else None)
    log("  round %d %-12s %10s req  %5.2f CPU-s (user %.2f sys %.2f)  %10s req/CPU-s  "
        "%9s req/s  gen CPU %3.0f%%  proxy CPU %3.0f%%  origin %.2f CPU-s, %s req  "
        "other CPU %3.0f%%%s" % (
            rnd, tool, f_num(run["requests"]), run["cpu"], run["utime"], run["stime"],
            f_num(run["req_per_cpu_s"]), f_num(run["rps"]), 100 * (run["gen_cpu_share"] or 0),
            100 * (run["proxy_cpu_share"] or 0), run["origin_cpu"],
            run["origin_requests_during_run"], 100 * (run["other_cpu_share"] or 0), flags(run)))
    return run


def part_origin(args, stack, nofile, checks, cmds):
    """(a): wrk against strain's origin and against nginx serving its body."""
    so, ng = origin_pair(stack, args.strain, args.server_cpu, nofile, args.origin_path, checks)
    log("(a) strain origin on :%d (pid %d, %s threads), nginx on :%d (worker %s)" % (
        so.port, so.proc.pid, so.threads(), ng.port, ng.pids()))
    cmds.append("taskset -c %d STRAIN origin --listen 127.0.0.1:PORT -t 1" % args.server_cpu)
    cmds.append("taskset -c %d nginx -p DIR/ -c DIR/nginx.conf   # worker_processes 1; "
                "location = %s { return 200 \"<strain's 100-byte body>\"; }" % (
                    args.server_cpu, args.origin_path))
    cmds.append("taskset -c %d wrk -t1 -c%d -d%s http://127.0.0.1:PORT%s" % (
        args.gen_cpu, args.connections, fmt_dur(args.duration), args.origin_path))
    servers = {"strain-origin": so, "nginx": ng}
    if args.warmup > 0:
        for srv in servers.values():
            proc.run(wrk_argv(args, srv.port, args.origin_path, args.warmup),
                     timeout=args.warmup + 30)
    log("(a) origin efficiency: %d rounds" % args.rounds)
    runs = [origin_run(which, args, servers, rnd)
            for rnd, which in measure.schedule(args.rounds, list(servers))]
    checks["nginx_origin_error_log"] = ng.errors()[-2000:]
    ng.close()
    so.stop()
    checks["strain_origin_final_output"] = so.errors()[-2000:]
    return runs


def part_proxy(args, stack, nofile, tmpdir, checks, cmds):
    """(b): wrk and strain proxy through an nginx cache in front of strain's origin."""
    # Which URL does strain proxy --hotset 1 request?
    urls_file = os.path.join(tmpdir, "urls.txt")
    subprocess.run([args.strain, "proxy", "--client-only", "--origin", "127.0.0.1:1",
                    "--proxy", "127.0.0.1:1", "--hit-rate", "1", "--hotset", "1",
                    "--doc-size", "100", "--dump-urls", urls_file, "--dump-count", "100"],
                   timeout=30, check=True, capture_output=True)
    with open(urls_file) as f:
        paths = sorted({u.strip().split("127.0.0.1:1", 1)[-1] for u in f if u.strip()})
    checks["strain_proxy_paths"] = paths
    if paths != [args.proxy_path]:
        log("warning: strain proxy requests %s, wrk %s" % (paths, args.proxy_path))
    origin = stack.enter_context(StrainOrigin(args.strain, args.server_cpu))
    px = Nginx(args.server_cpu, nofile, PROXY_SERVER.replace("{origin_port}", str(origin.port)),
               "/d/9/100", lambda r: r[0].startswith("HTTP/1.1 200"))
    os.makedirs(os.path.join(px.dir, "cache"))
    stack.enter_context(px)
    warm = {}
    for path in sorted(set(paths + [args.proxy_path, "/d/1/100"])):
        seen = [http_get(px.port, path) for _ in range(3)]
        last = seen[-1]
        warm[path] = {"x_cache": [r[1].get("x-cache") if r else None for r in seen],
                      "body_len": len(last[2]) if last else None,
                      "header_bytes": last[3] if last else None}
    checks["proxy_warm"] = warm
    if any(w["x_cache"][-1] != "HIT" for w in warm.values()):
        raise BenchError("cache not warm: %s" % warm)
    checks["origin_stats_sample"] = origin.stats()
    log("(b) nginx cache on :%d (worker %s) -> strain origin on :%d; warm: %s" % (
        px.port, px.pids(), origin.port, warm))
    cmds.append("taskset -c %d STRAIN origin --listen 127.0.0.1:ORIGINPORT -t 1"
                % args.server_cpu)
    cmds.append("taskset -c %d nginx -p DIR/ -c DIR/nginx.conf   # caching reverse "
                "proxy to ORIGINPORT, see bench/proxy.py" % args.server_cpu)
    cmds.append("taskset -c %d wrk -t1 -c%d -d%s http://127.0.0.1:PROXYPORT%s" % (
        args.gen_cpu, args.connections, fmt_dur(args.duration), args.proxy_path))
    cmds.append("taskset -c %d STRAIN proxy --client-only --origin 127.0.0.1:PROXYPORT "
                "--proxy 127.0.0.1:PROXYPORT --hit-rate 1 --hotset 1 --doc-size 100 "
                "-t 1 -c %d -d %s --json FILE" % (
                    args.gen_cpu, args.connections, fmt_dur(args.duration)))
    if args.warmup > 0:
        proc.run(wrk_argv(args, px.port, args.proxy_path, args.warmup), timeout=args.warmup + 30)
    log("(b) generators through the cache: %d rounds" % args.rounds)
    runs = [proxy_run(tool, args, px, origin, rnd, tmpdir)
            for rnd, tool in measure.schedule(args.rounds, ["wrk", "strain-proxy"])]
    checks["nginx_proxy_error_log"] = px.errors()[-2000:]
    return runs


def section(rep, title, runs, key, names, contender, figure, label, per_run):
    """One part's tables: the headline ratio of `contender` over the other of
    `names` in `figure` (whose column is `label`), then `per_run` (headers,
    row of a run) in the order run, then the paired ratios."""
    baseline = [n for n in names if n != contender][0]
    rep.para(title)
    fig, wall = report.ratio_table(rep, runs, key, names, figure, baseline,
                                   ("%s per run" % label, "median"))
    paired = fig["paired"][contender]
    rep.para("Per run (in the order run):")
    rep.table(per_run[0], [per_run[1](r) for r in runs])
    rep.para("Paired per-round ratios %s/%s: %s" % (contender, baseline,
                                                     ", ".join(f_ratio(p) for p in paired)))
    name = "server" if figure.startswith("server") else "gen"
    return {"median_%s_req_per_cpu_s" % name: fig["medians"], "median_rps": wall["medians"],
            "ratio_%s_req_per_cpu_s" % name: fig["ratios"][contender],
            "ratio_rps": wall["ratios"][contender], "paired_ratios": paired}


def summarize(args, info, sha, checks, o_runs, p_runs, cmds):
    """The Markdown summary and the summary numbers for --json."""
    rep = report.Report()
    result = {}
    rep.header(info, info["wrk"], info["nginx"], "strain sha256 %s" % sha)
    if o_runs:
        result["origin"] = section(
            rep, "(a) Origin efficiency (%d rounds, wrk -t1 -c%d -d%s on CPU %d, server on CPU "
            "%d, GET %s):" % (args.rounds, args.connections, fmt_dur(args.duration),
                              args.gen_cpu, args.server_cpu, args.origin_path),
            o_runs, "server", ("strain-origin", "nginx"), "strain-origin", "server_req_per_cpu_s",
            "server req/CPU-s",
            (["round", "server", "requests", "server CPU s", "srv req/CPU-s", "req/s", "srv CPU",
              "wrk CPU", "B/resp", "other CPU", "problems"],
             lambda r: [r["round"], r["server"], f_num(r["requests"]), "%.2f" % r["server_cpu"],
                        f_num(r["server_req_per_cpu_s"]), f_num(r["rps"]),
                        pct(r["server_cpu_share"], "%.0f%%"), pct(r["gen_cpu_share"], "%.0f%%"),
                        "%.1f" % (r["bytes_per_response"] or 0),
                        pct(r["other_cpu_share"], "%.0f%%"), "; ".join(r["problems"]) or "-"]))
    if p_runs:
        result["proxy"] = section(
            rep, "(b) Generators through the nginx cache (%d rounds, -t1 -c%d -d%s on CPU %d, "
            "nginx proxy on CPU %d, all cache hits):" % (
                args.rounds, args.connections, fmt_dur(args.duration), args.gen_cpu,
                args.server_cpu),
            p_runs, "tool", ("wrk", "strain-proxy"), "strain-proxy", "req_per_cpu_s", "req/CPU-s",
            (["round", "tool", "requests", "CPU s (user+sys)", "req/CPU-s", "req/s", "gen CPU",
              "proxy CPU", "origin req", "other CPU", "problems"],
             lambda r: [r["round"], r["tool"], f_num(r["requests"]),
                        "%.2f (%.2f+%.2f)" % (r["cpu"], r["utime"], r["stime"]),
                        f_num(r["req_per_cpu_s"]), f_num(r["rps"]),
                        pct(r["gen_cpu_share"], "%.0f%%"), pct(r["proxy_cpu_share"], "%.0f%%"),
                        f_num(r["origin_requests_during_run"]),
                        pct(r["other_cpu_share"], "%.0f%%"), "; ".join(r["problems"]) or "-"]))
    if checks:
        rep.para("Checks: %s" % json.dumps(checks))
    rep.commands("Commands (PORT/PROXYPORT = private ports, STRAIN = %s):" % args.strain, cmds)
    return rep.text(), result


def main(stack):
    """Part (a), part (b) or both, then the summary."""
    ap = cli.parser(__doc__.split("\n\n")[0], "rounds", "settle", "warmup", duration=10.0,
                    connections=50)
    ap.add_argument("--origin-path", default="/d/1/100", help="document for part (a)")
    ap.add_argument("--proxy-path", default="/d/0/100",
                    help="wrk's URL path in part (b); strain's --hotset 1 is /d/0/100")
    ap.add_argument("--parts", default="origin,proxy", help="origin, proxy or both")
    args = cli.parse(ap)
    parts = set(args.parts.split(","))
    cli.require(("wrk", "nginx", "taskset"), "apt-get install -y wrk nginx-light")
    nofile = proc.raise_nofile()
    info = cli.machine_info({"wrk": ["wrk", "-v"], "nginx": ["nginx", "-v"],
                             "strain": [args.strain, "--version"]})
    with open(args.strain, "rb") as f:
        sha = hashlib.sha256(f.read()).hexdigest()
    info["strain_sha256"] = sha
    tmpdir = stack.enter_context(tempfile.TemporaryDirectory(prefix="strain-bench-proxy-"))
    checks, cmds = {}, []
    o_runs = part_origin(args, stack, nofile, checks, cmds) if "origin" in parts else []
    p_runs = part_proxy(args, stack, nofile, tmpdir, checks, cmds) if "proxy" in parts else []
    text, result = summarize(args, info, sha, {k: v for k, v in checks.items() if k in (
        "nginx_body_same_as_strain", "strain_proxy_paths")}, o_runs, p_runs, cmds)
    report.finish(args, info, text, {"summary": result, "checks": checks, "origin_runs": o_runs,
                                     "proxy_runs": p_runs, "commands": cmds})


if __name__ == "__main__":
    sys.exit(cli.run(main))
