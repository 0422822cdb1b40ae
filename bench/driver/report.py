"""Turning runs into figures and text: medians, ratios, Markdown, JSON.

compare() is the arithmetic every benchmark's headline uses: per contender
the median of one figure over rounds, the ratio of each median to the
baseline's, and the paired per-round ratios that show the spread.  Report
collects the Markdown summary a script prints (ready for
docs/benchmarks.md); write_results() writes the raw numbers.
"""

import datetime
import json
import statistics

from .cli import log


def median(xs):
    """The median of the values that are not None, or None."""
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def ratio(a, b):
    """a / b, or None where either is missing or b is 0."""
    if a is None or b is None or b == 0:
        return None
    return a / b


def f_num(x, fmt="{:,.0f}"):
    """A number for a table: 1,234 by default, n/a if missing."""
    return "n/a" if x is None else fmt.format(x)


def f_ratio(x):
    """A ratio for a table: 1.23x."""
    return "n/a" if x is None else "%.2fx" % x


def pct(x, fmt="%.1f%%"):
    """A share (0.25) as a percentage (25.0%)."""
    return "n/a" if x is None else fmt % (100 * x)


def f_kib(kb):
    """Kibibytes as MiB with one decimal."""
    return "n/a" if kb is None else "%.1f MiB" % (kb / 1024)


def yn(v):
    """A requirement's verdict: yes, NO, n/a."""
    return "n/a" if v is None else ("yes" if v else "NO")


def flags(run):
    """The suffix of a per-run progress line: its problems, if any."""
    return ("  !! " + "; ".join(run["problems"])) if run["problems"] else ""


def compare(runs, key, names, figure, baseline):
    """The runs of each name (run[key] == name) under "by", the median of their
    `figure` under "medians", each median over the baseline's under "ratios",
    and under "paired" each name's per-round ratios to the baseline's run of
    the same round."""
    by = {n: [r for r in runs if r[key] == n] for n in names}
    med = {n: median([r[figure] for r in by[n]]) for n in names}
    base = {r["round"]: r[figure] for r in by[baseline]}
    paired = {n: [ratio(r[figure], base.get(r["round"])) for r in by[n]
                  if r["round"] in base] for n in names}
    return {"by": by, "medians": med, "ratios": {n: ratio(med[n], med[baseline]) for n in names},
            "paired": paired}


class Report:
    """The Markdown summary a script prints, built line by line."""

    def __init__(self):
        self.lines = []

    def w(self, text=""):
        """Adds a line."""
        self.lines.append(text)

    def para(self, text):
        """Adds a paragraph (a line and a blank line)."""
        self.w(text)
        self.w()

    def header(self, info, *versions):
        """The date and machine line: CPUs, model, kernel, then `versions`."""
        self.para("Date: %s; machine: %s CPUs, %s, Linux %s; %s." % (
            datetime.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z"),
            info["nproc"], info["cpu_model"], info["kernel"],
            "; ".join(v for v in versions if v is not None)))

    def table(self, headers, rows):
        """A Markdown table, then a blank line."""
        self.w("| %s |" % " | ".join(headers))
        self.w("|%s|" % "|".join("---" for _ in headers))
        for row in rows:
            self.w("| %s |" % " | ".join(str(c) for c in row))
        self.w()

    def commands(self, title, cmds):
        """The exact command lines, in a code block."""
        self.para(title)
        self.w("```")
        for c in cmds:
            self.w(c)
        self.w("```")

    def nginx_commands(self, strain, cmds, note=""):
        """commands() for runs against the private nginx (HELLO)."""
        self.commands("Commands (URL = http://127.0.0.1:PORT/ of the private nginx, "
                      "STRAIN = %s%s):" % (strain, note), cmds)

    def text(self):
        """The summary as one string."""
        return "\n".join(self.lines)


def write_results(path, args, info, sections, skip_options=("json",)):
    """Writes a run's raw numbers as JSON: date, machine, options, then `sections` in order."""
    doc = {
        "date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
        "machine": info,
        "options": {k: v for k, v in vars(args).items() if k not in skip_options},
    }
    doc.update(sections)
    with open(path, "w") as f:
        json.dump(doc, f, indent=2, default=str)
    log("raw numbers written to %s" % path)


def ratio_table(rep, runs, key, names, figure, baseline, labels):
    """The headline table of a closed-loop comparison: per contender (run[key])
    its runs' `figure`, their median and its ratio to the baseline's, and the
    same median and ratio for requests/s (wall).  `labels` names the figure's
    two columns.  Returns the compare() of the figure and of req/s."""
    fig = compare(runs, key, names, figure, baseline)
    wall = compare(runs, key, names, "rps", baseline)
    rep.table([key, "runs", labels[0], labels[1], "ratio vs " + baseline, "median req/s (wall)",
               "ratio vs " + baseline],
              [[n, len(fig["by"][n]), ", ".join(f_num(r[figure]) for r in fig["by"][n]),
                f_num(fig["medians"][n]), f_ratio(fig["ratios"][n]), f_num(wall["medians"][n]),
                f_ratio(wall["ratios"][n])] for n in names])
    return fig, wall


def finish(args, info, text, sections, nginx=None):
    """Prints the summary, shows nginx's error log if it has anything, and
    writes the raw numbers (with that log's tail) when --json was given."""
    print(text)
    if nginx is not None:
        errors = nginx.errors()
        sections["nginx_error_log_tail"] = errors
        if errors.strip():
            log("nginx error.log (tail):\n" + errors)
    if args.json:
        write_results(args.json, args, info, sections)
