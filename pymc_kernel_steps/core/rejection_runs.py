"""How likely a run of consecutive rejections is, were acceptance the same everywhere.

A Metropolis–Hastings chain that accepts a fraction ``a`` of its proposals sits at one point for
a geometric number of iterations. Where the proposal suits one region and not another (a learned
surrogate whose far field is wrong in a tail), the chain enters that region rarely and stays
long: a *sticky excursion*. Such a chain's draws look healthy on average, and its Monte Carlo
standard error, computed from the same draws, does not see the excursions it has not yet made.
The longest run of rejections gives it away: compared with the run lengths that a chain of the
same length and acceptance would produce were acceptance the same at every point, it is
improbably long.
"""

from __future__ import annotations

import math

__all__ = ["rejection_run_probability"]


def rejection_run_probability(run: int, iterations: int, acceptance: float) -> float:
    """The probability of at least ``run`` consecutive rejections in ``iterations`` independent
    accept/reject steps that each accept with probability ``acceptance``.

    Exact, by the recursion for ``q_n``, the probability of no such run in ``n`` steps:
    ``q_n = 1`` for ``n < r``, ``q_r = 1 − f^r`` and ``q_n = q_{n−1} − a f^r q_{n−r−1}`` for
    ``n > r``, with ``f = 1 − a`` (a run of ``r`` rejections ending at step ``n`` for the first
    time starts after an acceptance at step ``n − r`` and no such run before it).

    Parameters
    ----------
    run : int
        The run length ``r ≥ 1``.
    iterations : int
        The number of steps ``n ≥ 0``.
    acceptance : float
        The probability ``a`` in [0, 1] that a step accepts.

    Returns
    -------
    float
        ``1 − q_n``.
    """
    if int(run) != run or run < 1:
        raise ValueError(f"`run` must be a positive integer, got {run!r}.")
    if int(iterations) != iterations or iterations < 0:
        raise ValueError(f"`iterations` must be a non-negative integer, got {iterations!r}.")
    if not (math.isfinite(acceptance) and 0.0 <= acceptance <= 1.0):
        raise ValueError(f"`acceptance` must lie in [0, 1], got {acceptance!r}.")
    run, iterations = int(run), int(iterations)
    if iterations < run:
        return 0.0
    rejection_to_the_r = (1.0 - acceptance) ** run
    no_run = [1.0] * run + [1.0 - rejection_to_the_r]  # q_0, ..., q_r
    start_weight = acceptance * rejection_to_the_r
    for n in range(run + 1, iterations + 1):
        no_run.append(no_run[n - 1] - start_weight * no_run[n - run - 1])
    return min(1.0, max(0.0, 1.0 - no_run[iterations]))
