"""Sticky excursions: a chain that enters some region rarely and stays there long is reported,
a healthy chain is not."""

from __future__ import annotations

import logging
import re

import numpy as np
import pymc as pm
import pytensor
import pytest

from pymc_kernel_steps import CKAM, KAMH, AdaptiveHMC, AdaptiveMetropolis, KMCFinite, KMCLite
from pymc_kernel_steps.core import ChainHistory
from pymc_kernel_steps.core.rejection_runs import rejection_run_probability
from pymc_kernel_steps.core.transitions import kmc
from pymc_kernel_steps.steps._health import STICKY_PROBABILITY, sticky_excursion

QUIET = dict(progressbar=False, compute_convergence_checks=False)
ALL_STEPS = [KAMH, AdaptiveMetropolis, KMCLite, KMCFinite, CKAM, AdaptiveHMC]


STICKY = "sticky excursion"
STALLED = "failed improbably often"


def _messages(caplog, model, step_class, *, tune, draws, chains, seed, phrase, **kwargs):
    """The warnings of one ``pm.sample`` run that contain ``phrase`` (or one of a tuple)."""
    phrases = (phrase,) if isinstance(phrase, str) else tuple(phrase)
    with model, caplog.at_level(logging.WARNING, logger="pymc"):
        pm.sample(
            step=step_class(), tune=tune, draws=draws, chains=chains, cores=1,
            random_seed=seed, **QUIET, **kwargs,
        )  # fmt: skip
    messages = [r.getMessage() for r in caplog.records]
    return [m for m in messages if any(p in m for p in phrases)]


def _refusing_for_a_while(first: int, length: int):
    """A 2-d correlated Gaussian whose log density is −inf everywhere for iterations ``first``
    to ``first + length − 1`` (1-based, tuning included), and the ``pm.sample`` callback that
    switches it: every proposal of those iterations is rejected, so the chain sits at one point
    for ``length`` iterations, whatever its random stream. Around them the log density is
    raised by a constant, 1000 at iteration ``first − 1`` and 2000 from ``first + length`` on,
    so that those two iterations accept (the state's log density is the one it was accepted
    with) and the run is exactly ``length`` long: not longer by the chain's own rejections
    next to it, which at AdaptiveMetropolis's acceptance of 0.2 once made it 201, a stuck
    chain. A sticky excursion built instead of hoped for (a pytensor shared variable in a
    ``Potential``, set before each iteration from PyMC's ``callback``)."""
    refuse = pytensor.shared(0.0, name="refuse")
    with pm.Model() as model:
        pm.MvNormal("x", np.zeros(2), np.array([[1.0, 0.5], [0.5, 1.0]]))
        pm.Potential("refuse_for_a_while", refuse)

    def callback(trace, draw):
        coming = draw.draw_idx + 2  # the 1-based number of the next iteration
        if coming < first - 1:
            refuse.set_value(0.0)
        elif coming == first - 1:
            refuse.set_value(1000.0)
        elif coming < first + length:
            refuse.set_value(-np.inf)
        else:
            refuse.set_value(2000.0)

    return model, callback


REFUSING_FROM, REFUSING_FOR = 1801, 180  # after tune=1000: draws 801 to 980 of 2000


@pytest.mark.slow
@pytest.mark.parametrize("step_class", ALL_STEPS, ids=lambda c: c.__name__)
def test_a_chain_sitting_at_one_point_while_accepting_elsewhere_is_reported_as_sticky(
    step_class, caplog
):
    """A chain that sat at one point for 180 of its 2,000 draws while accepting a fair share of
    its proposals elsewhere is reported as a sticky excursion, with the iterations it sat, by
    every step through ``pm.sample``'s log. The event is built: the model refuses every
    proposal for those 180 iterations. At the acceptance rates of these steps on a 2-d
    Gaussian (AdaptiveMetropolis's the lowest, 0.17-0.22 over four seeds with 1,000 draws
    and 150 refused, 0.35-0.64 the others') a run of 180 rejections has probability below
    10⁻¹¹ (asserted: the check's threshold is 10⁻⁹), and 180 < 200 (the stuck-chain check's),
    so the warning is due for every random stream; it fails if a step stops tracking
    its draws' rejection runs, if the check misjudges such a run, or if its warning does not
    reach PyMC's log.

    What motivated the check: on ``mixed4`` (a t₅ with a sine ridge on
    it) the paper's ``KMCLite`` rarely returned from the ridge's tails, and its chains sat for
    49-91 iterations at one point while accepting over half their proposals. A test that
    waited for such an excursion on one seed held for one machine's random stream only."""
    model, callback = _refusing_for_a_while(REFUSING_FROM, REFUSING_FOR)
    with model:
        step = step_class()
    messages = _messages(
        caplog, model, lambda: step, tune=1000, draws=2000, chains=1, seed=3,
        phrase=STICKY, callback=callback,
    )  # fmt: skip
    # the premise: at the chain's acceptance rate a run of REFUSING_FOR is improbable enough
    acceptance = step.chain.draws_accepted / step.chain.draws_done
    chance = rejection_run_probability(REFUSING_FOR, step.chain.draws_done, acceptance)
    assert chance < STICKY_PROBABILITY, (acceptance, chance)
    assert len(messages) == 1, messages
    (found,) = re.findall(
        r"stayed at one point for (\d+) iterations \(iterations (\d+) to (\d+)", messages[0]
    )
    run, start, end = map(int, found)
    # the iterations next to the stretch accept, but for a proposal of the state itself (a
    # null DE or snooker proposal, rejected unevaluated), which lengthens the run by a few
    last = REFUSING_FROM + REFUSING_FOR - 1
    assert run == end - start + 1 and REFUSING_FROM - 5 <= start <= REFUSING_FROM, found
    assert last <= end <= last + 5, found
    assert step_class.__name__ in messages[0] and "sds from the draws' mean" in messages[0]


def _correlated_model() -> pm.Model:
    with pm.Model() as model:
        cov = np.array([[1.0, 0.9, 0.5], [0.9, 1.0, 0.6], [0.5, 0.6, 1.0]])
        pm.MvNormal("x", np.zeros(3), cov)
        pm.HalfNormal("s")
    return model


@pytest.mark.slow
@pytest.mark.parametrize("step_class", ALL_STEPS, ids=lambda c: c.__name__)
def test_healthy_chains_are_not_reported_as_sticky(step_class, caplog):
    """Every step on a correlated Gaussian with a positive parameter, PyMC's default lengths:
    no sticky-excursion or stalled-move warning. (The unsettled-tuning note is not part of this
    check: AdaptiveMetropolis's late tuning is worth 5-38 independent states here over 30
    seeds, near the threshold of 5, and one chain of another random stream was told to tune
    longer; it has its own tests.)"""
    assert not _messages(
        caplog, _correlated_model(), step_class, tune=1000, draws=1000, chains=2, seed=1,
        phrase=(STICKY, STALLED),
    )  # fmt: skip


class _Chain:
    """The fields the check reads: ``draws`` kept states of mean 0 and sd 1 (± 1 in turn, after
    tuning states of another spread)."""

    def __init__(self, run, draws, accepted, point):
        self.draws_longest_run, self.draws_done, self.draws_accepted = run, draws, accepted
        self.draws_longest_run_end = 1000 + draws
        self.draws_longest_run_point = np.asarray(point, dtype=float)
        self.history = ChainHistory(2)
        for i in range(500):
            self.history.append(np.full(2, 10.0 * (-1) ** i))
        for i in range(draws):
            self.history.append(np.full(2, (-1.0) ** i * np.sqrt((draws - 1) / draws)))


class _Step:
    def __init__(self, chain):
        self.chain = chain


def test_the_check_weighs_the_run_against_the_acceptance_rate():
    # 40 rejections in a row at 60 % acceptance: probability ~1e-13, reported with its place
    (message,) = sticky_excursion(_Step(_Chain(40, 1000, 600, [0.0, 4.0])))
    assert "40 iterations" in message and "4.0 sds" in message and "coordinate 1" in message
    # the same run at 10 % acceptance is what such a chain does anyway
    assert not sticky_excursion(_Step(_Chain(40, 1000, 100, [0.0, 4.0])))
    # too short to judge, or long enough to be reported as a stuck chain
    assert not sticky_excursion(_Step(_Chain(15, 1000, 900, [0.0, 4.0])))
    assert not sticky_excursion(_Step(_Chain(250, 1000, 600, [0.0, 4.0])))


# ------------------------------------------------------------------------------ stalled moves
def _with_its_own_move_failing(monkeypatch, first: int, length: int) -> None:
    """The KMC transition (:mod:`~pymc_kernel_steps.core.transitions.kmc`), with its own
    learned move (the surrogate trajectory) proposing a point 1000 sds away, which the model
    rejects, at iterations ``first`` to ``first + length − 1`` (1-based, tuning included): a
    move that fails there for every random stream, while the mixture's other moves go on
    moving the chain, as a surrogate fitted elsewhere that is wrong where the chain is."""
    propose = kmc.propose

    def failing(rng, state):
        proposal = propose(rng, state)
        coming = state.iteration + 1
        if proposal.move is state.hmc and first <= coming < first + length:
            proposal.x = state.position + 1000.0
        return proposal

    monkeypatch.setattr(kmc, "propose", failing)


FAILING_FROM, FAILING_FOR = 2801, 500  # after tune=2000: draws 801 to 1300 of 2000


@pytest.mark.slow
@pytest.mark.parametrize("step_class", [KMCLite, KMCFinite], ids=lambda c: c.__name__)
def test_a_learned_move_failing_for_a_stretch_while_others_move_is_reported(
    step_class, caplog, monkeypatch
):
    """A step whose own learned move fails at every try over a quarter of the draws, while its
    mixture's other moves go on moving the chain, is reported through ``pm.sample``'s log: the
    move, how often and where it failed. The event is built (the move proposes far out for
    those 500 iterations, :func:`_with_its_own_move_failing`): the move makes some hundred
    tries there, each rejected, a run below the check's probability threshold at its success
    rate elsewhere (asserted), so the warning is due for every random stream. It fails if a
    step stops recording its moves' tries, if the check misjudges such a run or misplaces it,
    or if the warning does not reach PyMC's log; and if the chain sat still instead (a sticky
    excursion is reported then, and asserted absent here). Not ``KAMH``: its kernel move, a
    tenth of its tries at a success rate of 0.2 here, fails 68 times in a row over such a
    stretch, which is not improbable at that rate (p ~ 10⁻⁵).

    What motivated the check: on ``curved6`` (a star of curves around
    x1 ~ N(0, 1.5²)) in one run of the robustness study the learned ``KMCLite`` went out to
    x1 = 3-6 after 1,000 draws and stayed for 3,500, its surrogate trajectories accepted 0
    times in 1,689 tries there (0.455 elsewhere); E[x1] came out 2.4 (exact 0), and nothing
    said so. A test that waited for that run on one seed held for one machine's random stream
    only."""
    _with_its_own_move_failing(monkeypatch, FAILING_FROM, FAILING_FOR)
    with pm.Model() as model:
        pm.MvNormal("x", np.zeros(3), np.array([[1, 0.9, 0.5], [0.9, 1, 0.6], [0.5, 0.6, 1]]))
        step = step_class()
    messages = _messages(
        caplog, model, lambda: step, tune=2000, draws=2000, chains=1, seed=4,
        phrase=(STALLED, STICKY),
    )  # fmt: skip
    kind = getattr(step.chain, step.own_move).kind
    record = step.chain.draws_move_runs[kind]
    # the premise: the built run is improbable at the move's success rate
    chance = rejection_run_probability(record.longest, record.tries, record.moves / record.tries)
    assert record.longest >= 50 and chance < STICKY_PROBABILITY, (record, chance)
    assert len(messages) == 1 and STALLED in messages[0], messages
    (found,) = re.findall(rf"`{kind}` (\d+) times, iterations (\d+) to (\d+)", messages[0])
    run, start, end = map(int, found)
    assert run == record.longest, messages[0]
    last = FAILING_FROM + FAILING_FOR - 1
    assert min(end, last) - max(start, FAILING_FROM) + 1 >= 0.9 * FAILING_FOR, messages[0]
    assert f"{step_class.__name__}: a chain may not have mixed" in messages[0]
    assert "sds of the late tuning phase from its mean" in messages[0]


class _Runs:
    def __init__(self):
        self.draws_move_runs = {}
        self.iteration = 0


def _track(chain, sequence):
    from pymc_kernel_steps.steps._health import track_move

    for kind, moved in sequence:
        chain.iteration += 1
        track_move(chain, kind, moved)


def test_track_move_records_each_kinds_longest_failed_run():
    chain = _Runs()
    sequence = [("a", True), ("a", False), ("b", False), ("a", False), ("b", True), ("a", True)]
    _track(chain, [*sequence, ("a", False)])
    a, b = chain.draws_move_runs["a"], chain.draws_move_runs["b"]
    assert (a.tries, a.moves, a.longest, a.longest_start, a.longest_end) == (5, 2, 2, 2, 4)
    assert (b.tries, b.moves, b.longest, b.longest_start, b.longest_end) == (2, 1, 1, 3, 3)
    assert a.run == 1 and b.run == 0


class _MixtureChain:
    """A chain after 1,000 tuning and 3,000 draws (iterations 1 to 4,000; states of mean 0 and
    sd 1) whose move ``trajectory`` failed ``run`` times in a row over the ``span`` iterations
    from 2,000, where the chain was at ``mean``, and succeeded ``moves`` of ``tries`` times in
    all; a random walk beside it."""

    def __init__(self, run, span, tries, moves, mean, kinds=("trajectory", "random_walk")):
        from pymc_kernel_steps.steps._state import MoveRuns

        self.draws_done, self.iteration = 3000, 4000
        self.history = ChainHistory(2)
        for i in range(1, 4001):
            inside = 2000 <= i < 2000 + span
            self.history.append(np.asarray(mean, float) if inside else np.full(2, (-1.0) ** i))
        record = MoveRuns(tries=tries, moves=moves, longest=run, longest_start=2000)
        record.longest_end = 2000 + span - 1
        self.draws_move_runs = {"trajectory": record}
        for kind in kinds[1:]:
            self.draws_move_runs[kind] = MoveRuns(tries=1500, moves=300, longest=30)


def test_the_stalled_move_check_weighs_the_run_against_the_moves_success():
    from pymc_kernel_steps.steps._health import stalled_moves

    # 300 failures in a row over 600 iterations (20 % of the draws) of a move that succeeds at
    # 40 %: reported with its place, the late tuning phase's sds
    (message,) = stalled_moves(_Step(_MixtureChain(300, 600, 1500, 600, [0.0, 3.0])))
    assert "`trajectory` 300 times, iterations 2000 to 2599 (20% of the draws" in message
    assert "at 40% of its tries" in message and "random_walk" not in message
    assert "3.0 sds of the late tuning phase from its mean in coordinate 1" in message
    # the same run of a move that succeeds at 1 %: what such a move does anyway
    assert not stalled_moves(_Step(_MixtureChain(300, 600, 1500, 15, [0.0, 3.0])))
    # improbable but short: under a tenth of the draws, or under 50 tries
    assert not stalled_moves(_Step(_MixtureChain(120, 250, 1500, 600, [0.0, 3.0])))
    assert not stalled_moves(_Step(_MixtureChain(45, 400, 1500, 1200, [0.0, 3.0])))
    # one move only: its failures are the chain's rejections (the sticky-excursion check's)
    assert not stalled_moves(
        _Step(_MixtureChain(300, 600, 1500, 600, [0.0, 3.0], kinds=("trajectory",)))
    )
