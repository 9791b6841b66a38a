"""Bayesian optimisation by annealed GP-UCB (paper 003, Alg. 2), and its use to tune HMC's (ε, L).

A :class:`SearchBox` is a box of parameters, some of them integers, each searched on a linear or a
logarithmic scale; its points map to the unit cube, where a zero-mean Gaussian process with an ARD
squared-exponential covariance models the objective::

    k(u, v) = σ_f² exp(−½ Σ_j (u_j − v_j)² / ℓ_j²)

The lengthscales ``ℓ_j``, the signal variance ``σ_f²`` and the noise variance ``σ²`` are fitted by
maximising the marginal likelihood (:func:`fit_gp`). The paper fixes ``σ_f² = 1`` and ``ℓ_j = 0.2``
(times the box's width), our starting point; with fitted lengthscales a fixed unit signal variance
against rewards rescaled to at most 4 made the likelihood explain the rewards as noise, and the
search then ran along the box's edges. Repeated observations at one point are merged into their
mean with noise ``σ² / count``, so the GP grows with the number of distinct points tried, not with
the number of windows.

:class:`AnnealedUCB` is Algorithm 2: after each reward ``r_i`` the rewards are rescaled by
``s = α / max_j r_j`` (``α = 4``), and with probability ``p_i = max(i − k + 1, 1)^(-1/2)`` the next
point maximises ``μ_i(γ) + p_i β_{i+1}^{1/2} σ_i(γ)`` with
``β_{i+1} = 2 log((i + 1)^{D/2 + 2} π² / (3δ))`` (``D`` the box's dimension, ``δ = 0.1``); otherwise
the point is kept. The maximum is taken over a grid (every integer of an integer coordinate up to
``grid_size`` of them, ``grid_size`` points of a continuous one).

:class:`WindowedTuner` feeds it for an MCMC sampler: each transition reports its Rao–Blackwellised
squared jump ``α_t ‖x* − x_t‖²`` (:attr:`~.adaptation.Feedback.expected_squared_jump`); after
``window`` transitions at the same ``(ε, L)`` the reward is
their mean divided by ``L^cost_exponent`` (½ for HMC: ESJD / √L as in the paper; 0 when the
trajectory costs no target evaluations, as in KMC).

Numpy and scipy only.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from scipy.linalg import cho_solve, cholesky, solve_triangular
from scipy.optimize import minimize

from .adaptation import Adapter, Feedback, TrajectoryParameters

__all__ = [
    "AnnealedUCB",
    "GaussianProcessFit",
    "SearchBox",
    "WindowedTuner",
    "default_hmc_box",
    "exploration_probability",
    "fit_gp",
    "gp_predict",
    "ucb_beta",
]

#: the paper's lengthscale: 0.2 times the box's width (1 in unit coordinates)
DEFAULT_LENGTHSCALE = 0.2
DEFAULT_NOISE_VARIANCE = 0.1
#: bounds of the fitted hyper-parameters (unit-cube lengthscales; noise variance of rewards
#: rescaled so that the largest is α)
LENGTHSCALE_BOUNDS = (0.03, 2.0)
SIGNAL_VARIANCE_BOUNDS = (1e-2, 1e2)
NOISE_VARIANCE_BOUNDS = (1e-6, 1e2)


# --------------------------------------------------------------------------- the search box
@dataclass(frozen=True)
class SearchBox:
    """A box ``[lower_j, upper_j]`` of parameters.

    Parameters
    ----------
    lower, upper : sequence of float
        Bounds, ``lower_j ≤ upper_j`` (equal bounds fix a coordinate).
    integer : sequence of bool, optional
        Which coordinates take integer values (bounds must then be integers); default none.
    log_scale : sequence of bool, optional
        Which coordinates are searched on a logarithmic scale (positive bounds); default none.
    names : sequence of str, optional
        Names used in error messages (default ``x0, x1, ...``).
    """

    lower: tuple[float, ...]
    upper: tuple[float, ...]
    integer: tuple[bool, ...] = ()
    log_scale: tuple[bool, ...] = ()
    names: tuple[str, ...] = ()

    def __post_init__(self):
        lower = tuple(float(v) for v in np.atleast_1d(self.lower))
        upper = tuple(float(v) for v in np.atleast_1d(self.upper))
        dim = len(lower)
        names = tuple(self.names) or tuple(f"x{j}" for j in range(dim))
        integer = tuple(bool(v) for v in self.integer) or (False,) * dim
        log_scale = tuple(bool(v) for v in self.log_scale) or (False,) * dim
        if dim == 0 or len(upper) != dim:
            raise ValueError(
                "`lower` and `upper` must be non-empty and of equal length, "
                f"got {lower} and {upper}."
            )
        for what, value in (("integer", integer), ("log_scale", log_scale), ("names", names)):
            if len(value) != dim:
                raise ValueError(f"`{what}` must have {dim} entries, got {value!r}.")
        for j in range(dim):
            name, lo, hi = names[j], lower[j], upper[j]
            if not (math.isfinite(lo) and math.isfinite(hi)):
                raise ValueError(f"bounds of `{name}` must be finite, got ({lo}, {hi}).")
            if lo > hi:
                raise ValueError(
                    f"bounds of `{name}` must satisfy lower ≤ upper, got ({lo}, {hi})."
                )
            if log_scale[j] and lo <= 0:
                raise ValueError(f"bounds of `{name}` must be positive, got ({lo}, {hi}).")
            if integer[j] and (lo != round(lo) or hi != round(hi)):
                raise ValueError(f"bounds of `{name}` must be integers, got ({lo}, {hi}).")
        object.__setattr__(self, "lower", lower)
        object.__setattr__(self, "upper", upper)
        object.__setattr__(self, "integer", integer)
        object.__setattr__(self, "log_scale", log_scale)
        object.__setattr__(self, "names", names)

    @property
    def dim(self) -> int:
        return len(self.lower)

    def _transformed_bounds(self):
        lo = np.array(self.lower)
        hi = np.array(self.upper)
        log = np.array(self.log_scale)
        lo = np.where(log, np.log(np.where(log, lo, 1.0)), lo)
        hi = np.where(log, np.log(np.where(log, hi, 1.0)), hi)
        return lo, hi, log

    def to_unit(self, points) -> np.ndarray:
        """Map points of the box (shape (..., D)) to the unit cube (a fixed coordinate maps to
        0)."""
        points = np.asarray(points, dtype=float)
        lo, hi, log = self._transformed_bounds()
        with np.errstate(divide="ignore", invalid="ignore"):
            t = np.where(log, np.log(np.where(log, points, 1.0)), points)
            width = hi - lo
            return np.where(width > 0, (t - lo) / np.where(width > 0, width, 1.0), 0.0)

    def from_unit(self, unit) -> np.ndarray:
        """Inverse of :meth:`to_unit`, with integer coordinates rounded and clipped."""
        unit = np.asarray(unit, dtype=float)
        lo, hi, log = self._transformed_bounds()
        t = lo + unit * (hi - lo)
        points = np.where(log, np.exp(t), t)
        points = np.where(self.integer, np.round(points), points)
        return np.clip(points, self.lower, self.upper)

    def clip(self, point) -> tuple:
        """The nearest point of the box (integers rounded)."""
        point = np.clip(np.asarray(point, dtype=float), self.lower, self.upper)
        point = np.where(self.integer, np.round(point), point)
        return self.as_tuple(point)

    def as_tuple(self, point) -> tuple:
        """A point as a tuple of Python floats and ints (a dictionary key)."""
        return tuple(
            int(round(v)) if is_int else float(v)
            for v, is_int in zip(np.asarray(point, dtype=float), self.integer, strict=True)
        )

    def grid(self, size: int = 100) -> np.ndarray:
        """Candidate points, shape (n, D): the product over coordinates of ``size`` values evenly
        spaced on the coordinate's scale (every integer if there are at most ``size``)."""
        axes = []
        for j in range(self.dim):
            lo, hi = self.lower[j], self.upper[j]
            if lo == hi:
                axes.append(np.array([lo]))
                continue
            if self.integer[j] and hi - lo + 1 <= size:
                axes.append(np.arange(lo, hi + 1.0))
                continue
            if self.log_scale[j]:
                values = np.geomspace(lo, hi, size)
            else:
                values = np.linspace(lo, hi, size)
            if self.integer[j]:
                values = np.unique(np.clip(np.round(values), lo, hi))
            axes.append(values)
        mesh = np.meshgrid(*axes, indexing="ij")
        return np.stack([m.ravel() for m in mesh], axis=1)

    def centre(self) -> tuple:
        """The box's centre on each coordinate's scale (integers rounded)."""
        return self.as_tuple(self.from_unit(np.full(self.dim, 0.5)))


# --------------------------------------------------------------------------- the Gaussian process
@dataclass
class GaussianProcessFit:
    """A fitted zero-mean GP on unit-cube inputs (ARD squared exponential of variance
    ``signal_variance``).

    ``noise_scale`` holds per-observation multipliers of the noise variance (``1/count`` for a mean
    of ``count`` rewards).
    """

    inputs: np.ndarray
    targets: np.ndarray
    noise_scale: np.ndarray
    lengthscales: np.ndarray
    signal_variance: float
    noise_variance: float
    cholesky_factor: np.ndarray = field(repr=False)
    weights: np.ndarray = field(repr=False)
    negative_log_likelihood: float = math.nan


def _squared_distances(a, b, lengthscales):
    diff = (a[:, None, :] - b[None, :, :]) / lengthscales
    return np.sum(diff * diff, axis=-1)


def _negative_log_likelihood(log_params, inputs, targets, noise_scale, with_gradient=True):
    """Negative log marginal likelihood of ``log_params = (log ℓ_1..D, log σ_f², log σ²)`` and
    its gradient."""
    dim = inputs.shape[1]
    lengthscales = np.exp(log_params[:dim])
    signal_variance = math.exp(log_params[dim])
    noise_variance = math.exp(log_params[dim + 1])
    diff2 = (inputs[:, None, :] - inputs[None, :, :]) ** 2  # (n, n, D)
    kernel = signal_variance * np.exp(-0.5 * np.sum(diff2 / lengthscales**2, axis=-1))
    n = len(targets)
    covariance = kernel + np.diag(noise_variance * noise_scale + 1e-10)
    try:
        factor = cholesky(covariance, lower=True)
    except np.linalg.LinAlgError:
        return (math.inf, np.zeros_like(log_params)) if with_gradient else math.inf
    weights = cho_solve((factor, True), targets)
    value = (
        0.5 * targets @ weights + np.sum(np.log(np.diag(factor))) + 0.5 * n * math.log(2 * math.pi)
    )
    if not with_gradient:
        return value
    inverse = cho_solve((factor, True), np.eye(n))
    outer = np.outer(weights, weights) - inverse
    gradient = np.empty_like(log_params)
    for j in range(dim):
        derivative = kernel * diff2[:, :, j] / lengthscales[j] ** 2
        gradient[j] = -0.5 * np.sum(outer * derivative)
    gradient[dim] = -0.5 * np.sum(outer * kernel)
    gradient[dim + 1] = -0.5 * np.sum(np.diag(outer) * noise_variance * noise_scale)
    return value, gradient


def fit_gp(inputs, targets, noise_scale=None, initial=None) -> GaussianProcessFit:
    """Fit lengthscales, signal variance and noise variance by maximum marginal likelihood
    (L-BFGS-B on their logarithms within ``LENGTHSCALE_BOUNDS``, ``SIGNAL_VARIANCE_BOUNDS`` and
    ``NOISE_VARIANCE_BOUNDS``, started from the paper's values and from ``initial``; the best is
    kept).

    Parameters
    ----------
    inputs : array_like, shape (n, D)
        Points in the unit cube.
    targets : array_like, shape (n,)
        Observed values (zero prior mean).
    noise_scale : array_like, shape (n,), optional
        Multipliers of the noise variance per observation (default ones).
    initial : (lengthscales, signal_variance, noise_variance), optional
        A further starting point (e.g. the previous fit).

    Returns
    -------
    GaussianProcessFit
    """
    inputs = np.atleast_2d(np.asarray(inputs, dtype=float))
    targets = np.asarray(targets, dtype=float)
    n, dim = inputs.shape
    if targets.shape != (n,):
        raise ValueError(f"`targets` must have shape ({n},), got {targets.shape}.")
    noise_scale = np.ones(n) if noise_scale is None else np.asarray(noise_scale, dtype=float)
    bounds = (
        [tuple(np.log(LENGTHSCALE_BOUNDS))] * dim
        + [tuple(np.log(SIGNAL_VARIANCE_BOUNDS))]
        + [tuple(np.log(NOISE_VARIANCE_BOUNDS))]
    )
    low, high = np.array(bounds).T
    starts = [
        np.log(np.r_[np.full(dim, DEFAULT_LENGTHSCALE), 1.0, DEFAULT_NOISE_VARIANCE]),
    ]
    if initial is not None:
        lengthscales, signal_variance, noise_variance = initial
        scales = np.asarray(lengthscales, dtype=float)
        start = np.log(np.r_[scales, signal_variance, noise_variance])
        starts.append(np.clip(start, low, high))
    best = None
    for start in starts:
        result = minimize(
            _negative_log_likelihood,
            start,
            args=(inputs, targets, noise_scale),
            jac=True,
            method="L-BFGS-B",
            bounds=bounds,
            options={"maxiter": 100},
        )
        value = float(result.fun)
        if math.isfinite(value) and (best is None or value < best[0]):
            best = (value, result.x)
    if best is None:  # no start gave a finite likelihood: keep the paper's values
        best = (math.inf, starts[0])
    value, log_params = best
    lengthscales = np.exp(log_params[:dim])
    signal_variance = float(np.exp(log_params[dim]))
    noise_variance = float(np.exp(log_params[dim + 1]))
    covariance = signal_variance * np.exp(-0.5 * _squared_distances(inputs, inputs, lengthscales))
    covariance += np.diag(noise_variance * noise_scale + 1e-10)
    factor = cholesky(covariance, lower=True)
    weights = cho_solve((factor, True), targets)
    return GaussianProcessFit(
        inputs,
        targets,
        noise_scale,
        lengthscales,
        signal_variance,
        noise_variance,
        factor,
        weights,
        value,
    )


def gp_predict(fit: GaussianProcessFit, points) -> tuple[np.ndarray, np.ndarray]:
    """Posterior mean and standard deviation of the latent function at unit-cube ``points``."""
    points = np.atleast_2d(np.asarray(points, dtype=float))
    cross = fit.signal_variance * np.exp(
        -0.5 * _squared_distances(points, fit.inputs, fit.lengthscales)
    )
    mean = cross @ fit.weights
    solved = solve_triangular(fit.cholesky_factor, cross.T, lower=True)
    variance = np.clip(fit.signal_variance - np.sum(solved * solved, axis=0), 0.0, None)
    return mean, np.sqrt(variance)


# --------------------------------------------------------------------------- annealed GP-UCB
def exploration_probability(window: int, offset: int = 100) -> float:
    """``p_i = max(i − k + 1, 1)^(-1/2)``: the probability of moving after window ``i ≥ 1``."""
    return max(window - offset + 1, 1) ** -0.5


def ucb_beta(window: int, dim: int, delta: float = 0.1) -> float:
    """``β_i = 2 log(i^{D/2 + 2} π² / (3δ))`` (Srinivas et al.; paper 003 uses ``β_{i+1}``)."""
    return 2.0 * math.log(window ** (dim / 2.0 + 2.0) * math.pi**2 / (3.0 * delta))


@dataclass
class AnnealedUCB(Adapter):
    """Annealed GP-UCB maximisation of a noisy function over a :class:`SearchBox` (Alg. 2).

    An :class:`~.adaptation.Adapter`: its :attr:`value` is the current point, :meth:`update`
    reads :attr:`Feedback.reward <.adaptation.Feedback.reward>`, :meth:`final` is the observed
    point of largest posterior mean.

    Parameters
    ----------
    box : SearchBox
    start : sequence, optional
        The first point ``γ_1`` (default the box's centre).
    reward_max : float
        ``α``: rewards are rescaled so that the largest seen is ``α`` (default 4).
    annealing_offset : int
        ``k`` of ``p_i`` (default 100).
    delta : float
        ``δ`` of ``β_i`` (default 0.1).
    grid_size : int
        Grid points per continuous coordinate of the acquisition's maximisation (default 100).

    """

    box: SearchBox
    start: tuple | None = None
    reward_max: float = 4.0
    annealing_offset: int = 100
    delta: float = 0.1
    grid_size: int = 100
    point: tuple = ()
    windows: int = 0
    observed: dict = field(default_factory=dict)  # point -> [sum of rewards, count]
    largest_reward: float = -math.inf
    hyperparameters: tuple | None = None

    def __post_init__(self):
        if not (math.isfinite(self.reward_max) and self.reward_max > 0):
            raise ValueError(f"`reward_max` must be positive, got {self.reward_max!r}.")
        if isinstance(self.annealing_offset, bool) or int(self.annealing_offset) < 1:
            raise ValueError(
                f"`annealing_offset` must be an integer ≥ 1, got {self.annealing_offset!r}."
            )
        if not 0 < self.delta < 1:
            raise ValueError(f"`delta` must lie in (0, 1), got {self.delta!r}.")
        if int(self.grid_size) < 2:
            raise ValueError(f"`grid_size` must be at least 2, got {self.grid_size!r}.")
        if not self.point:
            self.point = self.box.centre() if self.start is None else self.box.clip(self.start)

    @property
    def value(self) -> tuple:
        """The current point."""
        return self.point

    @property
    def scale(self) -> float:
        """``s = α / max r``: the factor the rewards are multiplied by (1 until one is positive)."""
        if self.largest_reward > 0 and math.isfinite(self.largest_reward):
            return self.reward_max / self.largest_reward
        return 1.0

    def _data(self):
        points = list(self.observed)
        sums = np.array([self.observed[p][0] for p in points])
        counts = np.array([self.observed[p][1] for p in points], dtype=float)
        inputs = self.box.to_unit(np.array(points, dtype=float))
        return points, inputs, self.scale * sums / counts, 1.0 / counts

    def fit(self) -> GaussianProcessFit:
        """Fit the GP to the rescaled mean reward of every observed point."""
        if not self.observed:
            raise ValueError("no rewards observed yet.")
        _, inputs, targets, noise_scale = self._data()
        gp = fit_gp(inputs, targets, noise_scale, initial=self.hyperparameters)
        self.hyperparameters = (tuple(gp.lengthscales), gp.signal_variance, gp.noise_variance)
        return gp

    def acquisition_maximiser(self, gp: GaussianProcessFit | None = None) -> tuple:
        """``argmax_γ μ_i(γ) + p_i β_{i+1}^{1/2} σ_i(γ)`` over the grid, ``i`` = windows seen."""
        gp = self.fit() if gp is None else gp
        candidates = self.box.grid(self.grid_size)
        mean, sd = gp_predict(gp, self.box.to_unit(candidates))
        i = max(self.windows, 1)
        weight = exploration_probability(i, self.annealing_offset) * math.sqrt(
            ucb_beta(i + 1, self.box.dim, self.delta)
        )
        return self.box.as_tuple(candidates[int(np.argmax(mean + weight * sd))])

    def observe(self, reward: float) -> None:
        """Record the reward of the current point (a non-finite reward counts as 0)."""
        reward = float(reward) if math.isfinite(reward) else 0.0
        entry = self.observed.setdefault(self.point, [0.0, 0])
        entry[0] += reward
        entry[1] += 1
        self.largest_reward = max(self.largest_reward, reward)
        self.windows += 1

    def update(self, feedback: Feedback, rng: np.random.Generator | None = None) -> None:
        """One iteration of Alg. 2: observe ``feedback.reward`` at the current point, then with
        probability ``p_i`` (a uniform from ``rng``, required) move to the maximiser of the
        acquisition."""
        self.observe(feedback.reward)
        if rng.uniform() < exploration_probability(self.windows, self.annealing_offset):
            self.point = self.acquisition_maximiser()

    def final(self) -> tuple:
        """The observed point with the largest posterior mean (the current point if none)."""
        if not self.observed:
            return self.point
        points, inputs, _, _ = self._data()
        mean, _ = gp_predict(self.fit(), inputs)
        return points[int(np.argmax(mean))]


# --------------------------------------------------------------------------- an MCMC tuner
class WindowedTuner(Adapter):
    """Tunes a sampler's ``(step_size, n_steps)`` by :class:`AnnealedUCB` over reward windows.

    An :class:`~.adaptation.Adapter` whose :attr:`value` is the current
    :class:`~.adaptation.TrajectoryParameters` ``(ε, L)``; :meth:`update` reads
    :attr:`Feedback.expected_squared_jump <.adaptation.Feedback.expected_squared_jump>`;
    :meth:`final` is the point of largest posterior mean reward.

    Parameters
    ----------
    box : SearchBox
        Two coordinates: step size (continuous) and number of steps (integer).
    window : int
        Transitions per reward (``m``).
    cost_exponent : float
        The reward is the window's mean squared jump over ``n_steps^cost_exponent`` (½ for HMC,
        0 when the trajectory's length costs no target evaluations).
    start : (float, int), optional
        The first ``(step_size, n_steps)``.
    **optimizer_kwargs
        Passed to :class:`AnnealedUCB` (``reward_max``, ``annealing_offset``, ``delta``,
        ``grid_size``).
    """

    def __init__(
        self, box: SearchBox, window: int, cost_exponent: float = 0.5, start=None, **kwargs
    ):
        if box.dim != 2 or box.integer != (False, True):
            raise ValueError("the box must have a continuous and an integer coordinate.")
        if isinstance(window, bool) or int(window) != window or window < 1:
            raise ValueError(f"`window` must be an integer ≥ 1, got {window!r}.")
        self.optimizer = AnnealedUCB(box, start=start, **kwargs)
        self.window = int(window)
        self.cost_exponent = float(cost_exponent)
        self._jump_sum = 0.0
        self._count = 0

    @property
    def value(self) -> TrajectoryParameters:
        """The current ``(step_size, max_n_steps)``."""
        step_size, n_steps = self.optimizer.point
        return TrajectoryParameters(float(step_size), int(n_steps))

    @property
    def windows(self) -> int:
        """Completed windows."""
        return self.optimizer.windows

    def update(self, feedback: Feedback, rng: np.random.Generator | None = None) -> None:
        """Report one transition's ``α ‖x* − x‖²``; at the end of a window update the optimiser
        (which draws from ``rng``, required)."""
        self._jump_sum += feedback.expected_squared_jump
        self._count += 1
        if self._count < self.window:
            return
        n_steps = self.value.max_n_steps
        reward = self._jump_sum / self._count / n_steps**self.cost_exponent
        self._jump_sum, self._count = 0.0, 0
        self.optimizer.update(Feedback(reward=reward), rng)

    def final(self) -> TrajectoryParameters:
        """The ``(step_size, max_n_steps)`` of largest posterior mean reward (the current one
        before the first window ends)."""
        step_size, n_steps = self.optimizer.final()
        return TrajectoryParameters(float(step_size), int(n_steps))

    def move_to(self, point) -> None:
        """Continue from ``point`` (clipped to the box) with a fresh window."""
        self.optimizer.point = self.optimizer.box.clip(point)
        self._jump_sum, self._count = 0.0, 0


#: the default box of (ε, L) around a reference step size ε₀ (where one leapfrog step is
#: accepted with probability ½, in the mass matrix's metric): ε ∈ [ε₀ / 10, 2 ε₀] and
#: L ∈ [1, max(10, ⌈2π / ε₀⌉)], so that at ε₀ a trajectory can run for twice π, half a period of
#: a unit-variance Gaussian's dynamics, and the mean trajectory (L_r ~ U{1..L}) for π
STEP_SIZE_RANGE = (0.1, 2.0)
MIN_MAX_N_STEPS = 10
MAX_MAX_N_STEPS = 1000


def default_hmc_box(
    reference_step_size: float,
    step_size_bounds=None,
    n_steps_bounds=None,
    min_max_n_steps: int = MIN_MAX_N_STEPS,
) -> SearchBox:
    """The search box of ``(step_size, n_steps)``: the user's bounds where given, else
    ``ε ∈ [ε₀ / 10, 2 ε₀]`` and ``L ∈ [1, min(1000, max(min_max_n_steps, ⌈2π / ε₀⌉))]``
    (``min_max_n_steps`` 10 by default), both on a logarithmic scale."""
    if step_size_bounds is None:
        step_size_bounds = (
            STEP_SIZE_RANGE[0] * reference_step_size,
            STEP_SIZE_RANGE[1] * reference_step_size,
        )
    if n_steps_bounds is None:
        upper = math.ceil(2 * math.pi / reference_step_size)
        n_steps_bounds = (1, min(MAX_MAX_N_STEPS, max(int(min_max_n_steps), upper)))
    return SearchBox(
        (step_size_bounds[0], n_steps_bounds[0]),
        (step_size_bounds[1], n_steps_bounds[1]),
        integer=(False, True),
        log_scale=(True, True),
        names=("step_size", "n_steps"),
    )
