"""KMC lite (paper 002): HMC on a surrogate fitted to the chain's history, the regression surrogate
of the evaluated log densities by default."""

from __future__ import annotations

import numpy as np

from .._validation import require_bool, require_choice, require_int
from ..core.regression import TRENDS
from ..core.surrogates import LiteScoreFitter, RegressionFitter, SurrogateFitter
from ..core.transitions import kmc
from ..options import Climb, Regression, ScoreMatching, Scouts
from ._kmc import _KMC
from ._public import MOVES, TRAJECTORY, Slot, warmup_slot

__all__ = ["KMCLite"]


def _regression_fitter(subsample_size: int, trend: str) -> SurrogateFitter:
    return RegressionFitter(n_centres=subsample_size, trend=trend)


def _score_matching_fitter(subsample_size: int, trend: str) -> SurrogateFitter:
    if trend != "auto":
        raise ValueError(
            "`trend` is the parametric part of surrogate='regression'; "
            f"surrogate='score_matching' has none (got trend={trend!r})."
        )
    return LiteScoreFitter()


#: the surrogates of KMCLite by name, each the function of ``(subsample_size, trend)`` that
#: builds its fitter: score matching on the states (paper 002) or regression on the evaluated
#: log densities (:class:`~pymc_kernel_steps.core.RegressionSurrogate`)
SURROGATES = {"score_matching": _score_matching_fitter, "regression": _regression_fitter}


_OPTIONS = (
    Slot(
        "surrogate",
        (Regression, ScoreMatching),
        Regression,
        old={
            name: name
            for name in (
                "subsample_size",
                "trend",
                "lengthscale",
                "regularization",
                "min_history",
                "refit_interval",
                "whiten",
            )
        },
        strings={"regression": Regression, "score_matching": ScoreMatching},
    ),
    TRAJECTORY,
    MOVES,
    warmup_slot(Climb(), Scouts(4)),
)


class KMCLite(_KMC):
    r"""Kernel HMC, lite version (Strathmann et al., NIPS 2015): HMC trajectories on a surrogate
    of the log density learned from the chain, accepted with the true log density.

    Pick it when the model has no usable gradient (an external likelihood, a pseudo-marginal or
    simulator estimate) and a target evaluation is expensive: it spends one evaluation per
    iteration and, once its surrogate has learned the posterior's shape while tuning, moves far
    along curved and correlated posteriors where a random walk crawls. For near-Gaussian
    posteriors :class:`AdaptiveMetropolis` is as good and simpler; for several separated modes
    see :class:`CKAM`; with a gradient, NUTS. Exactness never depends on the surrogate.

    Parameters
    ----------
    vars : list of variables, optional
        Continuous variables to sample (default: all continuous free variables).
    surrogate : Regression, ScoreMatching, "regression" or "score_matching", optional
        The surrogate and its fit (default :class:`~pymc_kernel_steps.options.Regression`:
        ridge regression on the evaluated log densities; the paper's is ``ScoreMatching()``).
    trajectory : Trajectory, optional
        Leapfrog steps, step size and its tuning, mass matrix, confinement
        (:class:`~pymc_kernel_steps.options.Trajectory`).
    moves : LearnedMixture, FixedMoves, "learned" or "fixed", optional
        Default ``LearnedMixture()``: the trajectory in a mixture with differential evolution,
        snooker, an envelope and a random walk, weights learned while tuning and then frozen.
        ``FixedMoves(random_walk_probability=0.25)`` is the paper's form.
    warmup : list of Climb, Scouts, Walkers, optional
        The phases before tuning (default ``[Climb(), Scouts(4)]``; ``[]`` for none).
    history : arviz.DataTree, InferenceData or array of shape (n, d), optional
        A warm start from an earlier run: every chain's history begins with its states (with
        ``Regression``, the ``idata`` of ``pm.sample``, whose ``lp`` it fits).
    adapt_after_tuning : bool, default False
        Keep adapting through the draws with vanishing probability; by default the draws come
        from a fixed, exact kernel.
    model, initial_point, compile_kwargs, rng, blocked : optional
        As every PyMC step: the model (default: the enclosing one), the point of the variables
        outside the block, keywords of :func:`pymc.pytensorf.compile` (``pm.sample``'s do not
        reach a step you build), the random state of a step driven by hand (``pm.sample``
        reseeds it from ``random_seed``), and PyMC's ``blocked`` (always joint).

    See Also
    --------
    KMCFinite : the same with random Fourier features updated with every tuning state.
    pymc_kernel_steps.options : every option, documented once.

    Notes
    -----
    The keywords of earlier releases (``n_steps=``, ``subsample_size=``, ``scouts=``, ...) still
    work, mapped to the options, with a ``DeprecationWarning`` naming the new spelling. Sample
    stats: ``accept``, ``accepted``, ``accept_rate``, ``logp_evals``, ``diverging``,
    ``step_size``, ``n_steps``, ``energy``, ``energy_error``, ``n_history``, ``refit``,
    ``surrogate``, ``lengthscale``, ``move`` and, with learned moves, ``weight_<kind>`` and
    ``acceptance_<kind>`` (the usage guide describes each).
    """

    name = "kmc_lite"

    public_options = _OPTIONS

    def _configure(
        self,
        vars=None,
        *,
        subsample_size: int = 500,
        surrogate: str = "regression",
        trend: str = "auto",
        whiten: bool = True,
        **shared,
    ):
        """The step from the keywords of its options (:func:`._public.configuration`)."""
        require_int("subsample_size", subsample_size, minimum=2)
        self.subsample_size = int(subsample_size)
        require_choice("surrogate", surrogate, tuple(SURROGATES))
        require_bool("whiten", whiten)
        require_choice("trend", trend, TRENDS)
        self.fitter = SURROGATES[surrogate](self.subsample_size, trend)
        if self.fitter.needs_whitening and not whiten:
            raise ValueError(
                "surrogate='regression' (the default) needs whiten=True: its Gaussian term, "
                "fitted to the evaluations, defines the frame of the surrogate."
            )
        self.warm_log_densities = None
        self._configure_kmc(vars, whiten=whiten, **shared)

    def _training_size(self) -> int:
        return self.subsample_size

    # pooled tuning: the other chains' states and evaluations enter the next selection and fit
    pools_tuning_data = True

    def _own_evaluations(self) -> tuple[np.ndarray, np.ndarray]:
        record = self.chain.transition.evaluations
        if record is None:
            return super()._own_evaluations()
        return record.points.points.copy(), np.asarray(record.values, float)

    def _on_absorb(self) -> None:
        kmc.select_again(self.chain.transition)

    def _warm_states(self, history, model) -> np.ndarray:
        states = super()._warm_states(history, model)
        if self.fitter.needs_evaluations:
            self.warm_log_densities = self._warm_log_densities(history, len(states))
        return states

    def _warm_data(self) -> tuple[np.ndarray, ...]:
        if self.warm_log_densities is None:
            return super()._warm_data()
        return (*super()._warm_data(), self.warm_log_densities)

    def _warm_log_densities(self, history, n_states: int) -> np.ndarray:
        """``surrogate="regression"``: the log densities of the warm states, the ``lp`` sample
        statistic that ``pm.sample`` records with them (this package's steps, NUTS, Metropolis).
        The regression surrogate is fitted to log densities; an array of states carries none,
        and for a step that samples only some of the model's variables ``lp`` (the whole
        model's) is not a function of this step's variables alone."""
        hint = "or warm-start surrogate='score_matching', which is fitted to the states alone."
        if self.shared:
            raise ValueError(
                "`history` with surrogate='regression' needs a step that samples every free "
                "variable of the model: the recorded log densities `lp` are the whole model's, "
                f"which also depend on {sorted(self.shared)}; {hint}"
            )
        sample_stats = getattr(history, "sample_stats", None)
        if getattr(history, "posterior", None) is None and hasattr(history, "data_vars"):
            raise ValueError(
                "`history` is a posterior alone (such as idata.posterior); with "
                "surrogate='regression' pass the whole result of pm.sample (`history=idata`), "
                "whose sample_stats hold the log density `lp` of every draw that the surrogate is "
                f"fitted to; {hint}"
            )
        if (
            getattr(history, "posterior", None) is None
            or sample_stats is None
            or ("lp" not in sample_stats)
        ):
            raise ValueError(
                "`history` with surrogate='regression' must be the result of pm.sample (an "
                "ArviZ DataTree/InferenceData) whose sample_stats hold the log density `lp` of "
                f"every draw: the surrogate is fitted to log densities, not to states; {hint}"
            )
        recorded = np.asarray(sample_stats["lp"].values, dtype=float)
        if recorded.ndim == 3:  # (chain, draw, step) of a compound step: PyMC 6.4 keeps only
            recorded = recorded[..., -1]  # the last step's, the model's log density at the draw
        values = recorded.reshape(-1)
        if values.shape != (n_states,):
            raise ValueError(
                f"`history`: sample_stats 'lp' holds {values.size} values for {n_states} "
                "states; expected one per draw."
            )
        if not np.any(values):
            raise ValueError(
                "`history`: sample_stats 'lp' is 0 at every draw: the pilot was sampled by a "
                "compound step, of which PyMC 6.4 keeps only the last step's `lp` and records "
                "the others as 0, and its last step recorded none (PyMC's Metropolis, Slice and "
                "Gibbs steps do not). Pass a run whose last step is one of this package's, or "
                f"in which one step sampled every variable, {hint}"
            )
        return values
