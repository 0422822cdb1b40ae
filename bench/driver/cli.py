"""Command-line boilerplate shared by every benchmark script.

Common options with each script's own defaults, the strain binary's path,
SIGTERM handled like Ctrl-C so that cleanup runs, and one entry point that
maps failures to exit codes and always stops what the run started (the
script registers servers and temporary directories on an ExitStack).
"""

import argparse
import contextlib
import json
import os
import platform
import re
import shutil
import signal
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


class BenchError(Exception):
    """The run failed (a server did not start, a tool misbehaved): exit 1."""


class SetupError(BenchError):
    """A tool or file is missing or an option is wrong: exit 2."""


def log(msg):
    """Progress and per-run lines go to stderr; the summary goes to stdout."""
    print(msg, file=sys.stderr, flush=True)


def parse_duration(text):
    """Seconds from a wrk-style duration: 500ms, 10, 10s, 2m, 1h."""
    m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*(ms|s|m|h)?\s*", text)
    if not m:
        raise argparse.ArgumentTypeError("bad duration %r" % text)
    return float(m.group(1)) * {"ms": 0.001, "s": 1, "m": 60, "h": 3600}[m.group(2) or "s"]


def fmt_dur(seconds):
    """A duration as the tools take it: whole seconds as "10s", else milliseconds."""
    if seconds == int(seconds):
        return "%ds" % int(seconds)
    return "%dms" % int(round(seconds * 1000))


SETTLE_HELP = ("before each run, wait up to this many seconds for the rest of the machine "
               "to go quiet (<0.15 CPUs busy over 1 s); 0 to skip")

# Rounds of the compared runs: the median of 3 tolerates one disturbed run.
ROUNDS = 3
# Seconds of the unreported run that warms the server up before round 1.
WARMUP_S = 2.0
# Seconds to wait at most for a quiet machine before each run.
SETTLE_S = 30.0

# Options a script may take: name -> (type, default, help).  A script names
# the ones it has in parser(), and gives a default where there is none here.
COMMON = {
    "rounds": (int, ROUNDS, "rounds; the contenders' order is reversed every other round "
                            "unless the script says otherwise"),
    "duration": (parse_duration, None, "duration of each run"),
    "connections": (int, None, "connections"),
    "warmup": (parse_duration, WARMUP_S, "unreported run before the first round, see the "
                                         "script's docstring (0 to skip)"),
    "settle": (float, SETTLE_S, SETTLE_HELP),
}


def parser(description, *common, **defaults):
    """An ArgumentParser with --strain, --gen-cpu, --server-cpu, --json and the
    COMMON options named in `common` or `defaults` (name=default)."""
    ap = argparse.ArgumentParser(description=description,
                                 formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    ap.add_argument("--strain", default="target/dist/strain",
                    help="strain binary (relative paths: to the current directory, "
                         "else to the repository root)")
    for name in list(common) + list(defaults):
        kind, value, text = COMMON[name]
        ap.add_argument("--" + name, type=kind, default=defaults.get(name, value), help=text)
    ap.add_argument("--gen-cpu", type=int, default=0, help="CPU for the load generator")
    ap.add_argument("--server-cpu", type=int, default=1, help="CPU for the server(s)")
    ap.add_argument("--json", metavar="OUT", help="write raw numbers to OUT")
    ap.add_argument("--baseline", metavar="PATH",
                    help="an earlier strain build, run as 'baseline' in the same rounds as "
                         "strain, so a change is measured against the build before it")
    return ap


def memory_options(ap, connections, streams=None,
                   connections_help="connections, memory runs (0 to skip)"):
    """--mem-connections (a number, or a string of comma-separated numbers for
    int_list), --mem-streams where the script's memory runs multiplex, and
    --mem-duration: the memory runs' options, alike in every script that has them."""
    ap.add_argument("--mem-connections", type=type(connections), default=connections,
                    help=connections_help)
    if streams is not None:
        ap.add_argument("--mem-streams", type=int, default=streams, help="-m of the memory runs")
    ap.add_argument("--mem-duration", type=parse_duration, default=5.0,
                    help="duration of each memory run")


def int_list(args, name):
    """Option `name` of the parsed `args`, comma-separated integers (empty items
    skipped), replaced by the list of them."""
    text = getattr(args, name)
    try:
        setattr(args, name, [int(n) for n in text.split(",") if n.strip()])
    except ValueError:
        raise SetupError("--%s takes comma-separated integers, not %r"
                         % (name.replace("_", "-"), text))


def parse(ap, needs_strain=True):
    """Parses the command line and resolves --strain to an absolute path."""
    args = ap.parse_args()
    if not os.path.isabs(args.strain) and not os.path.exists(args.strain):
        alt = os.path.join(REPO, args.strain)
        if os.path.exists(alt):
            args.strain = alt
    args.strain = os.path.abspath(args.strain)
    if needs_strain and not (os.path.isfile(args.strain) and os.access(args.strain, os.X_OK)):
        raise SetupError("strain binary not found or not executable: %s (build it with "
                         "cargo build --profile dist, or pass --strain PATH)" % args.strain)
    if getattr(args, "baseline", None):
        args.baseline = os.path.abspath(args.baseline)
        if not (os.path.isfile(args.baseline) and os.access(args.baseline, os.X_OK)):
            raise SetupError("baseline binary not found or not executable: %s" % args.baseline)
    return args


def contenders(args, tools):
    """The contenders of a script: its `tools`, plus 'baseline' with --baseline."""
    return tuple(tools) + (("baseline",) if getattr(args, "baseline", None) else ())


def require(tools, hint):
    """Fails with an install hint unless every program in `tools` is on PATH."""
    missing = [t for t in tools if shutil.which(t) is None]
    if missing:
        raise SetupError("missing %s; install with: %s" % (", ".join(missing), hint))


def find_tool(name, also=()):
    """The path of `name` on PATH or among `also`, or None."""
    path = shutil.which(name)
    for cand in also:
        if path is None and os.access(os.path.expanduser(cand), os.X_OK):
            path = os.path.expanduser(cand)
    return path


def tool_version(argv):
    """The first line a tool prints for its version, or "" if it cannot run."""
    try:
        p = subprocess.run(argv, capture_output=True, text=True, timeout=10)
        text = (p.stdout + p.stderr).strip().splitlines()
        return text[0].strip() if text else ""
    except (OSError, subprocess.TimeoutExpired):
        return ""


def machine_info(versions):
    """CPU count and model, kernel, Python, and `versions` (name -> version argv)."""
    model = ""
    try:
        with open("/proc/cpuinfo") as f:
            model = next((line.split(":", 1)[1].strip() for line in f
                          if line.startswith("model name")), "")
    except OSError:
        pass
    info = {"nproc": os.cpu_count(), "cpu_model": model, "kernel": platform.release(),
            "python": platform.python_version()}
    for name, argv in versions.items():
        info[name] = tool_version(argv)
    log("machine: %s" % json.dumps(info))
    return info


def run(main):
    """Runs main(stack) and returns the process exit code.

    Whatever main registers on `stack` (servers, temporary directories) is
    stopped on every way out, including Ctrl-C and SIGTERM."""
    def on_term(signum, frame):
        raise KeyboardInterrupt
    signal.signal(signal.SIGTERM, on_term)
    try:
        with contextlib.ExitStack() as stack:
            return main(stack) or 0
    except SetupError as e:
        log("error: %s" % e)
        return 2
    except KeyboardInterrupt:
        log("interrupted; servers stopped")
        return 130
    except (BenchError, subprocess.SubprocessError) as e:
        log("error: %s" % e)
        return 1
