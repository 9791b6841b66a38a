"""References: the truth the runs' estimates are compared with.

:class:`Reference` holds the moments (and optionally draws) of a target's flattened variables;
:func:`reference_for` builds the reference of a target of
:data:`~pymc_kernel_steps_bench.targets.TARGETS` from its exact moments, an exact sampler
(:data:`EXACT_SAMPLERS`) or its cached reference run.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

__all__ = [
    "EXACT_SAMPLERS",
    "GAUSSIAN_POSTERIORS",
    "REFERENCE_DRAWS",
    "Reference",
    "reference_for",
    "reference_run_var_sq",
]

#: draws of an exact sampler behind a reference
REFERENCE_DRAWS = 200_000


@dataclass
class Reference:
    """The truth to compare estimates with, for the flattened, concatenated variables.

    Attributes
    ----------
    mean : np.ndarray
        ``E[x_i]``.
    var : np.ndarray
        ``Var(x_i)`` (so ``E[x_i²] = var + mean²``).
    var_sq : np.ndarray or None
        ``Var(x_i²)``, needed to scale the error of the second moments (for a
        :class:`~pymc_kernel_steps_bench.targets.Target` with a cached reference run, that run's).
        When None, :func:`~.runners.compare_samplers` estimates it from the pooled draws of all
        samplers (the same scale for every sampler, so the ranking is unaffected, but samplers
        that have not converged inflate it) and marks it in the frame.
    draws : np.ndarray or None
        ``(n, k)`` draws from the target, for plots (and the moments when built from draws).
    """

    mean: np.ndarray
    var: np.ndarray
    var_sq: np.ndarray | None = None
    draws: np.ndarray | None = None

    def __post_init__(self):
        self.mean = np.atleast_1d(np.asarray(self.mean, dtype=float))
        self.var = np.broadcast_to(np.asarray(self.var, dtype=float), self.mean.shape).copy()
        if np.any(~(self.var > 0)):
            raise ValueError("reference: var must be positive")
        if self.var_sq is not None:
            self.var_sq = np.broadcast_to(np.asarray(self.var_sq, float), self.mean.shape).copy()
        if self.draws is not None:
            self.draws = np.asarray(self.draws, dtype=float).reshape(len(self.draws), -1)

    @property
    def mean_sq(self) -> np.ndarray:
        """``E[x_i²]``."""
        return self.var + self.mean**2

    @classmethod
    def from_draws(cls, draws, mean=None, var=None) -> Reference:
        """A reference from (exact or long converged) draws ``(n, k)``.

        Exact ``mean``/``var`` given here override the draws' estimates; ``Var(x²)`` always comes
        from the draws.
        """
        draws = np.asarray(draws, dtype=float)
        draws = draws.reshape(len(draws), -1)
        return cls(
            mean=draws.mean(axis=0) if mean is None else mean,
            var=draws.var(axis=0, ddof=1) if var is None else var,
            var_sq=(draws**2).var(axis=0, ddof=1),
            draws=draws,
        )

    @classmethod
    def coerce(cls, reference) -> Reference | None:
        """Accept a :class:`Reference`, a dict (``mean``, ``var``, optional ``var_sq``,
        ``draws``), an object with ``true_mean``/``true_var`` (a
        :class:`~pymc_kernel_steps_bench.targets.Target`), an array of draws ``(n, k)``, or None."""
        if reference is None or isinstance(reference, Reference):
            return reference
        if isinstance(reference, Mapping):
            unknown = set(reference) - {"mean", "var", "var_sq", "draws"}
            if unknown or not {"mean", "var"} <= set(reference):
                raise ValueError(
                    "reference: a dict needs the keys 'mean' and 'var' (optional 'var_sq', "
                    f"'draws'), got {sorted(reference)}"
                )
            return cls(**reference)
        if hasattr(reference, "true_mean"):
            if reference.true_mean is None or reference.true_var is None:
                raise ValueError(f"reference: {reference!r} has no true moments")
            var_sq = reference_run_var_sq(getattr(reference, "reference", None))
            return cls(reference.true_mean, reference.true_var, var_sq=var_sq)
        array = np.asarray(reference, dtype=float)
        if array.ndim != 2 or len(array) < 3:
            raise ValueError(
                "reference: expected a Reference, a dict of moments, a Target or draws of shape "
                f"(n, k), got an array of shape {array.shape}"
            )
        return cls.from_draws(array)


def reference_run_var_sq(reference_run: Mapping | None) -> np.ndarray | None:
    """``Var_π(x_i²)`` of a cached reference run (a dict from
    :func:`~pymc_kernel_steps_bench.targets.load_reference`): ``MCSE² × ESS`` of its second moments,
    the variance behind the MCSE it reports; None when there is no run or it lacks those
    fields."""
    if reference_run is None:
        return None
    mcse = reference_run.get("mcse_second_moment")
    ess = reference_run.get("ess_second_moment")
    if mcse is None or ess is None:
        return None
    var_sq = np.asarray(mcse, dtype=float) ** 2 * np.asarray(ess, dtype=float)
    return var_sq if np.all(np.isfinite(var_sq)) and np.all(var_sq > 0) else None


# ------------------------------------------------------------------- the targets' references
def _banana_sample(rng, size):
    from .targets.synthetic import banana_sample

    return banana_sample(rng, size, dim=8)


def _bimodal_sample(rng, size):
    from .targets.synthetic import BIMODAL_MEANS, BIMODAL_VARIANCES, BIMODAL_WEIGHTS

    rng = np.random.default_rng(rng)
    component = rng.choice(len(BIMODAL_WEIGHTS), p=BIMODAL_WEIGHTS, size=size)
    sd = np.sqrt(BIMODAL_VARIANCES[component])[:, None]
    return BIMODAL_MEANS[component] + sd * rng.standard_normal((size, 2))


#: exact samplers ``(rng, size) -> (size, k)`` for the targets that have one: they give
#: Var(x²) (the scale of the second-moment errors) and the reference marginals in the plots
EXACT_SAMPLERS = {
    "banana": _banana_sample,
    "bimodal": _bimodal_sample,
}


#: targets whose posterior is exactly Gaussian (the 4-d correlated Gaussian; the conjugate model
#: behind the noisy pseudo-marginal target)
GAUSSIAN_POSTERIORS = ("gaussian", "noisy")


def reference_for(name, target) -> Reference | None:
    """Exact moments of ``target`` (or those of its cached reference run, with Var(x²) from
    that run); Var(x²) and draws from an exact sampler when there is one."""
    if getattr(target, "true_mean", None) is None or getattr(target, "true_var", None) is None:
        return None
    sample = EXACT_SAMPLERS.get(name) or getattr(target, "sample", None)
    if sample is None:
        if name in GAUSSIAN_POSTERIORS:  # x_i ~ N(μ, σ²): Var(x_i²) = 2σ⁴ + 4μ²σ²
            mean, var = np.asarray(target.true_mean), np.asarray(target.true_var)
            return Reference(mean, var, var_sq=2.0 * var**2 + 4.0 * mean**2 * var)
        return Reference.coerce(target)  # Var(x²) from the target's reference run
    draws = np.asarray(sample(np.random.default_rng(12345), REFERENCE_DRAWS), dtype=float)
    return Reference.from_draws(draws, mean=target.true_mean, var=target.true_var)
