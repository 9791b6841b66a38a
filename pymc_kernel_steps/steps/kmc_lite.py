"""KMC lite (paper 002): HMC on a surrogate fitted to the chain's history, the regression surrogate
of the evaluated log densities by default."""

from __future__ import annotations

import numpy as np

from .._validation import require_bool, require_choice, require_int
from ..core.history import ChainHistory
from ..core.regression import TRENDS
from ..core.surrogates import Evaluations, LiteScoreFitter, RegressionFitter, SurrogateFitter
from ._docs import with_shared_parameters
from ._kmc import _KMC, KMCChain

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
#: evaluations recorded per chain at most (with adapt_after_tuning=True recording goes on
#: through the draws; beyond this the surrogate learns from the first ones only)
_MAX_RECORDED_EVALUATIONS = 200_000


@with_shared_parameters
class KMCLite(_KMC):
    r"""Kernel HMC, lite version (Strathmann et al., NIPS 2015), with a surrogate fitted to the
    log densities the chain evaluated (by default; the paper's score matching is an option).

    HMC trajectories on a surrogate log density learned during tuning, accepted with the *true*
    log density: one target evaluation per iteration, no model gradient. By default
    (``surrogate="regression"``, beyond the paper) the surrogate is fitted by kernel ridge
    regression to the log densities evaluated while tuning, at accepted and rejected proposals
    alike: a parametric trend (the Gaussian of the least-squares quadratic through those values,
    or a proper quartic where it predicts them better) plus a Gaussian-kernel correction with
    one lengthscale per coordinate, so that far from the data trajectories turn back towards
    it. ``surrogate="score_matching"`` is the paper's ``f(x) = Σ α_i k(z_i, x)``
    fitted by score matching to a sub-sample ``z`` of the chain's states. Exactness never
    depends on the surrogate's quality.

    By default (``moves="learned"``) each iteration after the surrogate's first fit is one move
    of a mixture: the surrogate trajectory, differential evolution and snooker on the chain's
    history, an independence proposal from a heavy-tailed envelope of the history, and a
    random walk, with weights learned while tuning from each move's jumps per evaluation and
    frozen at its end. With ``moves="fixed"`` (the paper's form) each iteration is, with
    probability ``random_walk_probability``, a Gaussian random-walk move (in the history's
    mean and covariance, its scale Robbins–Monro tuned towards 0.234 acceptance) and
    otherwise a surrogate trajectory. Every move is a Metropolis–Hastings move that leaves the
    target invariant, so the mixture does too; the other moves keep a chain from sticking
    where the surrogate is steeper than the target (typically in tails the history has not
    seen).

    Parameters
    ----------
    <shared: vars>
    subsample_size : int, default 500
        Size ``n`` of the history sub-sample the surrogate is fitted on (with
        ``surrogate="regression"``: the number of kernel centres).
    surrogate : {"regression", "score_matching"}, default "regression"
        ``"regression"`` (beyond the paper) fits the log densities the chain *evaluated* while
        tuning, at accepted and rejected proposals alike:
        ``f(u) = t(u) + c + Σ_i β_i k(z_i, u)``
        (:class:`~pymc_kernel_steps.core.RegressionSurrogate`), ``t`` the trend (``−½‖u‖²``
        or a quartic, see ``trend``), in the frame ``u`` of the
        Gaussian whose log density is the least-squares quadratic through those evaluations
        (:func:`~pymc_kernel_steps.core.fit_quadratic_gaussian`, its precisions within
        1/100–100 of the history's), plus a Gaussian kernel with one
        lengthscale per whitened coordinate, chosen with the ridge by held-out squared error
        (:func:`~pymc_kernel_steps.core.select_regression_hyperparameters`; a coordinate the
        log density does not bend in is dropped from the kernel). Far from the data ``f`` is
        the trend, which decays, so trajectories turn back. It uses information score matching
        ignores, learns from rejected proposals the width of a direction the chain has not yet
        explored,
        and resolves thin curved ridges an isotropic kernel cannot; a warm start from
        ``history=`` needs the log densities ``pm.sample`` records, and it needs
        ``whiten=True`` (its Gaussian term defines its frame). In a compound step the recorded
        values are conditional log densities at the other variables' values of the moment, and
        with a noisy (pseudo-marginal) log density they are estimates: the fit is then rougher,
        never wrong. The frozen kernel is exact either way. ``"score_matching"`` is the paper's
        surrogate, fitted to the *states* of the history. How the two compare: see the
        benchmarks page in the documentation.
    trend : {"auto", "quartic", "quadratic"}, default "auto"
        The parametric part of ``surrogate="regression"`` (beyond the papers), in place of
        ``−½‖u‖²``: ``"quadratic"`` keeps that Gaussian; ``"quartic"`` is the least-squares
        log density of a Gaussian in the features ``(u, u∘u)``
        (:class:`~pymc_kernel_steps.core.PolynomialTrend`: cubic and quartic terms, its quartic
        matrix clipped positive definite so that it decays in every direction), which follows
        a curved ridge, skewness or flattened tails beyond the data the kernel sum needs; the
        kernel then models what it leaves. ``"auto"`` takes the quartic trend when it predicts
        held-out evaluations better
        (:func:`~pymc_kernel_steps.core.select_trend`), decided at each hyper-parameter
        selection; both need at least twice as many informative evaluations as the quartic's
        ``1 + d + d(d+1) + d²`` coefficients (2000 are used at most, so ``d ≤ 20``; ``"auto"``
        holds a fifth of them out to compare, so ``d ≤ 19``), and
        otherwise the quadratic trend is used. How the trends compare: see the benchmarks page in
        the documentation. Trajectories on a quartic can grow fast where it
        is steep; one that
        leaves the region the chain has seen is rejected without evaluating the model (see
        ``confine``).
    <shared: n_steps, step_size>
        With ``surrogate="regression"``, ``κ`` is the wall's stiffness plus 1.
    <shared: step_size_adaptation, trajectory_tuning, target_accept, step_size_jitter>
    <shared: lengthscale>
        With ``surrogate="regression"``: chosen at the same times by held-out squared error of
        the log density, ``ℓ`` per whitened coordinate (a given ``lengthscale`` fixes an
        isotropic kernel).
    <shared: min_history>
    refit_interval : int, default 100
        The surrogate is refitted on a fresh sub-sample every ``refit_interval`` adapting
        iterations.
    <shared: adapt_mass, whiten, confine, random_walk_probability, moves>
    <shared: history>
        ``surrogate="regression"`` is fitted to log densities, so it needs the ``idata`` of
        ``pm.sample`` (its ``sample_stats`` hold the log density ``lp`` of every draw) and a step
        that samples every free variable of the model; those log densities are its first
        training data.
    <shared: adapt_after_tuning, scouts, walkers, climb>
    <shared: model, initial_point, compile_kwargs, rng, blocked>

    See Also
    --------
    KMCFinite : the same with random Fourier features, updated with every tuning state.

    Notes
    -----
    <shared: kmc_sample_stats>
    With ``surrogate="regression"``, ``lengthscale`` is the shortest of the per-coordinate
    lengthscales.
    """

    name = "kmc_lite"

    def __init__(
        self,
        vars=None,
        *,
        subsample_size: int = 500,
        surrogate: str = "regression",
        trend: str = "auto",
        whiten: bool = True,
        **shared,
    ):
        require_int("subsample_size", subsample_size, minimum=2)
        self.subsample_size = int(subsample_size)
        require_choice("surrogate", surrogate, tuple(SURROGATES))
        require_bool("whiten", whiten)
        require_choice("trend", trend, TRENDS)
        self.fitter = SURROGATES[surrogate](self.subsample_size, trend)
        if self.fitter.needs_whitening and not whiten:
            raise ValueError(
                "surrogate='regression' (the default) needs whiten=True: its Gaussian term, "
                "fitted to the evaluations, defines the frame of the surrogate (with "
                "whiten=False it would be N(0, I) in the model's coordinates). For the paper's "
                "isotropic kernel in the model's coordinates pass surrogate='score_matching' "
                "with whiten=False."
            )
        self.warm_log_densities = None
        super().__init__(vars, whiten=whiten, **shared)

    def _training_points(self):
        return self._tuning_states_subsample(self.subsample_size)

    # pooled tuning: the other chains' states and evaluations enter the next selection and fit
    pools_tuning_data = True

    def _own_evaluations(self) -> tuple[np.ndarray, np.ndarray]:
        chain = self.chain
        if chain.evaluated_points is None:
            return super()._own_evaluations()
        return chain.evaluated_points.points.copy(), np.asarray(chain.evaluated_values, float)

    def _on_absorb(self) -> None:
        if self.chain.surrogate is not None:  # select and fit again at the next iteration
            self.chain.next_selection_size = len(self.chain.history)

    # a fitter that needs evaluations (surrogate="regression"): the log densities evaluated
    # while adapting are its training data
    def _new_chain(self) -> KMCChain:
        chain = super()._new_chain()
        if self.fitter.needs_evaluations:
            chain.evaluated_points = ChainHistory(self.dim)
            chain.evaluated_values = []
        return chain

    def _recorded_evaluations(self) -> Evaluations | None:
        """The chain's recorded evaluations and, with pooled tuning, the other chains'."""
        chain = self.chain
        if chain.evaluated_points is None:
            return None
        points, values = chain.evaluated_points.points, np.asarray(chain.evaluated_values)
        if chain.pooled is not None:
            points = np.concatenate([points, chain.pooled.points])
            values = np.concatenate([values, chain.pooled.log_densities])
        return Evaluations(points, values)

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

    def _warm_start(self) -> None:
        if self.warm_log_densities is not None:
            chain = self.chain
            chain.evaluated_points.extend(self.warm_history)
            chain.evaluated_values.extend(self.warm_log_densities.tolist())
        super()._warm_start()

    def _on_evaluation(self, x, value) -> None:
        chain = self.chain
        if (
            chain.evaluated_points is not None
            and (self.tune or self.adapt_after_tuning)
            and len(chain.evaluated_values) < _MAX_RECORDED_EVALUATIONS
        ):
            chain.evaluated_points.append(x)
            chain.evaluated_values.append(value)

    def _update_surrogate(self, x) -> bool:
        chain = self.chain
        if chain.iteration - chain.last_fit_iteration < self.refit_interval:
            return False
        return self._fit(x, select=False)
