"""Pseudo-marginal likelihoods: a Python estimator of the likelihood as a term of a PyMC model.

:func:`pseudo_marginal_potential` wraps ``loglike_estimate(theta, rng) -> float`` (the log of an
unbiased, non-negative estimate of the likelihood) in a PyTensor ``Op`` that consumes a random
generator held in the graph (a :class:`pytensor.tensor.random.op.RNGConsumerOp`): the generator
is an input of the model's log density and the ``Op``'s next generator its update. So

- a compiled log density (``pymc.pytensorf.compile(..., return_updates=True)``) gives a fresh
  estimate at every call;
- this package's steps reseed the generator from each chain's random generator in
  ``setup_chain``, so ``random_seed`` makes runs reproducible, sequentially or in parallel;
- the steps evaluate the estimator once per iteration, at the proposal, and keep the current
  point's estimate: pseudo-marginal Metropolis–Hastings (Andrieu & Roberts 2009), whose draws
  come from the exact posterior whatever the estimator's variance, when one step samples
  every variable of the model: in a compound step the other steps draw fresh estimates, and
  ours re-estimates its current point after they move (a step of ours built for part of
  such a model warns).

The estimator's variance costs efficiency, not exactness: see the usage page of the
documentation, "Pseudo-marginal likelihoods", for the measured acceptance rate against the
standard deviation of the log estimate.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable, Sequence

import numpy as np
import pymc as pm
import pytensor
import pytensor.tensor as pt
from pymc.model import modelcontext
from pytensor.graph.basic import Apply, Variable
from pytensor.tensor.random.op import RNGConsumerOp
from pytensor.tensor.random.type import RandomGeneratorType
from pytensor.tensor.random.utils import custom_rng_deepcopy

from ._objmode import register_objmode
from ._validation import require_bool

__all__ = ["LogLikelihoodEstimateOp", "PseudoMarginalGradientError", "pseudo_marginal_potential"]

LogLikeEstimate = Callable[[np.ndarray, np.random.Generator], float]


def _describe(value) -> str:
    if isinstance(value, np.ndarray):
        return f"an array of shape {value.shape} and dtype {value.dtype}"
    return f"{value!r} of type {type(value).__name__}"


def _log_estimate_value(value, name: str, theta: np.ndarray) -> float:
    """``value`` as a float if it is a real floating scalar other than +inf; else a clear error
    naming the estimator and the parameter value."""
    if isinstance(value, float) and value != math.inf:  # the common case, fast
        return value
    if isinstance(value, np.ndarray) and value.ndim == 0:
        scalar = value
    elif isinstance(value, float | np.floating):
        scalar = np.asarray(value)
    elif isinstance(value, np.ndarray):
        raise ValueError(
            f"{_where(name, theta)} returned {_describe(value)}; it must return one float, the "
            "log of an unbiased estimate of the likelihood (sum the terms of independent "
            "observations yourself)."
        )
    else:
        raise TypeError(
            f"{_where(name, theta)} returned {_describe(value)}; it must return a float, the log "
            "of an unbiased estimate of the likelihood."
        )
    if scalar.dtype.kind != "f":
        raise TypeError(
            f"{_where(name, theta)} returned {_describe(value)}; it must return a float, the log "
            "of an unbiased estimate of the likelihood (e.g. `return float(value)`)."
        )
    result = float(scalar)
    if result == math.inf:
        raise ValueError(
            f"{_where(name, theta)} returned +inf, which is not the log of an estimate of a "
            "finite likelihood. Return -inf for a zero estimate."
        )
    return result


class PseudoMarginalGradientError(ValueError):
    """Raised when a gradient of a pseudo-marginal estimate is asked for.

    ``pm.sample()`` without ``step=`` asks for one to choose a step method for each variable;
    had the estimate no gradient (PyTensor's usual "undefined gradient"), PyMC would choose
    ``Slice``, which re-estimates the current point at every iteration and so samples a wrong
    posterior without a warning. This error stops it and names the steps to use. (It is not a
    ``TypeError`` or ``NotImplementedError``, which PyMC's step assignment would catch.)
    """


def _where(name: str, theta: np.ndarray) -> str:
    return f"`loglike_estimate` of {name!r} at theta={theta.tolist()}"


class LogLikelihoodEstimateOp(RNGConsumerOp):
    """A PyTensor ``Op`` ``(rng, theta) -> (next_rng, log_estimate)`` around a Python estimator.

    Made by :func:`pseudo_marginal_potential`; use that function to add an estimate to a model.
    The estimator is called with a copy of the input generator (``rng``), which becomes the
    ``Op``'s first output; :meth:`update` tells PyMC that it updates ``rng``, so a compiled
    function draws fresh randomness at every call and reseeding the generator reproduces a run.

    Parameters
    ----------
    loglike_estimate : callable
        ``loglike_estimate(theta: np.ndarray, rng: np.random.Generator) -> float``.
    name : str
        Name of the potential, shown in errors and graphs.

    Attributes
    ----------
    n_calls : int
        Calls of the estimator in this process since construction or :meth:`reset` (worker
        processes of ``pm.sample(cores>1)`` count in their own copies; the steps' ``logp_evals``
        sample stat counts everywhere).

    Notes
    -----
    No ``__props__``: two instances never compare equal, so PyTensor never merges the
    applications of two estimators. Asking for the gradient raises
    :class:`PseudoMarginalGradientError` (the estimate is random): ``pm.sample()`` without
    ``step=`` stops with an error that names this package's steps, instead of assigning
    ``Slice``, which would sample a wrong posterior.
    """

    def __init__(self, loglike_estimate: LogLikeEstimate, name: str):
        self.loglike_estimate = loglike_estimate
        self.name = name
        self.n_calls = 0

    def __str__(self) -> str:
        return f"LogLikelihoodEstimate{{{self.name}}}"

    def reset(self) -> None:
        """Set :attr:`n_calls` back to zero."""
        self.n_calls = 0

    def make_node(self, rng, theta) -> Apply:
        if not isinstance(getattr(rng, "type", None), RandomGeneratorType):
            raise TypeError(f"{self} takes a random generator variable, got {rng!r}")
        theta = pt.as_tensor_variable(theta)
        if theta.type.ndim != 1 or theta.type.dtype != "float64":
            raise TypeError(f"{self} takes a float64 vector, got {theta.type}")
        return Apply(self, [rng, theta], [rng.type(), pt.scalar(dtype="float64")])

    def update(self, node: Apply) -> dict[Variable, Variable]:
        return {node.inputs[0]: node.outputs[0]}

    def evaluate(self, rng: np.random.Generator, theta: np.ndarray):
        """One estimate: ``(next generator, log estimate)``; the input generator is not touched."""
        rng = custom_rng_deepcopy(rng)
        theta = np.array(theta, dtype=np.float64, copy=True)  # the estimator may not alter ours
        self.n_calls += 1
        value = self.loglike_estimate(theta, rng)
        return rng, _log_estimate_value(value, self.name, theta)

    def perform(self, node, inputs, output_storage) -> None:
        rng, value = self.evaluate(*inputs)
        output_storage[0][0] = rng
        output_storage[1][0] = np.asarray(value, dtype=np.float64)

    def pullback(self, inputs, outputs, cotangents):
        raise PseudoMarginalGradientError(
            f"The model's log density includes the pseudo-marginal estimate {self.name!r}, a "
            "random estimate without a gradient. Sample it with one of pymc_kernel_steps' steps, "
            "which keep the current point's estimate (pseudo-marginal Metropolis-Hastings): "
            "pm.sample(step=KMCLite()) (or KMCFinite, KAMH, AdaptiveMetropolis, CKAM), one step "
            "for every variable of the model. PyMC's default steps (Slice, Metropolis, "
            "DEMetropolisZ) re-estimate the current point at every iteration and sample a wrong "
            "posterior; gradient-based methods (NUTS, find_MAP, ADVI) cannot use it."
        )


def _log_likelihood_call(op):
    def call(rng, theta):
        next_rng, value = op.evaluate(rng, theta)
        return next_rng, np.asarray(value, dtype=np.float64)

    return call


# a lean numba implementation (one ``objmode`` call, no object-mode fall-back warning)
register_objmode(LogLikelihoodEstimateOp, _log_likelihood_call, tuple_output=True)


def _theta_vector(theta) -> Variable:
    """``theta`` (a scalar or vector, or a list of them) as one float64 vector variable."""
    parts = list(theta) if isinstance(theta, list | tuple) else [theta]
    if not parts:
        raise ValueError("`theta` is an empty list: give the parameters the likelihood depends on.")
    vectors = []
    for part in parts:
        try:
            tensor = pt.as_tensor_variable(part)
        except (TypeError, ValueError, NotImplementedError) as error:
            raise TypeError(
                f"`theta` must be a PyTensor variable, a number or an array (or a list of them), "
                f"got {part!r} of type {type(part).__name__}"
            ) from error
        label = tensor.name or repr(part)
        if tensor.type.ndim > 1:
            raise ValueError(
                f"`theta` must be a scalar or a vector (or a list of them): {label} has "
                f"{tensor.type.ndim} dimensions (shape {tensor.type.shape}). Pass its elements in "
                "the order your estimator expects, e.g. `x.ravel()` for row-major order."
            )
        if tensor.type.dtype[0] not in "iuf":
            raise TypeError(f"`theta` must be real numbers: {label} has dtype {tensor.type.dtype}")
        vectors.append(pt.cast(pt.atleast_1d(tensor), "float64"))
    vector = vectors[0] if len(vectors) == 1 else pt.concatenate(vectors)
    if vector.type.shape[0] == 0:
        raise ValueError("`theta` has no elements: give the parameters the likelihood depends on.")
    return vector


def _theta_at_initial_point(model: pm.Model, theta: Variable) -> np.ndarray:
    """The value of ``theta`` at the model's initial point (RVs replaced by their values)."""
    [graph] = model.replace_rvs_by_values([theta])
    point = model.initial_point()
    inputs = [v for v in model.value_vars if v.name in point]
    fn = pytensor.function(inputs, graph, mode="FAST_COMPILE", on_unused_input="ignore")
    return np.asarray(fn(*[point[v.name] for v in inputs]), dtype=np.float64)


def pseudo_marginal_potential(
    name: str,
    loglike_estimate: LogLikeEstimate,
    theta: Variable | Sequence[Variable],
    *,
    seed: int | np.random.SeedSequence | None = None,
    check: bool = True,
    model: pm.Model | None = None,
) -> Variable:
    """Add the log of an unbiased likelihood estimate to a PyMC model, for pseudo-marginal MCMC.

    The model's log density becomes ``log p(θ) + log L̂(θ)`` with a fresh estimate ``L̂(θ)`` at
    every evaluation. This package's steps (``AdaptiveMetropolis``, ``KAMH``, ``KMCLite``,
    ``KMCFinite``, ``CKAM``) evaluate it once per iteration, at the proposal, and keep the
    current point's estimate until a proposal is accepted: pseudo-marginal Metropolis–Hastings,
    whose draws come from the *exact* posterior ``p(θ | y) ∝ p(θ) L(θ)`` if

    - ``exp(loglike_estimate(θ, rng))`` is an unbiased estimate of the likelihood ``L(θ)`` (up to
      a constant factor that does not depend on ``θ``), on the natural scale: the mean of the
      estimates, not of their logarithms, must be ``L(θ)``; and
    - every call draws its randomness from ``rng`` (not from a global or cached generator), so
      that estimates are fresh and ``random_seed`` reproduces a run.

    PyMC's own ``Metropolis``, ``Slice`` and ``DEMetropolisZ`` re-estimate the current point at
    every iteration and do not sample this posterior exactly.

    Parameters
    ----------
    name : str
        Name of the potential in the model.
    loglike_estimate : callable
        ``loglike_estimate(theta, rng) -> float``: the log of a non-negative, unbiased estimate
        of the likelihood at ``theta``, a 1-d ``float64`` array (a copy: the function may not
        change the model's), drawing its randomness from ``rng``, a
        :class:`numpy.random.Generator`. Return ``-inf`` for an estimate of zero (a rejection).
        A NaN is treated as a rejection too, counted in the steps' ``logp_nan`` sample stat (and
        warned about when it is frequent). With ``cores > 1`` PyMC sends it to each process
        with cloudpickle, which takes lambdas and closures too; what it holds must pickle (an
        open file or a handle to an external solver does not).
    theta : PyTensor variable, or list of them
        The parameters the likelihood depends on: a scalar or vector model variable (or any
        expression of them), or a list of scalars and vectors, concatenated in order into the
        vector the estimator receives. Integer variables are passed as floats.
    seed : int or numpy.random.SeedSequence, optional
        Seed of the generator stored in the graph. This package's steps reseed it from
        ``pm.sample``'s ``random_seed`` for every chain, and so does PyMC when it compiles a
        model function; the seed matters only when you compile and call the model's log
        density yourself.
    check : bool
        If True (default), call the estimator once at the model's initial point to check what
        it returns (a float), so that mistakes surface here rather than mid-sampling. Set it
        to False if one call is expensive or the initial point is not meaningful.
    model : pymc.Model, optional
        The model to add the potential to; default the model in context.

    Returns
    -------
    TensorVariable
        The potential (``pm.Potential(name, log_estimate)``) added to the model.

    Raises
    ------
    TypeError
        If ``name`` is not a string, ``loglike_estimate`` is not a callable of two arguments,
        ``theta`` is not numeric, or the check call returns something other than a float.
    ValueError
        If ``theta`` has more than one dimension or no elements, or the check call returns an
        array or +inf.

    Notes
    -----
    The estimate's variance drives efficiency: a proposal is accepted only if its estimate beats
    the current one, so with a noisy estimator a chain that happens to hold a lucky
    over-estimate sticks. A standard deviation of the log estimate of about 1 to 1.7 near the
    posterior mode minimises the cost per effective sample (Doucet, Pitt, Deligiannidis & Kohn
    2015, Biometrika 102(2)); the documentation's usage page shows the acceptance rate against
    the standard deviation measured with this function.

    The estimator runs in Python (object mode under PyTensor's default numba backend). Errors it
    raises while sampling stop sampling with :class:`~pymc_kernel_steps.LogDensityError`, which
    names the step, the chain, the iteration and the point; an invalid return value raises a
    ``TypeError``/``ValueError`` naming the estimator and ``theta`` there too.

    Examples
    --------
    A latent-variable model with a closed-form marginal, ``y_i | z_i ~ N(z_i, 1)``,
    ``z_i | μ ~ N(μ, 1)``, so that ``y_i | μ ~ N(μ, 2)``; the likelihood is estimated by averaging
    ``p(y_i | z_i)`` over ``n`` draws of each ``z_i`` from its prior:

    >>> import numpy as np
    >>> import pymc as pm
    >>> from scipy.special import logsumexp
    >>> from pymc_kernel_steps import AdaptiveMetropolis, pseudo_marginal_potential
    >>> y = np.array([0.3, -1.2, 2.0, 0.7])
    >>> def loglike_estimate(theta, rng, n=16):
    ...     z = theta[0] + rng.standard_normal((n, y.size))
    ...     log_p = -0.5 * (y - z) ** 2 - 0.5 * np.log(2 * np.pi)
    ...     return float(np.sum(logsumexp(log_p, axis=0) - np.log(n)))
    >>> with pm.Model() as model:
    ...     mu = pm.Normal("mu", 0.0, 10.0)
    ...     loglik = pseudo_marginal_potential("loglik", loglike_estimate, mu)
    ...     idata = pm.sample(
    ...         step=AdaptiveMetropolis(), tune=500, draws=500, chains=2, cores=1,
    ...         random_seed=1, progressbar=False, compute_convergence_checks=False,
    ...     )  # doctest: +SKIP
    """
    if not isinstance(name, str) or not name:
        raise TypeError(f"`name` must be a non-empty string, got {name!r}")
    if not callable(loglike_estimate):
        raise TypeError(
            "`loglike_estimate` must be a callable `loglike_estimate(theta, rng) -> float`, got "
            f"{loglike_estimate!r} of type {type(loglike_estimate).__name__}"
        )
    try:
        signature = inspect.signature(loglike_estimate)
    except (TypeError, ValueError):  # some builtins and extension callables have none
        signature = None
    if signature is not None:
        try:
            signature.bind(np.zeros(1), np.random.default_rng(0))
        except TypeError as error:
            raise TypeError(
                "`loglike_estimate` must accept two positional arguments (theta, rng); its "
                f"signature is {signature}: {error}"
            ) from None
    require_bool("check", check)
    model = modelcontext(model)
    vector = _theta_vector(theta)
    op = LogLikelihoodEstimateOp(loglike_estimate, name)
    if check:
        value = _theta_at_initial_point(model, vector)
        try:
            op.evaluate(np.random.default_rng(0), value)
        except Exception as error:
            error.add_note(
                f"(raised by `loglike_estimate` of {name!r} at theta={value.tolist()}, the model's "
                "initial point, in the check call of pseudo_marginal_potential; check=False "
                "skips that call)"
            )
            raise
        finally:
            op.reset()
    rng = pytensor.shared(np.random.default_rng(seed), name=f"{name}_rng")
    _, log_estimate = op(rng, vector)
    with model:
        return pm.Potential(name, log_estimate)
