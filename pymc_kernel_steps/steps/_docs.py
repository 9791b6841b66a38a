"""The constructor parameters every step shares, documented once.

A class docstring names them with a line ``<shared: name, name, ...>`` in its Parameters section
(and a shared note of :data:`SHARED_NOTES` likewise where it goes);
:func:`with_shared_parameters` puts their text there (what ``help()`` and the documentation show).
"""

from __future__ import annotations

import re

__all__ = ["SHARED_NOTES", "SHARED_PARAMETERS", "with_shared_parameters"]

SHARED_PARAMETERS = {
    "vars": """vars : list of variables, optional
    Continuous variables to sample (default: all continuous free variables of the model;
    ``pm.sample`` assigns discrete ones to PyMC's step methods).""",
    "adapt_after_tuning": """adapt_after_tuning : bool, default False
    Keep adapting through the draws with vanishing probability ``a_t = (1 + t/100)^(-1/2)``
    (the papers' diminishing adaptation): ``KAMH``'s sub-sample, whitening and ``ν²``, the
    KMC steps' surrogate, whitening and mass matrix, and the scales of the random walk and
    differential evolution. The learned mixture's weights, population and envelope, the KMC
    steps' step size and trajectory length and ``KAMH``'s lengthscale are frozen at the end
    of tuning either way (with ``tune=0``, at the start: only the moves ready then take
    part). By default everything is frozen after tuning and the draws come from a fixed,
    exact Metropolis–Hastings kernel.""",
    "scouts": """scouts : int, default 4
    Random walks of 50 iterations each, run in turn at the start of tuning from where the
    climb ended (the initial point when there is no climb); the chain goes on from the one
    at the highest log density, so that a start in the basin of a minor mode rarely decides
    where the chain spends its tuning. 1 turns
    them off; they are skipped when they would take more than a tenth of tuning (with the
    default, fewer than 2000 tuning iterations), for a noisy (pseudo-marginal) log density,
    when the step samples only some of the model's variables, and after a warm start
    (``history``, where a step has it).""",
    "walkers": """walkers : int, default 4 for ``KAMH``, 1 for the KMC steps
    Copies of the chain that take turns to move with the step's own moves for half of the
    tuning iterations, right after the scouts, all from the point where tuning begins (after
    the scouts and the climb); the proposal learns from all their states while they move. The
    chain then goes on alone from the walker at the highest log density. What the frozen
    kernel is fitted to: ``KAMH``'s sub-sample and whitening to the most recent half of the
    history at its last refresh, which begins about where the walkers stop (it holds at most
    their last few states); the KMC steps' whitening, envelope and mass matrix to the recent
    half at their last selection of hyper-parameters (made when the history doubles, so it
    may hold the walkers' states), and ``KMCLite``'s regression surrogate to every
    evaluation of tuning, the walkers' included. The tuning draws
    jump between walkers (PyMC discards them); the draws come from one chain and the frozen
    kernel, as without walkers. 1 turns them off; skipped for a noisy (pseudo-marginal) log
    density and in compound sampling. With one chain they took ``KAMH`` out of the
    Lotka–Volterra ODE's minor mode (8× the ESS per evaluation) and left it level over the
    posteriordb suite (0.98–1.25× in geometric mean). ``KMCLite`` with 4 left that mode too
    (240×), but lost a third on the suite's median posterior, so the KMC steps have none.""",
    "climb": """climb : bool, default True
    When a chain's start lies far outside the posterior's bulk (the slope along some
    coordinate is more than five conditional scales, measured by the start's second
    differences), climb before tuning: L-BFGS-B on finite differences from the start, at
    most ``min(60 (d + 1), 600)`` evaluations, and tuning begins at the first point it
    evaluated within ``d/2`` of the highest log density it found, where a draw's log density
    typically lies (:func:`~pymc_kernel_steps.core.climb`). Otherwise the chain climbs by
    random walk for much of a short tuning phase and learns its proposal from the climb. The
    climb is part of tuning and its evaluations are counted (``logp_evals`` of the first
    iteration), so the draws stay exact. Skipped at a start in the bulk, without tuning, for
    a noisy (pseudo-marginal) log density, after a warm start (``history``), and in compound
    sampling. A start in the basin of a minor mode climbs into that mode; run several chains
    and check R-hat.""",
    "model": """model : pymc.Model, optional
    The model (default: the one of the enclosing ``with`` block).""",
    "initial_point": """initial_point : dict, optional
    Values at which the variables outside the block are taken when compiling (default: the
    model's initial point).""",
    "compile_kwargs": """compile_kwargs : dict, optional
    Passed to :func:`pymc.pytensorf.compile` (for example ``{"mode": "CVM"}`` for a cheap
    Python ``Op``); those given to ``pm.sample`` do not reach a step you construct.""",
    "rng": """rng : int, sequence of int, numpy SeedSequence, BitGenerator or Generator, optional
    Random state of a step driven by hand (``step.step(point)``). ``pm.sample`` reseeds it for
    every chain from ``random_seed`` (from fresh entropy when that is None), so under
    ``pm.sample`` it has no effect: pass ``random_seed`` there.""",
    "blocked": """blocked : bool, default True
    Accepted for PyMC's interface; the step always updates its variables jointly.""",
    # the KMC steps'
    "n_steps": """n_steps : int or tuple of (int, int), default (10, 30)
    Leapfrog steps per trajectory, drawn uniformly from the inclusive range ``(low, high)``
    (an integer fixes it).""",
    "step_size_adaptation": """step_size_adaptation : {"esjd", "dual_averaging"}, default "esjd"
    ``"esjd"`` searches for the step size with the largest expected squared jump
    distance (:class:`~pymc_kernel_steps.core.JumpDistanceStepSize`); ``"dual_averaging"``
    tunes towards ``target_accept`` as NUTS does. With a surrogate gradient the acceptance
    rate is capped by the surrogate's error at every step size, and dual averaging towards
    0.8 then shrinks the step size until trajectories barely move.""",
    "trajectory_tuning": """trajectory_tuning : {None, "bayesopt"}, optional
    None (default): the step size is tuned as ``step_size_adaptation`` says and ``n_steps``
    is drawn from its range. ``"bayesopt"``: ``(ε, L)`` are tuned together by annealed
    GP-UCB (paper 003, :class:`~pymc_kernel_steps.core.WindowedTuner`) over
    ``ε ∈ [ε₀/30, 3ε₀]`` (``ε₀`` the initial step size) and ``L`` in the ``n_steps`` range,
    restarted from the best point so far whenever the surrogate is re-selected, rewarding
    the ESJD per target evaluation in windows of a hundredth of the tuning phase; each
    trajectory takes ``L_r ~ U{1..L}`` steps without jitter, and the best ``(ε, L)`` is
    frozen after tuning.""",
    "target_accept": """target_accept : float, optional
    Target acceptance of dual averaging, in (0, 1) (default 0.8). Accepted only with
    ``step_size_adaptation="dual_averaging"``: the default ``"esjd"`` has no target
    acceptance, and passing one raises a ValueError.""",
    "min_history": """min_history : int, optional
    Iterations before the surrogate's first fit (default ``max(300, 20 d)``, but at most a
    third of the tuning iterations, and at least 50; the fit also waits for ``max(20, 2 d)``
    accepted moves of the chain, the scouts' included). Until then the trajectory is not ready
    and passes its turn on: with ``moves="learned"`` the chain makes coordinate moves and the
    mixture's other moves (differential evolution, snooker, the envelope and the random walk,
    each once it is ready), with ``moves="fixed"`` coordinate moves and a random walk.""",
    "adapt_mass": """adapt_mass : bool, default True
    Estimate the diagonal mass matrix from the history's variances.""",
    "whiten": """whiten : bool, default True
    Fit the surrogate and run its trajectories on states whitened by the mean and full
    covariance of the recent history (see :class:`~pymc_kernel_steps.core.Whitening`): a
    linear change of the model's coordinates then leaves the sampler unchanged. False is the
    paper's isotropic kernel in the model's coordinates. Random-walk moves always use the
    history's covariance.""",
    "confine": """confine : bool, default True
    Add to the surrogate the confining term ``−(k/2)(‖u‖ − R)₊²`` with ``R`` twice the distance
    of the farthest training point (whitened) and ``k`` one over the mean training variance, so
    that trajectories turn back instead of carrying an expensive model far outside the
    region the chain has seen, where the lite surrogate is flat and the random-feature one
    periodic. A fixed potential keeps the move exact. A trajectory that still leaves the
    ball of radius ``2R`` is rejected without evaluating the model (the rule depends only on
    the positions it visits, which its reversal visits too, so the move stays exact; it
    counts as ``diverging``); the ball's radius is at least ``10√d``.""",
    "random_walk_probability": """random_walk_probability : float, optional
    Share of random-walk moves of ``moves="fixed"``, in [0, 1) (default 0.25); 0 is the
    paper's pure form. An error with ``moves="learned"``, which learns the random walk's share.""",
    "moves": """moves : {"learned", "fixed"}, default "learned"
    ``"learned"``: a mixture of the step's own move, differential evolution and snooker (as
    ``DEMetropolisZ`` and emcee's ``DESnookerMove``, their population the most recent half of
    the chain's history), an independence proposal with the history's mean and covariance,
    half from a multivariate t and half from independent t's along the whitened axes, all with
    4 degrees of freedom (:class:`~pymc_kernel_steps.core.moves.Envelope`: it brings a chain
    back from a tail in one step) and a random walk in the history's whitening, started at
    weights 0.4, 0.15, 0.15, 0.15, 0.15. From the own move's first fit to the end of tuning
    each move's weight follows its expected squared jump in whitened units (each jump capped
    at ``10 d``) per evaluation, with a floor of 0.05
    (:class:`~pymc_kernel_steps.core.JumpRateWeights`). At the end of tuning the weights, the
    population and the envelope are frozen, so the draws come from a fixed mixture of exact
    Metropolis–Hastings kernels. Every move's weight and its mean acceptance so far (over
    tuning and draws) are the sample stats ``weight_<kind>`` and ``acceptance_<kind>``, in
    every chain; which move proposed: the ``move`` sample stat. The measured rates, for the
    last chain this step object ran in this process: ``step.chain.learned_moves.stats()``.
    Fixed at construction (a read-only attribute).
    ``"fixed"``: the step's own move as the paper has it (with the share of random-walk moves
    the step's other parameters set).""",
    "step_size": """step_size : float, optional
    Initial leapfrog step size (default ``1/√d`` in the mass-matrix metric); jittered by
    ``±step_size_jitter`` per iteration and tuned as ``step_size_adaptation`` says. Each
    hyper-parameter selection and the end of tuning shrink it, if needed, below the leapfrog's
    stability limit on the surrogate (checked with the surrogate alone, no model evaluation),
    and no trajectory's step size, tuning trials and jitter included, reaches 0.9 of the
    limit ``2/√(max M⁻¹ · κ)`` of the surrogate's far field (``κ``: the wall's stiffness),
    where a trajectory would grow without bound.""",
    "step_size_jitter": """step_size_jitter : float, default 0.2
    Relative uniform jitter of the step size, in [0, 1).""",
    # the estimator's two hyper-parameters, documented together
    "lengthscale": """lengthscale, regularization : float, optional
    Gaussian-kernel lengthscale ``ℓ`` and regulariser ``λ`` of the estimator. Default: chosen by
    5-fold cross-validation of the score-matching objective (on at most 500 distinct states,
    ``ℓ`` from 1 to 3 times the median heuristic) when the surrogate is first fitted and
    each time the history doubles during tuning.""",
    "history": """history : arviz.DataTree, InferenceData or array of shape (n, d), optional
    A warm start: states from an earlier run (``idata`` or ``idata.posterior``, chains and
    draws pooled; a transformed variable such as ``sigma_log__`` is read from the posterior
    if it was recorded, ``idata_kwargs={"include_transformed": True}``, and otherwise
    computed from the constrained draws with the model's transform), or an ``(n, d)`` array
    of states in the step's coordinates. Every chain begins its history
    with them and fits the surrogate, whitening, mass matrix and step size to them before
    its first iteration, with no wait for a first fit; tuning then goes on from there (and may
    be short). The surrogate's hyper-parameters are chosen from them once, when the step is
    built (its random numbers seeded by the states), and every chain reuses that choice.
    With ``tune=0`` the kernel is fixed from the first draw (it depends on these states,
    never on the chain's own draws), so it is exact; the chain still starts at PyMC's
    initial point, so with ``tune=0`` also start it in the posterior (``initvals=`` from the
    earlier run's last draws). At least 10 distinct states; they are copied, not modified.""",
}

#: text other than parameters that several docstrings share
SHARED_NOTES = {
    "kmc_sample_stats": """Sample stats (in ``idata.sample_stats``): ``accept`` (acceptance
probability), ``accept_rate`` (the chain's mean ``accept`` since the start of its phase, tuning
or drawing: the progress bar's figure),
``accepted``, ``logp_evals`` (target evaluations this iteration), ``logp_nan``, ``logp_inf`` (the
proposal's log density was NaN, or +inf: rejected), ``lp`` (the model's log density; emitted as
``model_logp``, absent for noisy log densities),
``diverging`` (a surrogate trajectory whose true energy is non-finite, or a proposal
rejected without evaluating the model), ``step_size`` (NaN for random-walk moves),
``n_steps`` (0 for random-walk moves), ``energy_error`` (change of the true Hamiltonian),
``energy`` (the true Hamiltonian of the state kept, with the trajectory's end momentum if
accepted and its initial one if not, as PyMC's HMC; after a random-walk move, with a fresh
momentum: ``az.plot_energy`` and the BFMI read it), ``n_history``,
``refit``, ``surrogate`` (False for random-walk moves), ``lengthscale`` and ``move`` (the
kind of move that proposed, an index in ``("coordinate", "random_walk", "surrogate_hmc",
"kam", "differential_evolution", "snooker", "envelope")``). The ``tune`` and
``warning`` stats are consumed by PyMC and do not appear in the DataTree.""",
}

_MARKER = re.compile(r"^(?P<indent>[ ]*)<shared: (?P<names>[a-z_, ]+)>$")


def with_shared_parameters(cls):
    """Class decorator: replace each ``<shared: ...>`` line of the docstring by the named
    parameters' documentation (or :data:`SHARED_NOTES`), indented as the line. Lines indented
    further right after it go on with the last one's description."""
    shared = SHARED_PARAMETERS | SHARED_NOTES
    lines = []
    for line in cls.__doc__.split("\n"):
        match = _MARKER.match(line)
        if match is None:
            lines.append(line)
            continue
        indent = match["indent"]
        for name in (n.strip() for n in match["names"].split(",")):
            lines.extend(indent + text for text in shared[name].split("\n"))
    cls.__doc__ = "\n".join(lines)
    return cls
