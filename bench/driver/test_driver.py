"""Table tests of the driver's pure parts: durations and integer-list options,
tool-output parsers, nginx's listener line, HTTP/2 frames and a request's
exchange over a socket pair, the run order and the ratio arithmetic.

Run from the repository root: python3 -m unittest discover -s bench -p 'test_*.py'
"""

import argparse
import socket
import unittest

from driver import cli, measure, report, servers, tools

WRK_TEXT = """Running 2s test @ http://127.0.0.1:8080/
  1 threads and 50 connections
  149304 requests in 2.00s, 18.22MB read
  Socket errors: connect 0, read 3, write 0, timeout 1
  Non-2xx or 3xx responses: 7
Requests/sec:  74491.20
"""

H2LOAD_TEXT = """finished in 2.00s, 2000.00 req/s, 150.00KB/s
requests: 4000 total, 4000 started, 4000 done, 3990 succeeded, 10 failed, 0 errored, 0 timeout
status codes: 3990 2xx, 0 3xx, 10 4xx, 0 5xx
"""


class Durations(unittest.TestCase):
    def test_parse_duration(self):
        for text, seconds in (("10", 10.0), ("10s", 10.0), ("500ms", 0.5), ("2m", 120.0),
                              ("1h", 3600.0), (" 1.5s ", 1.5)):
            self.assertEqual(cli.parse_duration(text), seconds, text)

    def test_fmt_dur(self):
        # Whole seconds as tools take them; anything else in milliseconds.
        for seconds, text in ((10.0, "10s"), (0.5, "500ms"), (2.25, "2250ms")):
            self.assertEqual(cli.fmt_dur(seconds), text)

    def test_int_list(self):
        # Empty items are skipped, so "" is the empty list that skips a part.
        for text, values in (("1,10", [1, 10]), (" 1, 10,", [1, 10]), ("", [])):
            args = argparse.Namespace(mem_connections=text)
            cli.int_list(args, "mem_connections")
            self.assertEqual(args.mem_connections, values, text)
        with self.assertRaisesRegex(cli.SetupError, "^--mem-connections takes comma-separated"):
            cli.int_list(argparse.Namespace(mem_connections="1,x"), "mem_connections")


class Parsers(unittest.TestCase):
    def test_wrk(self):
        r = tools.parse_wrk(WRK_TEXT)
        self.assertEqual(r["requests"], 149304)
        self.assertEqual(r["elapsed"], 2.0)
        self.assertEqual(r["bytes_read"], 18.22 * 1024 ** 2)
        self.assertEqual(r["rps"], 74491.2)
        self.assertEqual(r["socket_errors"], {"connect": 0, "read": 3, "write": 0, "timeout": 1})
        self.assertEqual(r["non_2xx"], 7)
        res = {"timed_out": False, "exit": 0}
        self.assertEqual(tools.problems(res, r), ["socket errors read 3, timeout 1", "non-2xx 7"])

    def test_h2load(self):
        run = {"stdout": H2LOAD_TEXT, "problems": []}
        r = tools.parse_h2load(run)
        self.assertEqual((r["requests"], r["ok"], r["duration"]), (3990, 3990, 2.0))
        self.assertEqual(run["problems"], ["h2load: 10 failed, 0 errored, 0 timeout"])


class NginxConfig(unittest.TestCase):
    def test_h2c_listener(self):
        # nginx 1.22: an http2 listener without ssl speaks h2c with prior knowledge only.
        for http2, line in (("", "listen 127.0.0.1:8080 backlog=4096;"),
                            (" http2", "listen 127.0.0.1:8080 backlog=4096 http2;")):
            self.assertIn(line, servers.fill(servers.HELLO, port=8080, http2=http2))

    def test_h2_frame(self):
        # An empty SETTINGS frame, then HEADERS on stream 1 with END_STREAM|END_HEADERS.
        self.assertEqual(servers.h2_frame(4, 0, 0), b"\x00\x00\x00\x04\x00\x00\x00\x00\x00")
        self.assertEqual(servers.h2_frame(1, 5, 1, b"\x82"),
                         b"\x00\x00\x01\x01\x05\x00\x00\x00\x01\x82")

    def test_exchange(self):
        # Everything the peer writes before it closes, however it is split.
        a, b = socket.socketpair()
        with a, b:
            b.sendall(b"HTTP/1.1 200 OK\r\n\r\n" + b"x" * 70000)
            b.shutdown(socket.SHUT_WR)
            self.assertEqual(servers.exchange(a, b"GET / HTTP/1.1\r\n\r\n"),
                             b"HTTP/1.1 200 OK\r\n\r\n" + b"x" * 70000)
            self.assertEqual(b.recv(100), b"GET / HTTP/1.1\r\n\r\n")


class Arithmetic(unittest.TestCase):
    def test_schedule(self):
        self.assertEqual(list(measure.schedule(3, ["a", "b"])),
                         [(1, "a"), (1, "b"), (2, "b"), (2, "a"), (3, "a"), (3, "b")])
        self.assertEqual(list(measure.schedule(2, ["a", "b"], alternate=False)),
                         [(1, "a"), (1, "b"), (2, "a"), (2, "b")])

    def test_compare(self):
        runs = [{"tool": t, "round": i, "x": x} for i, t, x in (
            (1, "wrk", 100), (1, "strain", 120), (2, "wrk", 200), (2, "strain", 180),
            (3, "wrk", 150), (3, "strain", None))]
        c = report.compare(runs, "tool", ("wrk", "strain"), "x", "wrk")
        self.assertEqual(c["medians"], {"wrk": 150, "strain": 150})
        self.assertEqual(c["ratios"], {"wrk": 1.0, "strain": 1.0})
        # A missing figure gives a missing ratio, not an error.
        self.assertEqual(c["paired"]["strain"], [1.2, 0.9, None])


if __name__ == "__main__":
    unittest.main()
