"""The steps' side of ``moves=``: the parameter's values and the learned mixture's declared stats
(the mixture itself is :class:`~pymc_kernel_steps.core.moves.learned.LearnedMoves`; the ``move``
sample stat's codes are :data:`~pymc_kernel_steps.core.moves.MOVE_KINDS`).
"""

from __future__ import annotations

from .._validation import require_fraction

__all__ = [
    "MOVES",
    "learned_instance_stats",
    "moves_attribute",
]

#: the values of the steps' ``moves`` parameter
MOVES = ("fixed", "learned")


def require_moves(moves) -> str:
    """Check the ``moves`` parameter."""
    if not isinstance(moves, str) or moves not in MOVES:
        raise ValueError(
            f"`moves` must be one of {MOVES}: 'fixed' (the step's own move, as the papers, "
            "mixed with a random walk where the step has one) or 'learned' (its own move, a "
            "random walk, differential evolution, snooker and an independence envelope, with "
            f"weights learned while tuning); got moves={moves!r}."
        )
    return moves


def random_walk_share(step: str, moves: str, share, default: float) -> float:
    """``random_walk_probability`` of a KMC step: ``default`` when not given; an error with
    ``moves="learned"``, which learns every move's share (never silently ignored)."""
    if share is None:
        return default
    require_fraction("random_walk_probability", share, zero=True)
    if moves == "learned":
        raise ValueError(
            "`random_walk_probability` is the random walk's share of moves='fixed' (the "
            "paper's trajectory mixed with a random walk); moves='learned', the default, "
            f"learns every move's share while tuning. Pass moves='fixed' with it ({step}("
            f"moves='fixed', random_walk_probability={share!r}); 0 is the paper's pure form)."
        )
    return share


def learned_instance_stats(step) -> dict:
    """A step's ``_instance_stats``: its learned mixture's weights and acceptances (none with
    ``moves="fixed"``)."""
    learned = step.chain.learned_moves
    return {} if learned is None else learned.stats_dtypes_shapes()


#: a step's ``moves`` attribute: read-only, since the sample stats it declares depend on it
moves_attribute = property(
    lambda step: step._moves, doc='``"learned"`` or ``"fixed"``, as the step was built.'
)
