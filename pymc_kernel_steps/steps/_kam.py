"""What KAMH and CKAM share: the parameters of the KAM move (paper 001), and the hand-over of
each iteration after the warm-up to the step's transition in
:mod:`~pymc_kernel_steps.core.transitions`."""

from __future__ import annotations

from .._validation import require_bool, require_fraction, require_int, require_positive
from ..core.kernels import Kernel
from ._health import count_unusable
from .base import KernelStep, Transition

__all__ = ["KAMStep"]


class KAMStep(KernelStep):
    """Shared base of :class:`~pymc_kernel_steps.KAMH` and :class:`~pymc_kernel_steps.CKAM`: checks
    and keeps the KAM move's parameters (documented in their docstrings), and hands each
    iteration after the warm-up to the step's transition, whose state is ``chain.transition``
    (subclasses implement :meth:`_step_transition` and may extend :meth:`_sync_transition`)."""

    def __init__(
        self,
        vars=None,
        *,
        kernel: Kernel | None = None,
        subsample_size: int = 500,
        gamma: float = 0.2,
        target_accept: float = 0.234,
        min_history: int | None = None,
        refresh_interval: int = 20,
        whiten: bool = True,
        **shared,
    ):
        if kernel is not None and not isinstance(kernel, Kernel):
            raise TypeError(f"`kernel` must be a pymc_kernel_steps Kernel, got {kernel!r}.")
        require_int("subsample_size", subsample_size, minimum=2)
        require_int("refresh_interval", refresh_interval, minimum=1)
        if min_history is not None:
            require_int("min_history", min_history, minimum=2)
        require_positive("gamma", gamma)
        require_fraction("target_accept", target_accept)
        require_bool("whiten", whiten)
        self.kernel = kernel
        self.subsample_size = int(subsample_size)
        self.gamma = float(gamma)
        self.target_accept = float(target_accept)
        self._min_history_arg = min_history
        self.refresh_interval = int(refresh_interval)
        self.whiten = bool(whiten)
        super().__init__(vars, **shared)

    # ------------------------------------------------------------------ the transition
    def _step_transition(self, state, log_density):  # pragma: no cover
        """One iteration of the step's transition (``core.transitions.<name>.step``) from
        ``state`` with ``log_density``; returns ``(state, info)``."""
        raise NotImplementedError

    def _sync_transition(self, state) -> None:
        """Hand the transition's ``state`` what the chain counts outside it (the warm-up's
        iterations included) and the start's frame the warm-up measured."""
        chain = self.chain
        state.iteration = chain.iteration
        state.start_frame = chain.start_scales

    def _iterate(self, q0, x, logp_current, evaluations):
        """Hand the chain's state, at ``x``, to the step's transition and take back what it
        did (the model's log density is evaluated once, at the proposal)."""
        chain = self.chain
        state = chain.transition
        state.position, state.log_density = x, logp_current
        self._sync_transition(state)
        unusable = [False, False]

        def log_density(point):
            value = self._evaluate_logp(point, q0.point_map_info, proposal=True)
            unusable[:] = count_unusable(self, value, point, q0.point_map_info)
            return value

        state, info = self._step_transition(state, log_density)
        proposal = info.proposal
        self._count_unevaluated(proposal)
        chain.current_point, chain.current_logp = state.position, state.log_density
        chain.iteration = state.iteration
        chain.adaptation_iteration = state.adaptation_iteration
        moved = info.accepted and not proposal.stays
        self._track_rejections(info.accepted, moved=moved, kind=proposal.kind)
        transition = Transition(
            proposal, info, info.accepted, info.accept_prob, info.log_accept_ratio
        )
        return self._result(q0, transition, evaluations + info.evaluations, *unusable)
