"""Compare this package's samplers with PyMC's Metropolis, DEMetropolisZ, Slice and NUTS.

Every gradient-free sampler runs on the black-box version of a target (a
:class:`~pymc_kernel_steps_bench.targets.CountingLogp` without a gradient, the way a user's
likelihood is called); NUTS runs on the differentiable PyTensor twin of the same density. Chains
run sequentially in this process (``cores=1``) so the black box's counter sees every call.

Reported per (target, sampler), as the median and the range over seeds:

* min bulk-ESS per 1000 evaluations: target evaluations, tuning included (for NUTS:
  log-density-and-gradient evaluations, the sum of ``n_steps``);
* min bulk-ESS per second of wall-clock time of ``pm.sample`` (compilation excluded);
* max R-hat, max |mean − truth| / sd and max |var / true var − 1|;
* evaluations per iteration and the sampler's own time per iteration: wall time minus the time
  spent inside the black box, divided by the iterations (for NUTS: the whole time, gradients
  included).

With ``--cost-ms C`` each black-box evaluation busy-waits C ms more (an expensive likelihood); NUTS,
whose twin cannot be slowed down the same way, is charged ``C`` ms per gradient evaluation on top of
its measured time (optimistic for NUTS: a gradient usually costs more than a value).

Examples
--------
``python benchmarks/within_run/run.py --quick``
``python benchmarks/within_run/run.py --seeds 5 --tune 2000 --draws 4000``
``python benchmarks/within_run/run.py --quick --cost-ms 1 --samplers AdaptiveMetropolis,KAMH``
"""

from __future__ import annotations

import argparse
import datetime as _dt
import inspect
import logging
import platform
import time
import warnings
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import pymc as pm

import pymc_kernel_steps as pks
from pymc_kernel_steps.diagnostics import (
    SamplerRun,
    comparison_table,
    count_evaluations,
    summarize,
)
from pymc_kernel_steps_bench._util import sample_quietly
from pymc_kernel_steps_bench.targets import TARGETS, counting_ops

RESULTS = Path(__file__).resolve().parent / "results"

OUR_SAMPLERS = ("KAMH", "AdaptiveMetropolis", "KMCLite", "KMCFinite", "CKAM")
PYMC_SAMPLERS = ("Metropolis", "DEMetropolisZ", "Slice", "NUTS")
#: also benchmarked with ``adapt_after_tuning=True`` as "<name>+adapt"
ADAPTING_VARIANTS = ("KMCLite", "KMCFinite")
KIND = {"Metropolis": "metropolis", "DEMetropolisZ": "demetropolisz", "Slice": "slice"}


@dataclass
class Sampler:
    """How to build one sampler: a step factory and how its evaluations are counted."""

    name: str
    factory: object  # callable(compile_kwargs) -> step, or None for NUTS through pm.sample
    kind: str  # argument of count_evaluations
    gradient: bool = False


def available_samplers() -> dict[str, Sampler]:
    """The samplers that exist in this checkout (ours are guarded: some may not exist yet)."""
    out = {}
    for name in OUR_SAMPLERS:
        cls = getattr(pks, name, None)
        if cls is not None:
            out[name] = Sampler(name, _factory(cls), "kernel")
    for name in ADAPTING_VARIANTS:  # the papers' vanishing adaptation through the draws
        cls = getattr(pks, name, None)
        if cls is not None:
            factory = _factory(cls, adapt_after_tuning=True)
            out[f"{name}+adapt"] = Sampler(f"{name}+adapt", factory, "kernel")
    for name in ("Metropolis", "DEMetropolisZ", "Slice"):
        out[name] = Sampler(name, _factory(getattr(pm, name)), KIND[name])
    out["NUTS"] = Sampler("NUTS", _factory(pm.NUTS), "nuts", gradient=True)
    return out


def _factory(cls, **options):
    accepts_compile_kwargs = "compile_kwargs" in inspect.signature(cls).parameters

    def make(compile_kwargs):
        if compile_kwargs and accepts_compile_kwargs:
            return cls(compile_kwargs=compile_kwargs, **options)
        return cls(**options)

    return make


def run_one(target, sampler: Sampler, seed, args) -> dict:
    """Sample one (target, sampler, seed) and summarise it."""
    cost = args.cost_ms / 1000.0
    model = target.build(black_box=not sampler.gradient, cost=cost)
    ops = counting_ops(model)
    compile_kwargs = {"mode": args.mode} if args.mode else None
    with model, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        step = sampler.factory(compile_kwargs)
        for op in ops:
            op.reset()
        start = time.perf_counter()
        idata = sample_quietly(model, step, args.tune, args.draws, args.chains, seed)
        seconds = time.perf_counter() - start
    iterations = args.chains * (args.tune + args.draws)
    stat_count = count_evaluations(idata, sampler.kind)
    if ops:
        evaluations = sum(op.n_calls for op in ops)
        inside = sum(op.seconds for op in ops)
    else:
        evaluations, inside = stat_count, 0.0
    # the sampler's own time: PyMC's sampling loop (no start-up, no conversion) minus the target
    loop = float(idata.posterior.attrs.get("sampling_time", seconds))
    own = loop - inside
    if sampler.gradient and cost > 0:
        seconds += evaluations * cost  # charge NUTS the same cost per gradient evaluation
    run = SamplerRun(
        sampler.name,
        idata,
        target_evaluations=evaluations,
        seconds=seconds,
        evaluation_kind="gradient" if sampler.gradient else "target",
        extra={
            "seed": seed,
            "stats_evaluations": stat_count,
            "evals_per_iter": evaluations / iterations,
            "own_us_per_iter": 1e6 * own / iterations,
        },
    )
    return summarize(run, target.true_mean, target.true_var)


def reference_moments(target, args):
    """Mean and variance from a long NUTS run on the twin (targets without exact moments)."""
    model = target.build(black_box=False)
    with model, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        idata = pm.sample(
            tune=1000,
            draws=5000,
            chains=2,
            cores=1,
            random_seed=12345,
            progressbar=False,
            compute_convergence_checks=False,
        )
    draws = np.asarray(idata.posterior[target.var_name].values, dtype=float)
    draws = draws.reshape(-1, draws.shape[-1] if draws.ndim == 3 else 1)
    return draws.mean(0), draws.var(0)


def aggregate(rows: list[dict]) -> dict:
    """Median and range over seeds of one (target, sampler)'s summaries."""

    def med(key, fmt="{:.3g}", spread=True):
        values = np.array([r[key] for r in rows], dtype=float)
        finite = values[np.isfinite(values)]
        if finite.size == 0:
            return "nan"
        text = fmt.format(np.median(finite))
        if spread and finite.size > 1:
            text += f" [{fmt.format(finite.min())}, {fmt.format(finite.max())}]"
        return text

    return {
        "name": rows[0]["name"],
        "evals/iter": med("evals_per_iter", "{:.3g}", spread=False),
        "ESS/1k evals": med("ess_per_1000_evals"),
        "ESS/s": med("ess_per_second"),
        "max R-hat": med("max_rhat", "{:.3f}"),
        "mean err": med("max_mean_error", "{:.2f}"),
        "var err": med("max_var_error", "{:.2f}"),
        "accept": med("accept_rate", "{:.2f}", spread=False),
        "own µs/iter": med("own_us_per_iter", "{:.0f}", spread=False),
    }


COLUMNS = [
    ("name", "sampler"),
    "evals/iter",
    "ESS/1k evals",
    "ESS/s",
    "max R-hat",
    "mean err",
    "var err",
    "accept",
    "own µs/iter",
]


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--targets", default="banana", help=f"comma list of {sorted(TARGETS)}")
    parser.add_argument("--samplers", default="all", help="comma list (default: all available)")
    parser.add_argument("--seeds", type=int, default=3, help="number of seeds (0, 1, ...)")
    parser.add_argument("--tune", type=int, default=1000)
    parser.add_argument("--draws", type=int, default=2000)
    parser.add_argument("--chains", type=int, default=2)
    parser.add_argument("--cost-ms", type=float, default=0.0, help="extra ms per target call")
    parser.add_argument(
        "--mode", default=None, help="PyTensor mode for every sampler (default: PyTensor default)"
    )
    parser.add_argument("--quick", action="store_true", help="2 seeds, tune 300, draws 600")
    parser.add_argument("--out", default=None, help="markdown file (default: results/<date>.md)")
    args = parser.parse_args(argv)
    if args.quick:
        args.seeds, args.tune, args.draws = min(args.seeds, 2), 300, 600
    return args


def main(argv=None) -> str:
    args = parse_args(argv)
    logging.getLogger("pymc").setLevel(logging.ERROR)
    samplers = available_samplers()
    chosen = list(samplers) if args.samplers == "all" else args.samplers.split(",")
    unknown = [s for s in chosen if s not in samplers]
    if unknown:
        raise SystemExit(f"unknown or unavailable samplers {unknown}; available: {list(samplers)}")
    targets = args.targets.split(",")
    for name in targets:
        if name not in TARGETS:
            raise SystemExit(f"unknown target {name!r}; known: {sorted(TARGETS)}")

    lines = [
        f"# Benchmark {_dt.datetime.now().isoformat(timespec='seconds')}",
        "",
        f"tune={args.tune} draws={args.draws} chains={args.chains} seeds={args.seeds} "
        f"cost={args.cost_ms} ms/evaluation mode={args.mode or 'default'}; "
        f"pymc {pm.__version__}, pymc_kernel_steps {pks.__version__}, "
        f"python {platform.python_version()}, {platform.machine()}",
        "",
        "Median [min, max] over seeds. Evaluations include tuning; NUTS counts gradient "
        "evaluations. Errors: max over coordinates of |mean − truth| / true sd and "
        "|var / true var − 1|. own µs/iter: time of PyMC's sampling loop outside the target, "
        "per iteration.",
    ]
    for target_name in targets:
        target = TARGETS[target_name]
        if target.true_mean is None:
            mean, var = reference_moments(target, args)
            target = replace(target, true_mean=mean, true_var=var)
        table_rows = []
        for sampler_name in chosen:
            sampler = samplers[sampler_name]
            if target.noisy and sampler.kind != "kernel":
                continue  # PyMC's samplers re-estimate the current point: not pseudo-marginal
            rows = []
            for seed in range(args.seeds):
                try:
                    rows.append(run_one(target, sampler, seed, args))
                except Exception as err:  # a failing sampler must not stop the comparison
                    print(f"{target_name}/{sampler_name}/seed {seed} failed: {err!r}")
            if rows:
                table_rows.append(aggregate(rows))
                print(f"{target_name:10s} {sampler_name:20s} done", flush=True)
        lines += ["", f"## {target_name}", "", comparison_table(table_rows, COLUMNS, markdown=True)]
    text = "\n".join(lines) + "\n"
    RESULTS.mkdir(parents=True, exist_ok=True)
    out = (
        Path(args.out)
        if args.out
        else RESULTS
        / (
            f"{_dt.datetime.now():%Y%m%d-%H%M%S}"
            + (f"-cost{args.cost_ms:g}ms" if args.cost_ms else "")
            + ".md"
        )
    )
    out.write_text(text)
    print(text)
    print(f"written to {out}")
    return text


if __name__ == "__main__":
    main()
