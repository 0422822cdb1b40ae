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
taskset.  Python 3 standard library only; the shared helpers are imported
from bench/core.py.

Example:  python3 bench/proxy.py --strain target/release/strain --json /tmp/proxy.json
"""

import argparse
import datetime
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from core import (  # noqa: E402
    NGINX_HTTP_COMMON,
    write_results,
    REPO, BenchError, Nginx, f_num, f_ratio, fmt_dur, free_port, log,
    machine_busy_seconds, machine_info, median, parse_duration, parse_report,
    proc_cpu_seconds, raise_nofile, ratio, run_measured, settle, tool_version,
)


ORIGIN_SERVER = """
    server {{
        listen 127.0.0.1:{port} backlog=4096;
        location = {path} {{
            return 200 "{doc}";
        }}
    }}
"""

PROXY_SERVER = """
    proxy_cache_path {dir}/cache levels=1:2 keys_zone=strain:10m max_size=100m
                     inactive=60m use_temp_path=off;
    upstream origin {{
        server 127.0.0.1:{origin_port};
        keepalive 16;
    }}
    server {{
        listen 127.0.0.1:{port} backlog=4096;
        location / {{
            proxy_pass http://origin;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_cache strain;
            proxy_cache_valid 200 10m;
            add_header X-Cache $upstream_cache_status;
        }}
        location /_strain/ {{
            proxy_pass http://origin;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_cache off;
        }}
    }}
"""


def http_get(port, path, timeout=2):
    """One HTTP/1.1 GET with Connection: close; returns (status line, headers
    dict lower-cased, body bytes) or None."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
            s.sendall(("GET %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nConnection: close\r\n\r\n"
                       % (path, port)).encode())
            data = b""
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    break
                data += chunk
    except OSError:
        return None
    head, sep, body = data.partition(b"\r\n\r\n")
    if not sep:
        return None
    lines = head.decode("latin-1").split("\r\n")
    headers = {}
    for line in lines[1:]:
        k, _, v = line.partition(":")
        headers[k.strip().lower()] = v.strip()
    return lines[0], headers, body, len(head) + 4


class ConfNginx(Nginx):
    """bench/core.py's Nginx with a configuration of our own."""

    def __init__(self, cpu, nofile, body, probe_path, probe_ok):
        super().__init__(cpu, nofile)
        self.body = body
        self.probe_path = probe_path
        self.probe_ok = probe_ok

    def conf_text(self):
        os.makedirs(os.path.join(self.dir, "cache"), exist_ok=True)
        return NGINX_HTTP_COMMON.format(
            dir=self.dir, nofile=self.nofile,
            # As root, nginx's workers would run as "nobody", who cannot
            # write the cache into this private 0700 directory.
            user="user root;\n" if os.geteuid() == 0 else "",
            body=self.body.replace("{dir}", self.dir).replace("{port}", str(self.port)))

    def _probe(self):
        r = http_get(self.port, self.probe_path)
        return r is not None and self.probe_ok(r)


class StrainOrigin:
    """taskset -c CPU STRAIN origin --listen 127.0.0.1:PORT -t 1"""

    def __init__(self, strain, cpu, extra=()):
        self.strain = strain
        self.cpu = cpu
        self.port = free_port()
        self.argv = ["taskset", "-c", str(cpu), strain, "origin",
                     "--listen", "127.0.0.1:%d" % self.port, "-t", "1"] + list(extra)
        self.proc = None
        self.out = tempfile.TemporaryFile()

    def start(self):
        self.proc = subprocess.Popen(self.argv, stdout=self.out, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL, start_new_session=True)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise BenchError("strain origin exited at start (code %s): %s" % (
                    self.proc.returncode, self.output()))
            r = http_get(self.port, "/d/1/100")
            if r is not None and r[0].startswith("HTTP/1.1 200"):
                return
            time.sleep(0.05)
        raise BenchError("strain origin did not answer on port %d within 10 s" % self.port)

    def cpu_seconds(self):
        return proc_cpu_seconds(self.proc.pid) or 0.0

    def threads(self):
        try:
            return len(os.listdir("/proc/%d/task" % self.proc.pid))
        except OSError:
            return None

    def stats(self):
        r = http_get(self.port, "/_strain/stats")
        if r is None:
            return None
        try:
            return json.loads(r[2].decode("utf-8", "replace"))
        except ValueError:
            return {"raw": r[2][:500].decode("utf-8", "replace")}

    def output(self):
        try:
            self.out.seek(0)
            return self.out.read().decode("utf-8", "replace")[-4000:]
        except (OSError, ValueError):
            return ""

    def stop(self):
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=10)
        self.final_output = self.output()
        self.out.close()
        self.proc = None


def other_cpu(m0, m1, wall, *known):
    if m0 is None or m1 is None or not wall:
        return None
    return max(0.0, (m1 - m0) - sum(known)) / wall


def problems_of(res, requests, parsed):
    p = []
    if res["timed_out"]:
        p.append("timed out")
    if res["exit"] != 0:
        p.append("exit %s" % res["exit"])
    if not requests:
        p.append("no request count")
    se = parsed.get("socket_errors")
    if se and any(se.values()):
        p.append("socket errors %s" % ", ".join("%s %d" % kv for kv in se.items() if kv[1]))
    if parsed.get("non_2xx"):
        p.append("non-2xx %d" % parsed["non_2xx"])
    return p


# --------------------------------------------------------------------------
# (a) origin efficiency


def origin_run(which, args, servers, rnd):
    srv = servers[which]
    other_name = "nginx" if which == "strain-origin" else "strain-origin"
    other = servers[other_name]
    url = "http://127.0.0.1:%d%s" % (srv.port, args.origin_path)
    argv = ["taskset", "-c", str(args.gen_cpu), "wrk", "-t1", "-c%d" % args.connections,
            "-d%s" % fmt_dur(args.duration), url]
    busy_before = settle(args.settle) if args.settle > 0 else None
    s0, o0, m0 = srv.cpu_seconds(), other.cpu_seconds(), machine_busy_seconds()
    res = run_measured(argv, timeout=args.duration + 30)
    s1, o1, m1 = srv.cpu_seconds(), other.cpu_seconds(), machine_busy_seconds()
    parsed = parse_report(res["stdout"])
    reqs = parsed.get("requests")
    scpu = s1 - s0
    wall = res["wall"]
    run = {
        "part": "origin", "round": rnd, "server": which, "argv": argv,
        "requests": reqs, "rps": parsed.get("rps"), "elapsed": parsed.get("elapsed"),
        "bytes_read": parsed.get("bytes_read"),
        "bytes_per_response": (parsed["bytes_read"] / reqs) if reqs and parsed.get("bytes_read") else None,
        "server_cpu": scpu,
        "server_cpu_share": scpu / wall if wall else None,
        "server_req_per_cpu_s": reqs / scpu if reqs and scpu > 0 else None,
        "idle_server_cpu": o1 - o0,
        "wrk_cpu": res["cpu"], "wrk_utime": res["utime"], "wrk_stime": res["stime"],
        "wrk_cpu_share": res["cpu"] / wall if wall else None,
        "wall": wall,
        "other_cpu_share": other_cpu(m0, m1, wall, res["cpu"], scpu, o1 - o0),
        "busy_before": busy_before,
        "exit": res["exit"], "socket_errors": parsed.get("socket_errors"),
        "non_2xx": parsed.get("non_2xx"),
        "stdout": res["stdout"], "stderr": res["stderr"],
    }
    run["problems"] = problems_of(res, reqs, parsed)
    log("  round %d %-13s %10s req  server %5.2f CPU-s (%3.0f%%)  %10s srv req/CPU-s  "
        "%9s req/s  wrk CPU %3.0f%%  %5.1f B/resp  idle srv %.2f s  other CPU %3.0f%%%s" % (
            rnd, which, f_num(reqs), scpu, 100 * (run["server_cpu_share"] or 0),
            f_num(run["server_req_per_cpu_s"]), f_num(run["rps"]),
            100 * (run["wrk_cpu_share"] or 0), run["bytes_per_response"] or 0,
            run["idle_server_cpu"], 100 * (run["other_cpu_share"] or 0),
            ("  !! " + "; ".join(run["problems"])) if run["problems"] else ""))
    return run


# --------------------------------------------------------------------------
# (b) generators through the caching proxy


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


def proxy_run(tool, args, proxy_port, nginx, origin, rnd, tmpdir):
    addr = "127.0.0.1:%d" % proxy_port
    json_path = os.path.join(tmpdir, "strain-proxy-%d.json" % rnd)
    if tool == "wrk":
        argv = ["taskset", "-c", str(args.gen_cpu), "wrk", "-t1", "-c%d" % args.connections,
                "-d%s" % fmt_dur(args.duration), "http://%s%s" % (addr, args.proxy_path)]
    else:
        if os.path.exists(json_path):
            os.unlink(json_path)
        argv = ["taskset", "-c", str(args.gen_cpu), args.strain, "proxy", "--client-only",
                "--origin", addr, "--proxy", addr, "--hit-rate", "1", "--hotset", "1",
                "--doc-size", "100", "-t", "1", "-c", str(args.connections),
                "-d", fmt_dur(args.duration), "--json", json_path]
    busy_before = settle(args.settle) if args.settle > 0 else None
    st0 = origin.stats()
    p0, g0, m0 = nginx.cpu_seconds(), origin.cpu_seconds(), machine_busy_seconds()
    res = run_measured(argv, timeout=args.duration + 30)
    p1, g1, m1 = nginx.cpu_seconds(), origin.cpu_seconds(), machine_busy_seconds()
    st1 = origin.stats()
    parsed = parse_report(res["stdout"])
    wall = res["wall"]
    run = {"part": "proxy", "round": rnd, "tool": tool, "argv": argv}
    reqs = parsed.get("requests")
    if tool == "strain-proxy":
        run["text_requests"] = reqs
        try:
            with open(json_path) as f:
                doc = json.load(f)
            run["tool_report"] = {k: v for k, v in doc.items() if k != "intervals"}
            if isinstance(doc.get("requests"), int):
                reqs = doc["requests"]
            status = doc.get("status") or {}
            run["status"] = status
            bad = sum(v for k, v in status.items() if not str(k).startswith(("2", "3")))
            if bad:
                parsed["non_2xx"] = bad
        except (OSError, ValueError) as e:
            run["tool_report_error"] = str(e)
    d0, d1 = origin_docs(st0), origin_docs(st1)
    run.update({
        "requests": reqs, "rps": parsed.get("rps"), "elapsed": parsed.get("elapsed"),
        "bytes_read": parsed.get("bytes_read"),
        "gen_cpu": res["cpu"], "gen_utime": res["utime"], "gen_stime": res["stime"],
        "gen_cpu_share": res["cpu"] / wall if wall else None,
        "gen_req_per_cpu_s": reqs / res["cpu"] if reqs and res["cpu"] > 0 else None,
        "proxy_cpu": p1 - p0, "proxy_cpu_share": (p1 - p0) / wall if wall else None,
        "origin_cpu": g1 - g0,
        "origin_stats_before": st0, "origin_stats_after": st1,
        "origin_requests_during_run": (d1 - d0) if d0 is not None and d1 is not None else None,
        "wall": wall,
        "other_cpu_share": other_cpu(m0, m1, wall, res["cpu"], p1 - p0, g1 - g0),
        "busy_before": busy_before, "exit": res["exit"],
        "socket_errors": parsed.get("socket_errors"), "non_2xx": parsed.get("non_2xx"),
        "stdout": res["stdout"], "stderr": res["stderr"],
    })
    run["problems"] = problems_of(res, reqs, parsed)
    if tool == "strain-proxy" and run.get("text_requests") is not None and \
            run["text_requests"] != reqs:
        run["problems"].append("text says %s requests, --json %s" % (run["text_requests"], reqs))
    log("  round %d %-12s %10s req  %5.2f CPU-s (user %.2f sys %.2f)  %10s req/CPU-s  "
        "%9s req/s  gen CPU %3.0f%%  proxy CPU %3.0f%%  origin %.2f CPU-s, %s req  "
        "other CPU %3.0f%%%s" % (
            rnd, tool, f_num(reqs), res["cpu"], res["utime"], res["stime"],
            f_num(run["gen_req_per_cpu_s"]), f_num(run["rps"]),
            100 * (run["gen_cpu_share"] or 0), 100 * (run["proxy_cpu_share"] or 0),
            run["origin_cpu"], run["origin_requests_during_run"],
            100 * (run["other_cpu_share"] or 0),
            ("  !! " + "; ".join(run["problems"])) if run["problems"] else ""))
    return run


# --------------------------------------------------------------------------


def summarize(args, info, sha, checks, o_runs, p_runs, cmds):
    lines = []
    w = lambda s="": lines.append(s)
    result = {}
    w("Date: %s; machine: %s CPUs, %s, Linux %s; %s; %s; strain sha256 %s." % (
        datetime.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z"),
        info["nproc"], info["cpu_model"], info["kernel"], info["wrk"], info["nginx"], sha))
    w()
    if o_runs:
        names = ("strain-origin", "nginx")
        by = {n: [r for r in o_runs if r["server"] == n] for n in names}
        med = {n: median([r["server_req_per_cpu_s"] for r in by[n]]) for n in names}
        med_rps = {n: median([r["rps"] for r in by[n]]) for n in names}
        paired = []
        for rnd in sorted({r["round"] for r in o_runs}):
            a = [r for r in by["strain-origin"] if r["round"] == rnd]
            b = [r for r in by["nginx"] if r["round"] == rnd]
            if a and b:
                paired.append(ratio(a[0]["server_req_per_cpu_s"], b[0]["server_req_per_cpu_s"]))
        result["origin"] = {
            "median_server_req_per_cpu_s": med, "median_rps": med_rps,
            "ratio_server_req_per_cpu_s": ratio(med["strain-origin"], med["nginx"]),
            "ratio_rps": ratio(med_rps["strain-origin"], med_rps["nginx"]),
            "paired_ratios": paired,
        }
        w("(a) Origin efficiency (%d rounds, wrk -t1 -c%d -d%s on CPU %d, server on CPU %d, "
          "GET %s):" % (args.rounds, args.connections, fmt_dur(args.duration), args.gen_cpu,
                        args.server_cpu, args.origin_path))
        w()
        w("| server | runs | server req/CPU-s per run | median | ratio vs nginx | median req/s (wall) | ratio vs nginx |")
        w("|---|---|---|---|---|---|---|")
        for n in names:
            w("| %s | %d | %s | %s | %s | %s | %s |" % (
                n, len(by[n]), ", ".join(f_num(r["server_req_per_cpu_s"]) for r in by[n]),
                f_num(med[n]), f_ratio(ratio(med[n], med["nginx"])), f_num(med_rps[n]),
                f_ratio(ratio(med_rps[n], med_rps["nginx"]))))
        w()
        w("Per run (in the order run):")
        w()
        w("| round | server | requests | server CPU s | srv req/CPU-s | req/s | srv CPU | wrk CPU | B/resp | other CPU | problems |")
        w("|---|---|---|---|---|---|---|---|---|---|---|")
        for r in o_runs:
            w("| %d | %s | %s | %.2f | %s | %s | %.0f%% | %.0f%% | %.1f | %.0f%% | %s |" % (
                r["round"], r["server"], f_num(r["requests"]), r["server_cpu"],
                f_num(r["server_req_per_cpu_s"]), f_num(r["rps"]),
                100 * (r["server_cpu_share"] or 0), 100 * (r["wrk_cpu_share"] or 0),
                r["bytes_per_response"] or 0, 100 * (r["other_cpu_share"] or 0),
                "; ".join(r["problems"]) or "-"))
        w()
        w("Paired per-round ratios strain-origin/nginx: %s" % ", ".join(f_ratio(p) for p in paired))
        w()
    if p_runs:
        names = ("wrk", "strain-proxy")
        by = {n: [r for r in p_runs if r["tool"] == n] for n in names}
        med = {n: median([r["gen_req_per_cpu_s"] for r in by[n]]) for n in names}
        med_rps = {n: median([r["rps"] for r in by[n]]) for n in names}
        paired = []
        for rnd in sorted({r["round"] for r in p_runs}):
            a = [r for r in by["strain-proxy"] if r["round"] == rnd]
            b = [r for r in by["wrk"] if r["round"] == rnd]
            if a and b:
                paired.append(ratio(a[0]["gen_req_per_cpu_s"], b[0]["gen_req_per_cpu_s"]))
        result["proxy"] = {
            "median_gen_req_per_cpu_s": med, "median_rps": med_rps,
            "ratio_gen_req_per_cpu_s": ratio(med["strain-proxy"], med["wrk"]),
            "ratio_rps": ratio(med_rps["strain-proxy"], med_rps["wrk"]),
            "paired_ratios": paired,
        }
        w("(b) Generators through the nginx cache (%d rounds, -t1 -c%d -d%s on CPU %d, "
          "nginx proxy on CPU %d, all cache hits):" % (
              args.rounds, args.connections, fmt_dur(args.duration), args.gen_cpu,
              args.server_cpu))
        w()
        w("| tool | runs | req/CPU-s per run | median | ratio vs wrk | median req/s (wall) | ratio vs wrk |")
        w("|---|---|---|---|---|---|---|")
        for n in names:
            w("| %s | %d | %s | %s | %s | %s | %s |" % (
                n, len(by[n]), ", ".join(f_num(r["gen_req_per_cpu_s"]) for r in by[n]),
                f_num(med[n]), f_ratio(ratio(med[n], med["wrk"])), f_num(med_rps[n]),
                f_ratio(ratio(med_rps[n], med_rps["wrk"]))))
        w()
        w("Per run (in the order run):")
        w()
        w("| round | tool | requests | CPU s (user+sys) | req/CPU-s | req/s | gen CPU | proxy CPU | origin req | other CPU | problems |")
        w("|---|---|---|---|---|---|---|---|---|---|---|")
        for r in p_runs:
            w("| %d | %s | %s | %.2f (%.2f+%.2f) | %s | %s | %.0f%% | %.0f%% | %s | %.0f%% | %s |" % (
                r["round"], r["tool"], f_num(r["requests"]), r["gen_cpu"], r["gen_utime"],
                r["gen_stime"], f_num(r["gen_req_per_cpu_s"]), f_num(r["rps"]),
                100 * (r["gen_cpu_share"] or 0), 100 * (r["proxy_cpu_share"] or 0),
                f_num(r["origin_requests_during_run"]), 100 * (r["other_cpu_share"] or 0),
                "; ".join(r["problems"]) or "-"))
        w()
        w("Paired per-round ratios strain-proxy/wrk: %s" % ", ".join(f_ratio(p) for p in paired))
        w()
    if checks:
        w("Checks: %s" % json.dumps(checks))
        w()
    w("Commands (PORT/PROXYPORT = private ports, STRAIN = %s):" % args.strain)
    w()
    w("```")
    for c in cmds:
        w(c)
    w("```")
    return "\n".join(lines), result


def sha256_of(path):
    import hashlib
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def nginx_string(body):
    """body as the inside of an nginx "..." string, or None if it cannot be
    written there verbatim."""
    try:
        text = body.decode("ascii")
    except UnicodeDecodeError:
        return None
    if any(c in text for c in '"\\$\r') or any(ord(c) < 32 and c != "\n" for c in text):
        return None
    return text


def main():
    ap = argparse.ArgumentParser(
        description="Issue 5: strain origin vs nginx (server req/CPU-s) and strain proxy "
                    "vs wrk through an nginx cache (generator req/CPU-s).",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    ap.add_argument("--strain", default="target/release/strain")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--duration", type=parse_duration, default=10.0)
    ap.add_argument("--connections", type=int, default=50)
    ap.add_argument("--settle", type=float, default=30.0,
                    help="wait up to this many seconds for a quiet machine before each run")
    ap.add_argument("--warmup", type=parse_duration, default=2.0,
                    help="unrecorded wrk run against each server before the rounds")
    ap.add_argument("--gen-cpu", type=int, default=0)
    ap.add_argument("--server-cpu", type=int, default=1)
    ap.add_argument("--origin-path", default="/d/1/100", help="document for part (a)")
    ap.add_argument("--proxy-path", default="/d/0/100",
                    help="wrk's URL path in part (b); strain's --hotset 1 is /d/0/100")
    ap.add_argument("--parts", default="origin,proxy", help="origin, proxy or both")
    ap.add_argument("--json", metavar="OUT")
    args = ap.parse_args()

    if not os.path.isabs(args.strain) and not os.path.exists(args.strain):
        alt = os.path.join(REPO, args.strain)
        if os.path.exists(alt):
            args.strain = alt
    args.strain = os.path.abspath(args.strain)
    parts = set(args.parts.split(","))

    def on_term(signum, frame):
        raise KeyboardInterrupt
    signal.signal(signal.SIGTERM, on_term)

    missing = [t for t in ("wrk", "nginx", "taskset") if shutil.which(t) is None]
    if missing:
        log("error: missing %s (apt-get install -y wrk nginx-light)" % ", ".join(missing))
        return 2
    if not os.access(args.strain, os.X_OK):
        log("error: strain binary not found: %s" % args.strain)
        return 2

    nofile = raise_nofile()
    info = machine_info()
    info["strain"] = tool_version([args.strain, "--version"])
    sha = sha256_of(args.strain)
    info["strain_sha256"] = sha
    log("machine: %s" % json.dumps(info))

    tmpdir = tempfile.mkdtemp(prefix="strain-bench-proxy-")
    to_stop = []
    o_runs, p_runs, cmds = [], [], []
    checks = {}
    try:
        # ---------------------------------------------------------- (a)
        if "origin" in parts:
            so = StrainOrigin(args.strain, args.server_cpu)
            to_stop.append(so)
            so.start()
            r = http_get(so.port, args.origin_path)
            body = r[2]
            checks["origin_strain_status"] = r[0]
            checks["origin_strain_body_len"] = len(body)
            checks["origin_strain_header_bytes"] = r[3]
            checks["origin_strain_headers"] = r[1]
            checks["origin_strain_threads"] = so.threads()
            doc = nginx_string(body)
            checks["nginx_body_same_as_strain"] = doc is not None
            if doc is None:
                doc = ("0123456789" * 10)[:99] + "\n"
            ng = ConfNginx(args.server_cpu, nofile,
                           ORIGIN_SERVER.replace("{path}", args.origin_path)
                           .replace("{doc}", doc).replace("{{", "{").replace("}}", "}"),
                           args.origin_path,
                           lambda r: r[0].startswith("HTTP/1.1 200") and len(r[2]) == 100)
            to_stop.append(ng)
            ng.start()
            r = http_get(ng.port, args.origin_path)
            checks["origin_nginx_body_len"] = len(r[2])
            checks["origin_nginx_header_bytes"] = r[3]
            checks["origin_nginx_headers"] = r[1]
            if len(body) != 100 or len(r[2]) != 100:
                raise BenchError("bodies are not 100 bytes: strain %d, nginx %d" % (
                    len(body), len(r[2])))
            log("(a) strain origin on :%d (pid %d, %s threads), nginx on :%d (worker %s)" % (
                so.port, so.proc.pid, so.threads(), ng.port, ng.worker_pids()))
            cmds.append("taskset -c %d STRAIN origin --listen 127.0.0.1:PORT -t 1" % args.server_cpu)
            cmds.append("taskset -c %d nginx -p DIR/ -c DIR/nginx.conf   # worker_processes 1; "
                        "location = %s { return 200 \"<strain's 100-byte body>\"; }" % (
                            args.server_cpu, args.origin_path))
            cmds.append("taskset -c %d wrk -t1 -c%d -d%s http://127.0.0.1:PORT%s" % (
                args.gen_cpu, args.connections, fmt_dur(args.duration), args.origin_path))
            servers = {"strain-origin": so, "nginx": ng}
            if args.warmup > 0:
                for srv in servers.values():
                    run_measured(["taskset", "-c", str(args.gen_cpu), "wrk", "-t1",
                                  "-c%d" % args.connections, "-d%s" % fmt_dur(args.warmup),
                                  "http://127.0.0.1:%d%s" % (srv.port, args.origin_path)],
                                 timeout=args.warmup + 30)
            log("(a) origin efficiency: %d rounds" % args.rounds)
            for rnd in range(1, args.rounds + 1):
                order = ("strain-origin", "nginx") if rnd % 2 else ("nginx", "strain-origin")
                for which in order:
                    o_runs.append(origin_run(which, args, servers, rnd))
            checks["nginx_origin_error_log"] = ng.errors()[-2000:]
            ng.cleanup()
            so.stop()
            checks["strain_origin_final_output"] = so.final_output[-2000:]
            to_stop.clear()

        # ---------------------------------------------------------- (b)
        if "proxy" in parts:
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

            origin = StrainOrigin(args.strain, args.server_cpu)
            to_stop.append(origin)
            origin.start()
            body = PROXY_SERVER.replace("{origin_port}", str(origin.port)) \
                .replace("{{", "{").replace("}}", "}")
            px = ConfNginx(args.server_cpu, nofile, body, "/d/9/100",
                           lambda r: r[0].startswith("HTTP/1.1 200"))
            to_stop.append(px)
            px.start()
            addr_port = px.port
            warm = {}
            for path in sorted(set(paths + [args.proxy_path, "/d/1/100"])):
                seen = []
                for _ in range(3):
                    r = http_get(addr_port, path)
                    seen.append(r[1].get("x-cache") if r else None)
                    body_len = len(r[2]) if r else None
                warm[path] = {"x_cache": seen, "body_len": body_len,
                              "header_bytes": r[3] if r else None}
            checks["proxy_warm"] = warm
            if any(warm[p]["x_cache"][-1] != "HIT" for p in warm):
                raise BenchError("cache not warm: %s" % warm)
            checks["origin_stats_sample"] = origin.stats()
            log("(b) nginx cache on :%d (worker %s) -> strain origin on :%d; warm: %s" % (
                px.port, px.worker_pids(), origin.port, warm))
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
                run_measured(["taskset", "-c", str(args.gen_cpu), "wrk", "-t1",
                              "-c%d" % args.connections, "-d%s" % fmt_dur(args.warmup),
                              "http://127.0.0.1:%d%s" % (px.port, args.proxy_path)],
                             timeout=args.warmup + 30)
            log("(b) generators through the cache: %d rounds" % args.rounds)
            for rnd in range(1, args.rounds + 1):
                order = ("wrk", "strain-proxy") if rnd % 2 else ("strain-proxy", "wrk")
                for tool in order:
                    p_runs.append(proxy_run(tool, args, px.port, px, origin, rnd, tmpdir))
            checks["nginx_proxy_error_log"] = px.errors()[-2000:]
    except KeyboardInterrupt:
        log("interrupted; stopping servers")
        return 130
    except (BenchError, subprocess.SubprocessError) as e:
        log("error: %s" % e)
        return 1
    finally:
        for s in reversed(to_stop):
            try:
                if isinstance(s, Nginx):
                    s.cleanup()
                else:
                    s.stop()
            except Exception as e:  # keep stopping the others
                log("while stopping: %s" % e)
        shutil.rmtree(tmpdir, ignore_errors=True)

    text, result = summarize(args, info, sha, {k: v for k, v in checks.items()
                                               if k in ("nginx_body_same_as_strain",
                                                        "strain_proxy_paths")},
                             o_runs, p_runs, cmds)
    print(text)
    if args.json:
        write_results(args.json, args, info, {
            "summary": result,
            "checks": checks,
            "origin_runs": o_runs,
            "proxy_runs": p_runs,
            "commands": cmds,
        })
    return 0


if __name__ == "__main__":
    sys.exit(main())
