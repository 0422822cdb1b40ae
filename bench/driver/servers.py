"""The servers a benchmark runs against, each on a free loopback port.

Server is the life cycle both kinds share: start in its own session (a
Ctrl-C in the terminal reaches only the script, which then stops the
server), wait until a probe request succeeds, stop with a signal and, past
a timeout, SIGKILL the whole process group.  Nginx renders its nginx.conf
from NGINX_HTTP plus a server block template; StrainOrigin is
``strain origin``.  Each runs from a private temporary directory that is
removed on close.  A Server is a context manager, so a script puts it on
its ExitStack and it is stopped on every way out.
"""

import json
import os
import random
import shutil
import signal
import socket
import ssl
import subprocess
import tempfile
import threading
import time

from .cli import BenchError, log
from . import measure

NGINX_HTTP = """\
{user}worker_processes 1;
daemon off;
pid {dir}/nginx.pid;
error_log {dir}/error.log warn;
worker_rlimit_nofile {nofile};

events {
    worker_connections 20000;
    multi_accept on;
}

http {
    access_log off;
    keepalive_requests 1000000000;
    keepalive_timeout 120s;
    client_body_temp_path {dir}/client_body;
    proxy_temp_path {dir}/proxy;
    fastcgi_temp_path {dir}/fastcgi;
    uwsgi_temp_path {dir}/uwsgi;
    scgi_temp_path {dir}/scgi;
    default_type text/plain;
{server}
}
"""

# Every path: 200 "hello world\n".  {http2} is " http2" for an h2c listener.
HELLO = """
    server {
        listen 127.0.0.1:{port} backlog=4096{http2};
        location / {
            return 200 "hello world\\n";
        }
    }"""


def fill(template, **values):
    """`template` with each {key} replaced; nginx's own braces stay as they are."""
    for k, v in values.items():
        template = template.replace("{%s}" % k, str(v))
    return template


def free_port():
    """A free 127.0.0.1 port below the ephemeral range, so that no client
    socket of the generators can ever share the server's port number (keeps
    the /proc/net/tcp count of server-side sockets exact)."""
    lo = 32768
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            lo = int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        pass
    candidates = list(range(max(1024, lo - 8000), lo))
    random.shuffle(candidates)
    for port in candidates[:200] + [0]:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return s.getsockname()[1]
    raise BenchError("no free port on 127.0.0.1")


def exchange(sock, request):
    """Sends `request` on a connected socket (plain or TLS) and returns all it
    reads until the server closes."""
    sock.sendall(request)
    data = b""
    while True:
        chunk = sock.recv(65536)
        if not chunk:
            return data
        data += chunk


def https_get(port, path, timeout=2):
    """One GET over TLS (certificate unchecked, SNI localhost) with Connection:
    close: all the bytes the server sent, or None."""
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout) as raw:
            with ctx.wrap_socket(raw, server_hostname="localhost") as s:
                return exchange(s, b"GET %s HTTP/1.1\r\nHost: localhost\r\n"
                                   b"Connection: close\r\n\r\n" % path.encode())
    except (OSError, ssl.SSLError):
        return None


def http_get(port, path, timeout=2):
    """One GET with Connection: close: (status line, lower-cased headers, body,
    head bytes), or None."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
            request = "GET %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nConnection: close\r\n\r\n"
            data = exchange(s, (request % (path, port)).encode())
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


H2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
H2_DATA, H2_HEADERS, H2_GOAWAY = 0, 1, 7


def h2_frame(kind, flags, stream, payload=b""):
    """One HTTP/2 frame (RFC 9113, 4.1)."""
    return (len(payload).to_bytes(3, "big") + bytes((kind, flags)) + stream.to_bytes(4, "big")
            + payload)


def h2c_get(port, path, timeout=2):
    """One GET over h2c with prior knowledge: (200 or None, body) if the answer
    came, else None.  The request uses HPACK's static table only, and of the
    answer only the status 200 (static index 8) is recognised: enough to
    probe a server known to answer 200."""
    # :method GET, :scheme http, :path literal (name index 4), :authority literal (index 1).
    host = ("127.0.0.1:%d" % port).encode()
    block = (b"\x82\x86\x04" + bytes((len(path),)) + path.encode() + b"\x01"
             + bytes((len(host),)) + host)
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
            s.sendall(H2_PREFACE + h2_frame(4, 0, 0) + h2_frame(H2_HEADERS, 0x5, 1, block))
            data, status, body = b"", None, b""
            while True:
                while len(data) >= 9 and len(data) >= 9 + int.from_bytes(data[:3], "big"):
                    n = int.from_bytes(data[:3], "big")
                    kind, flags, stream = data[3], data[4], int.from_bytes(data[5:9], "big")
                    payload, data = data[9:9 + n], data[9 + n:]
                    if kind == H2_GOAWAY:
                        return None
                    if stream == 1 and kind == H2_HEADERS:
                        status = 200 if payload[:1] == b"\x88" else None
                    elif stream == 1 and kind == H2_DATA:
                        body += payload
                    if stream == 1 and kind in (H2_HEADERS, H2_DATA) and flags & 0x1:
                        return status, body
                chunk = s.recv(65536)
                if not chunk:
                    return None
                data += chunk
    except OSError:
        return None


class Server:
    """A server process on 127.0.0.1:port, started by start() and stopped by close()."""

    stop_signal = signal.SIGTERM

    def __init__(self, cpu, probe_path, probe_ok):
        self.dir = tempfile.mkdtemp(prefix="strain-bench-%s-" % type(self).__name__.lower())
        self.port = free_port()
        self.url = "http://127.0.0.1:%d/" % self.port
        self.cpu = cpu
        self.probe_path = probe_path
        self.probe_ok = probe_ok
        self.proc = None

    def argv(self):
        """The server's command line."""
        raise NotImplementedError

    def start(self):
        """Starts the server and waits (10 s at most) until the probe succeeds."""
        self.out = open(os.path.join(self.dir, "output.log"), "wb")
        self.proc = subprocess.Popen(self.argv(), stdout=self.out, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL, start_new_session=True)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise BenchError("%s exited at start (code %s):\n%s" % (
                    type(self).__name__, self.proc.returncode, self.errors()))
            if self.ready():
                return self
            time.sleep(0.05)
        raise BenchError("%s did not answer on port %d within 10 s:\n%s" % (
            type(self).__name__, self.port, self.errors()))

    def ready(self):
        """Whether the server answers its probe request."""
        r = http_get(self.port, self.probe_path)
        return r is not None and self.probe_ok(r)

    def pids(self):
        """The processes that do the serving (their CPU is the server's)."""
        return [self.proc.pid]

    def cpu_seconds(self):
        """CPU seconds so far of the serving processes."""
        return sum(measure.proc_cpu_seconds(p) or 0.0 for p in self.pids())

    def ctx_switches(self):
        """Context switches so far of the serving processes, or None."""
        counts = [measure.ctx_switches(p) for p in self.pids()]
        return None if None in counts else sum(counts)

    def errors(self, path="output.log"):
        """The tail of the server's log."""
        try:
            with open(os.path.join(self.dir, path), errors="replace") as f:
                return f.read()[-4000:]
        except OSError:
            return ""

    def stop(self):
        """Stops the server; its directory stays for reading logs."""
        if self.proc is None:
            return
        if self.proc.poll() is None:
            try:
                self.proc.send_signal(self.stop_signal)
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=10)
        # nginx's workers are in its process group; make sure none is left.
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except OSError:
            pass
        self.out.close()
        self.proc = None

    def close(self):
        """Stops the server and removes its directory."""
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self):
        # A server that fails to start is not on the caller's ExitStack yet.
        try:
            return self.start()
        except BaseException:
            self.close()
            raise

    def __exit__(self, *exc):
        self.close()


def is_hello(r):
    """A probe check: the HELLO server block's answer."""
    return r[0].startswith("HTTP/1.1 200") and r[2] == b"hello world\n"


class Nginx(Server):
    """taskset -c CPU nginx, one worker, with `server` (a template with {port},
    {dir}) inside NGINX_HTTP's http block."""

    def __init__(self, cpu, nofile, server=HELLO, probe_path="/", probe_ok=is_hello, h2c=False):
        super().__init__(cpu, probe_path, probe_ok)
        self.nofile = nofile
        self.server = server
        self.h2c = h2c

    def argv(self):
        conf = os.path.join(self.dir, "nginx.conf")
        with open(conf, "w") as f:
            f.write(fill(NGINX_HTTP, dir=self.dir, nofile=self.nofile,
                         # As root, nginx's workers would run as "nobody", who
                         # cannot write (a cache, a log) into this 0700 directory.
                         user="user root;\n" if os.geteuid() == 0 else "",
                         server=fill(self.server, port=self.port, dir=self.dir,
                                     http2=" http2" if self.h2c else "")))
        return ["taskset", "-c", str(self.cpu), "nginx", "-p", self.dir + "/",
                "-e", os.path.join(self.dir, "error.log"), "-c", conf]

    def ready(self):
        if self.h2c:
            return h2c_get(self.port, self.probe_path) == (200, b"hello world\n")
        return super().ready()

    def pids(self):
        return measure.children_of(self.proc.pid)

    def errors(self, path="error.log"):
        return super().errors(path)

    def lines(self, name):
        """Lines so far in the file `name` of nginx's directory (an access log)."""
        with open(os.path.join(self.dir, name), "rb") as f:
            return sum(1 for _ in f)


class StrainOrigin(Server):
    """taskset -c CPU STRAIN origin --listen 127.0.0.1:PORT -t 1"""

    stop_signal = signal.SIGINT

    def __init__(self, strain, cpu):
        super().__init__(cpu, "/d/1/100", lambda r: r[0].startswith("HTTP/1.1 200"))
        self.strain = strain

    def argv(self):
        return ["taskset", "-c", str(self.cpu), self.strain, "origin",
                "--listen", "127.0.0.1:%d" % self.port, "-t", "1"]

    def threads(self):
        """Threads of the origin process."""
        try:
            return len(os.listdir("/proc/%d/task" % self.proc.pid))
        except OSError:
            return None

    def stats(self):
        """The origin's /_strain/stats document, or None."""
        r = http_get(self.port, "/_strain/stats")
        if r is None:
            return None
        try:
            return json.loads(r[2].decode("utf-8", "replace"))
        except ValueError:
            return {"raw": r[2][:500].decode("utf-8", "replace")}


class RecordingServer:
    """A tiny keep-alive HTTP/1.1 server on 127.0.0.1 port 0 that answers every
    request with 200 "hello world\\n" and keeps the first `keep` request paths."""

    REPLY = (b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n"
             b"Content-Length: 12\r\n\r\nhello world\n")

    def __init__(self, keep=2000):
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.port = self.sock.getsockname()[1]
        self.url = "http://127.0.0.1:%d/" % self.port
        self.keep = keep
        self.lock = threading.Lock()
        self.reset()
        threading.Thread(target=self._accept, daemon=True).start()

    def reset(self):
        """Forgets the requests seen so far."""
        with self.lock:
            self.paths = []
            self.count = 0

    def seen(self):
        """(paths kept, requests counted) so far."""
        with self.lock:
            return list(self.paths), self.count

    def _accept(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn):
        buf = b""
        conn.settimeout(5)
        try:
            while True:
                while b"\r\n\r\n" in buf:
                    head, buf = buf.split(b"\r\n\r\n", 1)
                    parts = head.split(b"\r\n", 1)[0].decode("latin-1").split()
                    with self.lock:
                        self.count += 1
                        if len(self.paths) < self.keep and len(parts) >= 2:
                            self.paths.append(parts[1])
                    conn.sendall(self.REPLY)
                data = conn.recv(65536)
                if not data:
                    return
                buf += data
        except OSError:
            return
        finally:
            conn.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.sock.close()


# One document at {path}: {doc}, the body strain's origin serves there.
SAME_BODY = """
    server {
        listen 127.0.0.1:{port} backlog=4096;
        location = {path} {
            return 200 "{doc}";
        }
    }
"""


def nginx_string(body):
    """body as the inside of an nginx "..." string, or None if it cannot be
    written there verbatim."""
    try:
        text = body.decode("ascii")
    except UnicodeDecodeError:
        return None
    if any(c in text for c in '"\\$\r{}') or any(ord(c) < 32 and c != "\n" for c in text):
        return None
    return text


def origin_pair(stack, strain, cpu, nofile, path, checks):
    """strain's origin and an nginx that serves, at `path`, the very 100-byte
    body the origin serves there, both on CPU `cpu` and on `stack`.  What each
    answered goes into `checks`."""
    so = stack.enter_context(StrainOrigin(strain, cpu))
    r = http_get(so.port, path)
    if r is None:
        raise BenchError("strain origin did not answer %s" % path)
    body = r[2]
    checks.update(origin_strain_status=r[0], origin_strain_body_len=len(body),
                  origin_strain_header_bytes=r[3], origin_strain_headers=r[1],
                  origin_strain_threads=so.threads())
    doc = nginx_string(body)
    checks["nginx_body_same_as_strain"] = doc is not None
    ng = stack.enter_context(Nginx(
        cpu, nofile, fill(SAME_BODY, path=path, doc=doc or ("0123456789" * 10)[:99] + "\n"),
        path, lambda r: r[0].startswith("HTTP/1.1 200") and len(r[2]) == 100))
    r = http_get(ng.port, path)
    checks.update(origin_nginx_body_len=len(r[2]), origin_nginx_header_bytes=r[3],
                  origin_nginx_headers=r[1])
    if len(body) != 100 or len(r[2]) != 100:
        raise BenchError("bodies are not 100 bytes: strain %d, nginx %d" % (len(body), len(r[2])))
    return so, ng


def hello_nginx(stack, cpu, nofile, h2c=False):
    """The private HELLO nginx on `stack` (over h2c only if `h2c`), and its
    command line as the docs quote it."""
    nginx = stack.enter_context(Nginx(cpu, nofile, h2c=h2c))
    log("nginx: %s (pid %d, workers %s), dir %s" % (nginx.url, nginx.proc.pid, nginx.pids(),
                                                   nginx.dir))
    return nginx, ("taskset -c %d nginx -p DIR/ -e DIR/error.log -c DIR/nginx.conf"
                   "   # worker_processes 1;%s return 200 \"hello world\\n\"" % (
                       cpu, " listen ... http2;" if h2c else ""))
