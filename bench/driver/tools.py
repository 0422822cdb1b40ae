"""Reading what each tool reports: wrk-format text (wrk and strain), strain's
--json, h2load's text, oha's JSON, strace -c tables.

Each parser returns a plain dict of figures; those that see a tool
misbehave append to the run's "problems" list, which the reports show.
"""

import json
import re

from . import measure
from .cli import log
from .report import f_num, flags

SIZE_UNITS = {"B": 1, "KB": 1024, "MB": 1024 ** 2, "GB": 1024 ** 3, "TB": 1024 ** 4}
TIME_UNITS = {"us": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
SOCKET_ERRORS = ("connect", "read", "write", "timeout")


def parse_wrk(text):
    """The figures of wrk-format text output (wrk and strain print the same)."""
    r = {}
    m = re.search(r"^\s*(\d+) requests in ([0-9.]+)(us|ms|s|m|h), ([0-9.]+)([KMGT]?B) read",
                  text, re.M)
    if m:
        r["requests"] = int(m.group(1))
        r["elapsed"] = float(m.group(2)) * TIME_UNITS[m.group(3)]
        r["bytes_read"] = float(m.group(4)) * SIZE_UNITS[m.group(5)]
    m = re.search(r"^Requests/sec:\s*([0-9.]+)", text, re.M)
    if m:
        r["rps"] = float(m.group(1))
    m = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", text)
    if m:
        r["socket_errors"] = dict(zip(SOCKET_ERRORS, map(int, m.groups())))
    m = re.search(r"Non-2xx or 3xx responses: (\d+)", text)
    if m:
        r["non_2xx"] = int(m.group(1))
    return r


def exit_problems(res):
    """What went wrong with the process: a timeout, an exit code."""
    p = []
    if res["timed_out"]:
        p.append("timed out")
    if res["exit"] != 0:
        p.append("exit %s" % res["exit"])
    return p


def problems(res, parsed):
    """What went wrong in a run of a wrk-format tool: exit_problems(), no
    request count, socket errors, non-2xx responses."""
    p = exit_problems(res)
    if not parsed.get("requests"):
        p.append("no request count")
    se = parsed.get("socket_errors")
    if se and any(se.values()):
        p.append("socket errors %s" % ", ".join("%s %d" % kv for kv in se.items() if kv[1]))
    if parsed.get("non_2xx"):
        p.append("non-2xx %d" % parsed["non_2xx"])
    return p


def load_strain_json(path, run):
    """strain's --json report without its per-interval series, or None (noted
    in run["problems"])."""
    try:
        with open(path) as f:
            doc = json.load(f)
    except (OSError, ValueError) as e:
        run["problems"].append("no --json report (%s)" % e)
        return None
    run["tool_report"] = {k: v for k, v in doc.items() if k != "intervals"}
    return doc


def parse_strain(run, json_path):
    """strain's figures: requests and duration from --json (the text line is a
    cross-check, and the fallback), 2xx/3xx count, errors, rate schedule."""
    doc = load_strain_json(json_path, run)
    text = parse_wrk(run["stdout"])
    out = {"text_requests": text.get("requests"), "text_elapsed": text.get("elapsed"),
           "requests": text.get("requests"), "duration": text.get("elapsed")}
    if doc:
        status = doc.get("status") or {}
        pct = (doc.get("latency_us") or {}).get("percentiles", {})
        out.update(requests=doc.get("requests"), duration=doc.get("duration_s"),
                   ok=sum(v for k, v in status.items() if str(k).startswith(("2", "3"))),
                   non_2xx=sum(v for k, v in status.items()
                               if not str(k).startswith(("2", "3"))),
                   errors=doc.get("errors"), rate=doc.get("rate"),
                   latency_p50_us=pct.get("50"), latency_p99_us=pct.get("99"))
        if out["text_requests"] is not None and out["requests"] != out["text_requests"]:
            run["problems"].append("text says %s requests, --json %s" % (
                out["text_requests"], out["requests"]))
    return out


H2_REQ = re.compile(r"^requests: (\d+) total, (\d+) started, (\d+) done, (\d+) succeeded, "
                    r"(\d+) failed, (\d+) errored, (\d+) timeout", re.M)
H2_FIN = re.compile(r"^finished in ([0-9.]+)(us|ms|s|m|h), ([0-9.]+) req/s", re.M)
H2_STATUS = re.compile(r"^status codes: (\d+) 2xx, (\d+) 3xx, (\d+) 4xx, (\d+) 5xx", re.M)


def parse_h2load(run):
    """h2load's figures: succeeded requests, status classes, its own duration."""
    text = run["stdout"]
    m = H2_REQ.search(text)
    if not m:
        run["problems"].append("no 'requests: N total' line")
        return {}
    keys = ("total", "started", "done", "succeeded", "failed", "errored", "timeouts")
    out = dict(zip(keys, map(int, m.groups())))
    out["requests"] = out["succeeded"]
    m = H2_STATUS.search(text)
    if m:
        out["status"] = dict(zip(("2xx", "3xx", "4xx", "5xx"), map(int, m.groups())))
        out["ok"] = out["status"]["2xx"] + out["status"]["3xx"]
    m = H2_FIN.search(text)
    if m:
        out["duration"] = float(m.group(1)) * TIME_UNITS[m.group(2)]
        out["reported_rps"] = float(m.group(3))
    if out["failed"] or out["errored"] or out["timeouts"]:
        run["problems"].append("h2load: %d failed, %d errored, %d timeout" % (
            out["failed"], out["errored"], out["timeouts"]))
    return out


def parse_oha(run):
    """oha's figures from --output-format json: 2xx/3xx count, its duration."""
    try:
        doc = json.loads(run["stdout"])
    except ValueError:
        run["problems"].append("oha stdout is not JSON")
        return {}
    summary = doc.get("summary") or {}
    status = doc.get("statusCodeDistribution") or {}
    errors = doc.get("errorDistribution") or {}
    ok = sum(v for k, v in status.items() if str(k).startswith(("2", "3")))
    lat = doc.get("latencyPercentiles") or {}
    out = {"status": status, "errors": errors, "ok": ok, "requests": ok,
           "responses": sum(status.values()), "error_count": sum(errors.values()),
           "duration": summary.get("total"), "success_rate": summary.get("successRate"),
           "reported_rps": summary.get("requestsPerSec"),
           "latency_p50_us": lat["p50"] * 1e6 if lat.get("p50") is not None else None,
           "latency_p99_us": lat["p99"] * 1e6 if lat.get("p99") is not None else None,
           # With -z on HTTP/1, oha aborts the requests in flight at the
           # deadline and counts them as errors: how it ends a run, not a failure.
           "aborted_at_deadline": errors.get("aborted due to deadline", 0)}
    run["tool_report"] = {k: v for k, v in doc.items()
                          if k not in ("responseTimeHistogram", "firstByteHistogram", "details")}
    real = {k: v for k, v in errors.items() if k != "aborted due to deadline"}
    if real:
        run["problems"].append("oha errors: %s" % ", ".join("%s x%d" % kv for kv in real.items()))
    return out


def parse_strace(path):
    """(total calls, {syscall: calls}) from an `strace -c -f -o path` table."""
    calls, per = None, {}
    with open(path) as f:
        for line in f:
            parts = line.split()
            if not parts or parts[0].startswith(("%", "-")):
                continue
            # columns: %time seconds usecs/call calls [errors] syscall
            try:
                n = int(parts[3])
            except (IndexError, ValueError):
                continue
            if parts[-1] == "total":
                calls = n
            else:
                per[parts[-1]] = n
    return calls, per


def measured_wrk(argv, timeout, settle_s, counters=None):
    """One measured run of a tool that prints wrk-format text, with its
    request count, rates, errors and requests per CPU-second of the tool."""
    run = measure.measured(argv, timeout, settle_s, counters)
    parsed = parse_wrk(run["stdout"])
    reqs = parsed.get("requests")
    run.update({k: parsed.get(k) for k in ("requests", "rps", "elapsed", "bytes_read",
                                           "socket_errors", "non_2xx")})
    run["req_per_cpu_s"] = reqs / run["cpu"] if reqs and run["cpu"] > 0 else None
    run["problems"] = problems(run, parsed)
    return run


def nginx_round(argv, duration, settle_s, nginx, tool, round_no):
    """One round's run of `tool` (wrk-format text) against the private `nginx`:
    measured_wrk() with nginx's CPU, tagged with the tool and the round, and
    its line logged."""
    run = measured_wrk(argv, duration + 30, settle_s, {"nginx_cpu": nginx.cpu_seconds})
    run.update(tool=tool, round=round_no)
    log("  round %d %-8s %10s req  %7.2f s cpu (user %.2f sys %.2f)  %10s req/CPU-s  "
        "%10s req/s  gen CPU %3.0f%%  nginx CPU %3.0f%%  other CPU %3.0f%%%s" % (
            round_no, tool, f_num(run["requests"]), run["cpu"], run["utime"], run["stime"],
            f_num(run["req_per_cpu_s"]), f_num(run["rps"]),
            100 * (run["gen_cpu_share"] or 0), 100 * (run["nginx_cpu_share"] or 0),
            100 * (run["other_cpu_share"] or 0), flags(run)))
    return run
