"""Running one tool: pinned to a core, timed out, with its own rusage.

run() waits with os.wait4() on the child's pid, so the CPU figures are that
process's own (taskset execs the tool, so the pid is the tool), not the
cumulative RUSAGE_CHILDREN.  Peak RSS needs GNU time as the parent instead
(see timed()).  display() turns a command line into what docs/benchmarks.md
quotes (URL, STRAIN, FILE).
"""

import os
import resource
import shlex
import subprocess
import tempfile
import time


def pinned(cpu, argv):
    """argv run on CPU `cpu` only."""
    return ["taskset", "-c", str(cpu)] + list(argv)


def run(argv, timeout, poll=None):
    """Runs argv and waits for it with os.wait4(), killing it past `timeout` s.

    Returns dict(stdout, stderr, exit, wall, utime, stime, cpu, maxrss_kb,
    timed_out).  `poll(pid, elapsed)` is called about every 10 ms meanwhile.

    maxrss_kb here is NOT the child's peak RSS: Linux keeps, in the child's
    rusage, the high-water RSS of the image it replaced at exec, i.e. of this
    Python process (14-20 MiB).  Use timed() for peak RSS."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.monotonic()
        proc = subprocess.Popen(argv, stdout=out, stderr=err, stdin=subprocess.DEVNULL)
        timed_out = False
        try:
            while True:
                pid, status, ru = os.wait4(proc.pid, os.WNOHANG)
                if pid == proc.pid:
                    break
                now = time.monotonic() - start
                if poll is not None:
                    poll(proc.pid, now)
                if now > timeout:
                    timed_out = True
                    proc.kill()
                    pid, status, ru = os.wait4(proc.pid, 0)
                    break
                time.sleep(0.01)
        except BaseException:
            # Ctrl-C or anything else: do not leave the generator running.
            try:
                proc.kill()
                os.wait4(proc.pid, 0)
            except (OSError, ChildProcessError):
                pass
            proc.returncode = -9
            raise
        wall = time.monotonic() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        return {
            "stdout": out.read().decode("utf-8", "replace"),
            "stderr": err.read().decode("utf-8", "replace"),
            "exit": proc.returncode,
            "wall": wall,
            "utime": ru.ru_utime,
            "stime": ru.ru_stime,
            "cpu": ru.ru_utime + ru.ru_stime,
            "maxrss_kb": ru.ru_maxrss,
            "timed_out": timed_out,
        }


# GNU time's fields, in the order of its -f letters, as run records name them.
TIME_FIELDS = {"M": "maxrss_kb", "U": "time_utime", "S": "time_stime",
               "w": "voluntary_ctx", "c": "involuntary_ctx"}


def timed(argv, path, letters="MUS"):
    """argv under GNU time writing `letters` (of TIME_FIELDS) to `path`.

    GNU time as the tool's parent takes its wait4() rusage: a child of GNU
    time starts from a ~2 MiB RSS floor, one forked from Python from
    Python's own RSS (see run())."""
    fmt = " ".join("%" + c for c in letters)
    return ["/usr/bin/time", "-f", fmt, "-o", path] + list(argv)


def read_timed(path, letters="MUS"):
    """The figures GNU time wrote to `path` by TIME_FIELDS name, or {}."""
    try:
        with open(path) as f:
            last = f.read().strip().splitlines()[-1].split()
        return {TIME_FIELDS[c]: (int(v) if c in "Mwc" else float(v))
                for c, v in zip(letters, last)}
    except (OSError, ValueError, IndexError):
        return {}


def raise_nofile():
    """Raises the soft RLIMIT_NOFILE to the hard limit (children inherit it)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


def display(argv, names):
    """argv as the docs quote it: private URLs become URL, any argument found in
    `names` (path -> label, e.g. the strain binary -> STRAIN) its label."""
    out = []
    for a in argv:
        if a.startswith("http://127.0.0.1:"):
            out.append("URL")
        elif a in names:
            out.append(names[a])
        else:
            out.append(shlex.quote(a))
    return " ".join(out)
