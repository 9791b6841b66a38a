"""KMC finite (paper 002): HMC on a score-matched surrogate with finitely many random features."""

from __future__ import annotations

from .._validation import require_int
from ..core.surrogates import FiniteScoreFitter
from ._docs import with_shared_parameters
from ._kmc import _KMC

__all__ = ["KMCFinite"]


@with_shared_parameters
class KMCFinite(_KMC, withheld=("refit_interval",)):
    r"""Kernel HMC with random Fourier features (Strathmann et al., NIPS 2015).

    The surrogate ``f(x) = θᵀφ(x)`` lives in a finite feature space of ``n_features`` random
    Fourier features of a Gaussian kernel and is fitted by score matching: at each selection of
    hyper-parameters to the most recent half of the history, and then every new chain state
    during tuning enters through an exact rank-d update of the solution, O(d m²) per
    iteration. Hyper-parameters are chosen by cross-validation after an
    initial random-walk phase and re-chosen each time the history doubles; a batch refit then
    starts a new online run. Trajectories are accepted with the true log density, so each
    iteration evaluates the model once and needs no gradient. As in :class:`KMCLite`, the
    trajectory is one move of a mixture whose weights are learned while tuning
    (``moves="learned"``), or is mixed with a share ``random_walk_probability`` of random-walk
    moves (``moves="fixed"``).

    Parameters
    ----------
    <shared: vars>
    n_features : int, default 300
        Number ``m`` of random Fourier features.
    <shared: n_steps, step_size>
    <shared: step_size_adaptation, trajectory_tuning, target_accept, step_size_jitter>
    <shared: lengthscale>
    <shared: min_history, adapt_mass, whiten, confine, random_walk_probability, moves>
    <shared: history>
    <shared: adapt_after_tuning, scouts, walkers, climb>
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

    <shared: kmc_sample_stats>
    """

    name = "kmc_finite"

    def __init__(self, vars=None, *, n_features: int = 300, **shared):
        require_int("n_features", n_features, minimum=1)
        self.n_features = int(n_features)
        self.fitter = FiniteScoreFitter(n_features=self.n_features)
        super().__init__(vars, **shared)

    def _training_points(self):
        return self._recent_history()

    def _update_surrogate(self, x) -> bool:
        chain = self.chain
        u = chain.whitening.whiten(x)
        chain.surrogate.update(u)
        if self.confine:
            chain.confinement = chain.confinement.enclosing(u)
        return True
