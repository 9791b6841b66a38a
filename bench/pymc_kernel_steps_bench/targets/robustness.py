"""Robustness targets: curved, heavy-tailed, skewed and funnel-shaped, with exact moments.

Targets the package was not tuned on, for issue 24's question: is the default good where the
log density is *not* nearly a polynomial? Each is a PyMC model on a flat vector ``x`` whose
whole log density is one :class:`pymc.Potential` written in PyTensor, so
:func:`~pymc_kernel_steps_bench.blackbox.black_box` turns it into a counted black box without
gradient (the samplers' view) while the model itself keeps its gradient (NUTS, ``AdaptiveHMC``).
Every target has an exact independent sampler and moments that do not come from MCMC:

``curved6``
    A star of curves around ``x1 ~ N(0, 1.5²)``: ``x2 ~ N(2 sin x1, 0.5²)`` (a sine ridge),
    ``x3 ~ N(1.5 log cosh x1, 0.5²)``, ``x4 ~ N(2 tanh(1.5 x1), 0.4²)``,
    ``x5 ~ N(1.5 cos(1.3 x1), 0.6²)``, ``x6 ~ N(0, (0.5 e^{0.4 x1})²)``. Moments by
    Gauss–Hermite quadrature over ``x1`` (the conditionals' moments are closed forms).
``mixed4``
    A product of a Student-t, a sine ridge, a logistic and a Gumbel: ``x1 ~ t₅``,
    ``x2 ~ N(1.5 sin(1.5 x1), 0.4²)``, ``x3 ~ Logistic(0, 1)``, ``x4 ~ Gumbel(0, 1)``
    (right tail ``e^{−x}``). Moments by adaptive quadrature (:func:`scipy.integrate.quad`).
``flower8``
    Four independent 2-d "flowers" (a ring with petals): for each pair ``(x_{2j−1}, x_{2j})``
    with polar coordinates ``(r, θ)``, density ``∝ exp(−(r − 3 − cos 5θ)² / (2 · 0.35²))``.
    Moments by quadrature in polar coordinates (trapezoid in ``θ``, spectrally accurate for a
    periodic integrand; Gauss–Legendre in ``r``); exact draws by rejection from a disc.
``flower8r``
    ``flower8`` in rotated coordinates, ``x = Qᵀ y`` for a fixed random rotation ``Q``: the same
    rings, but no pair of coordinates is one flower (moves that change a few coordinates at a
    time gain nothing from the model's axes). Moments exact from ``flower8``'s (see
    ``_rotated_flower_moments``).
``skewed5``
    ``(x1..x4) = L z``, ``z_j`` independent skew-normals with shape ``α = 6``, ``L`` the
    Cholesky factor of an equicorrelation (``ρ = 0.6``) matrix; ``x5 ~ LogNormal(0, 0.7)`` (log
    density ``−∞`` for ``x5 ≤ 0``). Moments of a sum of independent variables from the
    skew-normal's raw moments (quadrature) by binomial convolution.
``funnel5``
    Neal's funnel of moderate depth: ``v = x1 ~ N(0, 1.5²)``, ``x2..x5 ~ N(0, e^{v})``.
    Closed-form moments (``E[x_i²] = e^{σ²/2}``, ``E[x_i⁴] = 3 e^{2σ²}``).

:data:`ROBUSTNESS_TARGETS` holds them; :func:`robustness_reference` gives the
:class:`~pymc_kernel_steps_bench.references.Reference` (``E[x]``, ``Var(x)``, ``Var(x²)``).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pymc as pm
import pytensor.tensor as pt

__all__ = [
    "ROBUSTNESS_TARGETS",
    "RobustnessTarget",
    "robustness_model",
    "robustness_reference",
]

_LOG_2PI = math.log(2.0 * math.pi)


@dataclass(frozen=True)
class RobustnessTarget:
    """A robustness target.

    Attributes
    ----------
    name : str
    dim : int
    logp : callable
        ``logp(x)`` for a PyTensor vector ``x`` of length ``dim``: the log density (normalised
        where the normaliser is known in closed form; ``flower8`` is unnormalised).
    raw_moments : callable
        ``raw_moments() -> (m1, m2, m4)``, each ``(dim,)``: ``E[x_i]``, ``E[x_i²]``, ``E[x_i⁴]``
        from quadrature or closed forms (never from sampling).
    sample : callable
        ``sample(rng, size) -> (size, dim)`` exact independent draws.
    description : str
    start : tuple of float, optional
        The model's initial point where 0 lies outside the support (``skewed5``'s log-normal
        coordinate); None: the origin.
    """

    name: str
    dim: int
    logp: Callable
    raw_moments: Callable
    sample: Callable
    description: str
    start: tuple[float, ...] | None = None


def _normal_logpdf(x, mu, sigma):
    # a Python float's log in float64 (PyTensor would make 1.5 a float32 constant)
    log_sigma = math.log(sigma) if isinstance(sigma, float) else pt.log(sigma)
    return -0.5 * ((x - mu) / sigma) ** 2 - log_sigma - 0.5 * _LOG_2PI


def _log_cosh(x):
    """``log cosh x`` without overflow."""
    return pt.abs(x) + pt.log1p(pt.exp(-2.0 * pt.abs(x))) - math.log(2.0)


def _hermite(order: int = 201):
    """Nodes and weights of ``E[g(z)]``, ``z ~ N(0, 1)`` (probabilists' Gauss–Hermite)."""
    nodes, weights = np.polynomial.hermite_e.hermegauss(order)
    return nodes, weights / math.sqrt(2.0 * math.pi)


# ------------------------------------------------------------------------------------ curved6
CURVED6_SCALE = 1.5


def _curved6_conditionals(x1, lib):
    """Conditional means and sds of ``x2..x6`` given ``x1`` (``lib`` is ``np`` or ``pt``)."""
    if lib is np:
        log_cosh = np.abs(1.0 * x1) + np.log1p(np.exp(-2.0 * np.abs(x1))) - math.log(2.0)
    else:
        log_cosh = _log_cosh(x1)
    means = [
        2.0 * lib.sin(x1),
        1.5 * log_cosh,
        2.0 * lib.tanh(1.5 * x1),
        1.5 * lib.cos(1.3 * x1),
        0.0 * x1,
    ]
    sds = [0.5 + 0.0 * x1, 0.5 + 0.0 * x1, 0.4 + 0.0 * x1, 0.6 + 0.0 * x1, 0.5 * lib.exp(0.4 * x1)]
    return means, sds


def _curved6_logp(x):
    x1 = x[0]
    total = _normal_logpdf(x1, 0.0, CURVED6_SCALE)
    means, sds = _curved6_conditionals(x1, pt)
    for k, (mu, sd) in enumerate(zip(means, sds, strict=True), start=1):
        total = total + _normal_logpdf(x[k], mu, sd)
    return total


def _curved6_moments():
    nodes, weights = _hermite()
    x1 = CURVED6_SCALE * nodes
    means, sds = _curved6_conditionals(x1, np)
    m1 = [0.0]
    m2 = [CURVED6_SCALE**2]
    m4 = [3.0 * CURVED6_SCALE**4]
    for mu, sd in zip(means, sds, strict=True):
        mu, sd = np.broadcast_to(mu, x1.shape), np.broadcast_to(sd, x1.shape)
        m1.append(weights @ mu)
        m2.append(weights @ (mu**2 + sd**2))
        m4.append(weights @ (mu**4 + 6 * mu**2 * sd**2 + 3 * sd**4))
    return np.array(m1), np.array(m2), np.array(m4)


def _curved6_sample(rng, size):
    rng = np.random.default_rng(rng)
    x1 = CURVED6_SCALE * rng.standard_normal(size)
    means, sds = _curved6_conditionals(x1, np)
    columns = [x1] + [
        mu + sd * rng.standard_normal(size) for mu, sd in zip(means, sds, strict=True)
    ]
    return np.column_stack(columns)


# ------------------------------------------------------------------------------------ mixed4
MIXED4_NU = 5.0
MIXED4_RIDGE = (1.5, 1.5, 0.4)  # amplitude, frequency, sd of x2 given x1


def _student_t_logpdf(x, nu):
    return (
        math.lgamma((nu + 1) / 2)
        - math.lgamma(nu / 2)
        - 0.5 * math.log(nu * math.pi)
        - (nu + 1) / 2 * pt.log1p(x**2 / nu)
    )


def _mixed4_logp(x):
    amplitude, frequency, sd = MIXED4_RIDGE
    logistic = -x[2] - 2.0 * pt.softplus(-x[2])
    gumbel = -x[3] - pt.exp(-x[3])
    return (
        _student_t_logpdf(x[0], MIXED4_NU)
        + _normal_logpdf(x[1], amplitude * pt.sin(frequency * x[0]), sd)
        + logistic
        + gumbel
    )


def _expectation(pdf, g, lower=-np.inf, upper=np.inf):
    from scipy.integrate import quad

    value, _ = quad(lambda t: g(t) * pdf(t), lower, upper, limit=500, epsabs=1e-13, epsrel=1e-12)
    return value


def _mixed4_moments():
    from scipy import stats

    amplitude, frequency, sd = MIXED4_RIDGE
    t_pdf = stats.t(MIXED4_NU).pdf
    m1, m2, m4 = np.zeros(4), np.zeros(4), np.zeros(4)
    m2[0] = MIXED4_NU / (MIXED4_NU - 2)
    m4[0] = 3 * MIXED4_NU**2 / ((MIXED4_NU - 2) * (MIXED4_NU - 4))

    def ridge(t):
        return amplitude * np.sin(frequency * t)

    # sin is odd and t symmetric: E[x2] = 0; the integrands are split at 0 for quad's accuracy
    def both_halves(g):
        return _expectation(t_pdf, g, -np.inf, 0.0) + _expectation(t_pdf, g, 0.0, np.inf)

    m2[1] = both_halves(lambda t: ridge(t) ** 2) + sd**2
    m4[1] = both_halves(lambda t: ridge(t) ** 4 + 6 * ridge(t) ** 2 * sd**2) + 3 * sd**4
    logistic, gumbel = stats.logistic(), stats.gumbel_r()
    for k, dist in ((2, logistic), (3, gumbel)):
        m1[k] = dist.mean()
        m2[k] = dist.moment(2)
        m4[k] = dist.moment(4)
    return m1, m2, m4


def _mixed4_sample(rng, size):
    rng = np.random.default_rng(rng)
    amplitude, frequency, sd = MIXED4_RIDGE
    x1 = rng.standard_t(MIXED4_NU, size)
    x2 = amplitude * np.sin(frequency * x1) + sd * rng.standard_normal(size)
    return np.column_stack([x1, x2, rng.logistic(size=size), rng.gumbel(size=size)])


# ----------------------------------------------------------------------------------- flower8
FLOWER = (3.0, 1.0, 5, 0.35)  # radius, petal amplitude, petals, ring width (sd)
FLOWER_PAIRS = 4


def _flower_logp(x):
    radius, amplitude, petals, width = FLOWER
    pairs = pt.reshape(x, (FLOWER_PAIRS, 2))
    r = pt.sqrt(pt.sum(pairs**2, axis=1))
    theta = pt.arctan2(pairs[:, 1], pairs[:, 0])
    ridge = radius + amplitude * pt.cos(petals * theta)
    return -0.5 * pt.sum(((r - ridge) / width) ** 2)


def _flower_pair_moments(n_theta: int = 4096, n_r: int = 400):
    """``E[u]``, ``E[u²]``, ``E[u⁴]`` of each coordinate ``u`` of one flower pair."""
    radius, amplitude, petals, width = FLOWER
    theta = 2 * np.pi * np.arange(n_theta) / n_theta
    r_max = radius + amplitude + 14 * width
    nodes, weights = np.polynomial.legendre.leggauss(n_r)
    r = 0.5 * r_max * (nodes + 1)
    w_r = 0.5 * r_max * weights
    ridge = radius + amplitude * np.cos(petals * theta)
    density = np.exp(-0.5 * ((r[:, None] - ridge[None, :]) / width) ** 2) * r[:, None]
    density *= w_r[:, None]
    density /= density.sum()
    out = []
    for trig in (np.cos, np.sin):
        u = r[:, None] * trig(theta)[None, :]
        out.append([np.sum(density * u**p) for p in (1, 2, 4)])
    return np.array(out)  # (2 coordinates, 3 moments)


def _flower_moments():
    pair = _flower_pair_moments()
    tiled = np.tile(pair, (FLOWER_PAIRS, 1))  # (8, 3)
    return tiled[:, 0], tiled[:, 1], tiled[:, 2]


def _flower_sample(rng, size):
    rng = np.random.default_rng(rng)
    radius, amplitude, petals, width = FLOWER
    r_max = radius + amplitude + 8 * width
    draws = np.empty((size * FLOWER_PAIRS, 2))
    filled = 0
    while filled < len(draws):
        n = 4 * (len(draws) - filled)
        r = r_max * np.sqrt(rng.uniform(size=n))  # uniform in the disc
        theta = rng.uniform(0, 2 * np.pi, size=n)
        ridge = radius + amplitude * np.cos(petals * theta)
        keep = rng.uniform(size=n) < np.exp(-0.5 * ((r - ridge) / width) ** 2)
        accepted = np.column_stack([r * np.cos(theta), r * np.sin(theta)])[keep]
        take = min(len(accepted), len(draws) - filled)
        draws[filled : filled + take] = accepted[:take]
        filled += take
    return draws.reshape(size, 2 * FLOWER_PAIRS)


#: seed of the rotation of ``flower8r``
FLOWER_ROTATION_SEED = 8


def flower_rotation() -> np.ndarray:
    """The orthogonal ``Q`` of ``flower8r``: its coordinates are ``x = Qᵀ y``, ``y`` ``flower8``'s
    (a Haar-random rotation, fixed by :data:`FLOWER_ROTATION_SEED`)."""
    rng = np.random.default_rng(FLOWER_ROTATION_SEED)
    q, r = np.linalg.qr(rng.standard_normal((2 * FLOWER_PAIRS, 2 * FLOWER_PAIRS)))
    return q * np.sign(np.diag(r))


def _rotated_flower_logp(x):
    return _flower_logp(pt.dot(pt.constant(flower_rotation()), x))


def _rotated_flower_moments():
    """Exact moments of ``x = Qᵀ y``. Each flower pair's moments up to the fourth are those of an
    isotropic pair (five petals: the angular frequencies below 5 vanish), so ``E[u] = 0``,
    ``E[u²]``, ``E[u⁴] = 3/8 E[r⁴]`` and ``E[u² v²] = 1/8 E[r⁴]``; a coordinate
    ``x_i = Σ_k s_k``, ``s_k`` the independent part of pair ``k`` with weight
    ``c_k = Q²_{2k,i} + Q²_{2k+1,i}`` (``Σ_k c_k = 1``), has ``E[x_i²] = E[u²]`` and
    ``E[x_i⁴] = E[u⁴] Σ c_k² + 3 E[u²]² (1 − Σ c_k²)``."""
    (_, second, fourth), _ = _flower_pair_moments()
    weights = (flower_rotation() ** 2).reshape(FLOWER_PAIRS, 2, -1).sum(axis=1)
    concentration = np.sum(weights**2, axis=0)
    dim = 2 * FLOWER_PAIRS
    m4 = fourth * concentration + 3 * second**2 * (1 - concentration)
    return np.zeros(dim), np.full(dim, second), m4


def _rotated_flower_sample(rng, size):
    return _flower_sample(rng, size) @ flower_rotation()


# ----------------------------------------------------------------------------------- skewed5
SKEW_ALPHA = 6.0
SKEW_RHO = 0.6
SKEW_DIM = 4
LOGNORMAL_SIGMA = 0.7


def _skew_chol():
    corr = np.full((SKEW_DIM, SKEW_DIM), SKEW_RHO) + (1 - SKEW_RHO) * np.eye(SKEW_DIM)
    return np.linalg.cholesky(corr)


def _skewed5_logp(x):
    chol = _skew_chol()
    z = pt.linalg.solve_triangular(pt.as_tensor_variable(chol), x[:SKEW_DIM], lower=True)
    # skew-normal: 2 φ(z) Φ(α z); log Φ(t) = log(erfc(−t/√2)/2), stable for negative t
    log_cdf = pt.log(0.5 * pt.erfc(-SKEW_ALPHA * z / 2**0.5))
    skew = pt.sum(math.log(2.0) - 0.5 * z**2 - 0.5 * _LOG_2PI + log_cdf)
    log_jacobian = -float(np.sum(np.log(np.diag(chol))))
    y = x[SKEW_DIM]
    safe = pt.switch(y > 0, y, 1.0)
    lognormal = _normal_logpdf(pt.log(safe), 0.0, LOGNORMAL_SIGMA) - pt.log(safe)
    return skew + log_jacobian + pt.switch(y > 0, lognormal, -np.inf)


def _skew_normal_raw_moments():
    from scipy import stats

    dist = stats.skewnorm(SKEW_ALPHA)
    return [1.0] + [float(dist.moment(p)) for p in (1, 2, 3, 4)]


def _sum_moments(coefficients, raw):
    """Raw moments 0..4 of ``Σ_j c_j z_j``, ``z_j`` i.i.d. with raw moments ``raw[0..4]``."""
    total = [1.0, 0.0, 0.0, 0.0, 0.0]
    for c in coefficients:
        scaled = [c**p * raw[p] for p in range(5)]
        total = [
            sum(math.comb(n, k) * total[k] * scaled[n - k] for k in range(n + 1)) for n in range(5)
        ]
    return total


def _skewed5_moments():
    raw = _skew_normal_raw_moments()
    chol = _skew_chol()
    m1, m2, m4 = [], [], []
    for row in chol:
        moments = _sum_moments(row, raw)
        m1.append(moments[1])
        m2.append(moments[2])
        m4.append(moments[4])
    s2 = LOGNORMAL_SIGMA**2
    m1.append(math.exp(s2 / 2))
    m2.append(math.exp(2 * s2))
    m4.append(math.exp(8 * s2))
    return np.array(m1), np.array(m2), np.array(m4)


def _skewed5_sample(rng, size):
    rng = np.random.default_rng(rng)
    delta = SKEW_ALPHA / math.sqrt(1 + SKEW_ALPHA**2)
    u0 = np.abs(rng.standard_normal((size, SKEW_DIM)))
    u1 = rng.standard_normal((size, SKEW_DIM))
    z = delta * u0 + math.sqrt(1 - delta**2) * u1
    x = z @ _skew_chol().T
    y = rng.lognormal(0.0, LOGNORMAL_SIGMA, size)
    return np.column_stack([x, y])


# ----------------------------------------------------------------------------------- funnel5
FUNNEL_SCALE = 1.5
FUNNEL_DIM = 5


def _funnel_logp(x):
    v = x[0]
    return _normal_logpdf(v, 0.0, FUNNEL_SCALE) + pt.sum(_normal_logpdf(x[1:], 0.0, pt.exp(v / 2)))


def _funnel_moments():
    s2 = FUNNEL_SCALE**2
    m1 = np.zeros(FUNNEL_DIM)
    m2 = np.full(FUNNEL_DIM, math.exp(s2 / 2))
    m4 = np.full(FUNNEL_DIM, 3 * math.exp(2 * s2))
    m2[0], m4[0] = s2, 3 * s2**2
    return m1, m2, m4


def _funnel_sample(rng, size):
    rng = np.random.default_rng(rng)
    v = FUNNEL_SCALE * rng.standard_normal(size)
    x = np.exp(v / 2)[:, None] * rng.standard_normal((size, FUNNEL_DIM - 1))
    return np.column_stack([v, x])


# ----------------------------------------------------------------------------------- registry
#: the robustness targets by name
ROBUSTNESS_TARGETS: dict[str, RobustnessTarget] = {
    t.name: t
    for t in (
        RobustnessTarget(
            "curved6",
            6,
            _curved6_logp,
            _curved6_moments,
            _curved6_sample,
            "curves around x1 ~ N(0, 1.5²): sine ridge, log cosh, tanh, cosine, heteroscedastic",
        ),
        RobustnessTarget(
            "mixed4",
            4,
            _mixed4_logp,
            _mixed4_moments,
            _mixed4_sample,
            "t₅ × sine ridge on it × logistic × Gumbel",
        ),
        RobustnessTarget(
            "flower8",
            8,
            _flower_logp,
            _flower_moments,
            _flower_sample,
            "four 2-d flowers: ring of radius 3 with 5 petals of amplitude 1, width 0.35",
        ),
        RobustnessTarget(
            "flower8r",
            8,
            _rotated_flower_logp,
            _rotated_flower_moments,
            _rotated_flower_sample,
            "flower8 in rotated coordinates (a fixed random rotation): no pair of coordinates "
            "is one flower",
        ),
        RobustnessTarget(
            "skewed5",
            5,
            _skewed5_logp,
            _skewed5_moments,
            _skewed5_sample,
            "correlated skew-normals (α = 6, ρ = 0.6) and a log-normal (σ = 0.7)",
            start=(0.0, 0.0, 0.0, 0.0, 1.0),  # the log-normal's median: log density -inf at 0
        ),
        RobustnessTarget(
            "funnel5",
            FUNNEL_DIM,
            _funnel_logp,
            _funnel_moments,
            _funnel_sample,
            "Neal's funnel, v ~ N(0, 1.5²), four x ~ N(0, e^v)",
        ),
    )
}


def _target(name: str) -> RobustnessTarget:
    if name not in ROBUSTNESS_TARGETS:
        known = list(ROBUSTNESS_TARGETS)
        raise ValueError(f"name: unknown robustness target {name!r}; known {known}")
    return ROBUSTNESS_TARGETS[name]


def robustness_model(name: str) -> pm.Model:
    """The target ``name`` as a model on a flat vector ``x`` with its log density in one
    ``pm.Potential`` (differentiable; :func:`~pymc_kernel_steps_bench.blackbox.black_box` of it
    is the counted black box)."""
    target = _target(name)
    with pm.Model() as model:
        start = None if target.start is None else np.array(target.start)
        x = pm.Flat("x", shape=target.dim, initval=start)
        pm.Potential(name, target.logp(x))
    return model


def robustness_reference(name: str):
    """The :class:`~pymc_kernel_steps_bench.references.Reference` of target ``name``:
    ``E[x]``, ``Var(x)`` and ``Var(x²)`` from its exact moments."""
    from ..references import Reference

    m1, m2, m4 = _target(name).raw_moments()
    return Reference(mean=m1, var=m2 - m1**2, var_sq=m4 - m2**2)
