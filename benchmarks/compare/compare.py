"""Accuracy per target evaluation of our samplers against the peers a user would pick instead.

For every target of :data:`pymc_kernel_steps_bench.targets.TARGETS` that has a reference (exact
moments), :func:`pymc_kernel_steps_bench.runners.compare_samplers` runs every sampler at the same
budget of counted target evaluations, ``--replicates`` times with independent seeds, and compares
the estimates of ``E[x_i]`` and ``E[x_i²]`` with the truth: the error-based ESS per 1000
evaluations (worst coordinate with a bootstrap interval over replicates, and median), with
ArviZ's bulk/tail ESS and R-hat beside it. See :mod:`pymc_kernel_steps_bench.runners` for the budget
mapping of each sampler kind.

Samplers: ours (KAMH, AdaptiveMetropolis, KMCLite, KMCFinite, CKAM, whose estimates use its
sampling-phase draws) on the black-box model (a counting ``Op`` without gradient); peers
``pm.sample_smc`` and ``emcee`` on the same black box, ``pm.DEMetropolisZ``, and NUTS on the
differentiable twin (``black_box=False``) where the target has one.

Writes ``<target>.md`` (machine, versions, date, the exact command, the table) and
``<target>.png``/``<target>-second-moment.png`` into ``--out`` (default ``docs/benchmarks``),
and ``index.md`` with each target's best sampler of ours against the best peer.

Run time (``make bench``): 3-50 minutes per cheap target (banana, Pima, bimodal, ABC) on one core
of the shared 2-core development machine, depending on its load; KMCLite and KMCFinite take most
of it (15-150 s per 12,000-evaluation run), every other sampler under 10 s per run. The ODE
(5-10 ms per evaluation) takes about 100 minutes, the glass GP (6-40 ms) several hours.
``--cores`` runs targets in parallel (``fork``ed processes; each counts its own
evaluations). ``--quick`` took 3.5 minutes at load average 5.

Examples
--------
``python benchmarks/compare/compare.py`` (the full run: budget 12,000, 10 replicates, every target)
``python benchmarks/compare/compare.py --quick`` (budget 2,000, 3 replicates, the banana; written to
``docs/benchmarks/quick``)
``python benchmarks/compare/compare.py --targets banana --samplers KMCLite,KMCFinite,emcee,SMC``
"""

from __future__ import annotations

import argparse
import concurrent.futures
import math
import multiprocessing
import shlex
import sys
import time
from pathlib import Path

import numpy as np

import pymc_kernel_steps as pks
from pymc_kernel_steps.options import Regression
from pymc_kernel_steps_bench import compare_samplers, ess_err_table, plot_comparison
from pymc_kernel_steps_bench import targets as T
from pymc_kernel_steps_bench.pages import (
    context_lines,
    index_page,
    markdown_table,
    page_header,
    parse_relabel,
    relabel_samplers,
)
from pymc_kernel_steps_bench.pages import format_figure as _fmt
from pymc_kernel_steps_bench.references import reference_for

ROOT = Path(__file__).resolve().parents[2]
OURS = ("KAMH", "AdaptiveMetropolis", "KMCLite", "KMCFinite", "CKAM")
#: non-default settings of ours, benchmarked under their own label
VARIANTS = {
    "KMCLite-score_matching": lambda: pks.KMCLite(surrogate="score_matching"),
    "KMCLite-quadratic": lambda: pks.KMCLite(surrogate=Regression(trend="quadratic")),
    # the papers' single moves, the defaults until issue 24
    "KMCLite-fixed": lambda: pks.KMCLite(moves="fixed"),
    "KMCFinite-fixed": lambda: pks.KMCFinite(moves="fixed"),
    "KAMH-fixed": lambda: pks.KAMH(moves="fixed"),
}


def is_ours(label: str) -> bool:
    """Whether a sampler label (``"KMCLite"``, ``"KMCLite-score_matching"``, ``"KAMH:…"``) is
    ours: a variant's label starts with its sampler's name and a hyphen (a former default's
    rows kept under a new label, e.g. ``"KMCLite-t-envelope"``, included)."""
    return label.split(":")[0].split("-")[0] in OURS


PEERS = {"SMC": "smc", "emcee": "emcee", "DEMetropolisZ": "demetropolisz", "NUTS": "nuts"}
QUICK = {"budget": 2000, "replicates": 3, "targets": "banana"}


# -------------------------------------------------------------------------------- samplers
def available_samplers(names=None) -> dict:
    """``{label: spec}`` of the samplers that exist in this checkout, in the order given."""
    specs = {name: getattr(pks, name) for name in OURS if hasattr(pks, name)}
    specs.update(VARIANTS)
    specs.update(PEERS)
    if names is None:
        return specs
    unknown = [n for n in names if n not in specs]
    if unknown:
        raise SystemExit(f"unknown samplers {unknown}; available: {list(specs)}")
    return {n: specs[n] for n in names}


def _twin(target):
    """The differentiable twin of a target, or None (a twin has no counting op)."""
    try:
        twin = target.build(black_box=False)
    except (TypeError, ValueError, NotImplementedError):
        return None
    return None if T.counting_ops(twin) else twin


# ---------------------------------------------------------------------------------- tables
def _best(table, names):
    rows = table.loc[[n for n in table.index if n in names]]
    if rows.empty or not np.any(np.isfinite(rows["mean_worst"])):
        return None, math.nan
    best = rows["mean_worst"].astype(float).idxmax()
    return best, float(rows.loc[best, "mean_worst"])


def _ours_and_peer(table):
    """``((ours, figure), (peer, figure))``: our best sampler and the best peer in ``table``."""
    ours = _best(table, [n for n in table.index if is_ours(n)])
    return ours, _best(table, [n for n in table.index if not is_ours(n)])


# ------------------------------------------------------------------------------------- run
def run_target(name: str, args, command: str) -> dict:
    """Compare the samplers on one target, write its markdown and figures; return a summary."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    target = T.TARGETS[name]
    reference = reference_for(name, target)
    model = target.build(black_box=True)
    twin = _twin(target)
    samplers = available_samplers(args.samplers)
    skipped = []
    if twin is None and "NUTS" in samplers:
        samplers.pop("NUTS")
        skipped.append("NUTS (no differentiable twin)")
    start = time.perf_counter()
    df = compare_samplers(
        model,
        samplers,
        budget=args.budget,
        replicates=args.replicates,
        reference=reference,
        var_names=[target.var_name],
        gradient_model=twin,
        tune_fraction=args.tune_fraction,
        random_seed=args.seed,
        progress=(lambda msg: print(f"[{name}] {msg}", flush=True)) if args.verbose else None,
    )
    minutes = (time.perf_counter() - start) / 60
    table = ess_err_table(df)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if args.csv:
        df.to_csv(out / f"{name}-runs.csv.gz", index=False)
    figures = []
    for statistic, suffix in (("mean", ""), ("second_moment", "-second-moment")):
        fig = plot_comparison(df, statistic=statistic)
        path = out / f"{name}{suffix}.png"
        fig.savefig(path, dpi=110)
        plt.close(fig)
        figures.append(path.name)
    estimated = bool(df["var_f_estimated"].any())
    text = [
        f"# {name}: error-based ESS per 1000 target evaluations",
        "",
        *context_lines(command),
        f"- budget {args.budget} counted evaluations per run (gradient evaluations for NUTS), "
        f"{args.replicates} replicates per sampler, tune fraction {args.tune_fraction}, "
        f"run time {minutes:.1f} min",
        "",
        "ESS_err(f) = Var_π(f) / MSE(f) over the replicates, per 1000 measured evaluations: "
        "f = x_i (E[x]) and f = x_i² (E[x²]), worst coordinate with a 90 % bootstrap interval "
        "over replicates, and the median coordinate. ArviZ's rank-normalised ESS (per 1000 "
        "evaluations) and R-hat are beside it: *pooled* treats every replicate as a chain of one "
        "multi-chain run, *1 run* is the median over replicates of a single run's smallest bulk "
        "ESS (what a user sees; it cannot see bias). No ArviZ ESS for SMC (its particles are "
        "not a chain).",
        "",
        markdown_table(table),
        "",
    ]
    if estimated:
        text.append(
            "Var(x²) is not known exactly for this target: it was estimated from the pooled "
            "draws of all samplers (the same scale for every sampler; the ranking is exact).\n"
        )
    if skipped:
        text.append(f"Not run: {', '.join(skipped)}.\n")
    text += [f"![{name}]({figures[0]})", "", f"![{name}, E[x²]]({figures[1]})", ""]
    (out / f"{name}.md").write_text("\n".join(text))
    ours, peer = _ours_and_peer(table)
    return {"target": name, "ours": ours, "peer": peer, "minutes": minutes}


def _text_below_table(text: str, name: str) -> list[str]:
    """The non-blank lines of a page after its first table, without its two figures."""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith("|")), len(lines))
    rest = lines[start:]
    after = next((i for i, line in enumerate(rest) if not line.startswith("|")), len(rest))
    figures = {f"![{name}]({name}.png)", f"![{name}, E[x²]]({name}-second-moment.png)"}
    return [line for line in rest[after:] if line.strip() and line.strip() not in figures]


def merge_runs(
    paths, out: Path, argv, relabel=None, keep_header: bool = False, note: str | None = None
) -> None:
    """Merge the tidy frames of runs of one target for different samplers into one page.

    The runs must share the target, budget, seed and replicates (so replicate ``r`` of every
    sampler has the same seed, as in one run); a sampler present in two files is an error.
    ``relabel`` (``{old: new}``) renames samplers of the first file before that check: the
    page's current runs, e.g. a former default's rows before the new default's rows join
    them. With ``keep_header`` the provenance lines of the existing ``<target>.md`` in
    ``out`` are kept and one line for this merge (date, command, relabelling, ``note``) is
    added after them; text below the page's table is not (its figures may no longer hold: a
    warning counts its lines). Writes
    ``<target>.md``, ``<target>-runs.csv.gz`` and the figures into ``out``.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import pandas as pd

    names = {Path(p).name.removesuffix("-runs.csv.gz") for p in paths}
    if len(names) != 1:
        raise SystemExit(f"--merge: files of one target only, got {sorted(names)}")
    [name] = names
    frames = [pd.read_csv(p) for p in paths]
    if relabel:
        try:
            frames[0] = relabel_samplers(frames[0], relabel)
        except ValueError as err:
            raise SystemExit(f"--{err} (in {paths[0]})") from None
    page = out / f"{name}.md"
    header = None
    if keep_header:
        if not page.exists():
            raise SystemExit(f"--keep-header: there is no {page} to keep the header of")
        old_text = page.read_text()
        header = page_header(old_text)
        below = _text_below_table(old_text, name)
        if below:
            print(
                f"warning: the {len(below)} lines of {page.name} below its table (text, other "
                "tables) are not carried over; add back by hand what still holds",
                file=sys.stderr,
            )
    seen = {}
    for path, frame in zip(paths, frames, strict=True):
        for sampler in frame["sampler"].unique():
            if sampler in seen:
                raise SystemExit(f"--merge: {sampler} is in both {seen[sampler]} and {path}")
            seen[sampler] = path
    for key in ("budget", "seed"):
        values = [tuple(sorted(f[key].unique())) for f in frames]
        if len(set(values)) != 1:
            raise SystemExit(f"--merge: the runs differ in {key}: {values}")
    df = pd.concat(frames, ignore_index=True)
    table = ess_err_table(df)
    out.mkdir(parents=True, exist_ok=True)
    df.to_csv(out / f"{name}-runs.csv.gz", index=False)
    figures = []
    for statistic, suffix in (("mean", ""), ("second_moment", "-second-moment")):
        fig = plot_comparison(df, statistic=statistic)
        path = out / f"{name}{suffix}.png"
        fig.savefig(path, dpi=110)
        plt.close(fig)
        figures.append(path.name)
    command = "python benchmarks/compare/compare.py " + shlex.join(argv)
    if header is None:
        header = [
            *context_lines(command),
            f"- merged from {len(paths)} runs of `benchmarks/compare/compare.py` with the same "
            f"budget ({int(df['budget'].iloc[0])}), seeds and replicates, for different "
            "`--samplers`; each file's own page records its command, date and load",
        ]
    else:
        date = context_lines(command)[0].removeprefix("- date: ")
        renamed = ", ".join(f"`{old}` → `{new}`" for old, new in (relabel or {}).items())
        header.append(
            f"- merged ({date}): `{command}`"
            + (f"; relabelled {renamed}" if renamed else "")
            + (f"; {note}" if note else "")
        )
    text = [
        f"# {name}: error-based ESS per 1000 target evaluations",
        "",
        *header,
        "",
        markdown_table(table),
        "",
        f"![{name}]({figures[0]})",
        "",
        f"![{name}, E[x²]]({figures[1]})",
        "",
    ]
    page.write_text("\n".join(text))
    print("\n".join(text))
    row = _index_row(name, int(df["budget"].iloc[0]), *_ours_and_peer(table))
    write_index(out, command, {name: row})


def _index_row(name: str, budget: int, ours, peer) -> str:
    (ours, a), (peer, b) = ours, peer
    ratio = a / b if b and math.isfinite(a) and math.isfinite(b) else math.nan
    return (
        f"| [{name}]({name}.md) | {budget:,} | {ours or '-'} | {_fmt(a)} | {peer or '-'} | "
        f"{_fmt(b)} | {_fmt(ratio)} |"
    )


def write_index(out: Path, command: str, rows: dict[str, str] | None = None) -> str:
    """``index.md``: per target, our best sampler against the best peer by the
    worst-coordinate error-based ESS of E[x] per 1000 evaluations. ``rows``
    (``{target: row}``, this run's) replace their targets' rows; the existing index's other
    rows and its notes below the table are kept, and a target with a
    ``<target>-runs.csv.gz`` in ``out`` but no row gets one computed from that frame
    (:func:`~pymc_kernel_steps_bench.pages.index_page`)."""
    import pandas as pd

    rows = dict(rows or {})
    computed = {}
    for path in sorted(out.glob("*-runs.csv.gz")):
        name = path.name.removesuffix("-runs.csv.gz")
        if name in rows:
            continue
        frame = pd.read_csv(path)
        budget = int(frame["budget"].iloc[0])
        computed[name] = _index_row(name, budget, *_ours_and_peer(ess_err_table(frame)))
    index = out / "index.md"
    existing = index.read_text() if index.exists() else None
    try:
        text = index_page(existing, rows, context_lines(command), computed)
    except ValueError as err:
        raise SystemExit(f"{index}: {err}") from None
    index.write_text(text)
    return text


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--targets", help="comma-separated (default: every target with a reference)"
    )
    parser.add_argument("--samplers", help=f"comma-separated (default: {OURS + tuple(PEERS)})")
    parser.add_argument("--budget", type=int, default=12_000, help="evaluations per run")
    parser.add_argument("--replicates", type=int, default=10)
    parser.add_argument("--tune-fraction", type=float, default=0.5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--cores", type=int, default=1, help="targets run in parallel")
    parser.add_argument(
        "--out",
        help="output directory (default docs/benchmarks, docs/benchmarks/quick for --quick)",
    )
    parser.add_argument("--quick", action="store_true", help=f"defaults {QUICK}")
    parser.add_argument("--verbose", action="store_true", help="one line per run")
    parser.add_argument(
        "--csv", action="store_true", help="also write the tidy frame, <target>-runs.csv.gz"
    )
    parser.add_argument(
        "--merge",
        nargs="+",
        metavar="RUNS_CSV",
        help="instead of sampling, merge <target>-runs.csv.gz files of one target written by "
        "runs with the same --seed and --replicates for different --samplers into one page",
    )
    parser.add_argument(
        "--relabel",
        nargs="+",
        metavar="OLD=NEW",
        help="with --merge: rename samplers of the first file (the page's current runs) before "
        "the others join them (e.g. a former default's rows, KMCLite=KMCLite-fixed, before the "
        "new default's KMCLite rows)",
    )
    parser.add_argument(
        "--keep-header",
        action="store_true",
        help="with --merge: keep the provenance lines of the existing page and add one for "
        "this merge",
    )
    parser.add_argument("--note", help="with --keep-header: appended to the merge's line")
    argv = sys.argv[1:] if argv is None else argv
    args = parser.parse_args(argv)
    if (args.relabel or args.keep_header or args.note) and not args.merge:
        parser.error("--relabel, --keep-header and --note go with --merge")
    if args.note and not args.keep_header:
        parser.error("--note is added to the kept header: pass --keep-header with it")
    if args.merge:
        try:
            relabel = parse_relabel(args.relabel)
        except ValueError as err:
            parser.error(str(err))
        out = Path(args.out or ROOT / "docs" / "benchmarks")
        merge_runs(args.merge, out, argv, relabel, args.keep_header, args.note)
        return
    if args.quick:
        given = " ".join(argv)
        if "--budget" not in given:
            args.budget = QUICK["budget"]
        if "--replicates" not in given:
            args.replicates = QUICK["replicates"]
        if args.targets is None:
            args.targets = QUICK["targets"]
    if args.out is None:
        args.out = str(ROOT / "docs" / "benchmarks" / ("quick" if args.quick else ""))
    args.samplers = args.samplers.split(",") if args.samplers else None
    available_samplers(args.samplers)  # fail early on unknown names
    with_reference = [n for n, t in T.TARGETS.items() if getattr(t, "true_mean", None) is not None]
    names = args.targets.split(",") if args.targets else with_reference
    unknown = [n for n in names if n not in with_reference]
    if unknown:
        raise SystemExit(f"targets {unknown} are unknown or have no reference: {with_reference}")
    command = "python benchmarks/compare/compare.py " + shlex.join(argv)
    if args.cores > 1 and len(names) > 1:
        ctx = multiprocessing.get_context("fork")
        with concurrent.futures.ProcessPoolExecutor(args.cores, mp_context=ctx) as pool:
            summaries = list(
                pool.map(run_target, names, [args] * len(names), [command] * len(names))
            )
    else:
        summaries = [run_target(n, args, command) for n in names]
    rows = {
        s["target"]: _index_row(s["target"], args.budget, s["ours"], s["peer"]) for s in summaries
    }
    Path(args.out).mkdir(parents=True, exist_ok=True)
    print(write_index(Path(args.out), command, rows))


if __name__ == "__main__":
    main()
