"""Table tests of bench/grpc.py's pure parts: ghz's summary parser, the
EchoRequest size arithmetic, memory per stream, spreads and goal verdicts.

bench/grpc.py is loaded under another module name, so that "grpc" never
stands for it (grpcio's package has that name).

Run from the repository root: python3 -m unittest discover -s bench -p 'test_*.py'
"""

import importlib.util
import os
import unittest

_spec = importlib.util.spec_from_file_location(
    "bench_grpc", os.path.join(os.path.dirname(os.path.abspath(__file__)), "grpc.py"))
bg = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bg)

GHZ_TEXT = """
Summary:
  Count:\t23402
  Total:\t2.99 s
  Slowest:\t57.11 ms
  Fastest:\t0.45 ms
  Average:\t6.28 ms
  Requests/sec:\t7820.25

Latency distribution:
  10 % in 3.28 ms 
  99 % in 23.99 ms 

Status code distribution:
  [Unavailable]   36 responses      
  [OK]            23366 responses   

Error distribution:
  [1]   rpc error: code = Unavailable desc = error reading from server
"""


class GhzSummary(unittest.TestCase):
    def test_parse(self):
        g = bg.parse_ghz(GHZ_TEXT)
        self.assertEqual(g["count"], 23402)
        self.assertAlmostEqual(g["total_s"], 2.99)
        self.assertEqual(g["rps"], 7820.25)
        self.assertEqual(g["codes"], {"Unavailable": 36, "OK": 23366})
        self.assertEqual(g["ok"], 23366)

    def test_units_and_missing(self):
        # ghz prints a Go duration: ms under a second.
        self.assertAlmostEqual(bg.parse_ghz("  Count:\t100\n  Total:\t37.83 ms\n")["total_s"],
                               0.03783)
        # No summary at all (ghz failed): no OK count rather than 0.
        self.assertEqual(bg.parse_ghz("error: bad flag")["ok"], None)


class Arithmetic(unittest.TestCase):
    def test_echo_message_len(self):
        # tag + varint length + string: 100 bytes is a 98-byte string; from 130 the length
        # takes two bytes.
        for total, length in ((100, 98), (3, 1), (2, 0), (129, 127), (131, 128)):
            self.assertEqual(bg.echo_message_len(total), length, total)
        with self.assertRaises(ValueError):
            bg.echo_message_len(130)  # 127 gives 129 bytes, 128 gives 131
        self.assertEqual(bg.varint_len(127), 1)
        self.assertEqual(bg.varint_len(128), 2)

    def test_per_stream(self):
        self.assertAlmostEqual(bg.per_stream_kib(36668, 12000, 10000, 100), 24668 / 9900)
        for args in ((None, 1, 10, 1), (10, 1, 5, 5), (10, 1, 4, 5)):
            self.assertIsNone(bg.per_stream_kib(*args), args)

    def test_spread_and_verdict(self):
        self.assertEqual(bg.spread([3, None, 1, 2]), (1, 3))
        self.assertIsNone(bg.spread([None]))
        self.assertEqual(bg.f_spread([1000, 2500]), "1,000-2,500")
        self.assertEqual(bg.goal_verdict(3.1, 2.5), (True, "met (3.10x >= 2.5x)"))
        self.assertEqual(bg.goal_verdict(0.72, 0.8),
                         (False, "missed: 0.72x, 10% short of 0.8x"))
        self.assertEqual(bg.goal_verdict(None, 0.8), (None, "n/a (no figure)"))


if __name__ == "__main__":
    unittest.main()
