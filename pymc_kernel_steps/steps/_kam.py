"""What KAMH and CKAM share: the parameters of the KAM move (paper 001)."""

from __future__ import annotations

from .._validation import require_bool, require_fraction, require_int, require_positive
from ..core.kernels import Kernel
from .base import KernelStep

__all__ = ["KAMStep"]


class KAMStep(KernelStep):
    """Shared base of :class:`~pymc_kernel_steps.KAMH` and :class:`~pymc_kernel_steps.CKAM`: checks
    and keeps the KAM move's parameters (documented in their docstrings)."""

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
