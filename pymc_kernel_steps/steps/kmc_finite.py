"""KMC finite (paper 002): HMC on a score-matched surrogate with finitely many random features."""

from __future__ import annotations

from ..core.kernels import GaussianKernel
from ..core.score_matching import (
    FiniteScoreEstimator,
)
from ._docs import with_shared_parameters
from ._kmc import _KMC
from .base import (
    require_int,
)

__all__ = ["KMCFinite"]


@with_shared_parameters
class KMCFinite(_KMC, withheld=("refit_interval",)):
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
    <shared: n_steps>
    step_size : float, optional
        Initial leapfrog step size (default ``1/√d`` in the mass-matrix metric); jittered by
        ``±step_size_jitter`` per iteration and tuned as ``step_size_adaptation`` says. Each
        hyper-parameter selection and the end of tuning shrink it, if needed, below the leapfrog's
        stability limit on the surrogate (checked with the surrogate alone, no model evaluation),
        and no trajectory's step size, tuning trials and jitter included, reaches 0.9 of the
        limit ``2/√(max M⁻¹ · κ)`` of the surrogate's far field (``κ``: the wall's stiffness),
        where a trajectory would grow without bound.
    <shared: step_size_adaptation, trajectory_tuning, target_accept>
    step_size_jitter : float, default 0.2
        Relative uniform jitter of the step size, in [0, 1).
    lengthscale, regularization : float, optional
        Gaussian-kernel lengthscale ``ℓ`` and regulariser ``λ`` of the estimator. Default: chosen by
        5-fold cross-validation of the score-matching objective (on at most 500 distinct states,
        ``ℓ`` from 1 to 3 times the median heuristic) when the surrogate is first fitted and
        each time the history doubles during tuning.
    <shared: min_history, adapt_mass, whiten, confine, random_walk_probability>
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
    <shared: adapt_after_tuning, scouts>
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

    def __init__(self, vars=None, *, n_features: int = 300, **shared):
        require_int("n_features", n_features, minimum=1)
        self.n_features = int(n_features)
        super().__init__(vars, **shared)

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
            chain.confinement = chain.confinement.enclosing(u)
        return True
