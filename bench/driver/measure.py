"""What the machine and its processes did during a run, read from /proc.

measured() is the one measured run every benchmark uses: wait for a quiet
machine, read the watched counters (a server's CPU seconds, its context
switches), run the generator with its own rusage, read them again, and
attribute what is left of the machine's busy time to "other CPU", the noise
indicator.  schedule() gives the order of the compared runs.
"""

import os
import re
import time

from . import proc


def clk_tck():
    """Clock ticks per second of /proc's CPU times."""
    return os.sysconf("SC_CLK_TCK")


def proc_cpu_seconds(pid):
    """utime+stime of a live process, all its threads, from /proc/PID/stat."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            data = f.read()
    except OSError:
        return None
    fields = data[data.rindex(")") + 2:].split()
    # fields[0] is field 3 (state); utime is field 14, stime field 15.
    return (int(fields[11]) + int(fields[12])) / clk_tck()


def status_fields(pid, *keys):
    """Integer values of `keys` (e.g. "VmHWM", "VmRSS") in /proc/PID/status, or None."""
    found = {}
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                key, _, rest = line.partition(":")
                if key in keys:
                    found[key] = int(rest.split()[0])
    except (OSError, ValueError, IndexError):
        return None
    return [found.get(k) for k in keys]


def ctx_switches(pid):
    """Voluntary + involuntary context switches so far of pid: about how often
    it slept and woke up."""
    v = status_fields(pid, "voluntary_ctxt_switches", "nonvoluntary_ctxt_switches")
    return None if v is None or None in v else sum(v)


def children_of(pid):
    """Pids of pid's direct children."""
    try:
        with open("/proc/%d/task/%d/children" % (pid, pid)) as f:
            return [int(x) for x in f.read().split()]
    except OSError:
        return []


def machine_busy_seconds():
    """CPU seconds all CPUs spent not idle since boot, from /proc/stat."""
    try:
        with open("/proc/stat") as f:
            fields = [int(x) for x in f.readline().split()[1:]]
    except (OSError, ValueError):
        return None
    # user nice system idle iowait irq softirq steal [guest guest_nice]
    return (sum(fields[:8]) - fields[3] - fields[4]) / clk_tck()


def settle(max_wait, threshold=0.15):
    """Waits (at most max_wait s) until the rest of the machine is quiet, less
    than `threshold` CPUs busy over one second; returns the last figure seen."""
    if max_wait <= 0:
        return None
    deadline = time.monotonic() + max_wait
    while True:
        b0, t0 = machine_busy_seconds(), time.monotonic()
        time.sleep(1)
        b1, t1 = machine_busy_seconds(), time.monotonic()
        if b0 is None or b1 is None:
            return None
        busy = (b1 - b0) / (t1 - t0)
        if busy < threshold or time.monotonic() >= deadline:
            return busy


def established_on_port(port):
    """ESTABLISHED IPv4 sockets whose local port is `port` (the server side)."""
    want = ":%04X" % port
    try:
        with open("/proc/net/tcp") as f:
            next(f)
            rows = [line.split(None, 4) for line in f]
    except OSError:
        return None
    return sum(1 for r in rows if r[1].endswith(want) and r[3] == "01")


def time_wait():
    """Sockets in TIME_WAIT on the machine (they hold local ports), from /proc/net/sockstat."""
    try:
        with open("/proc/net/sockstat") as f:
            m = re.search(r"^TCP:.* tw (\d+)", f.read(), re.M)
    except OSError:
        return None
    return int(m.group(1)) if m else None


def measured(argv, timeout, settle_s, counters=None, poll=None):
    """One generator run with what happened around it.

    `counters` maps a name to a function returning a running total (a
    server's CPU seconds, its context switches); the record gets each one's
    change over the run under that name, and for names ending in "_cpu" also
    "<name>_share" (of the run's wall time).  "other_cpu_share" is the
    machine's busy time not accounted for by the generator or the "_cpu"
    counters, in CPUs."""
    counters = counters or {}
    busy_before = settle(settle_s)
    before = {k: f() for k, f in counters.items()}
    m0 = machine_busy_seconds()
    res = proc.run(argv, timeout=timeout, poll=poll)
    m1 = machine_busy_seconds()
    after = {k: f() for k, f in counters.items()}
    wall = res["wall"] or None
    rec = dict(res, argv=argv, busy_before=busy_before,
               gen_cpu_share=res["cpu"] / wall if wall else None)
    known = res["cpu"]
    for k in counters:
        d = None if before[k] is None or after[k] is None else after[k] - before[k]
        rec[k] = d
        if k.endswith("_cpu"):
            rec[k + "_share"] = d / wall if wall and d is not None else None
            known += d or 0.0
    rec["other_cpu_share"] = (max(0.0, (m1 - m0) - known) / wall
                              if wall and m0 is not None and m1 is not None else None)
    return rec


def schedule(rounds, names, alternate=True):
    """(round, name) in the order to run: `names` each round, reversed every
    other round when `alternate`, so that no contender always runs first."""
    for i in range(1, rounds + 1):
        order = names if i % 2 == 1 or not alternate else list(reversed(names))
        for name in order:
            yield i, name
