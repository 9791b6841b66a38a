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

__all__ = [
    "context_lines",
    "format_figure",
    "index_page",
    "markdown_table",
    "page_header",
    "parse_relabel",
    "relabel_samplers",
]


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
    from pymc_kernel_steps._version import __version__

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


def page_header(text: str) -> list[str]:
    """The provenance lines of a result page: every line after its title and before its first
    table row (``|``), without the blank lines around them."""
    lines = text.splitlines()
    if not lines or not lines[0].startswith("# "):
        raise ValueError("a result page starts with a '# ' title line")
    header = []
    for line in lines[1:]:
        if line.startswith("|"):
            break
        header.append(line)
    while header and not header[0].strip():
        header.pop(0)
    while header and not header[-1].strip():
        header.pop()
    return header


def parse_relabel(pairs) -> dict[str, str]:
    """``["OLD=NEW", ...]`` as ``{OLD: NEW}``; an error names a malformed or repeated pair."""
    mapping: dict[str, str] = {}
    for pair in pairs or ():
        old, sep, new = pair.partition("=")
        old, new = old.strip(), new.strip()
        if not sep or not old or not new:
            raise ValueError(f"relabel: expected OLD=NEW, got {pair!r}")
        if old in mapping:
            raise ValueError(f"relabel: {old!r} is relabelled twice")
        mapping[old] = new
    return mapping


def relabel_samplers(frame, mapping: dict[str, str]):
    """A copy of a tidy runs frame with its ``sampler`` labels renamed by ``mapping``.

    Every old label must be in the frame, and no new label may already be there unless it is
    itself renamed (rows of two samplers are never silently merged under one label)."""
    present = set(frame["sampler"].unique())
    missing = sorted(set(mapping) - present)
    if missing:
        raise ValueError(f"relabel: {missing} not among the frame's samplers {sorted(present)}")
    kept = present - set(mapping)
    renamed = list(mapping.values())
    clash = sorted({n for n in renamed if n in kept or renamed.count(n) > 1})
    if clash:
        raise ValueError(f"relabel: {clash} would name the rows of two samplers")
    out = frame.copy()
    out["sampler"] = out["sampler"].replace(mapping)
    return out


INDEX_TITLE = "# Benchmarks: accuracy per target evaluation"
INDEX_COLUMNS = (
    "| target | budget | ours: best | ESS_err / 1k | peer: best | ESS_err / 1k | ratio |",
    "|:--|--:|:--|--:|:--|--:|--:|",
)


def _index_row_target(line: str) -> str | None:
    """The target of an index row ``| [name](name.md) | ...``, or None."""
    first = line.strip().strip("|").split("|")[0].strip()
    if first.startswith("[") and "](" in first:
        return first[1 : first.index("](")]
    return None


def index_page(
    existing: str | None,
    rows: dict[str, str],
    context: list[str],
    fallback_rows: dict[str, str] | None = None,
) -> str:
    """The benchmarks' ``index.md``: ``rows`` (``{target: table row}``, this run's) with the
    rows of the ``existing`` page for every other target, ``fallback_rows`` for targets in
    neither, and the existing page's text below its table (hand-written notes), under a fresh
    ``context`` (:func:`context_lines`).

    A run of some targets, or a merge of one, thus neither drops the others' rows (nor their
    hand edits) nor the notes that explain them. An existing table with other columns than
    :data:`INDEX_COLUMNS` is an error (its rows cannot be carried over).
    """
    kept: dict[str, str] = {}
    notes: list[str] = []
    if existing:
        lines = existing.splitlines()
        start = next((i for i, line in enumerate(lines) if line.startswith("|")), len(lines))
        end = next(
            (i for i in range(start, len(lines)) if not lines[i].startswith("|")), len(lines)
        )
        table = lines[start:end]
        if tuple(table[:2]) == INDEX_COLUMNS:
            for line in table[2:]:
                target = _index_row_target(line)
                if target is not None and target not in rows:
                    kept[target] = line
        elif table:
            raise ValueError(
                "the existing index's table has other columns than "
                f"{INDEX_COLUMNS[0]!r}: move or delete it first (its rows would be lost)"
            )
        notes = lines[end:]
        while notes and not notes[0].strip():
            notes.pop(0)
    merged = {**(fallback_rows or {}), **kept, **rows}
    text = [
        INDEX_TITLE,
        "",
        *context,
        "",
        "Per target: the best of our samplers and the best peer by the worst-coordinate "
        "error-based ESS of E[x] per 1000 evaluations (details, run times and figures in each "
        "target's page).",
        "",
        *INDEX_COLUMNS,
        *(merged[name] for name in sorted(merged)),
    ]
    if notes:
        text += ["", *notes]
    return "\n".join(text).rstrip("\n") + "\n"
