#!/usr/bin/env python3
"""Large uploads: strain against wrk, 1 MB PUT bodies, closed loop, same run.

What it measures
----------------
Issue 33 asks strain to send a large body for less CPU than wrk: with a
1 MB ``--body-file`` PUT over 10 connections, at least 1.3x wrk's requests
per generator CPU-second.  wrk sends the body from a script (it has no body
option):

    wrk.method = "PUT"
    wrk.body = io.open(FILE, "rb"):read("*a")

    taskset -c 0 wrk    -t1 -c10 -d10s -s put.lua URL
    taskset -c 0 strain -t1 -c10 -d10s -X PUT --body-file FILE URL

A private nginx (1 worker, pinned to CPU 1) answers every request 200 and
discards the body (``client_max_body_size`` above the body's size).  Each
round runs every contender once (the order reversed every other round); the
headline is median(strain) / median(wrk) of requests per generator
CPU-second, CPU being the tool's own user+sys from ``wait4()``.  With
``--https`` the same rounds run again against nginx over TLS (a self-signed
certificate made by openssl; strain with ``--insecure``, wrk does not check
certificates).  ``--baseline PATH`` adds an earlier strain build to every
round: the way to show what a change to the engine did, in the same run.

The body is ``--size`` bytes (default 1 MiB) of a repeating pattern, written
to a private temporary directory.  Everything stays on 127.0.0.1; nginx is
stopped on exit.  Needs wrk, nginx (``nginx-light``), taskset, openssl for
``--https``.

Example:  python3 bench/upload.py --strain target/dist/strain --https --json /tmp/upload.json
"""

import os
import sys
import tempfile

from driver import cli, measure, proc, report, tools
from driver.cli import fmt_dur, log
from driver.report import f_num, f_ratio
from driver.servers import Nginx, free_port, fill

TOOLS = ("wrk", "strain")

# Plain on {port} (the readiness probe's), TLS on {tls_port}; every request answered 200 and
# its body read and dropped.
UPLOAD_SERVER = """
    server {
        listen 127.0.0.1:{port} backlog=4096;
        listen 127.0.0.1:{tls_port} ssl backlog=4096;
        ssl_certificate {cert};
        ssl_certificate_key {key};
        client_max_body_size {max_body};
        location / {
            return 200 "hello world\\n";
        }
    }"""


def make_cert(d):
    """A self-signed certificate for 127.0.0.1 in `d`: (cert, key) paths."""
    cert, key = os.path.join(d, "cert.pem"), os.path.join(d, "key.pem")
    res = proc.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                    "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", key, "-out", cert,
                    "-days", "2", "-subj", "/CN=127.0.0.1"], timeout=30)
    if res["exit"] != 0:
        raise cli.BenchError("openssl could not make a certificate: %s" % res["stderr"])
    return cert, key


def argv_for(tool, binary, args, body, script, url):
    """One generator's command line, pinned to --gen-cpu."""
    common = ["-t1", "-c%d" % args.connections, "-d%s" % fmt_dur(args.duration)]
    if tool == "wrk":
        return proc.pinned(args.gen_cpu, ["wrk"] + common + ["-s", script, url])
    extra = ["--insecure"] if url.startswith("https") else []
    return proc.pinned(args.gen_cpu, [binary] + common + extra + ["-X", "PUT", "--body-file", body, url])


def rounds(args, names, binaries, body, script, url, nginx, label, cmds):
    """The measured rounds against `url`: one run per contender per round."""
    log("%s: %d rounds of %s, -t1 -c%d -d%s" % (label, args.rounds, ", ".join(names),
                                                 args.connections, fmt_dur(args.duration)))
    runs = []
    for i, tool in measure.schedule(args.rounds, names):
        argv = argv_for(tool, binaries[tool], args, body, script, url)
        runs.append(tools.nginx_round(argv, args.duration, args.settle, nginx, tool, i))
        if i == 1:
            names_map = {binaries["strain"]: "STRAIN", body: "BODY", script: "put.lua"}
            if binaries.get("baseline"):
                names_map[binaries["baseline"]] = "BASELINE"
            cmds.append(proc.display(argv, names_map))
    return runs


def section(rep, args, names, runs, label):
    """One protocol's table, per-run lines and ratios; the summary numbers."""
    rep.para("%s, %s-byte PUT bodies (%d rounds, -t1 -c%d -d%s, generator on CPU %d, nginx on "
             "CPU %d):" % (label, f_num(args.size), args.rounds, args.connections,
                           fmt_dur(args.duration), args.gen_cpu, args.server_cpu))
    fig, wall = report.ratio_table(rep, runs, "tool", names, "req_per_cpu_s", "wrk",
                                   ("req/CPU-s per run", "median req/CPU-s"))
    rep.table(["round", "tool", "requests", "CPU s (user+sys)", "req/CPU-s", "req/s", "gen CPU",
               "nginx CPU", "problems"],
              [[r["round"], r["tool"], f_num(r["requests"]),
                "%.2f (%.2f+%.2f)" % (r["cpu"], r["utime"], r["stime"]), f_num(r["req_per_cpu_s"]),
                f_num(r["rps"]), report.pct(r["gen_cpu_share"], "%.0f%%"),
                report.pct(r["nginx_cpu_share"], "%.0f%%"), "; ".join(r["problems"]) or "-"]
               for r in runs])
    out = {"median_req_per_cpu_s": fig["medians"], "ratio_vs_wrk": fig["ratios"],
           "paired_ratios_vs_wrk": fig["paired"]}
    if "baseline" in names:
        out["ratio_vs_baseline"] = report.ratio(fig["medians"].get("strain"), fig["medians"].get("baseline"))
        rep.para("strain/baseline median req/CPU-s: %s" % f_ratio(out["ratio_vs_baseline"]))
    return out


def main(stack):
    """Plain rounds, then TLS rounds with --https."""
    ap = cli.parser(__doc__.splitlines()[0], "rounds", "settle", duration=10.0, connections=10)
    ap.add_argument("--size", type=int, default=1 << 20, help="body bytes")
    ap.add_argument("--https", action="store_true", help="also run the rounds over TLS")
    args = cli.parse(ap)
    cli.require(("wrk", "nginx", "taskset") + (("openssl",) if args.https else ()),
                "apt-get install -y wrk nginx-light openssl")
    nofile = proc.raise_nofile()
    info = cli.machine_info({"wrk": ["wrk", "-v"], "nginx": ["nginx", "-v"],
                             "strain": [args.strain, "--version"]})
    tmp = stack.enter_context(tempfile.TemporaryDirectory(prefix="strain-upload-"))
    body = os.path.join(tmp, "body.bin")
    with open(body, "wb") as f:
        pattern = bytes(range(32, 127))
        f.write((pattern * (args.size // len(pattern) + 1))[:args.size])
    script = os.path.join(tmp, "put.lua")
    with open(script, "w") as f:
        f.write('wrk.method = "PUT"\nlocal f = io.open("%s", "rb")\nwrk.body = f:read("*a")\n'
                'f:close()\n' % body)
    cert, key = make_cert(tmp)
    tls_port = free_port()
    server = fill(UPLOAD_SERVER, tls_port=tls_port, cert=cert, key=key, max_body=args.size * 2)
    nginx = stack.enter_context(Nginx(args.server_cpu, nofile, server))
    names = cli.contenders(args, TOOLS)
    binaries = {"wrk": "wrk", "strain": args.strain, "baseline": args.baseline}
    cmds = ["taskset -c %d nginx -p DIR/ -c DIR/nginx.conf   # worker_processes 1; "
            "client_max_body_size %d; return 200 \"hello world\\n\"" % (args.server_cpu, args.size * 2)]
    plain = rounds(args, names, binaries, body, script, nginx.url, nginx, "plain", cmds)
    tls = []
    if args.https:
        url = "https://127.0.0.1:%d/" % tls_port
        tls = rounds(args, names, binaries, body, script, url, nginx, "https", cmds)
    rep = report.Report()
    rep.header(info, info["wrk"], info["nginx"])
    result = {"plain": section(rep, args, names, plain, "HTTP/1.1")}
    if tls:
        result["https"] = section(rep, args, names, tls, "HTTPS")
    rep.commands("Commands", cmds)
    report.finish(args, info, rep.text(), {"summary": result, "plain_runs": plain, "tls_runs": tls,
                                           "commands": cmds}, nginx)


if __name__ == "__main__":
    sys.exit(cli.run(main))
