#!/usr/bin/env python3
"""Server CPU per request, strain origin vs nginx, under a pipelining generator (issue 5).

bench/proxy.py compares the two servers under wrk (one request in flight per connection); there
wrk saturates its core before either server does, so the ratio is within noise of 1.0. Here the
generator is h2load in HTTP/1.1 mode with 16 requests pipelined per connection (-m16), which
loads the servers harder than the generator. Both servers run on CPU 1 with one thread/worker
and serve the same 100-byte body at /d/1/100; h2load runs on CPU 0 for 8 s per run, 3 rounds,
order alternated. The figure is requests completed per CPU-second of the server process (all its
threads, from /proc/PID/task/*/stat).

Usage: python3 bench/origin_pipelined.py [--strain target/release/strain]
Needs: apt-get install -y nginx-light nghttp2-client
"""
import argparse
import os
import re
import signal
import socket
import statistics
import subprocess
import tempfile
import time

STRAIN_PORT, NGINX_PORT = 19201, 19202


def server_cpu(pid):
    """User+sys CPU seconds of every thread of `pid`."""
    total = 0
    for t in os.listdir(f"/proc/{pid}/task"):
        fields = open(f"/proc/{pid}/task/{t}/stat").read().rsplit(")", 1)[1].split()
        total += int(fields[11]) + int(fields[12])
    return total / os.sysconf("SC_CLK_TCK")


def strain_body(strain):
    """The exact 100-byte body strain's origin serves at /d/1/100."""
    o = subprocess.Popen([strain, "origin", "--listen", f"127.0.0.1:{STRAIN_PORT}", "-t", "1"], stdout=subprocess.PIPE)
    time.sleep(0.3)
    s = socket.create_connection(("127.0.0.1", STRAIN_PORT), timeout=5)
    s.sendall(b"GET /d/1/100 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    data = b""
    while chunk := s.recv(65536):
        data += chunk
    o.send_signal(signal.SIGINT)
    o.wait(timeout=10)
    body = data.split(b"\r\n\r\n", 1)[1]
    assert len(body) == 100, body
    return body.decode()


def run(name, cmd, port, pid_of, seconds):
    srv = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        time.sleep(0.6)
        pid = pid_of(srv)
        c0 = server_cpu(pid)
        out = subprocess.run(
            ["taskset", "-c", "0", "h2load", "--h1", "-t1", "-c50", "-m16", "-D", str(seconds),
             f"http://127.0.0.1:{port}/d/1/100"],
            capture_output=True, text=True, timeout=seconds + 30).stdout
        c1 = server_cpu(pid)
    finally:
        srv.send_signal(signal.SIGINT if name == "strain" else signal.SIGQUIT)
        srv.wait(timeout=10)
    n = int(re.search(r"requests: \d+ total, \d+ started, \d+ done, (\d+) succeeded", out).group(1))
    print(f"{name:>6}: {n} requests, server CPU {c1 - c0:.2f} s, {n / (c1 - c0):,.0f} req/server-CPU-s", flush=True)
    return n / (c1 - c0)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--strain", default="target/release/strain")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seconds", type=int, default=8)
    a = ap.parse_args()
    body = strain_body(a.strain)
    d = tempfile.mkdtemp(prefix="strain-origin-bench-")
    with open(f"{d}/nginx.conf", "w") as f:
        f.write(f"""worker_processes 1; daemon off; pid {d}/pid; error_log {d}/err.log;
events {{ worker_connections 4096; }}
http {{ access_log off; keepalive_requests 1000000000;
client_body_temp_path {d}/b; proxy_temp_path {d}/p; fastcgi_temp_path {d}/f; uwsgi_temp_path {d}/u; scgi_temp_path {d}/s;
server {{ listen 127.0.0.1:{NGINX_PORT}; location = /d/1/100 {{ default_type text/plain; return 200 "{body}"; }} }} }}
""")

    def nginx_worker(p):
        time.sleep(0.3)
        return int(open(f"/proc/{p.pid}/task/{p.pid}/children").read().split()[0])

    servers = [
        ("strain", ["taskset", "-c", "1", a.strain, "origin", "--listen", f"127.0.0.1:{STRAIN_PORT}", "-t", "1"],
         STRAIN_PORT, lambda p: p.pid),
        ("nginx", ["taskset", "-c", "1", "nginx", "-p", f"{d}/", "-e", f"{d}/err.log", "-c", f"{d}/nginx.conf"],
         NGINX_PORT, nginx_worker),
    ]
    res = {"strain": [], "nginx": []}
    for r in range(a.rounds):
        for name, cmd, port, pid_of in servers if r % 2 == 0 else servers[::-1]:
            res[name].append(run(name, cmd, port, pid_of, a.seconds))
    ms, mn = statistics.median(res["strain"]), statistics.median(res["nginx"])
    paired = [round(x / y, 2) for x, y in zip(res["strain"], res["nginx"])]
    print(f"median req/server-CPU-s: strain {ms:,.0f}, nginx {mn:,.0f}; ratio {ms / mn:.2f}x (per round {paired})")


if __name__ == "__main__":
    main()
