"""Reference posteriors of the targets without exact moments, cached as small JSON files.

Each reference is a long multi-chain run from dispersed starts:

* ``pima``, ``logistic``: NUTS on the differentiable twin;
* ``glass``, ``abc`` (pseudo-marginal) and ``ode`` (black box): this package's
  ``AdaptiveMetropolis``, which keeps the current point's estimate (an exact pseudo-marginal
  sampler; PyMC's ``Metropolis``, ``DEMetropolisZ`` and SMC re-evaluate noisy estimates and are
  not), starts drawn from the prior (ODE: from the prior, kept when the log density is finite).

The file records the mean, variance, E[x²] and quantiles of the target's variable, their MCSE
(ArviZ), R-hat and bulk/tail ESS, and the command, seed, date, run time and evaluation count.
``converged`` is ``max R-hat < 1.01 and min bulk ESS >= 400``; a run that does not meet it is
still written, with ``converged: false``, so that the registry can say so.

Usage (one target per process, single core)::

    OMP_NUM_THREADS=1 python benchmarks/references/make_references.py pima glass abc ode \\
        [--draws N] [--tune N] [--chains 4] [--seed 20261124]
"""

from __future__ import annotations

import argparse
import datetime
import json
import platform
import sys
import time
import warnings
from pathlib import Path

import arviz as az
import numpy as np
import pymc as pm

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from pymc_kernel_steps import AdaptiveMetropolis  # noqa: E402
from pymc_kernel_steps.targets import TARGETS, counting_ops  # noqa: E402
from pymc_kernel_steps.targets.registry import REFERENCE_DIR  # noqa: E402

#: (sampler, tune, draws) per target: sized for ≲ 10 minutes on one core of the dev machine
DEFAULTS = {
    "pima": ("NUTS", 1000, 5000),
    "logistic": ("NUTS", 1000, 5000),
    "glass": ("AdaptiveMetropolis", 3000, 12000),
    "abc": ("AdaptiveMetropolis", 5000, 40000),
    "ode": ("AdaptiveMetropolis", 3000, 8000),
}
LEVELS = [0.025, 0.05, 0.25, 0.5, 0.75, 0.95, 0.975]


def _dispersed_starts(model, var_name, chains, rng):
    """Prior draws of ``var_name`` at which the model's log density is finite."""
    logp = model.compile_logp()
    value_var = model.rvs_to_values[model[var_name]]
    transform = model.rvs_to_transforms.get(model[var_name])
    starts = []
    for _ in range(1000):
        draw = pm.draw(model[var_name], random_seed=rng)
        point = model.initial_point()
        value = draw
        if transform is not None:
            value = transform.forward(draw).eval()
        point[value_var.name] = value
        if np.isfinite(logp(point)):
            starts.append({var_name: draw})
        if len(starts) == chains:
            return starts
    raise RuntimeError(f"no finite starting points for {var_name}")


def _abc_starts(chains, rng):
    from pymc_kernel_steps.targets import skew_normal_abc_data

    y, _, alpha = skew_normal_abc_data()
    delta = alpha / np.sqrt(1.0 + alpha @ alpha)
    centre = y.mean(0) - np.sqrt(2.0 / np.pi) * delta
    return [{"theta": centre + rng.standard_normal(centre.size)} for _ in range(chains)]


def _mode_starts(model, var_name, chains, rng, searches=8):
    """Starts around the best Nelder-Mead optimum of the log density (value space)."""
    from scipy.optimize import minimize

    logp = model.compile_logp()
    value_name = model.rvs_to_values[model[var_name]].name
    point = model.initial_point()

    def negative(v):
        value = logp({**point, value_name: v})
        return -value if np.isfinite(value) else 1e300

    candidates = [point[value_name]]
    candidates += [s[var_name] for s in _dispersed_starts(model, var_name, searches, rng)]
    transform = model.rvs_to_transforms.get(model[var_name])
    best = None
    for k, start in enumerate(candidates):
        x0 = start if k == 0 or transform is None else transform.forward(start).eval()
        res = minimize(negative, x0, method="Nelder-Mead", options={"maxiter": 2000, "fatol": 1e-6})
        if best is None or res.fun < best.fun:
            best = res
    mode = best.x if transform is None else transform.backward(best.x).eval()
    return [{var_name: mode * np.exp(0.02 * rng.standard_normal(mode.size))} for _ in range(chains)]


def run(name: str, chains: int, tune: int | None, draws: int | None, seed: int) -> dict:
    target = TARGETS[name]
    sampler, default_tune, default_draws = DEFAULTS[name]
    tune = default_tune if tune is None else tune
    draws = default_draws if draws is None else draws
    rng = np.random.default_rng(seed)
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if sampler == "NUTS":
            model = target.build(black_box=False)
            size = model.initial_point()[target.var_name].size
            with model:
                idata = pm.sample(
                    tune=tune,
                    draws=draws,
                    chains=chains,
                    cores=1,
                    random_seed=seed,
                    progressbar=False,
                    compute_convergence_checks=False,
                    initvals=[{target.var_name: rng.normal(0.0, 1.0, size)} for _ in range(chains)],
                )
            evaluations = int(np.asarray(idata.sample_stats["n_steps"]).sum())
        else:
            model = target.build()
            if name == "abc":
                starts = _abc_starts(chains, rng)
            elif name == "ode":
                starts = _mode_starts(model, target.var_name, chains, rng)
            else:
                starts = _dispersed_starts(model, target.var_name, chains, rng)
            [op] = counting_ops(model)
            op.reset()
            with model:
                idata = pm.sample(
                    step=AdaptiveMetropolis(),
                    tune=tune,
                    draws=draws,
                    chains=chains,
                    cores=1,
                    random_seed=seed,
                    progressbar=False,
                    compute_convergence_checks=False,
                    initvals=starts,
                )
            evaluations = op.n_calls
    seconds = time.perf_counter() - start
    x = np.asarray(idata.posterior[target.var_name].values, dtype=float)  # (chain, draw, dim)
    flat = x.reshape(-1, x.shape[-1])
    rhat = np.atleast_1d(az.rhat(x))
    ess_bulk = np.atleast_1d(az.ess(x, method="bulk"))
    ess_tail = np.atleast_1d(az.ess(x, method="tail", prob=(0.05, 0.95)))
    ess_sq = np.atleast_1d(az.ess(x**2, method="mean"))
    converged = bool(rhat.max() < 1.01 and ess_bulk.min() >= 400)
    return {
        "name": name,
        "var_name": target.var_name,
        "mean": flat.mean(0).tolist(),
        "var": flat.var(0).tolist(),
        "second_moment": (flat**2).mean(0).tolist(),
        "quantile_levels": LEVELS,
        "quantiles": np.quantile(flat, LEVELS, axis=0).tolist(),
        "mcse_mean": np.atleast_1d(az.mcse(x, method="mean")).tolist(),
        "mcse_second_moment": np.atleast_1d(az.mcse(x**2, method="mean")).tolist(),
        "rhat": rhat.tolist(),
        "ess_bulk": ess_bulk.tolist(),
        "ess_tail": ess_tail.tolist(),
        "ess_second_moment": ess_sq.tolist(),
        "max_rhat": float(rhat.max()),
        "min_ess_bulk": float(ess_bulk.min()),
        "converged": converged,
        "sampler": sampler,
        "chains": chains,
        "tune": tune,
        "draws": draws,
        "seed": seed,
        "target_evaluations": evaluations,
        "seconds": round(seconds, 1),
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "command": "python benchmarks/references/make_references.py "
        + f"{name} --chains {chains} --tune {tune} --draws {draws} --seed {seed}",
        "versions": {
            "python": platform.python_version(),
            "pymc": pm.__version__,
            "numpy": np.__version__,
            "arviz": az.__version__,
        },
    }


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("names", nargs="+", choices=sorted(DEFAULTS))
    parser.add_argument("--chains", type=int, default=4)
    parser.add_argument("--tune", type=int, default=None)
    parser.add_argument("--draws", type=int, default=None)
    parser.add_argument("--seed", type=int, default=20261124)
    parser.add_argument("--out", type=Path, default=REFERENCE_DIR)
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    for name in args.names:
        ref = run(name, args.chains, args.tune, args.draws, args.seed)
        (args.out / f"{name}.json").write_text(json.dumps(ref, indent=1) + "\n")
        print(
            f"{name}: {ref['seconds']} s, {ref['target_evaluations']} evaluations, "
            f"max R-hat {ref['max_rhat']:.4f}, min bulk ESS {ref['min_ess_bulk']:.0f}, "
            f"max MCSE/sd {max(np.array(ref['mcse_mean']) / np.sqrt(ref['var'])):.3f}, "
            f"converged {ref['converged']}",
            flush=True,
        )


if __name__ == "__main__":
    main()
