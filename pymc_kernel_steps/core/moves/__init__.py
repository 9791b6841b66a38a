"""Moves: small proposal objects with one protocol (:class:`Move`), and their mixtures and
cycles as data. Never imports PyMC."""

from .base import MOVE_KINDS, Move, MoveTally, Proposal, move_code
from .differential_evolution import DifferentialEvolution, Snooker
from .envelope import ENVELOPE_DOF, ENVELOPE_PRODUCT_SHARE, Envelope
from .jumps import BlindJump, CosineWalk, ModeHop
from .kam import KAMMove, kamh_propose
from .learned import LearnedMoves
from .mixture import Cycle, Mixture
from .random_walk import RW_FACTOR, CoordinateWalk, RandomWalk, optimal_scale
from .trajectory import SurrogateHMC, Trajectory

__all__ = [
    "MOVE_KINDS",
    "RW_FACTOR",
    "BlindJump",
    "CoordinateWalk",
    "CosineWalk",
    "Cycle",
    "DifferentialEvolution",
    "ENVELOPE_DOF",
    "ENVELOPE_PRODUCT_SHARE",
    "Envelope",
    "KAMMove",
    "LearnedMoves",
    "Mixture",
    "ModeHop",
    "Move",
    "MoveTally",
    "Proposal",
    "RandomWalk",
    "Snooker",
    "SurrogateHMC",
    "Trajectory",
    "kamh_propose",
    "move_code",
    "optimal_scale",
]
