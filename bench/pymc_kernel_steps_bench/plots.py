"""The figure of a comparison: ESS_err per 1000 evaluations over replicates, and marginals."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pandas as pd

from ._util import BENCH_EXTRA
from .metrics import STATISTICS, _bootstrap_ess

__all__ = ["plot_comparison"]


def _density(values, grid, max_points: int = 5000):
    """Gaussian kernel density estimate of ``values`` on ``grid`` (thinned to ``max_points``)."""
    from scipy.stats import gaussian_kde

    values = np.asarray(values, dtype=float)
    values = values[np.isfinite(values)][:: max(1, len(values) // max_points)]
    if len(values) < 2 or np.ptp(values) == 0:
        return np.zeros_like(grid)
    return gaussian_kde(values)(grid)


def plot_comparison(
    df: pd.DataFrame,
    *,
    statistic: str = "mean",
    coordinates: Sequence[int] | None = None,
    n_boot: int = 1000,
    level: float = 0.9,
    random_seed: int = 0,
    figsize: tuple[float, float] | None = None,
):
    """ESS_err per 1000 evaluations with its spread over replicates, and marginals vs the truth.

    Left panel: per sampler the worst-coordinate ESS_err per 1000 evaluations of ``statistic``
    (a bar), the bootstrap interval over replicates (a line, ``level`` coverage) and the
    worst-coordinate value of each bootstrap resample as faint points; log scale. The other
    panels: the marginal density (Gaussian KDE) of each selected coordinate from each sampler's
    draws pooled over replicates (``df.attrs["draws"]``) against the reference draws (black,
    when the reference has draws) or the reference mean ± sd (black lines).

    Parameters
    ----------
    df : pandas.DataFrame
        From :func:`~.runners.compare_samplers`.
    statistic : {"mean", "second_moment"}
    coordinates : sequence of int, optional
        Coordinates whose marginals are drawn (default: the first two, at most).
    n_boot, level, random_seed
        Bootstrap settings of the interval.
    figsize : tuple, optional

    Returns
    -------
    matplotlib.figure.Figure
    """
    try:
        import matplotlib.pyplot as plt
    except ImportError as err:  # pragma: no cover - depends on the environment
        raise ImportError(f"plot_comparison needs matplotlib: {BENCH_EXTRA}") from err
    if statistic not in STATISTICS:
        raise ValueError(f"statistic must be one of {STATISTICS}, got {statistic!r}")
    labels = df.attrs.get("labels") or sorted(df["label"].unique())
    draws = df.attrs.get("draws") or {}
    reference = df.attrs.get("reference")
    if coordinates is None:
        coordinates = list(range(min(2, len(labels)))) if draws else []
    samplers = list(df["sampler"].cat.categories if hasattr(df["sampler"], "cat") else [])
    samplers = [s for s in samplers if s in set(df["sampler"])] or list(df["sampler"].unique())
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    color = {s: colors[i % len(colors)] for i, s in enumerate(samplers)}
    panels = 1 + len(coordinates)
    width = max(4.2, 0.75 * len(samplers)) + 4.2 * len(coordinates)
    fig, axes = plt.subplots(1, panels, figsize=figsize or (width, 3.8), squeeze=False)
    ax = axes[0, 0]
    rng = np.random.default_rng(random_seed)
    for i, name in enumerate(samplers):
        group = df[(df["sampler"] == name) & (df["statistic"] == statistic)]
        wide = group.pivot(index="replicate", columns="coordinate", values="sq_error")
        var_f = group.groupby("coordinate")["var_f"].first().to_numpy()
        evaluations = (
            group.drop_duplicates("replicate").sort_values("replicate")["evaluations"].to_numpy()
        )
        point = float(np.nanmin(group.groupby("coordinate")["ess_err_per_1000"].first()))
        ax.bar(i, point, color=color[name], alpha=0.6)
        if len(wide) > 1 and np.all(np.isfinite(var_f)):
            boot, lo, hi = _bootstrap_ess(
                wide.to_numpy(), var_f, evaluations.astype(float), n_boot, rng, level
            )
            worst = np.nanmin(boot, axis=1)
            jitter = rng.uniform(-0.25, 0.25, size=min(200, len(worst)))
            ax.plot(i + jitter, worst[: len(jitter)], ".", color=color[name], alpha=0.15, ms=3)
            ax.vlines(i, np.quantile(worst, lo), np.quantile(worst, hi), color="k", lw=1.5)
    ax.set_xticks(range(len(samplers)), samplers, rotation=30, ha="right")
    ax.set_yscale("log")
    from matplotlib.ticker import FormatStrFormatter, LogLocator, NullFormatter

    ax.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    ax.yaxis.set_major_formatter(FormatStrFormatter("%g"))
    ax.yaxis.set_minor_formatter(NullFormatter())
    pretty = "E[x]" if statistic == "mean" else "E[x²]"
    ax.set_ylabel(f"ESS_err of {pretty} per 1000 evaluations\n(worst coordinate)")
    budget = df.attrs.get("budget")
    if budget is None and "budget" in df:  # a frame read back from its CSV
        budget = int(df["budget"].iloc[0])
    budget_text = "?" if budget is None else f"{int(budget):,}"
    ax.set_title(
        f"{budget_text} evaluations per run, {df['replicate'].nunique()} runs per sampler",
        fontsize="medium",
    )
    ref_draws = None if reference is None else reference.get("draws")
    for j, c in enumerate(coordinates, start=1):
        ax = axes[0, j]
        source = (
            ref_draws[:, c]
            if ref_draws is not None
            else np.concatenate([d[:, c] for d in draws.values()])
        )
        grid = np.linspace(*np.quantile(source, [0.002, 0.998]), 200)
        for name in samplers:
            if name in draws:
                ax.plot(grid, _density(draws[name][:, c], grid), color=color[name], lw=1.2)
        if ref_draws is not None:
            ax.plot(grid, _density(ref_draws[:, c], grid), color="k", lw=2.0)
        elif reference is not None:
            m, s = reference["mean"][c], math.sqrt(reference["var"][c])
            for x in (m - s, m, m + s):
                ax.axvline(x, color="k", lw=1.0 if x != m else 1.5, ls="--" if x != m else "-")
        ax.set_title(f"{labels[c]} (pooled replicates)")
        ax.set_yticks([])
    if not coordinates:  # the bars are labelled on their axis: no legend needed
        fig.tight_layout()
        return fig
    handles = [plt.Line2D([], [], color=color[s], label=s) for s in samplers]
    if reference is not None:
        handles.append(plt.Line2D([], [], color="k", label="reference"))
    fig.legend(handles=handles, loc="lower center", ncol=min(len(handles), 6), frameon=False)
    fig.tight_layout(rect=(0, 0.1, 1, 1))
    return fig
