"""AdaptiveHMC against NUTS on the posteriordb suite's posteriors with a gradient (issue 24, 4).

Each posterior of :data:`pymc_kernel_steps_bench.posteriordb.POSTERIORS` (except those in
``--exclude``: by default the Lotka–Volterra ODE, whose gradient comes from forward sensitivities
at 5–15 ms each and which no sampler converged on, see ``benchmarks/lotka_volterra_modes/``) is
sampled by each sampler of ``--samplers`` in single chains of ``--tune`` tuning and ``--draws``
kept iterations from the model's initial point, seeds ``--seeds``:

``AdaptiveHMC``
    ``pks.AdaptiveHMC()`` with its defaults;
``NUTS``
    ``pm.sample()``'s NUTS, with the posterior's own settings of the suite's translation check
    (``target_accept=0.95`` on the eight schools and the Poisson GP, ``init="jitter+adapt_full"``
    on diamonds: what NUTS needs there), never its ``draws``, ``tune`` or ``chains``;
``NUTS defaults``
    ``pm.sample()``'s NUTS with no settings at all (a side check on the three posteriors that
    have settings; not run by default).

Per run, over the compared variables of the suite (the reference draws' coordinates):

- ``min_ess_per_1000``: the smallest ArviZ bulk ESS per 1000 gradient evaluations of the kept
  draws (NUTS: the sum of its ``n_steps`` stat, the leapfrog steps; AdaptiveHMC: the sum of
  ``logp_evals``, each one log density and gradient; after tuning that is ``n_steps``);
- ``max_abs_z``: the largest ``|m − m_ref| / √(sd_ref² / ESS + mcse_ref²)`` over the coordinates,
  with ``m`` the run's posterior mean, ``m_ref``/``sd_ref`` the reference draws' mean and sd and
  ``mcse_ref`` their Monte Carlo error: a fast run in the wrong place shows here;
- gradients per iteration, gradients spent on tuning, acceptance, step size, ``L`` (AdaptiveHMC),
  divergences, seconds.

Beside the within-run figure, ``--report`` gives DESIGN.md's error-based ESS over the seeds:
``Var_ref / MSE`` of each coordinate's posterior mean against the reference mean, per 1000
gradient evaluations of the kept draws, worst coordinate (rough with few seeds; the reference's own
error ``mcse_ref²`` is part of the MSE, so a figure near ``Var_ref / mcse_ref²`` is capped by it).

Rows are appended to ``--out`` (CSV) after every run, and the per-coordinate posterior means and
bulk ESS to the JSON lines beside it (``runs.jsonl``); runs already there are skipped, so an
interrupted study resumes. ``--report`` prints the per-posterior medians and the ratio
AdaptiveHMC / NUTS from the CSV without sampling.

Usage (from the repository's root)::

    nice -n 10 python benchmarks/ahmc_suite/study.py --seeds 0 1 2
    python benchmarks/ahmc_suite/study.py --report
"""

from __future__ import annotations

import argparse
import csv
import json
import logging
import math
import time
import warnings
from pathlib import Path

import arviz as az
import numpy as np
import pymc as pm

import pymc_kernel_steps as pks
from pymc_kernel_steps.diagnostics import posterior_draws
from pymc_kernel_steps_bench import posteriordb as pdb

HERE = Path(__file__).parent
EXCLUDED = ("hudson_lynx_hare-lotka_volterra",)
FIELDS = (
    "posterior",
    "dim",
    "sampler",
    "seed",
    "min_ess_per_1000",
    "min_ess",
    "gradients",
    "gradients_per_iteration",
    "tuning_gradients",
    "max_abs_z",
    "accept",
    "step_size",
    "L",
    "divergences",
    "seconds",
)


def _nuts_settings(name: str) -> dict:
    settings = dict(pdb.POSTERIORS[name].nuts)
    for key in ("draws", "tune", "chains"):
        settings.pop(key, None)
    return settings


SAMPLERS = {
    "AdaptiveHMC": lambda name: {"step": pks.AdaptiveHMC()},
    "NUTS": _nuts_settings,
    "NUTS defaults": lambda name: {},  # a side check: pm.sample()'s NUTS without the settings
}


def run_one(name: str, sampler: str, seed: int, tune: int, draws: int) -> tuple[dict, dict]:
    """One chain of ``sampler`` on posterior ``name``: the row of the CSV, and the per-coordinate
    record (posterior means, bulk ESS) of the JSON lines."""
    with pdb.model(name, gradient=True):
        kwargs = SAMPLERS[sampler](name)
        start = time.perf_counter()
        idata = pm.sample(
            tune=tune,
            draws=draws,
            chains=1,
            cores=1,
            random_seed=seed,
            progressbar=False,
            compute_convergence_checks=False,
            discard_tuned_samples=False,
            **kwargs,
        )
        seconds = time.perf_counter() - start
    stats = idata["sample_stats"]
    gradient_stat = "logp_evals" if "logp_evals" in stats else "n_steps"
    accept_stat = "accept" if "accept" in stats else "acceptance_rate"
    gradients = float(np.asarray(stats[gradient_stat]).sum())
    tuning_gradients = float(np.asarray(idata["warmup_sample_stats"][gradient_stat]).sum())
    x = posterior_draws(idata, list(pdb.POSTERIORS[name].var_names))
    reference = pdb.reference_draws(name)
    ess = np.asarray(az.ess(x, method="bulk"), dtype=float)
    mean_ref = reference.mean(axis=(0, 1))
    sd_ref = reference.std(axis=(0, 1))
    mcse_ref = np.asarray(az.mcse(reference, method="mean"), dtype=float)
    mean = x.mean(axis=(0, 1))
    z = (mean - mean_ref) / np.sqrt(sd_ref**2 / ess + mcse_ref**2)
    row = {
        "posterior": name,
        "dim": x.shape[-1],
        "sampler": sampler,
        "seed": seed,
        "min_ess_per_1000": 1000 * ess.min() / gradients,
        "min_ess": ess.min(),
        "gradients": gradients,
        "gradients_per_iteration": gradients / draws,
        "tuning_gradients": tuning_gradients,
        "max_abs_z": float(np.max(np.abs(z))),
        "accept": float(np.asarray(stats[accept_stat]).mean()),
        "step_size": float(np.asarray(stats["step_size"]).mean()),
        "L": float(np.asarray(stats["max_n_steps"]).mean()) if "max_n_steps" in stats else math.nan,
        "divergences": int(np.asarray(stats["diverging"]).sum()),
        "seconds": seconds,
    }
    record = {
        "posterior": name,
        "sampler": sampler,
        "seed": seed,
        "gradients": gradients,
        "labels": pdb.labels(name),
        "mean": mean.tolist(),
        "ess_bulk": ess.tolist(),
    }
    return row, record


def read_rows(path: Path) -> list[dict]:
    if not path.exists():
        return []
    with path.open() as f:
        rows = list(csv.DictReader(f))
    for row in rows:
        row["seed"] = int(row["seed"])
        for key in FIELDS[4:]:
            row[key] = float(row[key])
    return rows


def report(rows: list[dict], samplers=("AdaptiveHMC", "NUTS")) -> str:
    """Markdown table: per posterior, the medians over seeds, the ratio of the first sampler's
    median to the second's, and the median ratio over the posteriors."""
    first, second = samplers
    names = [n for n in pdb.POSTERIORS if any(r["posterior"] == n for r in rows)]
    lines = [
        f"| posterior | d | {first} | {second} | ratio | max \\|z\\| {first} | "
        f"max \\|z\\| {second} | gradients / iteration {first} / {second} | seeds |",
        "|:--|--:|--:|--:|--:|--:|--:|--:|--:|",
    ]
    ratios = []
    for name in names:
        by = {
            s: [r for r in rows if r["posterior"] == name and r["sampler"] == s] for s in samplers
        }
        if not all(by.values()):
            continue

        def med(s, key, by=by):
            return float(np.median([r[key] for r in by[s]]))

        ratio = med(first, "min_ess_per_1000") / med(second, "min_ess_per_1000")
        ratios.append(ratio)
        seeds = min(len(by[first]), len(by[second]))
        lines.append(
            f"| {name} | {int(by[first][0]['dim'])} | {med(first, 'min_ess_per_1000'):.1f} | "
            f"{med(second, 'min_ess_per_1000'):.1f} | {ratio:.2f} | "
            f"{med(first, 'max_abs_z'):.1f} | {med(second, 'max_abs_z'):.1f} | "
            f"{med(first, 'gradients_per_iteration'):.1f} / "
            f"{med(second, 'gradients_per_iteration'):.1f} | {seeds} |"
        )
    if ratios:
        wins = sum(r >= 1 for r in ratios)
        lines.append("")
        lines.append(
            f"Median ratio over {len(ratios)} posteriors: **{np.median(ratios):.2f}** "
            f"({first} ahead on {wins}, behind on {len(ratios) - wins})."
        )
    return "\n".join(lines)


def read_records(path: Path) -> list[dict]:
    if not path.exists():
        return []
    with path.open() as f:
        return [json.loads(line) for line in f if line.strip()]


def error_ess(records: list[dict], name: str, sampler: str) -> tuple[float, int, bool]:
    """Worst coordinate's ``Var_ref / MSE`` of the posterior mean per 1000 gradients of the kept
    draws, over the seeds; the number of seeds; whether the reference's error caps it (its
    ``mcse_ref²`` is more than a third of the MSE)."""
    runs = [r for r in records if r["posterior"] == name and r["sampler"] == sampler]
    if not runs:
        return math.nan, 0, False
    reference = pdb.reference_draws(name)
    mean_ref = reference.mean(axis=(0, 1))
    var_ref = reference.var(axis=(0, 1))
    mcse_ref = np.asarray(az.mcse(reference, method="mean"), dtype=float)
    means = np.array([r["mean"] for r in runs])
    mse = ((means - mean_ref) ** 2).mean(axis=0)
    per_1000 = var_ref / mse / np.mean([r["gradients"] for r in runs]) * 1000
    worst = int(np.argmin(per_1000))
    return float(per_1000[worst]), len(runs), bool(mcse_ref[worst] ** 2 > mse[worst] / 3)


def error_report(records: list[dict], samplers=("AdaptiveHMC", "NUTS")) -> str:
    """Markdown table of :func:`error_ess` per posterior, and the median ratio."""
    first, second = samplers
    lines = [
        f"| posterior | {first} | {second} | ratio | seeds |",
        "|:--|--:|--:|--:|--:|",
    ]
    ratios = []
    for name in pdb.POSTERIORS:
        (a, n_a, cap_a), (b, n_b, cap_b) = (error_ess(records, name, s) for s in samplers)
        if not (n_a and n_b):
            continue
        ratios.append(a / b)
        lines.append(
            f"| {name} | {a:.1f}{' (capped)' if cap_a else ''} | "
            f"{b:.1f}{' (capped)' if cap_b else ''} | {a / b:.2f} | {min(n_a, n_b)} |"
        )
    if ratios:
        wins = sum(r >= 1 for r in ratios)
        lines.append("")
        lines.append(
            f"Median ratio over {len(ratios)} posteriors: **{np.median(ratios):.2f}** "
            f"({first} ahead on {wins}, behind on {len(ratios) - wins})."
        )
    return "\n".join(lines)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", nargs="*", type=int, default=[0, 1, 2])
    parser.add_argument("--tune", type=int, default=1000)
    parser.add_argument("--draws", type=int, default=1000)
    parser.add_argument(
        "--samplers", nargs="*", default=["AdaptiveHMC", "NUTS"], choices=list(SAMPLERS)
    )
    parser.add_argument("--posteriors", nargs="*", default=None, help="default: the whole suite")
    parser.add_argument("--exclude", nargs="*", default=list(EXCLUDED))
    parser.add_argument("--out", type=Path, default=HERE / "runs.csv")
    parser.add_argument("--report", action="store_true", help="print the table and exit")
    args = parser.parse_args(argv)
    rows = read_rows(args.out)
    if args.report:
        print("Within-run bulk ESS per 1000 gradients, worst coordinate (median over seeds)\n")
        print(report(rows))
        print("\nError-based ESS per 1000 gradients, worst coordinate (over the seeds)\n")
        print(error_report(read_records(args.out.with_suffix(".jsonl"))))
        return
    logging.getLogger("pymc").setLevel(logging.ERROR)
    warnings.simplefilter("ignore")
    names = [n for n in (args.posteriors or list(pdb.POSTERIORS)) if n not in set(args.exclude)]
    done = {(r["posterior"], r["sampler"], r["seed"]) for r in rows}
    new_file = not args.out.exists()
    with args.out.open("a", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=FIELDS)
        if new_file:
            writer.writeheader()
        for seed in args.seeds:  # seeds outermost: an interrupted study covers every posterior
            for name in names:
                for sampler in args.samplers:
                    if (name, sampler, seed) in done:
                        continue
                    row, record = run_one(name, sampler, seed, args.tune, args.draws)
                    writer.writerow(row)
                    f.flush()
                    with args.out.with_suffix(".jsonl").open("a") as g:
                        g.write(json.dumps(record) + "\n")
                    print(
                        f"{name} | {sampler} | {seed} | {row['min_ess_per_1000']:.1f} | "
                        f"z {row['max_abs_z']:.1f} | {row['gradients_per_iteration']:.1f} g/it | "
                        f"L {row['L']:.0f} | div {row['divergences']} | {row['seconds']:.0f} s",
                        flush=True,
                    )


if __name__ == "__main__":
    main()
