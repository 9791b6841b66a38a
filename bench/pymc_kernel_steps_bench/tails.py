"""Does a tuned step bring a chain back from a tail? Acceptance of frozen transitions from chosen
starting points.

:func:`tail_acceptance` tunes one chain of a step of this package on a model (through the step's
PyMC interface: ``setup_chain``, ``astep``, ``stop_tuning``), freezes it, then makes ``repeats``
single transitions from each of the given starting points and records, per transition, the
acceptance probability, whether it was a surrogate trajectory, whether it diverged (rejected
without evaluating the model, or a non-finite energy) and the jump. :func:`tail_starts` builds
starting points: exact draws of the target with one coordinate moved to ``mean ± k sd``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import pandas as pd

__all__ = ["tail_acceptance", "tail_starts"]


def tail_starts(
    draws: np.ndarray, mean: np.ndarray, sd: np.ndarray, coordinate: int, distances: Sequence[float]
) -> tuple[np.ndarray, np.ndarray]:
    """Starting points ``(len(distances) × len(draws), d)``: each draw with ``coordinate`` set to
    ``mean + k sd`` for each ``k`` of ``distances`` (negative for the left tail), and the ``k`` of
    each point."""
    draws = np.atleast_2d(np.asarray(draws, dtype=float))
    points, ks = [], []
    for k in distances:
        moved = draws.copy()
        moved[:, coordinate] = mean[coordinate] + k * sd[coordinate]
        points.append(moved)
        ks.append(np.full(len(draws), float(k)))
    return np.concatenate(points), np.concatenate(ks)


def tail_acceptance(
    model,
    factory: Callable,
    starts: np.ndarray,
    *,
    tune: int = 2000,
    repeats: int = 10,
    random_seed: int = 0,
) -> pd.DataFrame:
    """Transitions of a tuned, frozen step from each starting point.

    Parameters
    ----------
    model : pymc.Model
        A model with one free vector (the step's block), e.g. a black box of a robustness target.
    factory : callable
        Returns the step, called inside the model's context (``pks.KMCLite``).
    starts : np.ndarray
        ``(n, d)`` starting points in the step's (unconstrained, raveled) space.
    tune : int
        Tuning iterations of the chain from the model's initial point before freezing.
    repeats : int
        Transitions from each starting point (each from the point itself, not a chain).
    random_seed : int

    Returns
    -------
    pandas.DataFrame
        One row per transition: ``start`` (index into ``starts``), ``accept`` (the acceptance
        probability), ``accepted``, ``surrogate`` (a surrogate trajectory, not a fallback move),
        ``diverging``, ``move`` (the ``move`` sample stat: which kind of move proposed, -1 for
        a step without it), ``jump`` (the new point minus the start, an array), and ``tuned_accept``
        (the mean acceptance of the last quarter of tuning).
    """
    from pymc.blocking import DictToArrayBijection, RaveledVars

    with model:
        step = factory()
    point = model.initial_point()
    q = DictToArrayBijection.map({v.name: point[v.name] for v in step.vars})
    info = q.point_map_info
    step.setup_chain(np.random.default_rng(random_seed), tune, repeats * len(starts))
    accepts = []
    for _ in range(tune):
        q, (stats,) = step.astep(q)
        accepts.append(stats["accept"])
    step.stop_tuning()
    tuned_accept = float(np.mean(accepts[-max(1, tune // 4) :]))
    rows = []
    for index, start in enumerate(np.asarray(starts, dtype=float)):
        for _ in range(repeats):
            new, (stats,) = step.astep(RaveledVars(start.copy(), info))
            rows.append(
                {
                    "start": index,
                    "accept": float(stats["accept"]),
                    "accepted": bool(stats["accepted"]),
                    "surrogate": bool(stats.get("surrogate", False)),
                    "diverging": bool(stats.get("diverging", False)),
                    "move": int(stats.get("move", -1)),
                    "jump": new.data - start,
                    "tuned_accept": tuned_accept,
                }
            )
    return pd.DataFrame(rows)
