"""Adaptation: one protocol for every tuner; the tuners of scales and step sizes, and a search
among candidates.

Every tuner of the package is an :class:`Adapter`: those here, the Bayesian optimisers
(:class:`~pymc_kernel_steps.core.AnnealedUCB`, :class:`~pymc_kernel_steps.core.WindowedTuner`)
and a mixture's weights (:class:`~pymc_kernel_steps.core.JumpRateWeights`). Each iteration the
sampler asks it for the value to use (:meth:`Adapter.propose`, which draws from ``rng`` only for
a tuner that tries candidates, such as :class:`JumpDistanceStepSize`), makes its transition, and
tells it what came of it in one :class:`Feedback` (:meth:`Adapter.update`); :attr:`Adapter.value`
is its current value and :meth:`Adapter.final` the one to freeze at the end of tuning. A sampler
never needs to know which tuner it holds: a trajectory's tuners (:class:`DualAveraging`,
:class:`JumpDistanceStepSize`, :class:`~pymc_kernel_steps.core.WindowedTuner`) all give
:class:`TrajectoryParameters`, with ``max_n_steps`` None where the tuner leaves the trajectory's
length to the sampler.

Also :func:`adaptation_probability`, the vanishing adaptation of the papers.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

__all__ = [
    "SCALE_RANGE",
    "Adapter",
    "CandidateSearch",
    "CoordinateScales",
    "DualAveraging",
    "Feedback",
    "JumpDistanceStepSize",
    "RobbinsMonroScale",
    "TrajectoryParameters",
    "adaptation_probability",
    "min_accepted_moves",
]

#: adapted scales stay within this factor of where they started (never collapse to zero)
SCALE_RANGE = 1e4


def min_accepted_moves(dim: int) -> int:
    """Accepted random-walk moves needed before a history can teach a kernel anything."""
    return max(20, 2 * dim)


@dataclass(frozen=True, slots=True)
class Feedback:
    """What one iteration tells an :class:`Adapter`; each adapter reads the fields it needs.

    Attributes
    ----------
    accept_prob : float
        The acceptance probability ``α`` of the iteration's proposal (NaN counts as 0).
    squared_jump : float
        ``‖x* − x‖²`` from the state to the proposal, in the metric the adapter measures jumps
        in (not weighted by ``α``; see :attr:`expected_squared_jump`).
    evaluations : int
        Target evaluations the proposal cost.
    index : int or None
        Which part of the adapter the iteration concerns: the coordinate a single-coordinate
        move changed, the move of a mixture or the candidate that proposed.
    reward : float
        A noisy value of an objective, for an adapter that maximises one it is given
        (:class:`~pymc_kernel_steps.core.AnnealedUCB`, :class:`CandidateSearch`).
    """

    accept_prob: float = math.nan
    squared_jump: float = math.nan
    evaluations: int = 1
    index: int | None = None
    reward: float = math.nan

    @property
    def expected_squared_jump(self) -> float:
        """The Rao–Blackwellised squared jump ``α ‖x* − x‖²`` (0 where it is not finite)."""
        jump = self.accept_prob * self.squared_jump
        return jump if math.isfinite(jump) else 0.0


class TrajectoryParameters(NamedTuple):
    """The value of a trajectory's tuner: its step size and, where the tuner sets it, the
    largest number of steps ``L`` (the trajectory takes ``L_r ~ U{1..L}``); None leaves the
    length to the sampler."""

    step_size: float
    max_n_steps: int | None = None


class Adapter(ABC):
    """The protocol of every tuner: propose a value, learn from feedback, give the final value.

    A tuner is built at its initial value (its constructor is the protocol's ``init``); while
    tuning, each iteration calls :meth:`propose` for the value to use and then :meth:`update`
    with that iteration's :class:`Feedback`; at the end of tuning :meth:`final` gives the value
    to freeze.
    """

    @property
    @abstractmethod
    def value(self) -> Any:
        """The current value."""

    def propose(self, rng: np.random.Generator) -> Any:
        """The value to use this iteration: :attr:`value` (drawing nothing from ``rng``) unless
        the tuner tries candidates."""
        return self.value

    @abstractmethod
    def update(self, feedback: Feedback, rng: np.random.Generator | None = None) -> None:
        """Learn from the outcome of the iteration that used the last proposed value (``rng``
        is drawn from only by a tuner whose learning is random)."""

    def final(self) -> Any:
        """The value to freeze at the end of tuning: :attr:`value` unless the tuner keeps a
        better estimate."""
        return self.value


def adaptation_probability(iteration: int, offset: float = 100.0, exponent: float = 0.5) -> float:
    """Probability ``a_t = min(1, (1 + t / offset)^(-exponent))`` of adapting at iteration ``t``.

    With ``0 < exponent ≤ 1`` the probabilities vanish (``a_t → 0``) while their sum diverges,
    the diminishing-adaptation condition under which adaptive MCMC stays ergodic.
    """
    if not 0 < exponent <= 1:
        raise ValueError(f"`exponent` must lie in (0, 1], got {exponent}.")
    if offset <= 0:
        raise ValueError(f"`offset` must be positive, got {offset}.")
    return min(1.0, (1.0 + iteration / offset) ** (-exponent))


@dataclass
class RobbinsMonroScale(Adapter):
    """Robbins–Monro adaptation of a log scale towards a target acceptance rate.

    ``log_scale ← log_scale + (t + 1)^(-exponent) (α_t − target)``, where ``α_t`` is the
    acceptance probability of iteration ``t``, clipped to ``[min_log_scale, max_log_scale]`` so
    that a long run of rejections can never drive the scale to zero. Its :attr:`value` is the
    scale; it reads :attr:`Feedback.accept_prob`.
    """

    log_scale: float
    target: float = 0.234
    exponent: float = 0.6
    iteration: int = 0
    min_log_scale: float = -math.inf
    max_log_scale: float = math.inf

    def __post_init__(self):
        if not 0 < self.target < 1:
            raise ValueError(f"target acceptance must lie in (0, 1), got {self.target}.")
        if not 0.5 < self.exponent <= 1:
            raise ValueError(f"`exponent` must lie in (0.5, 1], got {self.exponent}.")
        if not self.min_log_scale <= self.log_scale <= self.max_log_scale:
            raise ValueError(
                f"log_scale {self.log_scale} lies outside its bounds "
                f"[{self.min_log_scale}, {self.max_log_scale}]."
            )

    @classmethod
    def within(cls, scale: float, factor: float, **kwargs) -> RobbinsMonroScale:
        """Start at ``scale`` and stay within ``[scale / factor, scale × factor]``."""
        log_scale, log_factor = math.log(scale), math.log(factor)
        return cls(
            log_scale,
            min_log_scale=log_scale - log_factor,
            max_log_scale=log_scale + log_factor,
            **kwargs,
        )

    @property
    def scale(self) -> float:
        """``exp(log_scale)``."""
        return math.exp(self.log_scale)

    @property
    def value(self) -> float:
        """The scale."""
        return self.scale

    def restart_at(self, scale: float) -> None:
        """Continue from ``scale`` (clipped to the bounds) with the gain of the first iteration."""
        self.log_scale = min(max(math.log(scale), self.min_log_scale), self.max_log_scale)
        self.iteration = 0

    @property
    def at_bound(self) -> bool:
        """Whether the scale sits at one of its bounds."""
        return self.log_scale in (self.min_log_scale, self.max_log_scale)

    def recentre(self, scale: float, factor: float) -> None:
        """Bounds ``[scale / factor, scale × factor]`` around a new natural scale (the current
        value is clipped into them)."""
        log_scale, log_factor = math.log(scale), math.log(factor)
        self.min_log_scale = log_scale - log_factor
        self.max_log_scale = log_scale + log_factor
        self.log_scale = min(max(self.log_scale, self.min_log_scale), self.max_log_scale)

    def rescale(self, factor: float) -> None:
        """Multiply the scale (and its bounds) by ``factor``."""
        shift = math.log(factor)
        self.log_scale += shift
        self.min_log_scale += shift
        self.max_log_scale += shift

    def update(self, feedback: Feedback, rng: np.random.Generator | None = None) -> None:
        """Move the log scale given this iteration's acceptance probability."""
        gain = (self.iteration + 1.0) ** (-self.exponent)
        accept_prob = feedback.accept_prob
        accept_prob = accept_prob if math.isfinite(accept_prob) else 0.0
        self.log_scale += gain * (accept_prob - self.target)
        self.log_scale = min(max(self.log_scale, self.min_log_scale), self.max_log_scale)
        self.iteration += 1


@dataclass
class DualAveraging(Adapter):
    """Nesterov dual averaging of a log step size (Hoffman & Gelman 2014, Alg. 5).

    Its :attr:`value` is the step size to use while adapting, :meth:`final` the averaged one
    (both as :class:`TrajectoryParameters` without a length); it reads
    :attr:`Feedback.accept_prob`.

    Parameters
    ----------
    initial_step_size : float
        Starting step size; ``μ = log(10 ε₀)`` is the shrinkage point.
    target : float
        Target mean acceptance probability.
    gamma, t0, kappa : float
        The usual constants (0.05, 10, 0.75).
    """

    initial_step_size: float
    target: float = 0.8
    gamma: float = 0.05
    t0: float = 10.0
    kappa: float = 0.75
    iteration: int = 0
    error_sum: float = 0.0
    log_averaged: float = 0.0
    log_step: float = float("nan")

    def __post_init__(self):
        if not self.initial_step_size > 0:
            raise ValueError(f"`step_size` must be positive, got {self.initial_step_size}.")
        if not 0 < self.target < 1:
            raise ValueError(f"target acceptance must lie in (0, 1), got {self.target}.")
        if math.isnan(self.log_step):
            self.log_step = math.log(self.initial_step_size)
        self.mu = math.log(10.0 * self.initial_step_size)

    @property
    def step_size(self) -> float:
        """Step size to use while adapting (the initial one before the first update)."""
        return math.exp(self.log_step) if self.iteration else self.initial_step_size

    @property
    def value(self) -> TrajectoryParameters:
        """:attr:`step_size`, the trajectory's length left to the sampler."""
        return TrajectoryParameters(self.step_size)

    def final(self) -> TrajectoryParameters:
        """The averaged step size (the initial one before the first update)."""
        step_size = math.exp(self.log_averaged) if self.iteration else self.initial_step_size
        return TrajectoryParameters(step_size)

    def update(self, feedback: Feedback, rng: np.random.Generator | None = None) -> None:
        """Feed one acceptance probability."""
        accept_prob = feedback.accept_prob
        accept_prob = 0.0 if not math.isfinite(accept_prob) else accept_prob
        self.iteration += 1
        t = self.iteration
        w = 1.0 / (t + self.t0)
        self.error_sum = (1 - w) * self.error_sum + w * (self.target - accept_prob)
        self.log_step = self.mu - math.sqrt(t) / self.gamma * self.error_sum
        eta = t ** (-self.kappa)
        self.log_averaged = eta * self.log_step + (1 - eta) * self.log_averaged

    def restart(self, step_size: float) -> None:
        """Restart the averaging around a new step size (e.g. after a mass-matrix change)."""
        self.initial_step_size = step_size
        self.mu = math.log(10.0 * step_size)
        self.iteration = 0
        self.error_sum = 0.0
        self.log_averaged = 0.0
        self.log_step = math.log(step_size)


class JumpDistanceStepSize(Adapter):
    """Step size that maximises the expected squared jump distance (ESJD) by local search.

    Each tuning iteration draws one of the candidate step sizes ``ε_ref × factors`` at random
    (:meth:`propose`) and reports its Rao–Blackwellised squared jump ``α |x' − x|²`` (``α`` the
    acceptance probability, ``x'`` the proposal: :attr:`Feedback.expected_squared_jump`);
    after every ``window`` reports ``ε_ref`` (the :attr:`value`) moves half-way
    (geometrically) towards the candidate with the largest mean jump. Unlike a target
    acceptance rate, the ESJD is the right objective when the acceptance rate of a trajectory is
    capped by something other than the step size, such as a surrogate gradient that only
    approximates the target's (Pasarica & Gelman 2010; the trajectory's cost is left out because
    it never touches the target).

    Parameters
    ----------
    initial_step_size : float
        Starting reference step size ``ε_ref > 0``.
    factors : sequence of float
        Candidate multiples of ``ε_ref`` (positive, default ``2^{-1}, 2^{-1/2}, 1, 2^{1/2}, 2``).
    window : int
        Reports per local-search move (default 50).
    max_factor : float
        The step size stays within ``[ε₀ / max_factor, ε₀ × max_factor]`` (default 10³), so a run
        of rejected trajectories cannot shrink it to nothing.
    """

    def __init__(
        self, initial_step_size: float, factors=None, window: int = 50, max_factor: float = 1e3
    ):
        if not (math.isfinite(initial_step_size) and initial_step_size > 0):
            raise ValueError(f"`step_size` must be positive, got {initial_step_size!r}.")
        if factors is None:
            factors = [2.0 ** (k / 2.0) for k in range(-2, 3)]
        factors = [float(f) for f in factors]
        if not factors or not all(math.isfinite(f) and f > 0 for f in factors):
            raise ValueError(f"`factors` must be positive numbers, got {factors!r}.")
        if int(window) != window or window < 1:
            raise ValueError(f"`window` must be a positive integer, got {window!r}.")
        if not (math.isfinite(max_factor) and max_factor >= 1):
            raise ValueError(f"`max_factor` must be a finite number ≥ 1, got {max_factor!r}.")
        self.step_size = float(initial_step_size)
        self.min_step_size = self.step_size / max_factor
        self.max_step_size = self.step_size * max_factor
        self.factors = factors
        self.window = int(window)
        self._sums = [0.0] * len(factors)
        self._counts = [0] * len(factors)
        self._pending: int | None = None

    @property
    def value(self) -> TrajectoryParameters:
        """The reference step size ``ε_ref``, the trajectory's length left to the sampler."""
        return TrajectoryParameters(self.step_size)

    def propose(self, rng: np.random.Generator) -> TrajectoryParameters:
        """Draw the candidate step size for this iteration."""
        self._pending = int(rng.integers(len(self.factors)))
        return TrajectoryParameters(self.step_size * self.factors[self._pending])

    def update(self, feedback: Feedback, rng: np.random.Generator | None = None) -> None:
        """Report ``α |x' − x|²`` of the candidate last drawn (ignored if none was drawn)."""
        if self._pending is None:
            return
        k, self._pending = self._pending, None
        self._sums[k] += feedback.expected_squared_jump
        self._counts[k] += 1
        if sum(self._counts) >= self.window:
            means = [
                s / c if c else -math.inf for s, c in zip(self._sums, self._counts, strict=True)
            ]
            best = max(range(len(means)), key=means.__getitem__)
            self.step_size *= math.sqrt(self.factors[best])  # half a move: damp the noise
            self.step_size = min(max(self.step_size, self.min_step_size), self.max_step_size)
            self._sums = [0.0] * len(self.factors)
            self._counts = [0] * len(self.factors)


class CoordinateScales(Adapter):
    """Scales of single-coordinate random-walk moves, one per coordinate, each tuned by
    Robbins–Monro towards the one-dimensional optimal acceptance 0.44.

    Its :attr:`value` is the array of scales; :meth:`propose` draws the coordinate to move and
    gives its scale; :meth:`update` reads :attr:`Feedback.index` (that coordinate) and
    :attr:`Feedback.accept_prob`.

    A joint proposal's acceptance cannot tell which coordinate's scale is wrong; a
    single-coordinate move's can, so these scales find each coordinate's (conditional) spread
    quickly, whatever the others' — on a target whose standard deviations span six orders of
    magnitude, or on a banana whose first coordinate is ten times wider than the rest. The
    samplers mix these moves into their tuning phase and use ``variance_floor`` so that their
    whitening does not shrink a coordinate below what the moves found.

    Parameters
    ----------
    dim : int
        Number of coordinates.
    initial_scale : float or array_like, shape (dim,)
        Starting scale of every coordinate, or of each.
    target : float
        Target acceptance (default 0.44).
    max_factor : float
        Each scale stays within ``[initial / max_factor, initial × max_factor]`` (default 10⁸).
    """

    #: the optimal one-dimensional random-walk scale is about 2.4 standard deviations
    SCALE_PER_SD = 2.4

    def __init__(self, dim: int, initial_scale, target: float = 0.44, max_factor=1e8):
        initial = np.broadcast_to(np.asarray(initial_scale, dtype=float), (int(dim),))
        if not np.all(np.isfinite(initial) & (initial > 0)):
            raise ValueError(f"`initial_scale` must be positive, got {initial_scale!r}.")
        if not 0 < target < 1:
            raise ValueError(f"target acceptance must lie in (0, 1), got {target}.")
        self.log_scales = np.log(initial)
        self.counts = np.zeros(int(dim), dtype=np.int64)
        self.target = float(target)
        self.min_log_scales = self.log_scales - math.log(max_factor)
        self.max_log_scales = self.log_scales + math.log(max_factor)

    @property
    def value(self) -> np.ndarray:
        """Every coordinate's scale (a new array)."""
        return np.exp(self.log_scales)

    def propose(self, rng: np.random.Generator) -> tuple[int, float]:
        """A uniformly chosen coordinate and its scale."""
        coordinate = int(rng.integers(self.log_scales.shape[0]))
        return coordinate, math.exp(self.log_scales[coordinate])

    def update(self, feedback: Feedback, rng: np.random.Generator | None = None) -> None:
        """Robbins–Monro step of the log scale of coordinate ``feedback.index`` (gain
        ``(n + 1)^(-1/2)``)."""
        coordinate = feedback.index
        accept_prob = feedback.accept_prob
        accept_prob = accept_prob if math.isfinite(accept_prob) else 0.0
        gain = (self.counts[coordinate] + 1.0) ** -0.5
        value = self.log_scales[coordinate] + gain * (accept_prob - self.target)
        self.log_scales[coordinate] = min(
            max(value, self.min_log_scales[coordinate]), self.max_log_scales[coordinate]
        )
        self.counts[coordinate] += 1

    #: the floor is this fraction of the implied standard deviation: it is there to rescue
    #: coordinates the history under-explores by orders of magnitude, not to fine-tune, and a
    #: scale still converging from above overestimates
    FLOOR_SHARE = 1.0 / 3.0

    def variance_floor(self):
        """A lower bound of each coordinate's variance from the tuned scales,
        ``(scale / 2.4 / 3)²``, for the coordinates tuned at least 10 times (0 for the
        others)."""
        floor = (self.FLOOR_SHARE * np.exp(self.log_scales) / self.SCALE_PER_SD) ** 2
        return np.where(self.counts >= 10, floor, 0.0)


class CandidateSearch(Adapter):
    """The best of ``count`` candidates (e.g. a kernel's lengthscales) by a moving average of
    the rewards each earns.

    While the search runs, :meth:`propose` draws a candidate uniformly (independently of the
    chain's state, so the candidates' moves form a mixture of MH moves) and makes it the
    :attr:`value`; :meth:`update` moves the average of candidate ``feedback.index`` towards
    ``feedback.reward``, ``r̄ ← r̄ + w (r − r̄)``; :meth:`final` is the candidate of largest
    average among those tried (the current one if none was).

    Parameters
    ----------
    count : int
        Number of candidates (indices ``0 … count − 1``).
    average_weight : float
        ``w``, the weight of a new reward in the moving averages, in (0, 1].
    current : int
        The candidate in use before the first proposal.

    Attributes
    ----------
    scores : numpy.ndarray
        Each candidate's moving average of rewards.
    counts : numpy.ndarray
        The rewards each candidate earned.
    """

    def __init__(self, count: int, average_weight: float, current: int = 0):
        if int(count) != count or count < 1:
            raise ValueError(f"`count` must be a positive integer, got {count!r}.")
        if not 0 < average_weight <= 1:
            raise ValueError(f"`average_weight` must lie in (0, 1], got {average_weight!r}.")
        if not 0 <= current < count:
            raise ValueError(f"`current` must lie in [0, {count}), got {current!r}.")
        self.average_weight = float(average_weight)
        self.current = int(current)
        self.scores = np.zeros(int(count))
        self.counts = np.zeros(int(count), dtype=np.int64)

    @property
    def value(self) -> int:
        """The candidate in use."""
        return self.current

    def propose(self, rng: np.random.Generator) -> int:
        """A candidate drawn uniformly, from now on the one in use."""
        self.current = int(rng.integers(len(self.scores)))
        return self.current

    def update(self, feedback: Feedback, rng: np.random.Generator | None = None) -> None:
        """Add ``feedback.reward`` to the moving average of candidate ``feedback.index``."""
        k = feedback.index
        self.scores[k] += self.average_weight * (feedback.reward - self.scores[k])
        self.counts[k] += 1

    def final(self) -> int:
        """The tried candidate of largest average (the current one if none was tried)."""
        if not self.counts.any():
            return self.current
        return int(np.argmax(np.where(self.counts > 0, self.scores, -np.inf)))
