"""KMC finite (paper 002): HMC on a score-matched surrogate with finitely many random features."""

from __future__ import annotations

import numpy as np

from ..core.kernels import GaussianKernel
from ..core.score_matching import (
    FiniteScoreEstimator,
)
from ._docs import with_shared_parameters
from ._kmc import _KMC, _WALL_MARGIN
from .base import (
    require_int,
)

__all__ = ["KMCFinite"]


@with_shared_parameters
class KMCFinite(_KMC):
    r"""Kernel HMC with random Fourier features (Strathmann et al., NIPS 2015).

    The surrogate ``f(x) = θᵀφ(x)`` lives in a finite feature space of ``n_features`` random
    Fourier features of a Gaussian kernel and is fitted by score matching on the *whole* history:
    every new chain state during tuning enters through an exact rank-d update of the
    solution, O(d m²) per iteration. Hyper-parameters are chosen by cross-validation after an
    initial random-walk phase and re-chosen each time the history doubles; a batch refit then
    starts a new online run. Trajectories are accepted with the true log density, so each
    iteration evaluates the model once and needs no gradient. As in :class:`KMCLite`, a share
    ``random_walk_probability`` of the iterations are random-walk moves.

    Parameters
    ----------
    <shared: vars>
    n_features : int, default 300
        Number ``m`` of random Fourier features.
    n_steps : int or tuple of (int, int), default (10, 30)
        Leapfrog steps per trajectory, drawn uniformly from the inclusive range ``(low, high)``
        (an integer fixes it).
    step_size : float, optional
        Initial leapfrog step size (default ``1/√d`` in the mass-matrix metric); jittered by
        ``±step_size_jitter`` per iteration and tuned as ``step_size_adaptation`` says. Each
        hyper-parameter selection and the end of tuning shrink it, if needed, below the leapfrog's
        stability limit on the surrogate (checked with the surrogate alone, no model evaluation),
        and no trajectory's step size, tuning trials and jitter included, reaches 0.9 of the
        limit ``2/√(max M⁻¹ · κ)`` of the surrogate's far field (``κ``: the wall's stiffness),
        where a trajectory would grow without bound.
    step_size_adaptation : {"esjd", "dual_averaging"}, default "esjd"
        ``"esjd"`` searches for the step size with the largest expected squared jump
        distance (:class:`~pymc_kernel_steps.core.JumpDistanceStepSize`); ``"dual_averaging"``
        tunes towards ``target_accept`` as NUTS does. With a surrogate gradient the acceptance
        rate is capped by the surrogate's error at every step size, and dual averaging towards
        0.8 then shrinks the step size until trajectories barely move.
    trajectory_tuning : {None, "bayesopt"}, optional
        None (default): the step size is tuned as ``step_size_adaptation`` says and ``n_steps``
        is drawn from its range. ``"bayesopt"``: ``(ε, L)`` are tuned together by annealed
        GP-UCB (paper 003, :class:`~pymc_kernel_steps.core.WindowedTuner`) over
        ``ε ∈ [ε₀/30, 3ε₀]`` (``ε₀`` the initial step size) and ``L`` in the ``n_steps`` range,
        restarted from the best point so far whenever the surrogate is re-selected, rewarding
        the ESJD per target evaluation in windows of a hundredth of the tuning phase; each
        trajectory takes ``L_r ~ U{1..L}`` steps without jitter, and the best ``(ε, L)`` is
        frozen after tuning.
    target_accept : float, optional
        Target acceptance of dual averaging, in (0, 1) (default 0.8). Accepted only with
        ``step_size_adaptation="dual_averaging"``: the default ``"esjd"`` has no target
        acceptance, and passing one raises a ValueError.
    step_size_jitter : float, default 0.2
        Relative uniform jitter of the step size, in [0, 1).
    lengthscale, regularization : float, optional
        Gaussian-kernel lengthscale ``ℓ`` and regulariser ``λ`` of the estimator. Default: chosen by
        5-fold cross-validation of the score-matching objective (on at most 500 distinct states,
        ``ℓ`` from 1 to 3 times the median heuristic) when the surrogate is first fitted and
        each time the history doubles during tuning.
    min_history : int, optional
        Random-walk iterations before the first fit (default ``max(300, 20 d)``, but at most a
        third of the tuning iterations, and at least 50).
    adapt_mass : bool, default True
        Estimate the diagonal mass matrix from the history's variances.
    whiten : bool, default True
        Fit the surrogate and run its trajectories on states whitened by the mean and full
        covariance of the recent history (see :class:`~pymc_kernel_steps.core.Whitening`): a
        linear change of the model's coordinates then leaves the sampler unchanged. False is the
        paper's isotropic kernel in the model's coordinates. Random-walk moves always use the
        history's covariance.
    confine : bool, default True
        Add to the surrogate the confining term ``−(k/2)(‖u‖ − R)₊²`` with ``R`` twice the distance
        of the farthest training point (whitened) and ``k`` one over the mean training variance, so
        that trajectories turn back instead of carrying an expensive model far outside the
        region the chain has seen, where the lite surrogate is flat and the random-feature one
        periodic. A fixed potential keeps the move exact. A trajectory that still leaves the
        ball of radius ``2R`` is rejected without evaluating the model (the rule depends only on
        the positions it visits, which its reversal visits too, so the move stays exact; it
        counts as ``diverging``); the ball's radius is at least ``10√d``.
    random_walk_probability : float, default 0.25
        Share of random-walk moves, in [0, 1).
    <shared: adapt_after_tuning, scouts>
    history : arviz.DataTree, InferenceData or array of shape (n, d), optional
        A warm start: states from an earlier run (``idata`` or ``idata.posterior``, chains and
        draws pooled; a transformed variable such as ``sigma_log__`` is read from the posterior
        if it was recorded, ``idata_kwargs={"include_transformed": True}``, and otherwise
        computed from the constrained draws with the model's transform), or an ``(n, d)`` array
        of states in the step's coordinates. Every chain begins its history
        with them and fits the surrogate, whitening, mass matrix and step size to them before
        its first iteration, with no random-walk phase; tuning then goes on from there (and may
        be short). With ``tune=0`` the kernel is fixed from the first draw (it depends on these
        states, never on the chain's own draws), so the draws stay exact. At least 10 distinct
        states; they are copied, not modified.
    <shared: model, initial_point, compile_kwargs, rng, blocked>

    See Also
    --------
    KMCLite : the same with a kernel expansion on a sub-sample of the history.

    Notes
    -----
    Random features are periodic, so the surrogate has spurious modes far from the data: the
    confining term (``confine``) and the random-walk phase before the first fit
    (``min_history`` iterations) keep trajectories from being carried there. The fit is updated
    with every adapting iteration (there is no ``refit_interval``).

    Sample stats (in ``idata.sample_stats``): ``accept`` (acceptance probability),
    ``accept_rate`` (the chain's mean ``accept`` since the start of its phase, tuning or
    drawing: the progress bar's figure),
    ``accepted``, ``logp_evals`` (target evaluations this iteration), ``logp_nan``, ``lp`` (the
    model's log density; emitted as ``model_logp``, absent for noisy log densities),
    ``diverging`` (a surrogate trajectory whose true energy is non-finite, or a proposal
    rejected without evaluating the model), ``step_size`` (NaN for random-walk moves),
    ``n_steps`` (0 for random-walk moves), ``energy_error`` (change of the true Hamiltonian),
    ``energy`` (the true Hamiltonian of the state kept, with the trajectory's end momentum if
    accepted and its initial one if not, as PyMC's HMC; after a random-walk move, with a fresh
    momentum: ``az.plot_energy`` and the BFMI read it), ``n_history``,
    ``refit``, ``surrogate`` (False for random-walk moves) and ``lengthscale``. The ``tune`` and
    ``warning`` stats are consumed by PyMC and do not appear in the DataTree.
    """

    name = "kmc_finite"
    estimator_name = "finite"

    def __init__(
        self,
        vars=None,
        *,
        n_features: int = 300,
        n_steps: int | tuple[int, int] = (10, 30),
        step_size: float | None = None,
        step_size_adaptation: str = "esjd",
        trajectory_tuning: str | None = None,
        target_accept: float | None = None,
        step_size_jitter: float = 0.2,
        lengthscale: float | None = None,
        regularization: float | None = None,
        min_history: int | None = None,
        adapt_mass: bool = True,
        whiten: bool = True,
        confine: bool = True,
        random_walk_probability: float = 0.25,
        adapt_after_tuning: bool = False,
        scouts: int = 4,
        history=None,
        model=None,
        initial_point=None,
        compile_kwargs: dict | None = None,
        rng=None,
        blocked: bool = True,
    ):
        require_int("n_features", n_features, minimum=1)
        self.n_features = int(n_features)
        super().__init__(
            vars,
            n_steps=n_steps,
            step_size=step_size,
            step_size_adaptation=step_size_adaptation,
            trajectory_tuning=trajectory_tuning,
            target_accept=target_accept,
            step_size_jitter=step_size_jitter,
            lengthscale=lengthscale,
            regularization=regularization,
            min_history=min_history,
            adapt_mass=adapt_mass,
            whiten=whiten,
            confine=confine,
            random_walk_probability=random_walk_probability,
            adapt_after_tuning=adapt_after_tuning,
            scouts=scouts,
            history=history,
            model=model,
            initial_point=initial_point,
            compile_kwargs=compile_kwargs,
            rng=rng,
            blocked=blocked,
        )

    def _training_points(self):
        return self._recent_history()

    def _selection_kwargs(self):
        return {"n_features": self.n_features}

    def _make_estimator(self, lengthscale, regularization):
        return FiniteScoreEstimator(
            n_features=self.n_features,
            kernel=GaussianKernel(lengthscale),
            regularization=regularization,
            rng=self.rng,
        )

    def _update_surrogate(self, x) -> bool:
        chain = self.chain
        u = chain.whitening.whiten(x)
        chain.surrogate.update(u)
        if self.confine:
            chain.wall_radius = max(chain.wall_radius, _WALL_MARGIN * float(np.sqrt(u @ u)))
        return True
