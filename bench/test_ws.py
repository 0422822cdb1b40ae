"""Table tests of bench/ws.py's pure parts: memory per connection from pairs of runs, and the
checks of a held run's counts.

Run from the repository root: python3 -m unittest discover -s bench -p 'test_*.py'
"""

import importlib.util
import os
import unittest

_spec = importlib.util.spec_from_file_location(
    "bench_ws", os.path.join(os.path.dirname(os.path.abspath(__file__)), "ws.py"))
bw = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bw)


class PerConnection(unittest.TestCase):
    def test_pairs_by_key(self):
        memory = [
            {"tool": "strain", "round": 1, "connections": 100, "maxrss_kb": 6000},
            {"tool": "strain", "round": 1, "connections": 10000, "maxrss_kb": 9900},
            {"tool": "strain", "round": 2, "connections": 10000, "maxrss_kb": 9000},
            {"tool": "go", "round": 1, "connections": 10000, "maxrss_kb": 250000},
            {"tool": "go", "round": 1, "connections": 100, "maxrss_kb": 3000},
        ]
        pairs = bw.per_connection(memory, ("tool", "round"), 10000)
        # Round 2 of strain has no small run: no pair.
        self.assertEqual([(p["tool"], p["round"]) for p in pairs], [("go", 1), ("strain", 1)])
        self.assertAlmostEqual(pairs[1]["bytes_per_connection"], 3900 * 1024 / 9900)
        self.assertEqual((pairs[1]["small_kb"], pairs[1]["big_kb"]), (6000, 9900))


class HeldChecks(unittest.TestCase):
    def doc(self, **ws):
        w = {"handshakes": 10000, "drops": {}, "closes": {}}
        w.update(ws)
        return {"websocket": w, "errors": {"connect": 0, "timeout": 0},
                "intervals": [{"open_connections": 5000}, {"open_connections": 10000},
                              {"open_connections": 9000}]}

    def test_clean(self):
        fig, problems = bw.held_checks(self.doc(), 10000)
        self.assertEqual(problems, [])
        self.assertEqual((fig["handshakes"], fig["most_open"]), (10000, 10000))

    def test_short_and_dropped(self):
        doc = self.doc(handshakes=512, drops={"reset": 3})
        doc["errors"]["timeout"] = 9488
        doc["intervals"] = [{"open_connections": 512}]
        _, problems = bw.held_checks(doc, 10000)
        self.assertEqual(problems, ["512 upgrades, not 10000", "at most 512 open, not 10000",
                                    "drops {'reset': 3}"])
        # The drain's timeouts (one per connection still listening at -d) are not a problem.
        doc["errors"]["timeout"], doc["errors"]["read"] = 10001, 2
        _, problems = bw.held_checks(doc, 10000)
        self.assertEqual(problems[-2:], ["errors {'read': 2}",
                                         "10001 timeouts, more than the connections"])

    def test_no_json(self):
        fig, problems = bw.held_checks(None, 100)
        self.assertIsNone(fig["handshakes"])
        self.assertEqual(problems, ["None upgrades, not 100"])


if __name__ == "__main__":
    unittest.main()
