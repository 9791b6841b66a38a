"""The end-of-sampling check of a chain's health: one warning if it was stuck, or many of its
proposals were degenerate, aborted or had a NaN log density."""

from __future__ import annotations

import math

import numpy as np
from pymc.stats.convergence import SamplerWarning, WarningType

from ..core.effective_size import effective_sample_sizes
from ..core.rejection_runs import rejection_run_probability
from ._state import MoveRuns, TuningMixing

__all__ = [
    "count_unusable",
    "end_of_chain_warning",
    "stalled_moves",
    "track_draw",
    "track_move",
    "tuning_mixing",
    "unsettled_tuning",
]

#: consecutive rejections after which a chain counts as stuck in the end-of-sampling check
STUCK_RUN = 200
#: share of iterations with degenerate (unevaluated) or NaN proposals that earns a warning
WARN_SHARE = 0.01
#: share of iterations whose surrogate trajectory was aborted (diverged, or left the region the
#: chain has seen; rejected without evaluating the model) that earns a warning: a few are the
#: price of long steps where the surrogate is steep, a fifth means it is poor where the chain is
ABORTED_WARN_SHARE = 0.2
#: acceptance rate after tuning below which a chain is reported (over at least STUCK_RUN draws)
LOW_ACCEPTANCE = 0.02
#: accepted moves per parameter after tuning below which a chain is reported: a random walk's
#: effective sample size is about 1.4 times its accepted moves per parameter (efficiency 0.33/d
#: per iteration at acceptance 0.234), so with fewer than 10 every variance estimate is off by a
#: fifth or more. At d = 100 with PyMC's default 1000 draws the random-walk and KMC steps accept
#: 0.7-5.2 moves per parameter and their sds are off by a median 34-63 %.
MIN_ACCEPTED_PER_PARAMETER = 10
#: a run of rejections after tuning this improbable, were acceptance the same at every point,
#: is reported as a sticky excursion. Acceptance always varies with the point somewhat, so
#: healthy chains have longer runs than that model says: at 10⁻⁶, 1 of 96 healthy chains (six
#: steps, two Gaussian models, four seeds) and a slowly mixing KAMH chain on scales from 10⁻³
#: to 10³ (p = 5·10⁻⁷) were reported; the excursions of KMC in heavy tails have p < 10⁻¹²
STICKY_PROBABILITY = 1e-9
#: the shortest run reported as a sticky excursion
MIN_STICKY_RUN = 20


def count_unusable(step, value: float, x, point_map_info) -> tuple[bool, bool]:
    """Whether a proposal's log density is NaN, and whether it is +inf: either is rejected (the
    caller treats it as −inf) and counted for the end-of-chain warning, which names the first
    +inf point (an overflow far out, as PyMC's ``LKJCholeskyCov`` gives beyond a log-sd of
    about 19, or a bug in the model)."""
    chain = step.chain
    nan, infinite = math.isnan(value), value == math.inf
    chain.nan_log_densities += nan
    if infinite:
        chain.infinite_log_densities += 1
        if chain.first_infinite_at is None:
            chain.first_infinite_at = step._where(x, point_map_info)
    return nan, infinite


def track_draw(chain, accepted: bool, kind: str | None = None) -> None:
    """After tuning: the run of rejections, and the longest one with the point where the chain
    sat (``current_point`` is a new array every iteration, so it is kept without a copy); and
    the record of the move ``kind`` that made the proposal (:func:`track_move`)."""
    track_move(chain, kind, accepted)
    chain.draws_rejection_run = 0 if accepted else chain.draws_rejection_run + 1
    if chain.draws_rejection_run > chain.draws_longest_run:
        chain.draws_longest_run = chain.draws_rejection_run
        chain.draws_longest_run_end = chain.iteration
        chain.draws_longest_run_point = chain.current_point


#: the shortest run of one move's consecutive failed tries reported as a stalled move, and
#: the least share of the draws it must span (shorter stalls are the price of any mixture)
MIN_STALLED_RUN = 50
STALLED_SHARE = 0.1


def track_move(chain, kind: str | None, moved: bool) -> None:
    """After tuning, in a step that mixes moves: the chosen move's tries, moves and run of
    tries that did not move the chain, and its longest such run's first and last iteration
    (``kind`` None: a step without moves, nothing to record). Counters only: it runs every
    iteration."""
    if kind is None:
        return
    runs = chain.draws_move_runs.get(kind)
    if runs is None:
        runs = chain.draws_move_runs[kind] = MoveRuns()
    runs.tries += 1
    if moved:
        runs.moves += 1
        runs.run = 0
        return
    if runs.run == 0:
        runs.run_start = chain.iteration
    runs.run += 1
    if runs.run > runs.longest:
        runs.longest, runs.longest_start = runs.run, runs.run_start
        runs.longest_end = chain.iteration


def _offset(point, states) -> tuple[float, int]:
    """The largest ``|point − mean| / sd`` over the coordinates of ``states``, and where."""
    sd = states.std(axis=0, ddof=1)
    offsets = np.abs(point - states.mean(axis=0)) / np.where(sd > 0, sd, 1)
    farthest = int(np.argmax(offsets))
    return float(offsets[farthest]), farthest


def _where(chain, point) -> str:
    """``", 3.1 sds from the draws' mean in coordinate 0 of the raveled parameters"``."""
    kept = chain.history.points[-chain.draws_done :]  # every iteration appends its state
    offset, farthest = _offset(point, kept)
    if not math.isfinite(offset):
        return ""
    return (
        f", {offset:.1f} sds from the draws' mean in coordinate {farthest} of the raveled "
        "parameters"
    )


def _chance(probability: float) -> str:
    return f"{probability:.0e}" if probability >= 1e-12 else "below 1e-12"


def stalled_moves(step) -> list[str]:
    """The problem of a mixture whose moves each failed improbably many times in a row after
    tuning for their own success rate, over at least a tenth of the draws: a move that works in
    most of the posterior but not where the chain was then (a surrogate or envelope fitted where
    the chain had been, out in a tail), so the chain crawled there on its other moves. Unlike a
    sticky excursion the chain need not sit at one point: it moves, slowly, and its draws' MCSE
    may understate their error alike. Where: the chain's mean state over the iterations of the
    longest such run, in sds of the second half of the tuning phase (what the moves were fitted
    to)."""
    chain = step.chain
    runs, draws = chain.draws_move_runs, chain.draws_done
    if draws < STUCK_RUN or len(runs) < 2:
        return []
    stalled = []
    for kind, record in runs.items():
        span = record.longest_end - record.longest_start + 1
        if record.longest < MIN_STALLED_RUN or span < STALLED_SHARE * draws:
            continue
        rate = record.moves / record.tries
        if rejection_run_probability(record.longest, record.tries, rate) < STICKY_PROBABILITY:
            stalled.append((kind, record, span, rate))
    if not stalled:
        return []
    stalled.sort(key=lambda item: -item[1].longest)
    listed = ", ".join(
        f"`{kind}` {record.longest} times, iterations {record.longest_start} to "
        f"{record.longest_end} ({span / draws:.0%} of the draws; it moves the chain at "
        f"{rate:.0%} of its tries)"
        for kind, record, span, rate in stalled
    )
    # every iteration after scouting appends its state to the history: iteration k is at
    # len(states) - 1 - (chain.iteration - k)
    states = chain.history.points
    tuned = states[: len(states) - draws]
    tuned = tuned[len(tuned) // 2 :]
    longest = stalled[0][1]
    last = len(states) - 1 - chain.iteration
    stretch = states[last + longest.longest_start : last + longest.longest_end + 1]
    where = ""
    if len(tuned) > 2 and len(stretch):
        offset, farthest = _offset(stretch.mean(axis=0), tuned)
        if math.isfinite(offset):
            where = (
                f"; there the chain was on average {offset:.1f} sds of the late tuning phase "
                f"from its mean in coordinate {farthest} of the raveled parameters"
            )
    return [
        f"after tuning, moves of its mixture failed improbably often in a row for their "
        f"success rates (probability below {STICKY_PROBABILITY:.0e} were success the same "
        f"everywhere; tuning included in the iterations): {listed}{where}. They do not work "
        "where the chain was then, so it moved there only by its other moves, slowly: its "
        "draws from there are few in effect, and their MCSE and ESS may understate the "
        "error. Run more chains and compare them"
    ]


def sticky_excursion(step) -> list[str]:
    """The problem of a chain whose longest run of rejections after tuning is improbably long
    for its acceptance rate: acceptance depends strongly on where the chain is, so it enters
    some region rarely and stays long, and its Monte Carlo errors understate the error."""
    chain = step.chain
    run, draws = chain.draws_longest_run, chain.draws_done
    if draws < STUCK_RUN or run < MIN_STICKY_RUN or run >= STUCK_RUN:
        return []  # too short to judge, or reported as a stuck chain
    acceptance = chain.draws_accepted / draws
    probability = rejection_run_probability(run, draws, acceptance)
    if probability >= STICKY_PROBABILITY:
        return []
    where = _where(chain, chain.draws_longest_run_point)
    end = chain.draws_longest_run_end
    chance = _chance(probability)
    return [
        f"a sticky excursion: after tuning it stayed at one point for {run} iterations "
        f"(iterations {end - run + 1} to {end}, tuning included){where}, while it accepts "
        f"{acceptance:.0%} of its proposals (a run that long has probability {chance} if "
        "acceptance were the same everywhere): the proposal returns poorly from that region, "
        "which the chain enters rarely, and the MCSE and ESS of these draws understate their "
        "error. Run more chains and compare them"
    ]


def unfitted_own_move(step) -> str | None:
    """The note of a chain that drew with its own learned move (the surrogate trajectory, the
    KAM proposal) never fitted: its tuning phase, if any, ended before the first fit (or a warm
    start gave none), so its draws came from its other moves alone. A step names the attribute
    of its chain that holds that move in its class attribute ``own_move`` (none: no check)."""
    chain = step.chain
    attribute = getattr(step, "own_move", None)
    move = getattr(chain, attribute, None) if attribute else None
    if move is None or move.ready or chain.draws_done == 0:
        return None
    tuned = chain.total_iterations - chain.draws_done
    learned = getattr(chain, "learned_moves", None)
    others = [chain.random_walk] if learned is None else [m for m in learned.moves if m is not move]
    used = [f"`{m.kind}`" for m in others if m is not None and m.ready] or ["`random_walk`"]
    when = (
        "there was no tuning phase (tune=0) to fit it in"
        if tuned == 0
        else f"the {tuned} tuning iterations ended before its first fit"
    )
    return (
        f"{type(step).__name__}: its `{move.kind}` move was never fitted: {when}, which waits "
        "for a history of some hundred states with enough accepted moves. The draws are exact "
        f"but came from the moves ready when tuning ended alone: {', '.join(used)}. Tune for "
        "longer, or warm-start it (`history=`, for the KMC steps)."
    )


#: effective states in the late half of tuning below which a chain's learned moves have not
#: settled: the moves (a kernel's covariance, a surrogate, the mixture's weights, a step size)
#: are learned from that half, and so few independent states cannot describe the posterior's
#: spread in even one coordinate. On a 14-parameter non-centred hierarchical model with PyMC's
#: default tune=1000 (and four chains) KMCLite's and KAMH's chains had 1.6-3.6 in their slowest
#: coordinate and ended at R-hat 1.26-1.50; with tune=3000 KMCLite's had 16-73 and R-hat 1.01.
#: Healthy chains on Gaussians and bounded 3-4-d models had 20-200 with tune=1000, but
#: AdaptiveMetropolis, a random walk, 5-38 on a 4-d Gaussian over 30 seeds (one chain of another
#: random stream was reported); chains that mix slowly on the 4- and 8-d bananas had 7-9 (not
#: reported; AdaptiveMetropolis and KMCFinite on the 8-d banana 2.0-4.4, reported); KAMH with
#: tune=300 on a 4-d Gaussian 2.0-16 (reported in 3 of 8 seeds).
UNSETTLED_TUNING_EFFECTIVE_STATES = 5
#: the effective states in the late half of tuning that the suggested tuning length aims at
SETTLED_TUNING_EFFECTIVE_STATES = 10
#: the fewest states of the late half of tuning that the check judges (shorter: too few for an
#: autocorrelation; the never-fitted check speaks for very short tuning)
MIN_TUNING_STATES = 50


def tuning_mixing(step) -> TuningMixing | None:
    """At the end of tuning: the effective sample size of the late half of the chain's own
    tuning states (not a warm start's), in its slowest coordinate."""
    chain = step.chain
    if not step.checks_tuning_mixing or getattr(step, "warm_history", None) is not None:
        return None  # (a warm start's moves learned from the earlier run's states)
    states = chain.history.points
    late = states[len(states) // 2 :]
    if len(late) < MIN_TUNING_STATES:
        return None
    sizes = effective_sample_sizes(late)
    coordinate = int(np.argmin(sizes))
    return TuningMixing(float(sizes[coordinate]), coordinate, chain.iteration)


def unsettled_tuning(step) -> str | None:
    """The note of a chain whose tuning ended before its learned moves settled: the late half
    of its tuning phase, the states they learned from, is worth fewer than
    ``UNSETTLED_TUNING_EFFECTIVE_STATES`` independent draws in some coordinate. The tuning
    length it names scales the tuning phase to reach ``SETTLED_TUNING_EFFECTIVE_STATES``
    (effective states grow at least in proportion to the iterations, faster as the moves
    improve), rounded up to a multiple of 500."""
    mixing = step.chain.tuning_mixing
    if mixing is None or mixing.effective_states >= UNSETTLED_TUNING_EFFECTIVE_STATES:
        return None
    factor = SETTLED_TUNING_EFFECTIVE_STATES / max(mixing.effective_states, 1.0)
    needed = int(math.ceil(mixing.tuning_iterations * factor / 500.0) * 500)
    return (
        f"{type(step).__name__}: tuning ended before the learned moves settled: the late half of "
        f"the {mixing.tuning_iterations} tuning iterations, which they learned from, is worth "
        f"about {mixing.effective_states:.1f} independent states in coordinate "
        f"{mixing.coordinate} (fewer than {UNSETTLED_TUNING_EFFECTIVE_STATES}), so the moves were "
        "fitted to a chain that had not yet explored the posterior. The draws are exact but may "
        f"mix slowly and chains may disagree (R-hat). Tune for longer: about tune={needed}."
    )


def end_of_chain_warning(step) -> SamplerWarning | None:
    """One warning on the chain's last iteration if it was stuck, many of its proposals were
    degenerate or had a NaN log density, or any had a log density of +inf (PyMC logs it at the
    end of the chain)."""
    chain = step.chain
    if chain.iteration != chain.total_iterations or chain.total_iterations == 0:
        return None
    name, total = type(step).__name__, chain.total_iterations
    problems = []
    if chain.longest_rejection_run >= min(STUCK_RUN, max(total // 2, 1)):
        start = chain.longest_rejection_run_end - chain.longest_rejection_run + 1
        problems.append(
            f"the chain stayed at one point for {chain.longest_rejection_run} consecutive "
            f"iterations ({start} to {chain.longest_rejection_run_end} of {total}: no "
            "proposal that moved it was accepted)"
        )
    if chain.draws_done >= STUCK_RUN and chain.draws_accepted < LOW_ACCEPTANCE * chain.draws_done:
        problems.append(
            f"only {chain.draws_accepted} of {chain.draws_done} proposals after tuning were "
            "accepted"
        )
    problems.extend(too_few_moves_per_parameter(step))
    problems.extend(sticky_excursion(step))
    problems.extend(stalled_moves(step))
    if chain.degenerate_proposals > WARN_SHARE * total:
        problems.append(
            f"{chain.degenerate_proposals} of {total} proposals were degenerate (a "
            "non-finite point, trajectory or proposal density) and rejected without "
            "evaluating the model"
        )
    if chain.aborted_trajectories > ABORTED_WARN_SHARE * total:
        problems.append(
            f"{chain.aborted_trajectories} of {total} surrogate trajectories diverged or left "
            "the region the chain has seen and were rejected without evaluating the model "
            "(stat `diverging`)"
        )
    if chain.nan_log_densities > WARN_SHARE * total:
        problems.append(
            f"the model's log density was NaN at {chain.nan_log_densities} of {total} "
            "proposals (counted as rejections, stat `logp_nan`)"
        )
    notes = []
    if chain.draws_diverging and step.divergence_advice:
        notes.append(
            f"{name}: {chain.draws_diverging} of {chain.draws_done} draws after tuning are "
            f"`diverging`. {step.divergence_advice}"
        )
    if chain.infinite_log_densities:  # reported even alone: the model has such points
        notes.append(
            f"{name}: the model's log density was +inf at {chain.infinite_log_densities} "
            f"evaluations in the chain's {total} iterations, first at "
            f"{chain.first_infinite_at}; each was rejected (stat `logp_inf`). No proper "
            "posterior has such a point: it is an overflow far from the posterior (PyMC's "
            "`LKJCholeskyCov` gives +inf beyond a log-sd of about 19), which costs nothing but "
            "the rejection, or a bug in the model; evaluate `model.compile_logp()` there."
        )
    unfitted = unfitted_own_move(step)
    unsettled = None if unfitted else unsettled_tuning(step)
    notes.extend(note for note in (unfitted, unsettled) if note)
    # a few divergences are the price of long steps: no warning for them alone
    if not problems and not chain.infinite_log_densities and not unfitted and not unsettled:
        return None
    message = " ".join(notes)
    if problems:
        stats = ", ".join(f"`{s}`" for s in step.stuck_chain_stats)
        message = (
            f"{name}: a chain may not have mixed: " + "; ".join(problems) + ". Look at the "
            f"sample stats {stats} (with discard_tuned_samples=False for the tuning phase) and "
            "at the trace; a longer tuning phase or a better initial point often helps. " + message
        ).strip()
    return SamplerWarning(WarningType.BAD_ACCEPTANCE, message, "warning")


def too_few_moves_per_parameter(step) -> list[str]:
    """The problem of a chain whose draws cannot have explored its dimension: fewer than
    ``min_accepted_per_parameter`` accepted moves per parameter after tuning, over at least
    ``STUCK_RUN`` draws as the low-acceptance check (a chain that accepted almost nothing is
    reported as such instead)."""
    chain = step.chain
    needed = step.min_accepted_per_parameter
    if (
        needed is None
        or chain.draws_done < STUCK_RUN
        or chain.draws_accepted >= needed * step.dim
        or (
            chain.draws_done >= STUCK_RUN
            and chain.draws_accepted < LOW_ACCEPTANCE * chain.draws_done
        )
    ):
        return []
    return [
        f"{chain.draws_accepted} proposals after tuning were accepted for {step.dim} "
        f"parameters, {chain.draws_accepted / step.dim:.2g} per parameter, too few to explore "
        f"every direction (fewer than {needed:g} per parameter; a random walk's effective "
        "sample size is about 1.4 times its accepted moves per parameter, and one chain "
        "gives R-hat nothing to compare): draw more, or run several chains"
    ]
