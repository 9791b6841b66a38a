"""The steps' public constructors: option objects (:mod:`pymc_kernel_steps.options`) in, the
keywords of the steps' internal ``_configure`` out, and the keywords of earlier releases mapped to
the options with a ``DeprecationWarning`` that names the new spelling.

A step declares its options as :class:`Slot` s; :func:`resolve` turns what the user passed into
one option per slot (the given object, one named by a string, or the step's default, changed by
any deprecated keyword) and :func:`configuration` into the internal keywords.
"""

from __future__ import annotations

import inspect
import warnings
from abc import ABCMeta
from collections.abc import Callable
from dataclasses import dataclass, field, fields, replace

from .._validation import require_bool, require_choice, require_int
from ..options import (
    BayesianTuning,
    Climb,
    Cycles,
    FixedMoves,
    KAMProposal,
    LearnedMixture,
    Regression,
    ScoreMatching,
    Scouts,
    Trajectory,
    Walkers,
    WarmupPhase,
    warmup_keywords,
)

__all__ = [
    "CYCLES",
    "MOVES",
    "TRAJECTORY",
    "TUNING",
    "HELP_NAMES",
    "Slot",
    "StepClass",
    "configuration",
    "kam_proposal",
    "public_signature",
    "resolve",
    "warmup_slot",
]

#: fields an option lacks, the value that means the option's own behaviour, and why another
#: value is refused (a deprecated keyword that today's option cannot hold)
_IMPLICIT = {
    (Regression, "whiten"): (
        True,
        "surrogate='regression' (the default) needs whiten=True: its Gaussian term, fitted to "
        "the evaluations, defines the frame of the surrogate (with whiten=False it would be "
        "N(0, I) in the model's coordinates). For the paper's isotropic kernel in the model's "
        "coordinates pass surrogate=ScoreMatching(whiten=False).",
    ),
    (ScoreMatching, "trend"): (
        "auto",
        "`trend` is the parametric part of surrogate='regression'; surrogate='score_matching' "
        "has none (got trend={value!r}).",
    ),
    (LearnedMixture, "random_walk_probability"): (
        None,
        "`random_walk_probability` is the random walk's share of moves='fixed' (the paper's "
        "trajectory mixed with a random walk); moves='learned', the default, learns every "
        "move's share while tuning. Pass moves=FixedMoves(random_walk_probability={value!r}) "
        "(0 is the paper's pure form).",
    ),
}


@dataclass(frozen=True)
class Slot:
    """One option parameter of a step: its name, the option classes it takes, its default, the
    strings it accepts, and the deprecated keywords it holds (keyword -> the option's field)."""

    parameter: str
    kinds: tuple[type, ...]
    default: Callable[[], object]
    old: dict[str, str] = field(default_factory=dict)
    strings: dict[str, type] = field(default_factory=dict)

    def option(self, step: str, value):
        """The option ``value`` stands for: itself, the one a string names, or the default."""
        if value is None:
            return self.default()
        if isinstance(value, str) and self.strings:
            require_choice(self.parameter, value, tuple(self.strings))
            return self.strings[value]()
        if not isinstance(value, self.kinds):
            names = " or ".join(kind.__name__ for kind in self.kinds)
            strings = "".join(f", {name!r}" for name in self.strings)
            raise TypeError(
                f"{step}: `{self.parameter}` must be a {names} option{strings} or None, got "
                f"{value!r} of type {type(value).__name__}."
            )
        return value

    def spelling(self, option, name: str, changed) -> str:
        """The new spelling of the deprecated keyword ``name``."""
        target = self.old[name]
        if target in {f.name for f in fields(option)}:
            return f"`{self.parameter}={type(option).__name__}({target}=...)`"
        holder = next(k for k in self.kinds if target in {f.name for f in fields(k)})
        return (
            f"`{self.parameter}={holder.__name__}({target}=...)` ({type(option).__name__}, "
            f"the {self.parameter} in use, has no `{target}`: drop it)"
        )

    def apply(self, step: str, option, changes: dict):
        """``option`` with the fields the deprecated keywords ``changes`` set."""
        own = {f.name for f in fields(option)}
        for name, value in changes.items():
            if name not in own:
                implicit, reason = _IMPLICIT[type(option), name]
                if value != implicit:
                    raise ValueError(f"{step}: " + reason.format(value=value))
        return replace(option, **{name: value for name, value in changes.items() if name in own})


class _WarmupSlot(Slot):
    """``warmup=[...]``: a list of phases; the deprecated ``scouts``, ``walkers`` and ``climb``
    add, change or remove one."""

    def option(self, step: str, value):
        phases = self.default() if value is None else value
        warmup_keywords(phases)  # checked
        return list(phases)

    def spelling(self, option, name: str, changed) -> str:
        return f"`warmup={changed!r}`"

    def apply(self, step: str, option, changes: dict):
        phases = {type(phase): phase for phase in option}
        for name, value in changes.items():
            if name == "climb":
                require_bool("climb", value)
                kind, phase = Climb, Climb() if value else None
            else:
                require_int(name, value, minimum=1)
                kind = Scouts if name == "scouts" else Walkers
                phase = kind(value) if value > 1 else None
            phases[kind] = phase
        order = (Climb, Scouts, Walkers)
        return [phases[kind] for kind in order if phases.get(kind) is not None]


def warmup_slot(*default: WarmupPhase) -> Slot:
    """The ``warmup`` option of a step whose default phases are ``default``."""
    return _WarmupSlot(
        "warmup",
        (list, tuple),
        lambda: list(default),
        old={"scouts": "scouts", "walkers": "walkers", "climb": "climb"},
    )


TRAJECTORY = Slot(
    "trajectory",
    (Trajectory,),
    Trajectory,
    old={
        "n_steps": "n_steps",
        "step_size": "step_size",
        "step_size_adaptation": "step_size_adaptation",
        "trajectory_tuning": "tuning",
        "target_accept": "target_accept",
        "step_size_jitter": "jitter",
        "adapt_mass": "adapt_mass",
        "confine": "confine",
    },
)
MOVES = Slot(
    "moves",
    (LearnedMixture, FixedMoves),
    LearnedMixture,
    old={"random_walk_probability": "random_walk_probability"},
    strings={"learned": LearnedMixture, "fixed": FixedMoves},
)
#: the KAM proposal's deprecated keywords its steps share (KAMH adds ``kernel`` and ``nu2``)
_KAM_FIELDS = (
    "subsample_size",
    "gamma",
    "target_accept",
    "min_history",
    "refresh_interval",
    "whiten",
)


def kam_proposal(*extra: str) -> Slot:
    """The ``proposal`` option, with the deprecated keywords of the KAM fields and ``extra``."""
    return Slot(
        "proposal",
        (KAMProposal,),
        KAMProposal,
        old={name: name for name in (*_KAM_FIELDS, *extra)},
    )


CYCLES = Slot(
    "cycles",
    (Cycles,),
    Cycles,
    old={
        "cycle_length": "length",
        "exploration_fraction": "exploration_fraction",
        "jump_scale": "jump_scale",
        "mode_jumps": "mode_jumps",
        "sampling_hops": "sampling_hops",
        "sampling_jumps": "sampling_jumps",
    },
)
TUNING = Slot(
    "tuning",
    (BayesianTuning,),
    BayesianTuning,
    old={
        name: name
        for name in ("step_size_bounds", "n_steps_bounds", "n_windows", "window", "reward_max")
    },
)


def resolve(step: str, slots: tuple[Slot, ...], given: dict, deprecated: dict) -> dict:
    """One option per slot, from ``given`` (parameter -> what the user passed) and the
    ``deprecated`` keywords, each warned about with its new spelling.

    Raises
    ------
    TypeError
        An unknown keyword, or a deprecated keyword beside an option object that holds it.
    """
    owner = {name: slot for slot in slots for name in slot.old}
    for name in deprecated:
        if name not in owner:
            raise TypeError(f"{step}.__init__() got an unexpected keyword argument {name!r}")
    options = {}
    for slot in slots:
        value = given[slot.parameter]
        option = slot.option(step, value)
        changes = {slot.old[n]: v for n, v in deprecated.items() if owner[n] is slot}
        if changes and not (value is None or isinstance(value, str)):
            both = next(n for n in deprecated if owner[n] is slot)
            raise TypeError(
                f"{step}() got both `{both}` (deprecated) and `{slot.parameter}`, which holds "
                f"it: pass {slot.spelling(option, both, option)} alone."
            )
        if changes:
            changed = slot.apply(step, option, changes)
            for name in (n for n in deprecated if owner[n] is slot):
                warnings.warn(
                    f"`{step}({name}=...)` is deprecated: use "
                    f"{slot.spelling(option, name, changed)}.",
                    DeprecationWarning,
                    stacklevel=3,
                )
            option = changed
        options[slot.parameter] = option
    return options


def configuration(options: dict) -> dict:
    """The internal ``_configure`` keywords of the resolved ``options``."""
    keywords = {}
    for option in options.values():
        if isinstance(option, list):
            keywords.update(warmup_keywords(option))
        else:
            keywords.update(option.keywords())
    return keywords


def public_signature(init):
    """Show ``init`` without its ``**deprecated`` catch-all: ``inspect.signature``, ``help()``
    and editors list the options alone."""
    signature = inspect.signature(init)
    parameters = [
        p for p in signature.parameters.values() if p.kind is not inspect.Parameter.VAR_KEYWORD
    ]
    init.__signature__ = signature.replace(parameters=parameters)
    return init


class StepClass(ABCMeta):
    """The metaclass of the steps: ``dir()`` of a step class, and so ``help()``, lists its user
    surface (:data:`HELP_NAMES`), not the hooks of PyMC's step-method interface and of the
    package's internals, which stay reachable by name as before (``dir()`` of a step object is
    unchanged)."""

    def __dir__(cls) -> list[str]:
        return sorted(name for name in super().__dir__() if name in HELP_NAMES)


#: what ``help()`` of a step class lists below its docstring
HELP_NAMES = frozenset({"phases", "moves", "start_evaluations"})
