"""Side-by-side comparison of samplers with ArviZ: ESS per evaluation, per second, R-hat, errors.

Conventions
-----------
* **Evaluations include tuning.** The user pays for every evaluation of the target, tuning
  included, so ``target_evaluations`` counts all of them while the ESS, R-hat and errors use the
  post-tuning draws only. Sample with ``discard_tuned_samples=False`` so that
  :func:`count_evaluations` can see the tuning iterations' stats (it warns if they are missing).
* **What one evaluation is** depends on the sampler (``evaluation_kind``): one call of the log
  density (``"target"``) for gradient-free samplers, one joint log-density-and-gradient call
  (``"gradient"``) for NUTS/HMC.
* ESS is the minimum over all scalar components of the selected variables of the rank-normalised
  bulk ESS (:func:`arviz.ess`); R-hat is the maximum rank-normalised split R-hat.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from arviz import ess, rhat

__all__ = [
    "EVALUATION_KINDS",
    "SamplerRun",
    "acceptance_rate",
    "comparison_table",
    "count_evaluations",
    "posterior_draws",
    "summarize",
]

#: sampler kinds understood by :func:`count_evaluations`
EVALUATION_KINDS = ("kernel", "nuts", "metropolis", "demetropolisz", "slice")


@dataclass
class SamplerRun:
    """One sampler run to compare.

    Attributes
    ----------
    name : str
        Label in the tables.
    idata : xarray.DataTree
        What ``pm.sample`` returned (groups ``posterior``, ``sample_stats`` and, with
        ``discard_tuned_samples=False``, ``warmup_posterior``/``warmup_sample_stats``).
    target_evaluations : int, optional
        Evaluations of the target over the whole run, tuning included (see
        :func:`count_evaluations`).
    seconds : float, optional
        Wall-clock seconds of the run (what the user waited for).
    evaluation_kind : {"target", "gradient"}
        What one evaluation is: a log-density call, or a log-density-and-gradient call.
    extra : dict
        Anything else to carry into the summary (copied into it verbatim).
    """

    name: str
    idata: Any
    target_evaluations: int | None = None
    seconds: float | None = None
    evaluation_kind: str = "target"
    extra: dict = field(default_factory=dict)

    def __post_init__(self):
        if self.evaluation_kind not in ("target", "gradient"):
            raise ValueError(
                f"evaluation_kind must be 'target' or 'gradient', got {self.evaluation_kind!r}"
            )


# ------------------------------------------------------------------------------------- reading
def _group(idata, name):
    try:
        return idata[name] if name in idata.children else None
    except (AttributeError, TypeError):  # a plain mapping or an object with attributes
        return getattr(idata, name, None)


def _var_names(posterior, var_names):
    names = list(posterior.data_vars) if var_names is None else list(var_names)
    if isinstance(var_names, str):
        names = [var_names]
    missing = [v for v in names if v not in posterior.data_vars]
    if missing:
        raise KeyError(f"variables {missing} are not in the posterior {list(posterior.data_vars)}")
    if not names:
        raise ValueError("the posterior has no variables")
    return names


def posterior_draws(idata, var_names=None, group: str = "posterior") -> np.ndarray:
    """Draws of ``var_names`` (default: all posterior variables) as one ``(chain, draw, k)`` array.

    Each variable is flattened in C order and the variables are concatenated in the order given
    (default: the posterior's order), which is the order of ``true_mean``/``true_var`` in
    :func:`summarize`.
    """
    posterior = _group(idata, group)
    if posterior is None:
        raise KeyError(f"idata has no {group!r} group")
    arrays = []
    for name in _var_names(posterior, var_names):
        values = np.asarray(posterior[name].values, dtype=float)
        arrays.append(values.reshape(values.shape[0], values.shape[1], -1))
    return np.concatenate(arrays, axis=-1)


def _stat(idata, name, warmup: bool):
    group = _group(idata, "warmup_sample_stats" if warmup else "sample_stats")
    if group is None or name not in group.data_vars:
        return None
    return np.asarray(group[name].values)


def _iterations(idata, warmup: bool) -> int:
    group = _group(idata, "warmup_posterior" if warmup else "posterior")
    if group is None:
        return 0
    sizes = group.sizes
    return int(sizes.get("chain", 1) * sizes.get("draw", 0))


def _tuning_missing(idata) -> bool:
    if _group(idata, "warmup_posterior") is not None:
        return False
    posterior = _group(idata, "posterior")
    tuning = getattr(posterior, "attrs", {}).get("tuning_steps", 0) if posterior is not None else 0
    return bool(tuning)


def count_evaluations(idata, sampler_kind: str, var_names=None) -> int:
    """Target (or gradient) evaluations of a run, tuning included, from its sample stats.

    Parameters
    ----------
    idata : xarray.DataTree
        From ``pm.sample(..., discard_tuned_samples=False)``; if the tuning groups are absent the
        tuning iterations cannot be counted and a warning is issued.
    sampler_kind : str
        One of :data:`EVALUATION_KINDS`:

        ``"kernel"``
            This package's steps: the sum of the ``logp_evals`` stat (exact).
        ``"nuts"``
            Log-density-and-gradient evaluations: the sum of ``n_steps`` (one per leapfrog step;
            exact up to the initial point's evaluation).
        ``"metropolis"``
            PyMC's ``Metropolis``: 2 evaluations (proposal and current point, ``delta_logp``) per
            accept test, and it makes one test per scalar element of a non-scalar variable
            (``elemwise_update``): ``2 × (number of sampled elements)`` per iteration (see
            ``var_names``).
        ``"demetropolisz"``
            PyMC's ``DEMetropolisZ``: 2 per iteration.
        ``"slice"``
            PyMC's ``Slice``, per iteration and element: 1 (slice height) + the stepping-out
            tests + the shrinking tests: ``4 d + nstep_out + nstep_in``. Exact unless a
            stepping-out budget (``max_steps``) ran out, which over-counts by one (an error of
            well under 1 % at the default ``max_steps=100``); count with
            :class:`~pymc_kernel_steps_bench.targets.CountingLogp` for the exact figure.
    var_names : list of str, optional
        ``"metropolis"`` and ``"slice"`` only: the variables the step sampled, whose elements
        set the count. Default: every variable in the posterior, which over-counts when it also
        holds ``pm.Deterministic`` variables. A run whose posterior leaves sampled variables
        out (``pm.sample(var_names=...)``) cannot be counted this way.

    Returns
    -------
    int

    Raises
    ------
    TypeError
        ``idata`` is not the result of ``pm.sample`` (no ``sample_stats``), or
        ``sampler_kind`` is not a string.
    ValueError
        An unknown ``sampler_kind``; ``"nuts"`` for a run of this package's steps (they record
        their evaluations in ``logp_evals``: use ``"kernel"``); ``var_names`` for a kind that
        does not use it.
    """
    if not isinstance(sampler_kind, str):
        raise TypeError(f"`sampler_kind` must be a string, got {sampler_kind!r}.")
    kind = sampler_kind.lower()
    if kind not in EVALUATION_KINDS:
        raise ValueError(f"sampler_kind must be one of {EVALUATION_KINDS}, got {sampler_kind!r}")
    if _group(idata, "sample_stats") is None:
        raise TypeError(
            "`idata` must be the result of pm.sample (a DataTree with sample_stats), got "
            f"{type(idata).__name__} without them: its evaluations cannot be counted."
        )
    if kind == "nuts" and _stat(idata, "logp_evals", False) is not None:
        raise ValueError(
            "sampler_kind='nuts' counts leapfrog steps (`n_steps`), but this run has the stat "
            "`logp_evals` of this package's steps, which counts their evaluations (their "
            "`n_steps` may be surrogate steps that evaluate nothing): use sampler_kind='kernel'."
        )
    if var_names is not None and kind not in ("metropolis", "slice"):
        raise ValueError(f"`var_names` is for 'metropolis' and 'slice', not {kind!r}.")
    if _tuning_missing(idata):
        warnings.warn(
            "idata has no warmup groups: tuning evaluations are not counted (sample with "
            "discard_tuned_samples=False)",
            UserWarning,
            stacklevel=2,
        )
    total = 0
    for warmup in (True, False):
        iterations = _iterations(idata, warmup)
        if iterations == 0:
            continue
        if kind == "kernel":
            total += _sum_stat(idata, "logp_evals", warmup, kind)
        elif kind == "nuts":
            total += _sum_stat(idata, "n_steps", warmup, kind)
        elif kind == "demetropolisz":
            total += 2 * iterations
        else:
            group = "warmup_posterior" if warmup else "posterior"
            draws = posterior_draws(idata, var_names, group=group)
            size = draws.shape[-1]
            if kind == "metropolis":
                total += 2 * size * iterations
            else:  # slice
                steps = _sum_stat(idata, "nstep_out", warmup, kind) + _sum_stat(
                    idata, "nstep_in", warmup, kind
                )
                total += 4 * size * iterations + steps
    return int(total)


def _sum_stat(idata, name, warmup, kind) -> int:
    values = _stat(idata, name, warmup)
    if values is None:
        group = "warmup_sample_stats" if warmup else "sample_stats"
        raise KeyError(f"sampler kind {kind!r} needs the stat {name!r} in {group}")
    return int(np.sum(values, dtype=np.int64))


def acceptance_rate(idata) -> float:
    """Mean acceptance of the post-tuning draws (NaN when the sampler reports none).

    Uses ``accepted`` (the fraction of accepted proposals) if present, else ``acceptance_rate``
    (NUTS: mean Metropolis probability along the trajectory), else ``min(1, accept)``.
    """
    for name in ("accepted", "acceptance_rate"):
        values = _stat(idata, name, warmup=False)
        if values is not None:
            return float(np.mean(values.astype(float)))
    values = _stat(idata, "accept", warmup=False)
    if values is not None:
        return float(np.mean(np.minimum(1.0, np.nan_to_num(values.astype(float), nan=0.0))))
    return math.nan


# ------------------------------------------------------------------------------------- summary
def _min_or_nan(values) -> float:
    values = np.asarray(values, dtype=float)
    return float(np.nanmin(values)) if values.size and not np.all(np.isnan(values)) else math.nan


def _max_or_nan(values) -> float:
    values = np.asarray(values, dtype=float)
    return float(np.nanmax(values)) if values.size and not np.all(np.isnan(values)) else math.nan


def _rhat(draws: np.ndarray) -> np.ndarray:
    if draws.shape[0] == 1:  # one chain: split R-hat of its two halves
        half = draws.shape[1] // 2
        draws = np.stack([draws[0, :half], draws[0, half : 2 * half]])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return np.asarray(rhat(draws, method="rank"), dtype=float)


def summarize(run: SamplerRun, true_mean=None, true_var=None, var_names=None) -> dict:
    """Performance and accuracy figures of one run.

    Parameters
    ----------
    run : SamplerRun
    true_mean, true_var : array_like, optional
        Reference moments of the flattened, concatenated variables (see
        :func:`posterior_draws`). Errors are scaled by ``sqrt(true_var)`` when it is given, else by
        the posterior standard deviation of the run.
    var_names : list of str, optional
        Variables to assess (default: all posterior variables).

    Returns
    -------
    dict
        ``name``, ``chains``, ``draws`` (per chain, post-tuning), ``evaluations``,
        ``evaluation_kind``, ``seconds``, ``min_ess_bulk``, ``ess_per_1000_evals`` (min bulk-ESS
        per 1000 evaluations, tuning evaluations included), ``ess_per_second``, ``max_rhat``,
        ``max_mean_error`` (max over components of ``|mean − true_mean| / scale``, NaN without a
        reference), ``max_var_error`` (max ``|var / true_var − 1|``), ``mean_norm``
        (``‖posterior mean‖``), ``accept_rate`` (NaN if the sampler reports none), plus
        ``run.extra``.
    """
    if not isinstance(run, SamplerRun):
        raise TypeError(
            f"`run` must be a SamplerRun, got {type(run).__name__}: wrap a result of pm.sample "
            "as SamplerRun(name, idata, target_evaluations, seconds)."
        )
    draws = posterior_draws(run.idata, var_names)
    n_chains, n_draws, _ = draws.shape
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        bulk = np.asarray(ess(draws, method="bulk"), dtype=float) if n_draws >= 4 else [math.nan]
    min_bulk = _min_or_nan(bulk)
    mean = draws.mean(axis=(0, 1))
    sd = draws.std(axis=(0, 1), ddof=1) if n_chains * n_draws > 1 else np.full_like(mean, math.nan)
    evals = run.target_evaluations
    seconds = run.seconds
    out = {
        "name": run.name,
        "chains": n_chains,
        "draws": n_draws,
        "evaluations": evals,
        "evaluation_kind": run.evaluation_kind,
        "seconds": seconds,
        "min_ess_bulk": min_bulk,
        "ess_per_1000_evals": 1000.0 * min_bulk / evals if evals else math.nan,
        "ess_per_second": min_bulk / seconds if seconds else math.nan,
        "max_rhat": _max_or_nan(_rhat(draws)) if n_draws >= 4 else math.nan,
        "max_mean_error": math.nan,
        "max_var_error": math.nan,
        "mean_norm": float(np.linalg.norm(mean)),
        "accept_rate": acceptance_rate(run.idata),
    }
    if true_var is not None:
        true_var = np.broadcast_to(np.asarray(true_var, dtype=float), mean.shape)
        scale = np.sqrt(true_var)
        out["max_var_error"] = float(np.max(np.abs(draws.var(axis=(0, 1)) / true_var - 1.0)))
    else:
        scale = sd
    if true_mean is not None:
        true_mean = np.broadcast_to(np.asarray(true_mean, dtype=float), mean.shape)
        out["max_mean_error"] = float(np.max(np.abs(mean - true_mean) / scale))
    out.update(run.extra)
    return out


# --------------------------------------------------------------------------------------- tables
DEFAULT_COLUMNS = (
    ("name", "sampler"),
    ("evaluations", "evals"),
    ("min_ess_bulk", "min ESS"),
    ("ess_per_1000_evals", "ESS/1k evals"),
    ("ess_per_second", "ESS/s"),
    ("max_rhat", "max R-hat"),
    ("max_mean_error", "mean err"),
    ("max_var_error", "var err"),
    ("accept_rate", "accept"),
)


def _format(value) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool | np.bool_):
        return str(bool(value))
    if isinstance(value, int | np.integer):
        return str(int(value))
    if isinstance(value, float | np.floating):
        value = float(value)
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        magnitude = abs(value)
        if magnitude != 0 and (magnitude >= 1e6 or magnitude < 1e-3):
            return f"{value:.3g}"
        if magnitude >= 100:
            return f"{value:.0f}"
        if magnitude >= 10:
            return f"{value:.1f}"
        return f"{value:.3f}"
    return str(value)


def comparison_table(
    rows: Iterable[dict],
    columns: Sequence[tuple[str, str] | str] | None = None,
    markdown: bool = False,
) -> str:
    """An aligned table of summaries (one row per dict, e.g. from :func:`summarize`).

    Parameters
    ----------
    rows : iterable of dict
    columns : sequence of str or (key, header) pairs, optional
        Columns to show (default: sampler, evaluations, min ESS, ESS per 1000 evaluations,
        ESS/s, max R-hat, mean and variance errors, acceptance). Missing keys show as ``-``;
        string cells are shown as they are.
    markdown : bool
        A GitHub-flavoured markdown table instead of plain text.

    Returns
    -------
    str
    """
    if isinstance(rows, dict):
        raise TypeError("`rows` must be an iterable of dicts, one per run; got one: pass [row].")
    rows = list(rows)
    if not all(isinstance(row, dict) for row in rows):
        raise TypeError("`rows` must be an iterable of dicts, one per run (see summarize).")
    columns = DEFAULT_COLUMNS if columns is None else columns
    cols = [(c, c) if isinstance(c, str) else tuple(c) for c in columns]
    header = [h for _, h in cols]
    body = [[_format(row.get(key)) for key, _ in cols] for row in rows]
    widths = [max(len(x) for x in column) for column in zip(header, *body, strict=False)]

    def line(cells):
        parts = []
        for i, (cell, width) in enumerate(zip(cells, widths, strict=True)):
            parts.append(cell.ljust(width) if i == 0 else cell.rjust(width))
        return ("| " + " | ".join(parts) + " |") if markdown else "  ".join(parts)

    lines = [line(header)]
    if markdown:
        lines.append(
            "|"
            + "|".join(
                (":" + "-" * (w + 1)) if i == 0 else ("-" * (w + 1) + ":")
                for i, w in enumerate(widths)
            )
            + "|"
        )
    else:
        lines.append("  ".join("-" * w for w in widths))
    lines.extend(line(cells) for cells in body)
    return "\n".join(lines)
