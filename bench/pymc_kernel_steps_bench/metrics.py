"""The error-based ESS: the tidy frame of a comparison and its per-sampler table.

``ESS_err(f) = Var_π(f) / MSE(f)`` over replicates, per 1000 measured evaluations, with a
bootstrap interval over replicates; ArviZ's rank-normalised ESS and R-hat beside it (see
:mod:`~pymc_kernel_steps_bench.runners` for how the runs are made).
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd

__all__ = ["STATISTICS", "ess_err_table", "worst_ess_err"]

#: the estimated statistics: ``E[x_i]`` and ``E[x_i²]``
STATISTICS = ("mean", "second_moment")


def _arviz_diagnostics(draws: np.ndarray) -> dict[str, np.ndarray]:
    """Rank-normalised bulk/tail ESS and R-hat of x and x², and the Monte Carlo standard error
    of their means, for draws ``(chain, draw, k)``."""
    from arviz import ess, mcse, rhat

    k = draws.shape[-1]
    out = {}
    if draws.shape[1] < 4:
        nan = np.full(2 * k, math.nan)
        return {"ess_bulk": nan, "ess_tail": nan, "r_hat": nan, "mcse": nan}
    both = np.concatenate([draws, draws**2], axis=-1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out["ess_bulk"] = np.asarray(ess(both, method="bulk"), dtype=float)
        out["ess_tail"] = np.asarray(ess(both, method="tail", prob=(0.05, 0.95)), dtype=float)
        out["r_hat"] = np.asarray(rhat(both, method="rank"), dtype=float)
        out["mcse"] = np.asarray(mcse(both, method="mean"), dtype=float)
    return out


def _moments(draws: np.ndarray, weights=None) -> np.ndarray:
    """``(E[x], E[x²])`` concatenated, ``(2 k,)``, from draws ``(chain, draw, k)``: plain means,
    or weighted by ``weights`` (one per draw of the chains in order, normalised here)."""
    flat = draws.reshape(-1, draws.shape[-1])
    if weights is None:
        return np.concatenate([flat.mean(axis=0), (flat**2).mean(axis=0)])
    w = np.asarray(weights, dtype=float).ravel()
    if w.size != len(flat):
        raise ValueError(f"weights: {w.size} for {len(flat)} draws")
    w = w / w.sum()
    return np.concatenate([w @ flat, w @ flat**2])


def _resampled(result, n: int) -> np.ndarray:
    """``n`` draws of a weighted run, resampled by weight (a fixed stream: for the plots and
    the pooled ``Var(x²)``)."""
    flat = result["draws_array"].reshape(-1, result["draws_array"].shape[-1])
    w = np.asarray(result["weights"], dtype=float).ravel()
    index = np.random.default_rng(0).choice(len(flat), size=n, p=w / w.sum())
    return flat[index]


def _pooled_draws(result, k: int) -> np.ndarray:
    """A run's draws ``(n, k)`` for pooling: a weighted run's resampled by weight."""
    if result.get("weights") is None:
        return result["draws_array"].reshape(-1, k)
    return _resampled(result, result["draws_array"].reshape(-1, k).shape[0])


def _tidy(specs, runs, seeds, indices, labels, ref, budget, replicates, keep_draws) -> pd.DataFrame:
    k = len(labels)
    var_f = np.full(2 * k, math.nan)
    truth = np.full(2 * k, math.nan)
    estimated = np.zeros(2 * k, dtype=bool)
    if ref is not None:
        if ref.mean.size != k:
            raise ValueError(
                f"reference: {ref.mean.size} coordinates, but the variables have {k} ({labels})"
            )
        truth = np.concatenate([ref.mean, ref.mean_sq])
        var_f[:k] = ref.var
        if ref.var_sq is not None:
            var_f[k:] = ref.var_sq
        else:  # Var(x²) from the pooled draws of every sampler: one scale for all
            pooled = np.concatenate([_pooled_draws(res, k) for rs in runs.values() for res in rs])
            var_f[k:] = (pooled**2).var(axis=0, ddof=1)
            estimated[k:] = True

    frames, kept = [], {}
    for sampler in specs:
        results = runs[sampler.name]
        estimates = np.array([_moments(res["draws_array"], res.get("weights")) for res in results])
        weighted = any(res.get("weights") is not None for res in results)
        sq_error = (estimates - truth) ** 2
        mse = sq_error.mean(axis=0) if len(results) > 1 else np.full(2 * k, math.nan)
        with np.errstate(divide="ignore", invalid="ignore"):
            ess_err = var_f / mse
        mean_evals = float(np.mean([res["evaluations"] for res in results]))
        ess_err_per_1000 = 1000.0 * ess_err / mean_evals
        n_draws = min(res["draws_array"].shape[1] for res in results)
        pooled_chains = np.concatenate([res["draws_array"][:, :n_draws] for res in results])
        no_chain = sampler.kind == "smc" or weighted
        pooled = _arviz_diagnostics(pooled_chains)
        if no_chain:  # particles and weighted draws are not a chain: no autocorrelation ESS
            pooled = {key: np.full(2 * k, math.nan) for key in pooled}
        if keep_draws:
            if weighted:  # resampled by weight, for the plots
                flat = np.concatenate([_resampled(res, keep_draws) for res in results])
            else:
                flat = pooled_chains.reshape(-1, k)
            step = max(1, math.ceil(len(flat) / keep_draws))
            kept[sampler.name] = flat[::step]
        for i, (r, res) in enumerate(zip(indices, results, strict=True)):
            draws = res["draws_array"]
            within = _arviz_diagnostics(draws)
            if no_chain:
                within = {key: np.full(2 * k, math.nan) for key in within}
            frames.append(
                pd.DataFrame(
                    {
                        "sampler": sampler.name,
                        "kind": sampler.kind,
                        "replicate": r,
                        "seed": seeds[r],
                        "statistic": np.repeat(STATISTICS, k),
                        "coordinate": np.tile(np.arange(k), 2),
                        "label": labels * 2,
                        "estimate": estimates[i],
                        "truth": truth,
                        "var_f": var_f,
                        "var_f_estimated": estimated,
                        "sq_error": sq_error[i],
                        "ess_err": ess_err,
                        "ess_err_per_1000": ess_err_per_1000,
                        "ess_bulk": within["ess_bulk"],
                        "ess_tail": within["ess_tail"],
                        "r_hat": within["r_hat"],
                        "mcse": within["mcse"],
                        "ess_bulk_pooled": pooled["ess_bulk"],
                        "ess_tail_pooled": pooled["ess_tail"],
                        "r_hat_pooled": pooled["r_hat"],
                        "evaluations": int(res["evaluations"]),
                        "counted": int(res["counted"]),
                        "budget": int(budget),
                        "at_budget": bool(res.get("at_budget", True)),
                        "weighted": res.get("weights") is not None,
                        "seconds": float(res["seconds"]),
                        "own_seconds_per_iteration": float(res["own_seconds_per_iteration"]),
                        "iterations": float(res["iterations"]),
                        "draws": int(draws.shape[1]),
                        "chains": int(draws.shape[0]),
                    }
                )
            )
    df = pd.concat(frames, ignore_index=True)
    df["sampler"] = pd.Categorical(df["sampler"], categories=[s.name for s in specs])
    df.attrs = {
        "budget": int(budget),
        "replicates": int(replicates),
        "reference": None
        if ref is None
        else {"mean": ref.mean, "var": ref.var, "var_sq": ref.var_sq, "draws": ref.draws},
        "labels": list(labels),
        "draws": kept,
    }
    return df


# ------------------------------------------------------------------------------------ summary
def _bootstrap_ess(sq_error, var_f, evaluations, n_boot, rng, level):
    """Percentile interval of the ESS_err per 1000 over replicates resampled with replacement."""
    replicates = sq_error.shape[0]
    idx = rng.integers(replicates, size=(n_boot, replicates))
    mse = sq_error[idx].mean(axis=1)  # (n_boot, coords)
    evals = evaluations[idx].mean(axis=1)[:, None]
    with np.errstate(divide="ignore", invalid="ignore"):
        ess = 1000.0 * var_f[None, :] / mse / evals
    lo, hi = (1 - level) / 2, 1 - (1 - level) / 2
    return ess, lo, hi


def worst_ess_err(sq_error, var_f, evaluations, *, level: float = 0.9, n_boot: int = 1000, rng=0):
    """The worst coordinate's error-based ESS per 1000 evaluations and its bootstrap interval.

    Parameters
    ----------
    sq_error : array, shape (replicates, coordinates)
        Squared errors of one statistic's estimates against the truth.
    var_f : array, shape (coordinates,)
        ``Var_π(f)`` of each coordinate's statistic.
    evaluations : array, shape (replicates,)
        Evaluations each replicate spent.
    level, n_boot
        Coverage and resamples of the interval (replicates resampled with replacement).
    rng : numpy.random.Generator or int

    Returns
    -------
    tuple of float
        ``(worst, low, high)``: ``min_i 1000 Var_π(f_i) / MSE_i / mean(evaluations)`` and the
        interval's ends (what :func:`ess_err_table` reports as ``{stat}_worst``, ``_lo``,
        ``_hi``).
    """
    sq_error = np.asarray(sq_error, dtype=float)
    var_f = np.asarray(var_f, dtype=float)
    evaluations = np.asarray(evaluations, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        worst = float(np.nanmin(1000.0 * var_f / sq_error.mean(axis=0) / evaluations.mean()))
    boot, lo, hi = _bootstrap_ess(
        sq_error, var_f, evaluations, n_boot, np.random.default_rng(rng), level
    )
    boot_worst = np.nanmin(boot, axis=1)
    return worst, float(np.quantile(boot_worst, lo)), float(np.quantile(boot_worst, hi))


def ess_err_table(
    df: pd.DataFrame, *, level: float = 0.9, n_boot: int = 1000, random_seed: int = 0
) -> pd.DataFrame:
    """One row per sampler: error-based ESS per 1000 evaluations next to ArviZ's figures.

    Parameters
    ----------
    df : pandas.DataFrame
        From :func:`~.runners.compare_samplers`.
    level : float
        Coverage of the bootstrap intervals (replicates resampled with replacement).
    n_boot : int
        Bootstrap resamples.
    random_seed : int

    The ESS_err figures are computed from ``sq_error`` over the replicates in ``df``, so frames
    of separate runs of one sampler can be concatenated first (with distinct ``replicate``
    numbers); the pooled ArviZ figures are then those of the first replicate's run.

    Returns
    -------
    pandas.DataFrame
        Indexed by sampler: ``evaluations`` (mean measured), ``budget``, and for
        ``stat`` in (``mean``, ``second_moment``): ``{stat}_worst`` (smallest ESS_err per 1000
        over coordinates), its interval ``{stat}_worst_lo``/``_hi``, ``{stat}_median``;
        ``ess_bulk_per_1000`` and ``ess_tail_per_1000`` (smallest pooled multi-chain ArviZ
        ESS of ``x`` and ``x²`` per 1000 evaluations of the pooled replicates), ``max_r_hat``
        (pooled), ``ess_bulk_within_per_1000`` (median over replicates of the smallest
        within-run bulk ESS per 1000 evaluations: what a single run would report),
        ``seconds`` (median wall time per replicate), ``own_ms_per_iteration`` (median).
    """
    rng = np.random.default_rng(random_seed)
    rows = {}
    for name, group in df.groupby("sampler", observed=True, sort=False):
        per_run = group.drop_duplicates("replicate").set_index("replicate").sort_index()
        evaluations = per_run["evaluations"].to_numpy(float)
        row = {"evaluations": evaluations.mean(), "budget": int(per_run["budget"].iloc[0])}
        for stat in STATISTICS:
            sub = group[group["statistic"] == stat]
            wide = sub.pivot(index="replicate", columns="coordinate", values="sq_error")
            var_f = sub.groupby("coordinate")["var_f"].first().to_numpy()
            with np.errstate(divide="ignore", invalid="ignore"):  # from sq_error: frames merge
                mse = wide.to_numpy().mean(axis=0) if len(wide) > 1 else np.nan
                ess = 1000.0 * var_f / mse / evaluations.mean()
            row[f"{stat}_worst"] = float(np.nanmin(ess)) if np.any(np.isfinite(ess)) else math.nan
            row[f"{stat}_median"] = (
                float(np.nanmedian(ess)) if np.any(np.isfinite(ess)) else (math.nan)
            )
            if len(wide) > 1 and np.all(np.isfinite(var_f)):
                _, row[f"{stat}_worst_lo"], row[f"{stat}_worst_hi"] = worst_ess_err(
                    wide.to_numpy(), var_f, evaluations, level=level, n_boot=n_boot, rng=rng
                )
            else:
                row[f"{stat}_worst_lo"] = row[f"{stat}_worst_hi"] = math.nan
        pooled_evals = evaluations.sum()
        first = group[group["replicate"] == group["replicate"].min()]
        for key in ("ess_bulk", "ess_tail"):
            values = first[f"{key}_pooled"].to_numpy(float)
            row[f"{key}_per_1000"] = (
                1000.0 * float(np.nanmin(values)) / pooled_evals
                if np.any(np.isfinite(values))
                else math.nan
            )
        within = group.groupby("replicate")["ess_bulk"].min().to_numpy(float)
        within = 1000.0 * within / evaluations
        row["ess_bulk_within_per_1000"] = (
            float(np.nanmedian(within)) if np.any(np.isfinite(within)) else math.nan
        )
        r_hat = first["r_hat_pooled"].to_numpy(float)
        row["max_r_hat"] = float(np.nanmax(r_hat)) if np.any(np.isfinite(r_hat)) else math.nan
        row["seconds"] = float(per_run["seconds"].median())
        row["own_ms_per_iteration"] = 1000.0 * float(per_run["own_seconds_per_iteration"].median())
        rows[name] = row
    table = pd.DataFrame.from_dict(rows, orient="index")
    table.index.name = "sampler"
    return table
