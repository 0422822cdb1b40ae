"""The benchmarks' shared driver: everything a benchmark needs except its workload.

Each bench/*.py script declares only what it compares (which tools, which
command lines, which figures, which ratio is the headline) and calls into
these modules for the rest:

- ``cli``: common options, SIGTERM as Ctrl-C, cleanup on every exit path,
  exit codes (0 ok, 1 run failed, 2 setup error, 130 interrupted).
- ``servers``: private nginx from templates and ``strain origin``, each on a
  free loopback port, stopped on exit; a small recording HTTP server.
- ``proc``: running a tool pinned to a core with its own rusage (wait4),
  GNU time as the parent for exact peak RSS, command lines for the docs.
- ``measure``: CPU seconds from /proc, the quiet-machine wait, one measured
  run with the server's and the rest of the machine's CPU around it.
- ``tools``: parsing wrk, h2load, oha, strain --json and strace output.
- ``report``: medians, ratios, paired ratios, Markdown tables, JSON results.

Python 3 standard library only; everything stays on 127.0.0.1.
"""
