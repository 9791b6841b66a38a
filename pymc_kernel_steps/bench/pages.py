"""What every result page starts with and the table it shows: the run's context (machine, load,
versions, git commit, date, the exact command) and :func:`~.metrics.ess_err_table` as markdown."""

from __future__ import annotations

import datetime as _dt
import math
import os
import platform
import subprocess
from importlib import metadata
from pathlib import Path

__all__ = ["context_lines", "format_figure", "markdown_table"]


def _version(dist):
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "not installed"


def _git_commit():
    """The commit of the checkout this package is imported from (``unknown`` outside one)."""
    here = Path(__file__).resolve().parent
    try:
        out = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=here, capture_output=True, text=True
        )
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=here,
            capture_output=True,
            text=True,
        )
        return out.stdout.strip() + (" (modified)" if dirty.stdout.strip() else "")
    except OSError:
        return "unknown"


def context_lines(command: str) -> list[str]:
    """Machine, versions, date and command, as markdown bullet points."""
    from .._version import __version__

    cpu = platform.processor() or platform.machine()
    try:
        load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    except OSError:
        load = "unknown"
    versions = ", ".join(
        f"{d} {_version(d)}"
        for d in ("pymc", "pytensor", "arviz", "numpy", "scipy", "pandas", "emcee", "matplotlib")
    )
    return [
        f"- date: {_dt.datetime.now(_dt.UTC).strftime('%Y-%m-%d %H:%M UTC')}",
        f"- command: `{command}`",
        f"- machine: {platform.system()} {platform.release()}, {cpu}, {os.cpu_count()} CPUs, "
        f"load average at the start {load} (the machine is shared: timings are noisy)",
        f"- python {platform.python_version()}, pymc-kernel-steps {__version__} "
        f"(git {_git_commit()}), {versions}",
    ]


def format_figure(x) -> str:
    """A figure with 3-4 significant digits; ``-`` for None or a non-finite value."""
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "-"
    x = float(x)
    if abs(x) >= 100:
        return f"{x:.0f}"
    if abs(x) >= 10:
        return f"{x:.1f}"
    if abs(x) >= 1:
        return f"{x:.2f}"
    return f"{x:.3f}"


def markdown_table(table) -> str:
    """The per-sampler table of :func:`~.metrics.ess_err_table` as GitHub markdown."""
    _fmt = format_figure
    header = (
        "| sampler | evals (mean) | E[x] worst [90% CI] | E[x] median | E[x²] worst [90% CI] | "
        "E[x²] median | ArviZ bulk (pooled) | ArviZ tail (pooled) | max R-hat (pooled) | "
        "ArviZ bulk (1 run) | s / run | own ms / iter |"
    )
    lines = [header, "|:--" + "|--:" * 11 + "|"]
    for name, row in table.iterrows():
        cells = [
            str(name),
            f"{row['evaluations']:.0f}",
            f"{_fmt(row['mean_worst'])} [{_fmt(row['mean_worst_lo'])}, "
            f"{_fmt(row['mean_worst_hi'])}]",
            _fmt(row["mean_median"]),
            f"{_fmt(row['second_moment_worst'])} [{_fmt(row['second_moment_worst_lo'])}, "
            f"{_fmt(row['second_moment_worst_hi'])}]",
            _fmt(row["second_moment_median"]),
            _fmt(row["ess_bulk_per_1000"]),
            _fmt(row["ess_tail_per_1000"]),
            _fmt(row["max_r_hat"]),
            _fmt(row["ess_bulk_within_per_1000"]),
            _fmt(row["seconds"]),
            _fmt(row["own_ms_per_iteration"]),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)
