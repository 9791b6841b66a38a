"""Reference posteriors of the targets without exact moments, cached as small JSON files.

Each reference is a long multi-chain run from dispersed starts:

* ``pima``, ``logistic``: NUTS on the differentiable twin;
* ``glass``, ``abc`` (pseudo-marginal): this package's ``AdaptiveMetropolis``, which keeps the
  current point's estimate (an exact pseudo-marginal sampler; PyMC's ``Metropolis`` and
  ``DEMetropolisZ`` re-evaluate the current point's noisy estimate and are not), starts drawn
  from the prior;
* ``ode`` (black box): self-normalised importance sampling in the sampler's (log) space from a
  multivariate t (5 degrees of freedom) centred at the best of several Nelder-Mead optima, with
  the inverse finite-difference Hessian there, inflated by 1.5² (a Laplace approximation with
  heavier tails). Its posterior is narrow and strongly correlated: four AdaptiveMetropolis chains
  of 3000 + 8000 iterations started at the mode reached R-hat 1.33 only. Importance sampling
  has no convergence to wait for; its Kish ESS and largest normalised weight are recorded and
  the MCSEs are the delta-method ones of a ratio estimator. The other local optima found (and
  how far below the best they lie, in nats) are recorded too.

The file records the mean, variance, E[x²] and quantiles of the target's variable, their MCSE
(ArviZ), R-hat and bulk/tail ESS, and the command, seed, date, run time and evaluation count.
``converged`` is ``max R-hat < 1.01 and min bulk ESS >= 400`` (importance sampling: Kish ESS
>= 400 and no weight above 1 %); a run that does not meet it is
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
import time
import warnings
from pathlib import Path

import arviz as az
import numpy as np
import pymc as pm

from pymc_kernel_steps import AdaptiveMetropolis
from pymc_kernel_steps_bench.targets import TARGETS, counting_ops
from pymc_kernel_steps_bench.targets.registry import REFERENCE_DIR

#: (sampler, tune, draws) per target: sized for ≲ 10 minutes on one core of the dev machine
DEFAULTS = {
    "pima": ("NUTS", 1000, 5000),
    "logistic": ("NUTS", 1000, 5000),
    "glass": ("AdaptiveMetropolis", 3000, 12000),
    "abc": ("AdaptiveMetropolis", 5000, 40000),
    "ode": ("importance", 0, 16000),
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
    from pymc_kernel_steps_bench.targets import skew_normal_abc_data

    y, _, alpha = skew_normal_abc_data()
    delta = alpha / np.sqrt(1.0 + alpha @ alpha)
    centre = y.mean(0) - np.sqrt(2.0 / np.pi) * delta
    return [{"theta": centre + rng.standard_normal(centre.size)} for _ in range(chains)]


def _optima(model, var_name, rng, searches=12):
    """Nelder-Mead optima of the log density in value space from the initial point and prior draws.

    Returns ``(negative log density, value)`` pairs, best first, one per distinct optimum.
    """
    from scipy.optimize import minimize

    logp = model.compile_logp()
    value_name = model.rvs_to_values[model[var_name]].name
    point = model.initial_point()
    transform = model.rvs_to_transforms.get(model[var_name])

    def negative(v):
        value = logp({**point, value_name: v})
        return -value if np.isfinite(value) else 1e300

    starts = [point[value_name]]
    for s in _dispersed_starts(model, var_name, searches, rng):
        starts.append(s[var_name] if transform is None else transform.forward(s[var_name]).eval())
    found = []
    for x0 in starts:
        options = {"maxiter": 4000, "fatol": 1e-9, "xatol": 1e-9}
        res = minimize(negative, x0, method="Nelder-Mead", options=options)
        res = minimize(negative, res.x, method="Nelder-Mead", options=options)  # restart
        if not any(abs(res.fun - f) < 1e-3 and np.allclose(res.x, x, atol=1e-3) for f, x in found):
            found.append((float(res.fun), res.x))
    return sorted(found, key=lambda fx: fx[0])


def _hessian(f, x, step):
    """Central finite-difference Hessian of ``f`` at ``x`` with per-coordinate ``step``."""
    d = x.size
    h = np.zeros((d, d))
    for i in range(d):
        for j in range(i, d):
            ei = np.eye(d)[i] * step[i]
            ej = np.eye(d)[j] * step[j]
            h[i, j] = h[j, i] = (
                f(x + ei + ej) - f(x + ei - ej) - f(x - ei + ej) + f(x - ei - ej)
            ) / (4 * step[i] * step[j])
    return h


def _importance_reference(model, var_name, draws, rng, df=5.0, inflation=1.5):
    """Self-normalised importance sampling from a Laplace-centred multivariate t (module notes).

    Returns ``(x, weights, evaluations, notes)``: draws of ``var_name`` on its own scale, their
    normalised weights, the log-density evaluations spent, and a dict of diagnostics.
    """
    from scipy import stats

    logp = model.compile_logp()
    value_name = model.rvs_to_values[model[var_name]].name
    point = model.initial_point()
    transform = model.rvs_to_transforms.get(model[var_name])
    calls = [0]

    def log_density(v):
        calls[0] += 1
        return float(logp({**point, value_name: v}))

    optima = _optima(model, var_name, rng)
    mode = optima[0][1]
    cov = np.linalg.inv(-_hessian(log_density, mode, np.full(mode.size, 1e-3)))
    step = 0.2 * np.sqrt(np.diag(cov))  # refine with steps at the posterior's own scale
    cov = np.linalg.inv(-_hessian(log_density, mode, step))
    cov = 0.5 * (cov + cov.T)
    proposal = stats.multivariate_t(loc=mode, shape=inflation**2 * cov, df=df, seed=rng)
    z = proposal.rvs(size=draws)
    log_q = proposal.logpdf(z)
    log_p = np.array([log_density(v) for v in z])
    log_w = np.where(np.isfinite(log_p), log_p - log_q, -np.inf)
    w = np.exp(log_w - log_w.max())
    w /= w.sum()
    x = z if transform is None else np.asarray(transform.backward(z).eval())
    notes = {
        "kish_ess": float(1.0 / np.sum(w**2)),
        "max_weight": float(w.max()),
        "non_finite_log_density": int(np.sum(~np.isfinite(log_p))),
        "mode_value_space": mode.tolist(),
        "laplace_sd_value_space": np.sqrt(np.diag(cov)).tolist(),
        "other_optima_nats_below_best": [round(f - optima[0][0], 2) for f, _ in optima[1:]],
        "proposal": f"multivariate t, df {df:g}, scale {inflation:g}^2 x inverse Hessian",
    }
    return x, w, calls[0], notes


def _weighted_quantiles(x, w, levels):
    order = np.argsort(x, axis=0)
    out = np.empty((len(levels), x.shape[1]))
    for k in range(x.shape[1]):
        xs, cw = x[order[:, k], k], np.cumsum(w[order[:, k]])
        out[:, k] = np.interp(levels, cw - 0.5 * w[order[:, k]], xs)
    return out


def run_importance(name: str, draws: int, seed: int) -> dict:
    """The reference of ``name`` by importance sampling (module notes)."""
    target = TARGETS[name]
    rng = np.random.default_rng(seed)
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        x, w, evaluations, notes = _importance_reference(
            target.build(), target.var_name, draws, rng
        )
    seconds = time.perf_counter() - start
    mean = w @ x
    second = w @ x**2

    def ratio_mcse(f, estimate):  # delta method for a self-normalised estimator
        return np.sqrt(np.sum(w[:, None] ** 2 * (f - estimate) ** 2, axis=0))

    kish = notes["kish_ess"]
    return {
        "name": name,
        "var_name": target.var_name,
        "mean": mean.tolist(),
        "var": (second - mean**2).tolist(),
        "second_moment": second.tolist(),
        "quantile_levels": LEVELS,
        "quantiles": _weighted_quantiles(x, w, LEVELS).tolist(),
        "mcse_mean": ratio_mcse(x, mean).tolist(),
        "mcse_second_moment": ratio_mcse(x**2, second).tolist(),
        "rhat": [1.0] * x.shape[1],
        "ess_bulk": [kish] * x.shape[1],
        "ess_tail": [kish] * x.shape[1],
        "ess_second_moment": [kish] * x.shape[1],
        "max_rhat": 1.0,
        "min_ess_bulk": kish,
        "converged": bool(kish >= 400 and notes["max_weight"] < 0.01),
        "sampler": "importance sampling",
        "importance": notes,
        "chains": 1,
        "tune": 0,
        "draws": draws,
        "seed": seed,
        "target_evaluations": evaluations,
        "seconds": round(seconds, 1),
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "command": "python benchmarks/references/make_references.py "
        + f"{name} --draws {draws} --seed {seed}",
        "versions": {
            "python": platform.python_version(),
            "pymc": pm.__version__,
            "numpy": np.__version__,
            "arviz": az.__version__,
        },
    }


def run(name: str, chains: int, tune: int | None, draws: int | None, seed: int) -> dict:
    target = TARGETS[name]
    sampler, default_tune, default_draws = DEFAULTS[name]
    tune = default_tune if tune is None else tune
    draws = default_draws if draws is None else draws
    if sampler == "importance":
        return run_importance(name, draws, seed)
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
