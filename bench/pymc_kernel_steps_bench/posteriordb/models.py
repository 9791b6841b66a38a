"""PyMC translations of the suite's Stan models: same parameters, priors and likelihood.

Each builder takes the posterior's data (a dict, as posteriordb stores it) and returns a
``pymc.Model`` whose free variables carry the Stan program's names (a Stan ``parameters`` block
variable ``beta`` is PyMC's ``beta``; a ``transformed parameters`` variable the reference draws
hold, such as eight schools' ``theta``, is a ``pm.Deterministic``). A Stan parameter without a
prior statement has an improper uniform prior: ``pm.Flat``, or ``pm.HalfFlat`` when it is
``<lower=0>``. A proper prior on a bounded parameter (``real<lower=0> sigma; sigma ~
cauchy(0, 2.5)``) is the half distribution: the truncation's normalising constant is a constant.

The Lotka–Volterra model solves its ODE with :func:`scipy.integrate.solve_ivp` inside a PyTensor
``Op``: without a gradient (``gradient=False``, the black box a user would write) or with one from
the forward sensitivity equations (``gradient=True``, so that NUTS can check the translation).
"""

from __future__ import annotations

import math

import numpy as np
import pymc as pm
import pytensor.tensor as pt
from pytensor.gradient import DisconnectedType, grad_not_implemented
from pytensor.graph.basic import Apply
from pytensor.graph.op import Op
from scipy.integrate import solve_ivp

_FLOAT = "float64"


def _vector(data, key) -> np.ndarray:
    return np.asarray(data[key], dtype=float)


def _normal_regression(name: str, y, mean, sigma) -> None:
    pm.Normal(name, mu=mean, sigma=sigma, observed=y)


def _flat_linear_regression(name: str, y, X: np.ndarray) -> pm.Model:
    """``y ~ N(X beta, sigma)`` observed as ``name``, flat ``beta`` and ``sigma``."""
    with pm.Model() as model:
        beta = pm.Flat("beta", shape=X.shape[1])
        sigma = pm.HalfFlat("sigma")
        _normal_regression(name, y, pt.dot(X, beta), sigma)
    return model


# ------------------------------------------------------------------------------ regressions
def eight_schools_noncentered(data, gradient: bool = True) -> pm.Model:
    """``theta = mu + tau * theta_trans``; ``y ~ N(theta, sigma)``; ``mu ~ N(0, 5)``,
    ``tau ~ half-Cauchy(0, 5)``, ``theta_trans ~ N(0, 1)``."""
    J = int(data["J"])
    with pm.Model() as model:
        theta_trans = pm.Normal("theta_trans", 0.0, 1.0, shape=J)
        mu = pm.Normal("mu", 0.0, 5.0)
        tau = pm.HalfCauchy("tau", 5.0)
        theta = pm.Deterministic("theta", theta_trans * tau + mu)
        _normal_regression("y", _vector(data, "y"), theta, _vector(data, "sigma"))
    return model


def kidscore_momiq(data, gradient: bool = True) -> pm.Model:
    """``kid_score ~ N(beta[1] + beta[2] mom_iq, sigma)``, flat ``beta``,
    ``sigma ~ half-Cauchy(0, 2.5)``."""
    with pm.Model() as model:
        beta = pm.Flat("beta", shape=2)
        sigma = pm.HalfCauchy("sigma", 2.5)
        mean = beta[0] + beta[1] * _vector(data, "mom_iq")
        _normal_regression("kid_score", _vector(data, "kid_score"), mean, sigma)
    return model


def kidscore_interaction(data, gradient: bool = True) -> pm.Model:
    """``kid_score ~ N(beta · (1, mom_hs, mom_iq, mom_hs mom_iq), sigma)``, flat ``beta``,
    ``sigma ~ half-Cauchy(0, 2.5)``."""
    mom_hs, mom_iq = _vector(data, "mom_hs"), _vector(data, "mom_iq")
    X = np.column_stack([np.ones_like(mom_hs), mom_hs, mom_iq, mom_hs * mom_iq])
    with pm.Model() as model:
        beta = pm.Flat("beta", shape=4)
        sigma = pm.HalfCauchy("sigma", 2.5)
        _normal_regression("kid_score", _vector(data, "kid_score"), pt.dot(X, beta), sigma)
    return model


def logmesquite_logvas(data, gradient: bool = True) -> pm.Model:
    """Log weight on log canopy volume, area, shape, total height, density and group; flat
    ``beta`` and ``sigma``."""
    d1, d2 = _vector(data, "diam1"), _vector(data, "diam2")
    X = np.column_stack(
        [
            np.ones_like(d1),
            np.log(d1 * d2 * _vector(data, "canopy_height")),
            np.log(d1 * d2),
            np.log(d1 / d2),
            np.log(_vector(data, "total_height")),
            np.log(_vector(data, "density")),
            _vector(data, "group"),
        ]
    )
    return _flat_linear_regression("log_weight", np.log(_vector(data, "weight")), X)


def logearn_interaction_z(data, gradient: bool = True) -> pm.Model:
    """Log earnings on standardised height, sex and their interaction; flat ``beta`` and
    ``sigma``."""
    height, male = _vector(data, "height"), _vector(data, "male")
    z_height = (height - height.mean()) / height.std(ddof=1)
    X = np.column_stack([np.ones_like(height), z_height, male, z_height * male])
    return _flat_linear_regression("log_earn", np.log(_vector(data, "earn")), X)


def earn_height(data, gradient: bool = True) -> pm.Model:
    """``earn ~ N(beta[1] + beta[2] height, sigma)`` in dollars; flat ``beta`` and ``sigma``."""
    with pm.Model() as model:
        beta = pm.Flat("beta", shape=2)
        sigma = pm.HalfFlat("sigma")
        mean = beta[0] + beta[1] * _vector(data, "height")
        _normal_regression("earn", _vector(data, "earn"), mean, sigma)
    return model


def nes(data, gradient: bool = True) -> pm.Model:
    """Party identification on ideology, race, age group (three indicators), education, gender
    and income; flat ``beta`` and ``sigma``."""
    age = np.asarray(data["age_discrete"], dtype=int)
    X = np.column_stack(
        [
            np.ones(len(age)),
            _vector(data, "real_ideo"),
            _vector(data, "race_adj"),
            (age == 2).astype(float),
            (age == 3).astype(float),
            (age == 4).astype(float),
            _vector(data, "educ1"),
            _vector(data, "gender"),
            _vector(data, "income"),
        ]
    )
    return _flat_linear_regression("partyid7", _vector(data, "partyid7"), X)


def blr(data, gradient: bool = True) -> pm.Model:
    """``y ~ N(X beta, sigma)``, ``beta ~ N(0, 10)``, ``sigma ~ half-N(0, 10)``."""
    X = np.asarray(data["X"], dtype=float)
    with pm.Model() as model:
        beta = pm.Normal("beta", 0.0, 10.0, shape=int(data["D"]))
        sigma = pm.HalfNormal("sigma", 10.0)
        _normal_regression("y", _vector(data, "y"), pt.dot(X, beta), sigma)
    return model


def arK(data, gradient: bool = True) -> pm.Model:
    """Autoregression of order ``K``: ``y[t] ~ N(alpha + Σ_k beta[k] y[t-k], sigma)`` for
    ``t > K``; ``alpha, beta ~ N(0, 10)``, ``sigma ~ half-Cauchy(0, 2.5)``."""
    K, y = int(data["K"]), _vector(data, "y")
    T = len(y)
    lags = np.column_stack([y[K - k : T - k] for k in range(1, K + 1)])
    with pm.Model() as model:
        alpha = pm.Normal("alpha", 0.0, 10.0)
        beta = pm.Normal("beta", 0.0, 10.0, shape=K)
        sigma = pm.HalfCauchy("sigma", 2.5)
        _normal_regression("y", y[K:], alpha + pt.dot(lags, beta), sigma)
    return model


def diamonds(data, gradient: bool = True) -> pm.Model:
    """brms' Gaussian regression of log price on 24 centred predictors: ``b ~ N(0, 1)``,
    ``Intercept ~ t_3(8, 10)``, ``sigma ~ half-t_3(0, 10)``."""
    X = np.asarray(data["X"], dtype=float)[:, 1:]
    Xc = X - X.mean(axis=0)
    with pm.Model() as model:
        b = pm.Normal("b", 0.0, 1.0, shape=Xc.shape[1])
        intercept = pm.StudentT("Intercept", nu=3.0, mu=8.0, sigma=10.0)
        sigma = pm.HalfStudentT("sigma", nu=3.0, sigma=10.0)
        _normal_regression("Y", _vector(data, "Y"), intercept + pt.dot(Xc, b), sigma)
    return model


# ------------------------------------------------------------------------ Gaussian processes
def _exp_quad_cov(x: np.ndarray, alpha, rho):
    """Stan's ``gp_exp_quad_cov(x, alpha, rho)``: ``alpha² exp(−(x_i − x_j)² / (2 rho²))``."""
    sq_dist = (x[:, None] - x[None, :]) ** 2
    return alpha**2 * pt.exp(-0.5 * sq_dist / rho**2)


def gp_pois_regr(data, gradient: bool = True) -> pm.Model:
    """Latent GP Poisson regression, non-centred: ``f = chol(K) f_tilde``, ``k ~ Poisson(exp f)``;
    ``rho ~ Gamma(25, 4)``, ``alpha ~ half-N(0, 2)``, ``f_tilde ~ N(0, 1)``."""
    x = _vector(data, "x")
    N = len(x)
    with pm.Model() as model:
        rho = pm.Gamma("rho", alpha=25.0, beta=4.0)
        alpha = pm.HalfNormal("alpha", 2.0)
        f_tilde = pm.Normal("f_tilde", 0.0, 1.0, shape=N)
        cov = _exp_quad_cov(x, alpha, rho) + 1e-10 * np.eye(N)
        f = pm.Deterministic("f", pt.dot(pt.linalg.cholesky(cov), f_tilde))
        pm.Poisson("k", mu=pt.exp(f), observed=np.asarray(data["k"], dtype=int))
    return model


def gp_regr(data, gradient: bool = True) -> pm.Model:
    """GP regression with the noise ``sigma`` added to the covariance's diagonal (as Stan writes
    it, a variance): ``y ~ MvN(0, K + sigma I)``; ``rho ~ Gamma(25, 4)``, ``alpha ~ half-N(0, 2)``,
    ``sigma ~ half-N(0, 1)``."""
    x = _vector(data, "x")
    N = len(x)
    with pm.Model() as model:
        rho = pm.Gamma("rho", alpha=25.0, beta=4.0)
        alpha = pm.HalfNormal("alpha", 2.0)
        sigma = pm.HalfNormal("sigma", 1.0)
        cov = _exp_quad_cov(x, alpha, rho) + sigma * np.eye(N)
        pm.MvNormal("y", mu=np.zeros(N), cov=cov, observed=_vector(data, "y"))
    return model


# ----------------------------------------------------------------------- mixtures and HMMs
def low_dim_gauss_mix(data, gradient: bool = True) -> pm.Model:
    """Two-component normal mixture with ordered means: ``mu ~ N(0, 2)`` (ordered),
    ``sigma ~ half-N(0, 2)``, ``theta ~ Beta(5, 5)``."""
    with pm.Model() as model:
        mu = pm.Normal(
            "mu",
            0.0,
            2.0,
            shape=2,
            transform=pm.distributions.transforms.ordered,
            initval=np.array([-1.0, 1.0]),
        )
        sigma = pm.HalfNormal("sigma", 2.0, shape=2)
        theta = pm.Beta("theta", 5.0, 5.0)
        pm.NormalMixture(
            "y", w=pt.stack([theta, 1.0 - theta]), mu=mu, sigma=sigma, observed=_vector(data, "y")
        )
    return model


def hmm_example(data, gradient: bool = True) -> pm.Model:
    """Two-state Gaussian HMM (unit emission sd) marginalised by the forward algorithm; the rows
    of the transition matrix are uniform on the simplex, ``mu`` positive and ordered with
    ``mu[1] ~ N(3, 1)``, ``mu[2] ~ N(10, 1)``."""
    from pytensor import scan

    y = _vector(data, "y")
    K = int(data["K"])
    transforms = pm.distributions.transforms
    with pm.Model() as model:
        theta1 = pm.Dirichlet("theta1", a=np.ones(K))
        theta2 = pm.Dirichlet("theta2", a=np.ones(K))
        mu = pm.Normal(
            "mu",
            mu=np.array([3.0, 10.0]),
            sigma=1.0,
            shape=K,
            transform=transforms.Chain([transforms.log, transforms.ordered]),
            initval=np.array([3.0, 10.0]),
        )
        log_transition = pt.log(pt.stack([theta1, theta2]))  # [from j, to k]
        emission = -0.5 * (y[:, None] - mu[None, :]) ** 2 - 0.5 * math.log(2 * math.pi)

        def forward(emission_t, previous, log_transition):
            return pt.logsumexp(previous[:, None] + log_transition, axis=0) + emission_t

        gamma = scan(
            forward,
            sequences=emission[1:],
            outputs_info=emission[0],
            non_sequences=log_transition,
            return_updates=False,
        )
        pm.Potential("forward_loglik", pt.logsumexp(gamma[-1]))
    return model


# ---------------------------------------------------------------------------- Lotka–Volterra
def _lotka_volterra_rhs(t, state, alpha, beta, gamma, delta):
    u, v = state[0], state[1]
    return [(alpha - beta * v) * u, (-gamma + delta * u) * v]


def _lotka_volterra_sensitivity_rhs(t, state, alpha, beta, gamma, delta):
    """The ODE and its forward sensitivities to ``(alpha, beta, gamma, delta, u0, v0)``."""
    u, v = state[0], state[1]
    S = state[2:].reshape(2, 6)
    jac = np.array([[alpha - beta * v, -beta * u], [delta * v, -gamma + delta * u]])
    forcing = np.array([[u, -u * v, 0.0, 0.0, 0.0, 0.0], [0.0, 0.0, -v, u * v, 0.0, 0.0]])
    dS = jac @ S + forcing
    return np.concatenate([[(alpha - beta * v) * u, (-gamma + delta * u) * v], dS.ravel()])


#: ``solve_ivp`` settings: Stan's ``integrate_ode_rk45(..., 1e-5, 1e-3, 5e2)`` in the posteriordb
#: program (Dormand–Prince, relative tolerance 1e-5, absolute 1e-3)
ODE_OPTIONS = {"method": "RK45", "rtol": 1e-5, "atol": 1e-3}


#: Stan's ``max_num_steps`` (500 per output interval), as right-hand-side evaluations of RK45
MAX_STEPS_PER_INTERVAL = 500
#: a population this large is an absurd state (the data are below 100): the solve stops there
BLOW_UP = 1e6


class _TooManySteps(Exception):
    pass


def _blow_up(t, state, *theta):
    return BLOW_UP - max(state[0], state[1])


_blow_up.terminal = True


def lotka_volterra_solve(theta, z_init, ts, sensitivities: bool = False):
    """Populations ``z (N, 2)`` at times ``ts`` from ``z_init`` at time 0, and with
    ``sensitivities`` their Jacobian ``(N, 2, 6)`` with respect to ``(theta, z_init)``.

    An integration that fails (a solver error, more steps than Stan's ``max_num_steps`` allows,
    a population past :data:`BLOW_UP`) gives ``+inf`` populations: a log density of ``−inf``,
    where Stan rejects the proposal.
    """
    theta = np.asarray(theta, dtype=float)
    z_init = np.asarray(z_init, dtype=float)
    n = len(ts)
    if sensitivities:
        start = np.concatenate([z_init, np.eye(2, 6, 4).ravel()])
        rhs = _lotka_volterra_sensitivity_rhs
    else:
        start, rhs = z_init, _lotka_volterra_rhs
    calls, limit = 0, 6 * MAX_STEPS_PER_INTERVAL * n

    def counted_rhs(t, state, *args):
        nonlocal calls
        calls += 1
        if calls > limit:
            raise _TooManySteps
        return rhs(t, state, *args)

    failed = np.full((n, 2), np.inf), np.zeros((n, 2, 6))
    if not (np.all(np.isfinite(theta)) and np.all(np.isfinite(z_init))):
        return failed if sensitivities else failed[0]
    try:
        with np.errstate(all="ignore"):
            solution = solve_ivp(
                counted_rhs,
                (0.0, float(ts[-1])),
                start,
                t_eval=ts,
                args=tuple(theta),
                events=_blow_up,
                **ODE_OPTIONS,
            )
    except _TooManySteps:
        return failed if sensitivities else failed[0]
    if solution.status != 0 or solution.y.shape[1] != n or not np.all(np.isfinite(solution.y)):
        return failed if sensitivities else failed[0]
    z = solution.y[:2].T.copy()
    if not sensitivities:
        return z
    return z, solution.y[2:].T.reshape(n, 2, 6).copy()


class LotkaVolterraODE(Op):
    """``z = ODE(theta, z_init)`` at fixed times, by ``solve_ivp``.

    With ``gradient=False`` the ``Op`` is a black box without gradient. With ``gradient=True`` it
    solves the forward sensitivity equations alongside and has a second output, the Jacobian
    ``dz / d(theta, z_init)`` ``(N, 2, 6)``, from which its vector-Jacobian product comes.
    """

    __props__ = ("times", "gradient")

    def __init__(self, times, gradient: bool):
        self.times = tuple(float(t) for t in times)
        self.gradient = bool(gradient)

    def make_node(self, theta, z_init):
        theta = pt.as_tensor_variable(theta).astype(_FLOAT)
        z_init = pt.as_tensor_variable(z_init).astype(_FLOAT)
        outputs = [pt.matrix(dtype=_FLOAT)]
        if self.gradient:
            outputs.append(pt.tensor3(dtype=_FLOAT))
        return Apply(self, [theta, z_init], outputs)

    def perform(self, node, inputs, output_storage):
        result = lotka_volterra_solve(*inputs, np.asarray(self.times), self.gradient)
        if not self.gradient:
            output_storage[0][0] = result
            return
        output_storage[0][0], output_storage[1][0] = result

    def pullback(self, inputs, outputs, cotangents):
        if not self.gradient:
            return [
                grad_not_implemented(self, i, x, "the ODE is a black box")
                for i, x in enumerate(inputs)
            ]
        if not isinstance(cotangents[1].type, DisconnectedType):
            raise NotImplementedError("LotkaVolterraODE: no second derivatives")
        vjp = pt.tensordot(cotangents[0], outputs[1], axes=[[0, 1], [0, 1]])
        return [vjp[:4], vjp[4:]]


def lotka_volterra(data, gradient: bool = True) -> pm.Model:
    """Hudson's Bay lynx–hare pelts, 1900–1920: Lotka–Volterra populations with log-normal
    measurement error; ``theta[1,3] ~ N(1, 0.5)``, ``theta[2,4] ~ N(0.05, 0.05)`` (all positive),
    ``z_init ~ logN(log 10, 1)``, ``sigma ~ logN(−1, 1)``."""
    ts = _vector(data, "ts")
    y = np.asarray(data["y"], dtype=float)
    with pm.Model() as model:
        prior_centre = np.array([1.0, 0.05, 1.0, 0.05])
        theta = pm.TruncatedNormal(
            "theta",
            mu=prior_centre,
            sigma=[0.5, 0.05, 0.5, 0.05],
            lower=0.0,
            initval=prior_centre,  # PyMC's default start, theta = 1, makes the ODE stiff
        )
        z_init = pm.LogNormal("z_init", mu=math.log(10.0), sigma=1.0, shape=2)
        sigma = pm.LogNormal("sigma", mu=-1.0, sigma=1.0, shape=2)
        solution = LotkaVolterraODE(ts, gradient=gradient)(theta, z_init)
        z = solution[0] if gradient else solution
        pm.LogNormal("y_init", mu=pt.log(z_init), sigma=sigma, observed=_vector(data, "y_init"))
        pm.LogNormal("y", mu=pt.log(z), sigma=sigma[None, :], observed=y)
    return model


def _register_numba() -> None:
    """The ODE ``Op`` as one ``objmode`` call under PyTensor's numba backend (no warning)."""
    import numba
    from pytensor.link.numba.dispatch import numba_funcify
    from pytensor.link.numba.dispatch.basic import numba_njit

    @numba_funcify.register(LotkaVolterraODE)
    def _numba_funcify_lotka_volterra(op, node=None, **kwargs):
        times = np.asarray(op.times)

        def call(theta, z_init):
            return lotka_volterra_solve(theta, z_init, times)

        def call_with_jacobian(theta, z_init):
            return lotka_volterra_solve(theta, z_init, times, True)

        @numba_njit
        def lotka_volterra_ode(theta, z_init):
            with numba.objmode(ret="float64[:, :]"):
                ret = call(theta, z_init)
            return ret

        @numba_njit
        def lotka_volterra_ode_with_jacobian(theta, z_init):
            with numba.objmode(z="float64[:, :]", jacobian="float64[:, :, :]"):
                z, jacobian = call_with_jacobian(theta, z_init)
            return z, jacobian

        return lotka_volterra_ode_with_jacobian if op.gradient else lotka_volterra_ode


_register_numba()
