"""Leapfrog integration of Hamiltonian dynamics with a diagonal mass matrix.

The Hamiltonian is ``H(q, p) = -log π(q) + ½ pᵀ M⁻¹ p`` with ``M⁻¹ = diag(inv_mass_diag)``. One
leapfrog trajectory of ``L`` steps of size ``ε`` is::

    p ← p + ε/2 ∇log π(q)
    repeat L times:  q ← q + ε M⁻¹ p ;  p ← p + ε ∇log π(q)   (the last momentum step is ε/2)

:func:`leapfrog` drives any Python gradient function. :func:`surrogate_trajectory` is the one
numba-compiled trajectory on the surrogates of :mod:`.score_matching` and :mod:`.regression`
(it backs their common ``trajectory`` method, :class:`SurrogateTrajectory`): a surrogate gives
its gradient as a :class:`GradientSpec`, an integer kind and its parameters as plain arrays, so
that the loop compiles once and its on-disk cache holds no reference to a function object; the
confining wall and abort ball come as one :class:`~.confinement.Confinement`. A non-finite
gradient or momentum ends a trajectory early with an all-NaN position, so that the caller's
accept test rejects it; nothing raises.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import NamedTuple

import numba
import numpy as np

from .confinement import Confinement

__all__ = [
    "GradientSpec",
    "SurrogateTrajectory",
    "finite_gradient",
    "kinetic_energy",
    "leapfrog",
    "lite_gradient",
    "regression_gradient",
    "surrogate_trajectory",
]

NO_CONFINEMENT = Confinement()


def _as_inv_mass(inv_mass_diag, d: int) -> np.ndarray:
    if inv_mass_diag is None:
        return np.ones(d)
    inv_mass = np.asarray(inv_mass_diag, dtype=float)
    if inv_mass.ndim == 0:
        inv_mass = np.full(d, float(inv_mass))
    if inv_mass.shape != (d,):
        raise ValueError(
            f"`inv_mass_diag` must be a scalar or have shape ({d},), got shape {inv_mass.shape}."
        )
    if not np.all(np.isfinite(inv_mass)) or np.any(inv_mass <= 0):
        raise ValueError("`inv_mass_diag` must be positive and finite.")
    return np.ascontiguousarray(inv_mass)


def _check_trajectory_args(q, p, step_size, n_steps, inv_mass_diag):
    q = np.asarray(q, dtype=float)
    p = np.asarray(p, dtype=float)
    if q.ndim != 1:
        raise ValueError(f"`q` must be a 1-d position vector, got shape {q.shape}.")
    if p.shape != q.shape:
        raise ValueError(f"`p` must have the shape of `q` {q.shape}, got {p.shape}.")
    step_size = float(step_size)
    if not math.isfinite(step_size):
        raise ValueError(f"`step_size` must be finite, got {step_size!r}.")
    if isinstance(n_steps, bool) or int(n_steps) != n_steps or n_steps < 0:
        raise ValueError(f"`n_steps` must be a non-negative integer, got {n_steps!r}.")
    inv_mass = _as_inv_mass(inv_mass_diag, q.shape[0])
    return np.ascontiguousarray(q), np.ascontiguousarray(p), step_size, int(n_steps), inv_mass


def kinetic_energy(p, inv_mass_diag=None):
    """Kinetic energy ``½ Σ_l p_l² m⁻¹_l`` of a momentum under a diagonal mass matrix.

    Parameters
    ----------
    p : array_like, shape (..., d)
        Momentum (or a stack of momenta along the leading axes).
    inv_mass_diag : array_like, shape (d,) or scalar, optional
        Diagonal of the inverse mass matrix ``M⁻¹`` (default: identity).

    Returns
    -------
    float or ndarray
        ``½ pᵀ M⁻¹ p``, summed over the last axis (a float for a single momentum).
    """
    p = np.asarray(p, dtype=float)
    if p.ndim == 0:
        raise ValueError("`p` must have at least one dimension.")
    inv_mass = _as_inv_mass(inv_mass_diag, p.shape[-1])
    energy = 0.5 * np.sum(p * p * inv_mass, axis=-1)
    return float(energy) if np.ndim(energy) == 0 else energy


def leapfrog(
    grad_log_density: Callable[[np.ndarray], np.ndarray],
    q,
    p,
    step_size: float,
    n_steps: int,
    inv_mass_diag=None,
) -> tuple[np.ndarray, np.ndarray]:
    """Leapfrog trajectory for an arbitrary gradient function.

    Parameters
    ----------
    grad_log_density : callable
        ``grad_log_density(q) -> array (d,)``, the gradient of the log density (``-∇U``).
    q, p : array_like, shape (d,)
        Initial position and momentum (not modified).
    step_size : float
        Step size ``ε`` (any finite value; a negative one integrates backwards).
    n_steps : int
        Number ``L ≥ 0`` of leapfrog steps (``0`` returns copies of the inputs).
    inv_mass_diag : array_like, shape (d,) or scalar, optional
        Diagonal of the inverse mass matrix (default: identity).

    Returns
    -------
    q_new, p_new : ndarray, shape (d,)
        End point of the trajectory. If the gradient (or the momentum) becomes non-finite,
        the trajectory stops and ``q_new`` is all NaN, so an accept test rejects it.

    Raises
    ------
    ValueError
        For malformed arguments (shapes, non-finite step size, negative ``n_steps``, a
        non-positive inverse mass).
    """
    q, p, eps, n_steps, inv_mass = _check_trajectory_args(q, p, step_size, n_steps, inv_mass_diag)
    q = q.copy()
    p = p.copy()
    if n_steps == 0:
        return q, p
    d = q.shape[0]

    def gradient(position):
        with np.errstate(all="ignore"):
            g = np.asarray(grad_log_density(position), dtype=float)
        if g.shape != (d,):
            raise ValueError(
                f"`grad_log_density` must return shape ({d},), returned shape {g.shape}."
            )
        return g

    def failed():
        return np.full(d, np.nan), p

    g = gradient(q)
    if not np.all(np.isfinite(g)):
        return failed()
    p += 0.5 * eps * g
    for step in range(n_steps):
        q += eps * inv_mass * p
        g = gradient(q)
        if not np.all(np.isfinite(g)):
            return failed()
        p += (eps if step < n_steps - 1 else 0.5 * eps) * g
        if not np.all(np.isfinite(p)):
            return failed()
    return q, p


# ---------------------------------------------------------------------------------------------
# numba trajectories on the surrogates


@numba.njit(cache=True)
def _all_finite(x):
    for value in x:
        if not math.isfinite(value):
            return False
    return True


@numba.njit(cache=True)
def _gaussian_kernel_gradient(Z, ZT, coef, precisions, scale, q, out, work):
    # out = Σ_i c_i k(z_i, q) s P (z_i − q)  with k = exp(−½ s Σ_j P_j (z_ij − q_j)²): the gradient
    # of Σ_i c_i k(z_i, ·) for the kernel of per-coordinate precisions s P_j. The squared
    # distances accumulate in `work` (length n) coordinate by coordinate over all centres at once
    # (ZT: Z transposed, C-contiguous): each sum takes its terms in the order of a sum per
    # centre, and the n independent sums vectorise
    n, d = Z.shape
    for i in range(n):
        work[i] = 0.0
    for j in range(d):
        qj = q[j]
        pj = precisions[j]
        row = ZT[j]
        for i in range(n):
            t = row[i] - qj
            work[i] += pj * t * t
    for j in range(d):
        out[j] = 0.0
    for i in range(n):
        w = coef[i] * math.exp(-0.5 * scale * work[i])
        for j in range(d):
            out[j] += w * (Z[i, j] - q[j])
    for j in range(d):
        out[j] *= scale * precisions[j]


# the surrogates whose gradients the compiled trajectory evaluates; each passes its parameters
# as (A, b, c, s): plain arrays and a float, so that the trajectory compiles (and caches on disk)
# once for all of them
_LITE, _FINITE, _REGRESSION = 0, 1, 2
#: the regression trend's (g, H, T, Q) for t(q) = −½‖q‖², and for the other surrogates (the
#: compiled gradient tests for it by its empty first array)
NO_TREND = (np.empty(0), np.empty((0, 0)), np.empty((0, 0)), np.empty((0, 0)))


@numba.njit(cache=True)
def _add_trend_gradient(linear, precision, cubic, quartic, q, out):
    # out += ∇t(q) for t(q) = gᵀq − ½qᵀHq + Σ_ij T_ij q_i q_j² − ½ sᵀQs, s = q∘q
    d = q.shape[0]
    for k in range(d):
        total = linear[k]
        for j in range(d):
            sj = q[j] * q[j]
            total += -precision[k, j] * q[j] + cubic[k, j] * sj
            total += 2.0 * q[k] * (cubic[j, k] * q[j] - quartic[k, j] * sj)
        out[k] += total


@numba.njit(cache=True)
def _surrogate_gradient(kind, A, AT, b, c, s, trend, q, out, work):
    # writes the surrogate's ∇f(q) into `out`; False if it is not finite (`work`: scratch of
    # length A.shape[0]; AT: A transposed, C-contiguous)
    if kind == _FINITE:
        # ∇f(q) = −s Σ_k θ_k sin(ω_kᵀq + u_k) ω_k  (A = ω, b = u, c = θ, s = √(2/m)); the phases
        # ω_kᵀq + u_k accumulate in `work` coordinate by coordinate (each in its own order)
        m, d = A.shape
        for k in range(m):
            work[k] = b[k]
        for j in range(d):
            qj = q[j]
            row = AT[j]
            for k in range(m):
                work[k] += row[k] * qj
        for j in range(d):
            out[j] = 0.0
        for k in range(m):
            w = -s * c[k] * math.sin(work[k])
            for j in range(d):
                out[j] += w * A[k, j]
    else:
        # lite: ∇f(q) = Σ_i α_i k(z_i, q) (z_i − q) / ℓ²  (A = Z, b = α, c = 1, s = 1/ℓ²);
        # regression: ∇f(q) = ∇t(q) + Σ_i β_i k(z_i, q) P (z_i − q)  (A = Z, b = β, c = P,
        # s = 1, `trend` = (g, H, T, Q) of t, or empty for t(q) = −½‖q‖²)
        _gaussian_kernel_gradient(A, AT, b, c, s, q, out, work)
        if kind == _REGRESSION:
            if trend[0].shape[0] == 0:
                for j in range(q.shape[0]):
                    out[j] -= q[j]
            else:
                _add_trend_gradient(trend[0], trend[1], trend[2], trend[3], q, out)
    return _all_finite(out)


@numba.njit(cache=True)
def _add_wall(q, radius, stiffness, out):
    # gradient of −(k/2)(‖q‖ − R)₊²: zero inside the ball of radius R, a restoring force outside
    if stiffness == 0.0 or not math.isfinite(radius):
        return
    norm = 0.0
    for j in range(q.shape[0]):
        norm += q[j] * q[j]
    norm = math.sqrt(norm)
    if norm > radius:
        pull = stiffness * (norm - radius) / norm
        for j in range(q.shape[0]):
            out[j] -= pull * q[j]


@numba.njit(cache=True)
def _trajectory(
    kind, A, b, c, s, trend, q0, p0, eps, n_steps, inv_mass, radius, stiffness, abort_radius
):
    # leapfrog on the surrogate `kind` with parameters (A, b, c, s, trend) (see
    # _surrogate_gradient); all-NaN if a position leaves the ball of radius `abort_radius`
    d = q0.shape[0]
    abort_squared = abort_radius * abort_radius
    q = q0.copy()
    p = p0.copy()
    if n_steps == 0:
        return q, p
    g = np.empty(d)
    work = np.empty(A.shape[0])
    AT = np.ascontiguousarray(A.T)
    # the start counts as a position of the trajectory: the reversal ends there
    if np.sum(q * q) > abort_squared or not _surrogate_gradient(
        kind, A, AT, b, c, s, trend, q, g, work
    ):
        q[:] = np.nan
        return q, p
    _add_wall(q, radius, stiffness, g)
    for j in range(d):
        p[j] += 0.5 * eps * g[j]
    for step in range(n_steps):
        squared_norm = 0.0
        for j in range(d):
            q[j] += eps * inv_mass[j] * p[j]
            squared_norm += q[j] * q[j]
        if squared_norm > abort_squared or not _surrogate_gradient(
            kind, A, AT, b, c, s, trend, q, g, work
        ):
            q[:] = np.nan
            return q, p
        _add_wall(q, radius, stiffness, g)
        h = eps if step < n_steps - 1 else 0.5 * eps
        for j in range(d):
            p[j] += h * g[j]
            if not math.isfinite(p[j]):
                q[:] = np.nan
                return q, p
    return q, p


class GradientSpec(NamedTuple):
    """A surrogate's gradient as the compiled trajectory evaluates it: which surrogate
    (``kind``), its parameters as plain arrays ``A, b, c`` and a float ``s``, and the regression
    trend's ``(g, H, T, Q)`` (``NO_TREND`` for the others). Build it with
    :func:`lite_gradient`, :func:`finite_gradient` or :func:`regression_gradient`, or take it
    from a fitted surrogate's ``gradient_spec()``."""

    kind: int
    A: np.ndarray
    b: np.ndarray
    c: np.ndarray
    s: float
    trend: tuple

    @property
    def dim(self) -> int:
        """The dimension ``d`` of the positions."""
        return self.A.shape[1]


def lite_gradient(Z, alpha, lengthscale) -> GradientSpec:
    """The gradient of the lite surrogate ``f(x) = Σ α_i k(z_i, x)`` with the Gaussian kernel
    ``k(z, x) = exp(−‖z − x‖² / (2ℓ²))``: ``∇f(x) = Σ α_i k(z_i, x)(z_i − x) / ℓ²``.

    Parameters
    ----------
    Z : array_like, shape (n, d)
        Basis points ``z_i``.
    alpha : array_like, shape (n,)
        Coefficients ``α``.
    lengthscale : float
        Kernel lengthscale ``ℓ > 0``.
    """
    Z = np.ascontiguousarray(Z, dtype=float)
    alpha = np.ascontiguousarray(alpha, dtype=float)
    if Z.ndim != 2 or alpha.shape != (Z.shape[0],):
        raise ValueError(
            f"`Z` must have shape (n, d) and `alpha` shape (n,), got {Z.shape} and {alpha.shape}."
        )
    lengthscale = float(lengthscale)
    if not (math.isfinite(lengthscale) and lengthscale > 0):
        raise ValueError(f"`lengthscale` must be positive and finite, got {lengthscale!r}.")
    return GradientSpec(_LITE, Z, alpha, np.ones(Z.shape[1]), 1.0 / lengthscale**2, NO_TREND)


def finite_gradient(frequencies, offsets, theta) -> GradientSpec:
    """The gradient of the random-feature surrogate ``f(x) = θᵀφ(x)``,
    ``φ(x) = √(2/m) cos(Ωx + u)``: ``∇f(x) = −√(2/m) Ωᵀ(θ ⊙ sin(Ωx + u))``.

    Parameters
    ----------
    frequencies : array_like, shape (m, d)
        Frequencies ``Ω`` (rows ``ω_j``).
    offsets : array_like, shape (m,)
        Phases ``u``.
    theta : array_like, shape (m,)
        Coefficients ``θ``.
    """
    omega = np.ascontiguousarray(frequencies, dtype=float)
    offsets = np.ascontiguousarray(offsets, dtype=float)
    theta = np.ascontiguousarray(theta, dtype=float)
    m = omega.shape[0] if omega.ndim == 2 else -1
    if omega.ndim != 2 or offsets.shape != (m,) or theta.shape != (m,):
        raise ValueError(
            f"`frequencies` must have shape (m, d), `offsets` and `theta` shape (m,), "
            f"got {omega.shape}, {offsets.shape} and {theta.shape}."
        )
    return GradientSpec(_FINITE, omega, offsets, theta, math.sqrt(2.0 / m), NO_TREND)


def regression_gradient(Z, beta, precisions, trend=None, *, check: bool = True) -> GradientSpec:
    """The gradient of the regression surrogate ``f(u) = t(u) + Σ_i β_i k(z_i, u)`` (see
    :class:`.regression.RegressionSurrogate`), with ``k(z, u) = exp(−½ Σ_j P_j (z_j − u_j)²)``
    and the trend ``t`` of :class:`.regression.PolynomialTrend`.

    Parameters
    ----------
    Z : array_like, shape (n, d)
        Kernel centres ``z_i``.
    beta : array_like, shape (n,)
        Coefficients ``β``.
    precisions : array_like, shape (d,)
        Inverse squared lengthscales ``P_j ≥ 0`` of the kernel, one per coordinate (0: the
        kernel ignores that coordinate).
    trend : tuple of arrays, optional
        ``(g, H, T, Q)`` of the trend ``t(u) = gᵀu − ½uᵀHu + Σ_ij T_ij u_i u_j² − ½ sᵀQs``,
        ``s = u∘u``, shapes (d,), (d, d), (d, d), (d, d); default ``t(u) = −½‖u‖²``.
    check : bool, default True
        False for parameters known to be valid (C-contiguous float arrays of matching shapes,
        ``trend`` a tuple of four or ``NO_TREND``): a fitted
        :class:`.regression.RegressionSurrogate`, checked when it was built and fitted, builds
        its spec once per trajectory without checking it again.
    """
    if not check:
        return GradientSpec(
            _REGRESSION, Z, beta, precisions, 1.0, NO_TREND if trend is None else trend
        )
    Z = np.ascontiguousarray(Z, dtype=float)
    beta = np.ascontiguousarray(beta, dtype=float)
    precisions = np.ascontiguousarray(precisions, dtype=float)
    d = precisions.shape[0] if precisions.ndim == 1 else -1
    if Z.ndim != 2 or Z.shape[1] != d or beta.shape != (Z.shape[0],):
        raise ValueError(
            f"`Z` must have shape (n, d), `beta` shape (n,) and `precisions` shape (d,), "
            f"got {Z.shape}, {beta.shape} and {precisions.shape}."
        )
    if not (np.all(np.isfinite(precisions)) and np.all(precisions >= 0)):
        raise ValueError("`precisions` must be finite and non-negative.")
    if trend is None:
        trend = NO_TREND
    else:
        trend = tuple(np.ascontiguousarray(part, dtype=float) for part in trend)
        shapes = tuple(part.shape for part in trend)
        if shapes != ((d,), (d, d), (d, d), (d, d)) or not all(
            np.all(np.isfinite(part)) for part in trend
        ):
            raise ValueError(
                f"`trend` must be four finite arrays of shapes ({d},), ({d}, {d}), ({d}, {d}), "
                f"({d}, {d}), got shapes {shapes}."
            )
    return GradientSpec(_REGRESSION, Z, beta, precisions, 1.0, trend)


def surrogate_trajectory(
    gradient: GradientSpec,
    q,
    p,
    step_size: float,
    n_steps: int,
    inv_mass_diag=None,
    confinement: Confinement | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Compiled leapfrog trajectory on a surrogate log density: the one trajectory of every
    surrogate.

    The same scheme and result as ``leapfrog(lambda x: ∇f(x) + ∇w(x), q, p, ...)`` with ``∇f``
    the surrogate's gradient and ``w`` the confining term, at O(n d) per step without Python
    overhead.

    Parameters
    ----------
    gradient : GradientSpec
        The surrogate's gradient (:func:`lite_gradient`, :func:`finite_gradient`,
        :func:`regression_gradient`, or a fitted surrogate's ``gradient_spec()``).
    q, p, step_size, n_steps, inv_mass_diag
        As for :func:`leapfrog`.
    confinement : Confinement, optional
        The confining term ``−(k/2)(‖q‖ − R)₊²`` added to the surrogate log density, so that
        trajectories turn back outside the ball where the surrogate's gradient vanishes or
        oscillates, and the abort ball beyond which a trajectory ends at once with an all-NaN
        position (default none of either; see :class:`~.confinement.Confinement`). Any fixed
        potential keeps the leapfrog map reversible and volume-preserving, so the move stays
        exact.

    Returns
    -------
    q_new, p_new : ndarray, shape (d,)
        End point; ``q_new`` is all NaN if the gradient became non-finite or the trajectory
        left the abort ball.
    """
    q, p, eps, n_steps, inv_mass = _check_trajectory_args(q, p, step_size, n_steps, inv_mass_diag)
    if gradient.dim != q.shape[0]:
        raise ValueError(
            f"The surrogate's dimension {gradient.dim} differs from the position's {q.shape[0]}."
        )
    wall = NO_CONFINEMENT if confinement is None else confinement
    return _trajectory(
        *gradient, q, p, eps, n_steps, inv_mass, wall.radius, wall.stiffness, wall.abort_radius
    )


class SurrogateTrajectory:
    """The trajectory method every surrogate shares: a subclass provides
    :meth:`gradient_spec`."""

    def gradient_spec(self) -> GradientSpec:  # pragma: no cover - abstract
        """The surrogate's gradient as the compiled trajectory evaluates it."""
        raise NotImplementedError

    def trajectory(
        self,
        q,
        p,
        step_size: float,
        n_steps: int,
        inv_mass_diag=None,
        confinement: Confinement | None = None,
    ) -> tuple[np.ndarray, np.ndarray]:
        """Compiled leapfrog trajectory on the surrogate (see :func:`surrogate_trajectory`).

        Parameters
        ----------
        q, p : array_like, shape (d,)
            Initial position and momentum.
        step_size : float
            Step size ``ε``.
        n_steps : int
            Number of steps ``L``.
        inv_mass_diag : array_like, shape (d,) or scalar, optional
            Diagonal inverse mass matrix (default identity).
        confinement : Confinement, optional
            The confining wall and abort ball (default none).

        Returns
        -------
        q_new, p_new : ndarray, shape (d,)
            End point (``q_new`` all NaN if the gradient became non-finite or the trajectory
            left the abort ball).
        """
        return surrogate_trajectory(
            self.gradient_spec(), q, p, step_size, n_steps, inv_mass_diag, confinement
        )
