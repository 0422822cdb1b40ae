"""Tests of bench/replay.py's read part: its recordings are deterministic, in the
layout they claim and as long as asked; the record count is read from strain's output.

Run from the repository root: python3 -m unittest discover -s bench -p 'test_*.py'
"""

import importlib.util
import json
import os
import re
import sys
import tempfile
import unittest

_here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, _here)  # replay.py imports driver/
_spec = importlib.util.spec_from_file_location("bench_replay", os.path.join(_here, "replay.py"))
br = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(br)

COMBINED = re.compile(r'^\S+ - - \[\d\d/\w{3}/\d{4}:\d\d:\d\d:\d\d \+0000\] "(GET|HEAD) /\S* '
                      r'HTTP/1\.1" \d{3} \d+ "[^"]*" "[^"]*"$')


class ReadRecordings(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()

    def tearDown(self):
        self.dir.cleanup()

    def write(self, fmt, size=50000, rate=100, seed=41):
        path = os.path.join(self.dir.name, "%s-%d" % (fmt, seed))
        size, records = br.READ_WRITERS[fmt](path, size, rate, seed)
        with open(path) as f:
            lines = f.read().splitlines()
        return path, size, records, lines

    def test_sizes_counts_and_seeds(self):
        for fmt in br.READ_FORMATS:
            path, size, records, lines = self.write(fmt)
            self.assertEqual(size, os.path.getsize(path))
            self.assertGreaterEqual(size, 50000)
            self.assertEqual(records, len(lines))
            self.assertEqual(records % 100, 0)  # whole recorded seconds
            with open(path, "rb") as f:
                first = f.read()
            _, _, _, again = self.write(fmt)
            self.assertEqual("\n".join(again) + "\n", first.decode())
            _, _, _, other = self.write(fmt, seed=42)
            self.assertNotEqual(other[:10], lines[:10])

    def test_combined_layout_and_variety(self):
        _, _, _, lines = self.write("combined", size=200000)
        for line in lines:
            self.assertRegex(line, COMBINED)
        statuses = {line.split('" ')[1].split()[0] for line in lines}
        self.assertGreaterEqual(len(statuses), 5)
        self.assertGreaterEqual(len({line.rsplit('"', 2)[1] for line in lines}), 5)
        self.assertGreater(len({line.split('"')[1] for line in lines}), len(lines) / 2)  # "/", "/robots.txt" ... repeat

    def test_jsonl_fields_in_time_order(self):
        _, _, _, lines = self.write("jsonl")
        docs = [json.loads(x) for x in lines]
        self.assertTrue(all(set(d) == {"time", "method", "url", "header"} for d in docs))
        self.assertTrue(all(isinstance(v, list) for d in docs for v in d["header"].values()))
        times = [d["time"] for d in docs]
        self.assertEqual(times, sorted(times))
        self.assertEqual(int(times[0]), br.EPOCH)

    def test_caddy_access_log(self):
        _, _, _, lines = self.write("caddy")
        for d in map(json.loads, lines):
            self.assertEqual((d["logger"], d["msg"]), ("http.log.access", "handled request"))
            self.assertIn(d["request"]["method"], ("GET", "HEAD"))
            self.assertTrue(d["request"]["uri"].startswith("/"))
            self.assertIsInstance(d["ts"], float)

    def test_scanned_count(self):
        out = ("Replaying /tmp/x.log (combined) @ http://127.0.0.1:1/\n"
               "  1,555,000 requests over 25.92m at 1x\n  1 threads and 1 connections\n")
        self.assertEqual(br.scanned_count(out), 1555000)
        self.assertIsNone(br.scanned_count("strain: unknown format\n"))


if __name__ == "__main__":
    unittest.main()
