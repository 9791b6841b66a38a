"""KMC finite (paper 002): HMC on a score-matched surrogate with finitely many random features."""

from __future__ import annotations

from .._validation import require_int
from ..core.surrogates import FiniteScoreFitter
from ..options import Climb, FiniteFeatures, Scouts
from ._kmc import _KMC
from ._public import MOVES, TRAJECTORY, Slot, warmup_slot

__all__ = ["KMCFinite"]


_OPTIONS = (
    Slot(
        "surrogate",
        (FiniteFeatures,),
        FiniteFeatures,
        old={
            name: name
            for name in ("n_features", "lengthscale", "regularization", "min_history", "whiten")
        },
    ),
    TRAJECTORY,
    MOVES,
    warmup_slot(Climb(), Scouts(4)),
)


class KMCFinite(_KMC):
    r"""Kernel HMC with random Fourier features (Strathmann et al., NIPS 2015): HMC trajectories on
    a score-matched surrogate ``f(x) = θᵀφ(x)`` in a finite feature space, accepted with the
    true log density.

    Pick it, rather than :class:`KMCLite`, when tuning is long or the history large: every tuning
    state enters the surrogate by an exact rank-d update (O(d m²) per iteration, no sub-sample),
    so it learns from the whole history at a fixed cost. Like :class:`KMCLite` it needs no
    gradient and evaluates the model once per iteration; its random features are periodic, so it
    leans on the confining wall and on the mixture's other moves far from the data.

    Parameters
    ----------
    vars : list of variables, optional
        Continuous variables to sample (default: all continuous free variables).
    surrogate : FiniteFeatures, optional
        Number of features, lengthscale, regulariser, first fit, whitening
        (:class:`~pymc_kernel_steps.options.FiniteFeatures`).
    trajectory : Trajectory, optional
        Leapfrog steps, step size and its tuning, mass matrix, confinement
        (:class:`~pymc_kernel_steps.options.Trajectory`).
    moves : LearnedMixture, FixedMoves, "learned" or "fixed", optional
        Default ``LearnedMixture()``; ``FixedMoves(random_walk_probability=0.25)`` is the
        paper's form.
    warmup : list of Climb, Scouts, Walkers, optional
        The phases before tuning (default ``[Climb(), Scouts(4)]``; ``[]`` for none).
    history : arviz.DataTree, InferenceData or array of shape (n, d), optional
        A warm start from an earlier run: every chain's history begins with its states.
    adapt_after_tuning : bool, default False
        Keep adapting through the draws with vanishing probability; by default the draws come
        from a fixed, exact kernel.
    model, initial_point, compile_kwargs, rng, blocked : optional
        As every PyMC step (see :class:`KMCLite`).

    See Also
    --------
    KMCLite : the same with a kernel expansion on a sub-sample of the history.
    pymc_kernel_steps.options : every option, documented once.

    Notes
    -----
    The keywords of earlier releases (``n_features=``, ``n_steps=``, ``scouts=``, ...) still
    work, mapped to the options, with a ``DeprecationWarning`` naming the new spelling. Sample
    stats as for :class:`KMCLite`.
    """

    name = "kmc_finite"

    public_options = _OPTIONS

    def _configure(self, vars=None, *, n_features: int = 300, **shared):
        """The step from the keywords of its options (:func:`._public.configuration`)."""
        require_int("n_features", n_features, minimum=1)
        self.n_features = int(n_features)
        self.fitter = FiniteScoreFitter(n_features=self.n_features)
        self._configure_kmc(vars, **shared)
