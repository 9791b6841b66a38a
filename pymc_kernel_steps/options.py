"""The steps' options, emcee's way: each part of a sampler is configured by one small object that
checks its own fields and documents them once.

=========================  ===================================  ==============================
option                     parameter                            steps
=========================  ===================================  ==============================
:class:`Regression`        ``surrogate=``                       ``KMCLite`` (default)
:class:`ScoreMatching`     ``surrogate=``                       ``KMCLite``
:class:`FiniteFeatures`    ``surrogate=``                       ``KMCFinite``
:class:`Trajectory`        ``trajectory=``                      ``KMCLite``, ``KMCFinite``
:class:`LearnedMixture`    ``moves=``                           KMC steps, ``KAMH`` (default)
:class:`FixedMoves`        ``moves=``                           KMC steps, ``KAMH``
:class:`Climb`,            ``warmup=[...]``                     KMC steps, ``KAMH``,
:class:`Scouts`,                                                ``AdaptiveMetropolis``
:class:`Walkers`
:class:`KAMProposal`       ``proposal=``                        ``KAMH``, ``AdaptiveMetropolis``,
                                                                ``CKAM``
:class:`Cycles`            ``cycles=``                          ``CKAM``
:class:`BayesianTuning`    ``tuning=``                          ``AdaptiveHMC``
=========================  ===================================  ==============================

Every option is a frozen dataclass: ``dataclasses.replace(option, field=value)`` gives a changed
copy, checked again. A step given no option uses its defaults, which are these classes'
defaults except where a field says "the step's default". This module loads neither PyMC nor
PyTensor.
"""

from __future__ import annotations

import numbers
from collections.abc import Sequence
from dataclasses import dataclass, fields

import numpy as np

from ._validation import (
    require_bool,
    require_choice,
    require_fraction,
    require_int,
    require_positive,
    require_real,
)
from .core.kernels import Kernel

__all__ = [
    "BayesianTuning",
    "Climb",
    "Cycles",
    "FiniteFeatures",
    "FixedMoves",
    "KAMProposal",
    "LearnedMixture",
    "Regression",
    "ScoreMatching",
    "Scouts",
    "Trajectory",
    "Walkers",
    "WarmupPhase",
]

#: the trends of :class:`Regression` (as ``core.regression.TRENDS``)
TRENDS = ("auto", "quartic", "quadratic")


def _optional(check, name: str, value, *args, **kwargs) -> None:
    if value is not None:
        check(name, value, *args, **kwargs)


def _scale_parameters(option: str, lengthscale, regularization, min_history) -> None:
    _optional(require_positive, f"{option}.lengthscale", lengthscale)
    _optional(require_positive, f"{option}.regularization", regularization)
    _optional(require_int, f"{option}.min_history", min_history, minimum=2)


class _Option:
    """What every option shares: the step keywords it stands for (:meth:`keywords`)."""

    def keywords(self) -> dict:
        """The step's constructor keywords of the earlier releases that this option sets."""
        return {field.name: getattr(self, field.name) for field in fields(self)}


# ---------------------------------------------------------------------- surrogates (KMC steps)
@dataclass(frozen=True)
class Regression(_Option):
    """``KMCLite``'s default surrogate: kernel ridge regression on the log densities the chain
    evaluated while tuning (beyond paper 002).

    ``f(u) = t(u) + c + Σ_i β_i k(z_i, u)`` in the frame ``u`` of the Gaussian whose log density
    is the least-squares quadratic through the evaluations, at accepted and rejected proposals
    alike (:class:`~pymc_kernel_steps.core.RegressionSurrogate`); the Gaussian kernel has one
    lengthscale per whitened coordinate. Far from the data ``f`` is the trend, which decays, so
    trajectories turn back. It works in the whitened frame always. A warm start (``history=``)
    needs the ``idata`` of ``pm.sample`` (its ``lp`` statistic) and a step that samples every
    free variable.

    Parameters
    ----------
    subsample_size : int, default 500
        Number of kernel centres, drawn from the history.
    trend : {"auto", "quartic", "quadratic"}, default "auto"
        The parametric part ``t``: ``"quadratic"`` is the Gaussian ``−½‖u‖²``; ``"quartic"``
        the least-squares Gaussian in the features ``(u, u∘u)``
        (:class:`~pymc_kernel_steps.core.PolynomialTrend`), which follows curved ridges and
        flattened tails; ``"auto"`` takes the quartic where it predicts held-out evaluations
        better (:func:`~pymc_kernel_steps.core.select_trend`; it needs ``d ≤ 19``).
    lengthscale, regularization : float, optional
        Fix the kernel (then isotropic) and the ridge. Default: chosen by held-out squared
        error, per whitened coordinate, at the first fit and each time the history doubles.
    min_history : int, optional
        Iterations before the first fit (default ``max(300, 20 d)``, at most a third of tuning,
        at least 50; the fit also waits for ``max(20, 2 d)`` accepted moves). Until then the
        chain makes the mixture's other moves.
    refit_interval : int, default 100
        Refit on a fresh sub-sample every ``refit_interval`` adapting iterations.
    """

    subsample_size: int = 500
    trend: str = "auto"
    lengthscale: float | None = None
    regularization: float | None = None
    min_history: int | None = None
    refit_interval: int = 100

    def __post_init__(self):
        require_int("Regression.subsample_size", self.subsample_size, minimum=2)
        require_choice("Regression.trend", self.trend, TRENDS)
        _scale_parameters("Regression", self.lengthscale, self.regularization, self.min_history)
        require_int("Regression.refit_interval", self.refit_interval, minimum=1)

    def keywords(self) -> dict:
        return {"surrogate": "regression", "whiten": True, **super().keywords()}


@dataclass(frozen=True)
class ScoreMatching(_Option):
    """Paper 002's lite surrogate: ``f(x) = Σ α_i k(z_i, x)`` fitted by score matching to a
    sub-sample ``z`` of the chain's states.

    Parameters
    ----------
    subsample_size : int, default 500
        Size ``n`` of the history sub-sample the surrogate is fitted on.
    lengthscale, regularization : float, optional
        Gaussian-kernel lengthscale ``ℓ`` and regulariser ``λ``. Default: chosen by 5-fold
        cross-validation of the score-matching objective (``ℓ`` from 1 to 3 times the median
        heuristic) at the first fit and each time the history doubles during tuning.
    min_history : int, optional
        As for :class:`Regression`.
    refit_interval : int, default 100
        Refit on a fresh sub-sample every ``refit_interval`` adapting iterations.
    whiten : bool, default True
        Fit and run trajectories on states whitened by the recent history's mean and covariance
        (:class:`~pymc_kernel_steps.core.Whitening`); False is the paper's isotropic kernel in
        the model's coordinates.
    """

    subsample_size: int = 500
    lengthscale: float | None = None
    regularization: float | None = None
    min_history: int | None = None
    refit_interval: int = 100
    whiten: bool = True

    def __post_init__(self):
        require_int("ScoreMatching.subsample_size", self.subsample_size, minimum=2)
        _scale_parameters("ScoreMatching", self.lengthscale, self.regularization, self.min_history)
        require_int("ScoreMatching.refit_interval", self.refit_interval, minimum=1)
        require_bool("ScoreMatching.whiten", self.whiten)

    def keywords(self) -> dict:
        return {"surrogate": "score_matching", **super().keywords()}


@dataclass(frozen=True)
class FiniteFeatures(_Option):
    """``KMCFinite``'s surrogate: ``f(x) = θᵀφ(x)`` on ``n_features`` random Fourier features of
    a Gaussian kernel, fitted by score matching and updated with every tuning state by an
    exact rank-d update.

    Parameters
    ----------
    n_features : int, default 300
        Number ``m`` of random Fourier features.
    lengthscale, regularization : float, optional
        As for :class:`ScoreMatching`.
    min_history : int, optional
        As for :class:`Regression`.
    whiten : bool, default True
        As for :class:`ScoreMatching`.
    """

    n_features: int = 300
    lengthscale: float | None = None
    regularization: float | None = None
    min_history: int | None = None
    whiten: bool = True

    def __post_init__(self):
        require_int("FiniteFeatures.n_features", self.n_features, minimum=1)
        _scale_parameters("FiniteFeatures", self.lengthscale, self.regularization, self.min_history)
        require_bool("FiniteFeatures.whiten", self.whiten)


# ---------------------------------------------------------------------- trajectories (KMC steps)
_TARGET_ACCEPT_ADVICE = (
    "`Trajectory.target_accept` has an effect only with step_size_adaptation='dual_averaging' "
    "(the default 'esjd' maximises the expected squared jump distance and has no target "
    "acceptance); got target_accept={target_accept!r} with step_size_adaptation="
    "{adaptation!r}. To tune the step size towards an acceptance rate, pass Trajectory("
    "step_size_adaptation='dual_averaging', target_accept={target_accept!r}). If PyMC's "
    "divergence warning sent you here: its advice ('Increase `target_accept`') is NUTS's. A KMC "
    "`diverging` iteration is a surrogate trajectory that diverged or left the region the "
    "chain has seen; it is rejected without evaluating the model and does not bias the draws. "
    "Fewer of them: a longer tuning phase (`tune`), or smaller steps (dual averaging with a "
    "higher `target_accept`, or a smaller `step_size`)."
)


@dataclass(frozen=True)
class Trajectory(_Option):
    """The KMC steps' surrogate trajectories: leapfrog on the surrogate's gradient, accepted with
    the true log density.

    Parameters
    ----------
    n_steps : int or (int, int), default (10, 30)
        Leapfrog steps per trajectory, drawn uniformly from the inclusive range (an integer
        fixes it).
    step_size : float, optional
        Initial step size (default ``1/√d`` in the mass-matrix metric), jittered and tuned; kept
        below the leapfrog's stability limit on the surrogate, checked without evaluating the
        model.
    step_size_adaptation : {"esjd", "dual_averaging"}, default "esjd"
        ``"esjd"`` searches for the step size of largest expected squared jump
        (:class:`~pymc_kernel_steps.core.JumpDistanceStepSize`); ``"dual_averaging"`` tunes
        towards ``target_accept`` as NUTS does (with a surrogate gradient it shrinks the steps
        until trajectories barely move).
    tuning : {None, "bayesopt"}, optional
        ``"bayesopt"`` tunes ``(ε, L)`` together by annealed GP-UCB (paper 003,
        :class:`~pymc_kernel_steps.core.WindowedTuner`), each trajectory taking
        ``L_r ~ U{1..L}`` steps without jitter.
    target_accept : float, optional
        Target of ``"dual_averaging"``, in (0, 1) (default 0.8); an error with ``"esjd"``.
    jitter : float, default 0.2
        Relative uniform jitter of the step size, in [0, 1).
    adapt_mass : bool, default True
        Estimate the diagonal mass matrix from the history's variances.
    confine : bool, default True
        Add the confining term ``−(k/2)(‖u‖ − R)₊²`` (``R`` twice the farthest training point's
        whitened distance) so that trajectories turn back, and reject one that leaves the ball
        of radius ``2R`` without evaluating the model (a ``diverging`` iteration; exact).
    """

    n_steps: int | tuple[int, int] = (10, 30)
    step_size: float | None = None
    step_size_adaptation: str = "esjd"
    tuning: str | None = None
    target_accept: float | None = None
    jitter: float = 0.2
    adapt_mass: bool = True
    confine: bool = True

    def __post_init__(self):
        n_steps = self.n_steps
        if isinstance(n_steps, list):
            object.__setattr__(self, "n_steps", n_steps := tuple(n_steps))
        if isinstance(n_steps, numbers.Integral) and not isinstance(n_steps, bool):
            low = high = n_steps
        elif isinstance(n_steps, tuple) and len(n_steps) == 2:
            low, high = n_steps
        else:
            raise ValueError(
                "`Trajectory.n_steps` must be an integer or a (low, high) pair of integers, "
                f"got {n_steps!r}."
            )
        require_int("Trajectory.n_steps", low, minimum=1)
        require_int("Trajectory.n_steps", high, minimum=1)
        if high < low:
            raise ValueError(
                f"`Trajectory.n_steps` must be (low, high) with low ≤ high, got {n_steps}."
            )
        _optional(require_positive, "Trajectory.step_size", self.step_size)
        require_choice(
            "Trajectory.step_size_adaptation", self.step_size_adaptation, ("esjd", "dual_averaging")
        )
        require_choice("Trajectory.tuning", self.tuning, (None, "bayesopt"))
        if self.target_accept is not None:
            require_fraction("Trajectory.target_accept", self.target_accept)
            if self.step_size_adaptation != "dual_averaging":
                raise ValueError(
                    _TARGET_ACCEPT_ADVICE.format(
                        target_accept=self.target_accept, adaptation=self.step_size_adaptation
                    )
                )
        require_fraction("Trajectory.jitter", self.jitter, zero=True)
        require_bool("Trajectory.adapt_mass", self.adapt_mass)
        require_bool("Trajectory.confine", self.confine)

    def keywords(self) -> dict:
        return {
            "n_steps": self.n_steps,
            "step_size": self.step_size,
            "step_size_adaptation": self.step_size_adaptation,
            "trajectory_tuning": self.tuning,
            "target_accept": self.target_accept,
            "step_size_jitter": self.jitter,
            "adapt_mass": self.adapt_mass,
            "confine": self.confine,
        }


# ---------------------------------------------------------------------- moves
@dataclass(frozen=True)
class LearnedMixture(_Option):
    """The default moves (``moves="learned"``): the step's own move, differential evolution and
    snooker on the history, an independence proposal from a heavy-tailed envelope of the history
    and a random walk, started at weights 0.4, 0.15, 0.15, 0.15, 0.15.

    While tuning each weight follows the move's expected squared jump per evaluation (floor
    0.05, :class:`~pymc_kernel_steps.core.JumpRateWeights`); at the end of tuning weights,
    population and envelope are frozen, so the draws come from a fixed mixture of exact
    Metropolis–Hastings kernels. The sample stats ``weight_<kind>`` and ``acceptance_<kind>``
    report them. No fields yet.
    """

    def keywords(self) -> dict:
        return {"moves": "learned"}


@dataclass(frozen=True)
class FixedMoves(_Option):
    """The papers' moves (``moves="fixed"``): the KMC steps' trajectory mixed with a random walk
    (in the history's whitening, its scale tuned towards 0.234 acceptance), ``KAMH``'s KAM move
    alone after its first fit.

    Parameters
    ----------
    random_walk_probability : float, optional
        The KMC steps' share of random-walk moves, in [0, 1) (default 0.25; 0 is the paper's
        pure form). ``KAMH`` has none.
    """

    random_walk_probability: float | None = None

    def __post_init__(self):
        _optional(
            require_fraction,
            "FixedMoves.random_walk_probability",
            self.random_walk_probability,
            zero=True,
        )

    def keywords(self) -> dict:
        return {"moves": "fixed", "random_walk_probability": self.random_walk_probability}


# ---------------------------------------------------------------------- warm-up phases
class WarmupPhase(_Option):
    """A phase of the warm-up before tuning: an element of a step's ``warmup=[...]`` list.

    Each kind of phase has its place (climb, then scouts, then walkers), whatever the list's
    order; ``warmup=[]`` runs none (the start's scales are always measured)."""


@dataclass(frozen=True)
class Climb(WarmupPhase):
    """Climb from a start far outside the posterior's bulk before tuning (a slope of more than
    five conditional scales along some coordinate): L-BFGS-B on finite differences, at most
    ``min(60 (d + 1), 600)`` evaluations, counted in the first iteration's ``logp_evals``
    (:func:`~pymc_kernel_steps.core.climb`). Skipped at a start in the bulk, without tuning,
    for a noisy log density, after a warm start and in compound sampling."""


@dataclass(frozen=True)
class Scouts(WarmupPhase):
    """Random walks of 50 iterations each from where the climb ended; the chain goes on from the
    one at the highest log density, so that a start in a minor mode's basin rarely decides where
    tuning happens. Skipped when they would take more than a tenth of tuning, for a noisy log
    density, for a step that samples some of the variables, and after a warm start.

    Parameters
    ----------
    n : int, default 4
        Number of scouts, at least 2 (leave the phase out for none).
    """

    n: int = 4

    def __post_init__(self):
        require_int("Scouts.n", self.n, minimum=2)


@dataclass(frozen=True)
class Walkers(WarmupPhase):
    """Copies of the chain that take turns to move with the step's own moves for half of tuning,
    after the scouts; the proposal learns from all their states, and the chain goes on from the
    walker at the highest log density. Skipped for a noisy log density and in compound sampling.

    Parameters
    ----------
    n : int, default 4
        Number of walkers, at least 2 (leave the phase out for none).
    """

    n: int = 4

    def __post_init__(self):
        require_int("Walkers.n", self.n, minimum=2)


def warmup_keywords(phases: Sequence[WarmupPhase]) -> dict:
    """The ``climb``, ``scouts`` and ``walkers`` keywords of a list of warm-up phases, checked:
    phases of these kinds, each at most once."""
    if isinstance(phases, str | WarmupPhase) or not isinstance(phases, Sequence):
        raise TypeError(
            "`warmup` must be a list of warm-up phases (Climb(), Scouts(n), Walkers(n); [] for "
            f"none), got {phases!r}."
        )
    kinds = [type(phase) for phase in phases]
    if not all(kind in (Climb, Scouts, Walkers) for kind in kinds):
        raise TypeError(f"`warmup` holds Climb(), Scouts(n) and Walkers(n) only, got {phases!r}.")
    if len(set(kinds)) != len(kinds):
        raise ValueError(f"`warmup` holds each kind of phase at most once, got {phases!r}.")
    by_kind = {type(phase): phase for phase in phases}
    return {
        "climb": Climb in by_kind,
        "scouts": by_kind[Scouts].n if Scouts in by_kind else 1,
        "walkers": by_kind[Walkers].n if Walkers in by_kind else 1,
    }


# ---------------------------------------------------------------------- KAM proposal (KAMH, CKAM)
@dataclass(frozen=True)
class KAMProposal(_Option):
    """The kernel adaptive Metropolis proposal ``N(x, γ² I + ν² Mᵀ H M)`` of ``KAMH``,
    ``AdaptiveMetropolis`` and ``CKAM`` (paper 001): the history's covariance in the kernel's
    RKHS pulled back to the input space at ``x``. A field left at None takes the step's default.

    Parameters
    ----------
    kernel : Kernel, optional
        Default :class:`~pymc_kernel_steps.core.GaussianKernel`. ``KAMH``: its lengthscale is
        chosen while tuning among 1, 2, 4, 8 and 32 times the median heuristic, each candidate
        with its own ``ν²``, keeping the one of largest mean ``α (1 − α) ‖u* − u‖²`` (short
        lengthscales follow curved posteriors, long ones approach adaptive Metropolis);
        ``CKAM``: the median heuristic of each sub-sample. A kernel you pass is used as given.
        ``AdaptiveMetropolis`` is the linear kernel and takes none.
    subsample_size : int, optional
        History points ``n`` in the sub-sample ``z`` (default 500; ``CKAM`` 50, from the
        current cycle).
    gamma : float, default 0.2
        Exploration noise ``γ`` relative to the history's scale: in whitened coordinates with
        ``whiten``, otherwise ``gamma × sqrt(λ_min(Cov(z)))``.
    nu2 : float, optional
        Fixed ``ν²`` (``KAMH``, ``AdaptiveMetropolis``). Default: Robbins–Monro towards
        ``target_accept``.
    target_accept : float, default 0.234
        Target acceptance of the scale adaptation, in (0, 1).
    min_history : int, optional
        History length before the first KAM move; until then coordinate moves and an adaptive
        random walk (default ``max(50, 10 d)`` for ``KAMH``; ``CKAM``: within each cycle).
    refresh_interval : int, optional
        Tuning iterations between refreshes of the sub-sample and whitening (default 20;
        ``CKAM`` 10).
    whiten : bool, optional
        Work on states whitened by the history's mean and covariance (default True; ``CKAM``
        False, the paper's).
    """

    kernel: Kernel | None = None
    subsample_size: int | None = None
    gamma: float = 0.2
    nu2: float | None = None
    target_accept: float = 0.234
    min_history: int | None = None
    refresh_interval: int | None = None
    whiten: bool | None = None

    def __post_init__(self):
        if self.kernel is not None and not isinstance(self.kernel, Kernel):
            raise TypeError(
                f"`KAMProposal.kernel` must be a pymc_kernel_steps Kernel, got {self.kernel!r}."
            )
        _optional(require_int, "KAMProposal.subsample_size", self.subsample_size, minimum=2)
        require_positive("KAMProposal.gamma", self.gamma)
        _optional(require_positive, "KAMProposal.nu2", self.nu2)
        require_fraction("KAMProposal.target_accept", self.target_accept)
        _optional(require_int, "KAMProposal.min_history", self.min_history, minimum=2)
        _optional(require_int, "KAMProposal.refresh_interval", self.refresh_interval, minimum=1)
        _optional(require_bool, "KAMProposal.whiten", self.whiten)

    def keywords(self) -> dict:
        """The fields given (None: the step's default)."""
        given = super().keywords()
        fixed = ("gamma", "target_accept", "min_history", "kernel", "nu2")
        return {name: value for name, value in given.items() if value is not None or name in fixed}


# ---------------------------------------------------------------------- CKAM's cycles
@dataclass(frozen=True)
class Cycles(_Option):
    """``CKAM``'s cycles (paper 004): an exploration phase of KAM moves, blind jumps and mode hops,
    then a sampling phase of cosine-scheduled random-walk moves mixed with hops and jumps.

    Parameters
    ----------
    length : int, optional
        ``T_c`` (default ``(tune + draws) // 20``, at most 1000, at least what the exploration
        needs).
    exploration_fraction : float, default 0.4
        ``β`` in (0, 1): the share of each cycle spent exploring (the paper's).
    jump_scale : float, default 16.0
        Largest multiplier ``ρ`` of the blind jumps ``N(x, ρ² S)``, ``S`` the ``2.38/√d``-scaled
        history covariance; 0 disables them.
    mode_jumps : bool, default True
        Whether the exploration makes mode hops ``x + (z_a − z_b) + γ ξ``.
    sampling_hops : float, default 0.2
        Share of sampling-phase moves that are mode hops on the frozen history.
    sampling_jumps : float, default 0.1
        Share of sampling-phase moves that are blind jumps; the rest are the cosine walk.
    """

    length: int | None = None
    exploration_fraction: float = 0.4
    jump_scale: float = 16.0
    mode_jumps: bool = True
    sampling_hops: float = 0.2
    sampling_jumps: float = 0.1

    def __post_init__(self):
        _optional(require_int, "Cycles.length", self.length, minimum=2)
        require_fraction("Cycles.exploration_fraction", self.exploration_fraction)
        require_real("Cycles.jump_scale", self.jump_scale)
        if not (np.isfinite(self.jump_scale) and self.jump_scale >= 0):
            raise ValueError(
                f"`Cycles.jump_scale` must be a finite number ≥ 0, got {self.jump_scale!r}."
            )
        require_bool("Cycles.mode_jumps", self.mode_jumps)
        require_fraction("Cycles.sampling_hops", self.sampling_hops, zero=True)
        require_fraction("Cycles.sampling_jumps", self.sampling_jumps, zero=True)
        if self.sampling_hops + self.sampling_jumps >= 1.0:
            raise ValueError(
                "`Cycles.sampling_hops + Cycles.sampling_jumps` must be below 1 (the rest of the "
                "sampling-phase moves are the cosine random walk), got "
                f"{self.sampling_hops + self.sampling_jumps!r}."
            )

    def keywords(self) -> dict:
        given = super().keywords()
        return {"cycle_length": given.pop("length"), **given}


# ---------------------------------------------------------------------- AdaptiveHMC's tuning
def _bounds(name: str, bounds, integer: bool) -> None:
    if bounds is None:
        return
    if not isinstance(bounds, tuple | list) or len(bounds) != 2:
        raise ValueError(f"`{name}` must be a (low, high) pair, got {bounds!r}.")
    for value in bounds:
        (require_int(name, value, minimum=1) if integer else require_positive(name, value))
    if bounds[0] > bounds[1]:
        raise ValueError(f"`{name}` must satisfy low ≤ high, got {bounds!r}.")


@dataclass(frozen=True)
class BayesianTuning(_Option):
    """``AdaptiveHMC``'s tuning of ``(ε, L)`` by annealed GP-UCB (paper 003, Alg. 2) over a box,
    rewarding each window's Rao–Blackwellised squared jump per ``√L``.

    Parameters
    ----------
    step_size_bounds : (float, float), optional
        The box's step-size range in the mass matrix's metric (default ``[ε₀/10, 2 ε₀]``, ``ε₀``
        accepted with probability ½ by one leapfrog step).
    n_steps_bounds : (int, int), optional
        The box's range of ``L`` (default ``[1, min(1000, max(10, ⌈2π/ε₀⌉))]``).
    n_windows : int, default 100
        Reward windows per tuning phase, and the annealing's offset (the paper's).
    window : int, optional
        Iterations per window, overriding ``tune // n_windows``.
    reward_max : float, default 4.0
        Rewards are rescaled so that the largest is this (the paper's ``α``).
    """

    step_size_bounds: tuple[float, float] | None = None
    n_steps_bounds: tuple[int, int] | None = None
    n_windows: int = 100
    window: int | None = None
    reward_max: float = 4.0

    def __post_init__(self):
        _bounds("BayesianTuning.step_size_bounds", self.step_size_bounds, integer=False)
        _bounds("BayesianTuning.n_steps_bounds", self.n_steps_bounds, integer=True)
        require_int("BayesianTuning.n_windows", self.n_windows, minimum=1)
        _optional(require_int, "BayesianTuning.window", self.window, minimum=1)
        require_positive("BayesianTuning.reward_max", self.reward_max)
