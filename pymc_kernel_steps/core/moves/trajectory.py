"""HMC on a surrogate of the log density (paper 002): trajectories cost no evaluation of the
model, the end point is accepted with the true one."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from ..adaptation import Adapter, Feedback, TrajectoryParameters
from ..confinement import Confinement
from ..integrators import kinetic_energy
from ..whitening import Whitening
from .base import Move, Proposal

__all__ = ["SurrogateHMC", "Trajectory"]

#: trial trajectories of the stability check (common to every step size tried), from a generator
#: of their own with a fixed seed, so the check is a function of the surrogate and the states
#: alone and leaves the chain's random stream as it was; each shrink is by this factor
STABILITY_TRIALS = 20
STABILITY_SEED = 20151207
STABILITY_SHRINK = 0.5**0.5
#: the step size is never shrunk by more than this factor for stability
STABILITY_MAX_SHRINK = 1e3


def _kinetic_energy(p: np.ndarray, inv_mass: np.ndarray) -> float:
    """:func:`~..integrators.kinetic_energy` of one momentum, its arithmetic, without checking
    the inverse mass again."""
    return float(0.5 * np.sum(p * p * inv_mass, axis=-1))


@dataclass(frozen=True)
class Trajectory:
    """What one surrogate trajectory was: its length and step size, the squared jump of its end
    point (in the move's ``jump_metric``), the momenta at its ends and their kinetic energies.

    The squared jump is computed when first asked for (the step-size tuner asks while tuning;
    after it nothing does) from ``jump``: the metric, the start and the end point."""

    n_steps: int
    step_size: float
    momentum: np.ndarray
    end_momentum: np.ndarray
    kinetic_start: float
    kinetic_end: float
    jump: tuple = field(repr=False, compare=False)

    @cached_property
    def squared_jump(self) -> float:
        metric, start, end = self.jump
        jump = metric.whiten(end) - metric.whiten(start)
        return float(jump @ jump)


class SurrogateHMC(Move):
    """``L`` leapfrog steps of size ``ε`` on a surrogate's log density in the coordinates
    ``u = frame.whiten(x)``, from a momentum ``p ~ N(0, M)``; the correction is the
    kinetic-energy difference, so that the true log density at the end point decides.

    The trajectory feels the surrogate plus the confining wall ``−(k/2)(‖u‖ − R)₊²`` of
    :attr:`confinement` and is rejected unevaluated when it leaves the confinement's abort ball
    or diverges: its proposal is then non-finite (:attr:`~.base.Proposal.evaluated` is False).

    The step size and ``L`` are :class:`~pymc_kernel_steps.core.TrajectoryParameters`: while
    tuning, proposed by :attr:`tuner` (an :class:`~pymc_kernel_steps.core.Adapter`: ESJD
    search, dual averaging, or Bayesian optimisation of ``(ε, L)`` as in paper 003) and adapted
    by :meth:`update`; after it, :attr:`step_size` and :attr:`max_n_steps`, the tuner's
    :meth:`~pymc_kernel_steps.core.Adapter.final` value. With a ``max_n_steps`` the trajectory
    takes ``L ~ U{1..max_n_steps}`` steps of size ``ε``; without one (None) ``L`` is uniform in
    ``n_steps_range`` and ``ε`` jittered by ``±jitter``. The step size never exceeds
    ``step_size_cap``.
    """

    kind = "surrogate_hmc"
    may_abort = True

    def __init__(self, dim: int, n_steps_range: tuple[int, int], jitter: float):
        super().__init__()
        self.dim = int(dim)
        self.n_steps_range = n_steps_range
        self.jitter = float(jitter)
        self.surrogate = None
        self.frame = Whitening.identity(dim)
        self.jump_metric = Whitening.identity(dim)
        self.inv_mass = np.ones(dim)
        #: the wall and abort ball (whitened), built once per surrogate selection
        self.confinement = Confinement()
        self.step_size_cap = math.inf
        self.step_size = math.nan
        self.max_n_steps: int | None = None
        #: proposes and learns the trajectory's parameters while tuning
        self.tuner: Adapter | None = None

    @property
    def ready(self) -> bool:
        return self.surrogate is not None

    def integrate(self, u, momentum, step_size: float, n_steps: int):
        """The end ``(u, p)`` of a trajectory in the surrogate's coordinates."""
        return self.surrogate.trajectory(
            u, momentum, step_size, n_steps, self.inv_mass, self.confinement
        )

    @property
    def parameters(self) -> TrajectoryParameters:
        """The step size and ``L`` used once tuning has ended."""
        return TrajectoryParameters(self.step_size, self.max_n_steps)

    def propose(self, rng: np.random.Generator, x: np.ndarray) -> Proposal:
        if self.tuning and self.tuner is not None:
            step_size, max_n_steps = self.tuner.propose(rng)
        else:
            step_size, max_n_steps = self.parameters
        if max_n_steps is not None:  # paper 003's L_r ~ U{1..L}
            n_steps = int(rng.integers(1, max_n_steps + 1))
        else:
            step_size *= 1.0 + self.jitter * (2.0 * rng.uniform() - 1.0)
            low, high = self.n_steps_range
            n_steps = int(rng.integers(low, high + 1))
        step_size = min(step_size, self.step_size_cap)
        momentum = rng.standard_normal(self.dim) / np.sqrt(self.inv_mass)
        position_white, momentum_new = self.integrate(
            self.frame.whiten(x), momentum, step_size, n_steps
        )
        position = self.frame.unwhiten(position_white)
        # the trajectory checked the inverse mass: the energies need not check it again
        kinetic_start = _kinetic_energy(momentum, self.inv_mass)
        kinetic_end = _kinetic_energy(momentum_new, self.inv_mass)
        log_correction = kinetic_start - kinetic_end
        if not math.isfinite(log_correction):
            log_correction = -math.inf
        trajectory = Trajectory(
            n_steps,
            step_size,
            momentum,
            momentum_new,
            kinetic_start,
            kinetic_end,
            jump=(self.jump_metric, x, position),
        )
        return Proposal(position, log_correction, self, extra=trajectory)

    def update(self, proposal: Proposal, x: np.ndarray, accept_prob: float, rng) -> None:
        """Feed the tuner the trajectory's acceptance and squared jump, while tuning."""
        tuner = self.tuner
        if tuner is None or not self.tuning:
            return
        tuner.update(Feedback(accept_prob, proposal.extra.squared_jump), rng)
        self.step_size, self.max_n_steps = tuner.value

    def freeze(self) -> None:
        """End of tuning: the tuner's final step size (and ``L``) from now on."""
        if self.tuning and self.tuner is not None:
            self.step_size, self.max_n_steps = self.tuner.final()
        super().freeze()

    def surrogate_acceptance(self, step_size: float, starts, momenta, n_steps) -> float:
        """Mean ``min(1, exp(−ΔH))`` of trajectories on the surrogate from the whitened
        ``starts`` with ``momenta`` and ``n_steps``, ``H`` the surrogate's own Hamiltonian
        (negative surrogate log density plus wall plus kinetic energy)."""
        surrogate, wall = self.surrogate, self.confinement

        def energy(q, p):
            potential = -float(surrogate.log_density(q)) + wall.potential(q)
            return potential + kinetic_energy(p, self.inv_mass)

        total = 0.0
        for q, p, n in zip(starts, momenta, n_steps, strict=True):
            q_new, p_new = self.integrate(q, p, step_size, int(n))
            if not (np.all(np.isfinite(q_new)) and np.all(np.isfinite(p_new))):
                continue
            with np.errstate(over="ignore", invalid="ignore"):
                change = energy(q_new, p_new) - energy(q, p)
            if math.isfinite(change):
                total += math.exp(min(0.0, -change))
        return total / len(starts)

    def stable_step_size(self, step_size: float, states, threshold: float) -> float:
        """The largest of ``step_size × 2^(−k/2)``, ``k = 0, 1, …`` (at most a factor
        ``STABILITY_MAX_SHRINK`` down) at which trajectories on the surrogate are stable: from
        some of ``states`` (model coordinates) with fresh momenta and lengths from
        ``n_steps_range``, :meth:`surrogate_acceptance` is at least ``threshold``.

        Past the stability limit (a step size beyond ``2 / √curvature`` of the surrogate, which
        a score-matched surrogate can make far steeper than the target) trajectories blow up and
        the true acceptance is zero as well; a step-size search that starts there, or averages
        windows of rejections, cannot see in which direction to go. The check costs surrogate
        evaluations only, never the model's."""
        rng = np.random.default_rng(STABILITY_SEED)
        starts = self.frame.whiten(states)
        starts = starts[rng.integers(len(starts), size=STABILITY_TRIALS)]
        momenta = rng.standard_normal((STABILITY_TRIALS, self.dim)) / np.sqrt(self.inv_mass)
        low, high = self.n_steps_range
        n_steps = rng.integers(low, high + 1, size=STABILITY_TRIALS)
        floor = step_size / STABILITY_MAX_SHRINK
        while step_size * STABILITY_SHRINK >= floor:
            if self.surrogate_acceptance(step_size, starts, momenta, n_steps) >= threshold:
                break
            step_size *= STABILITY_SHRINK
        return step_size

    def stats(self) -> dict[str, float]:
        return {**super().stats(), "step_size": self.step_size}
