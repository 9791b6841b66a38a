# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # A black-box ODE: Lotka–Volterra in `scipy.integrate.solve_ivp`
#
# Your likelihood calls external code — here an ODE solver — wrapped in a PyTensor `Op` that has
# no gradient, so NUTS is not available. PyMC then offers `Metropolis`, `Slice` and
# `DEMetropolisZ`. This notebook samples the same model with `AdaptiveMetropolis` from this
# package and with `pm.DEMetropolisZ`, **at the same number of ODE solves**, and checks that the
# parameters that generated the data are recovered.
#
# The model (`pymc_kernel_steps_bench.targets.lotka_volterra_model`): predator–prey dynamics
# $\dot u = \alpha u - \beta u v$, $\dot v = -\gamma v + \delta u v$ from $(u_0, v_0) = (30, 4)$,
# both species observed at $t = 1, \dots, 20$ with log-normal noise of scale $\sigma$;
# log-normal priors on $\theta = (\alpha, \beta, \gamma, \delta, \sigma)$. The data were
# simulated once from $\theta = (0.55, 0.028, 0.84, 0.026, 0.2)$. One likelihood evaluation is
# one `solve_ivp` call (LSODA), a few milliseconds.

# %%
import logging
import os
import time

import arviz as az
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pymc as pm
import xarray as xr

from pymc_kernel_steps import AdaptiveMetropolis
from pymc_kernel_steps_bench.targets import (
    LOTKA_VOLTERRA_NAMES,
    LOTKA_VOLTERRA_TRUE,
    TARGETS,
    lotka_volterra_data,
    lotka_volterra_model,
    lotka_volterra_solve,
)

logging.getLogger("pymc").setLevel(logging.ERROR)  # keep the saved outputs short

# Size: EXAMPLES_FAST=1 (the tests) runs a reduced version; the saved outputs are at full size.
FAST = os.environ.get("EXAMPLES_FAST", "0") == "1"
TUNE, DRAWS, CHAINS = (1000, 1000, 2) if FAST else (2000, 2000, 2)
SEED = 4
print(f"{'reduced' if FAST else 'full'} size: {CHAINS} chains x ({TUNE} tune + {DRAWS} draws)")

# %% [markdown]
# ## The model
#
# What you would write for your own solver: a Python function of the parameter vector that
# returns the log-likelihood, wrapped in an `Op` without a gradient (here the package's
# `CountingLogp`, which also counts the calls) and added with `pm.Potential`.

# %%
model = lotka_volterra_model()
times, observed = lotka_volterra_data()
model

# %% [markdown]
# ## Sampling at an equal number of ODE solves
#
# `AdaptiveMetropolis` evaluates the log density once per iteration (at the proposal) and keeps
# the current value; `DEMetropolisZ` evaluates it twice (proposal and current point). So
# `DEMetropolisZ` gets half the iterations for the same number of solves, tuning included.

# %%
runs, seconds = {}, {}
with model:
    t0 = time.perf_counter()
    runs["AdaptiveMetropolis"] = pm.sample(
        tune=TUNE,
        draws=DRAWS,
        chains=CHAINS,
        cores=1,
        step=AdaptiveMetropolis(),
        random_seed=SEED,
        progressbar=False,
    )
    seconds["AdaptiveMetropolis"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    runs["DEMetropolisZ"] = pm.sample(
        tune=TUNE // 2,
        draws=DRAWS // 2,
        chains=CHAINS,
        cores=1,
        step=pm.DEMetropolisZ(),
        random_seed=SEED,
        progressbar=False,
    )
    seconds["DEMetropolisZ"] = time.perf_counter() - t0
solves = {
    "AdaptiveMetropolis": CHAINS * (TUNE + DRAWS + 1),  # one per iteration, plus the start
    "DEMetropolisZ": CHAINS * (TUNE + DRAWS),  # two per iteration, half the iterations
}
diagnostics = pd.DataFrame(
    {
        name: {
            "ODE solves": solves[name],
            "seconds": seconds[name],
            "max R-hat": float(az.rhat(idata, var_names=["theta"])["theta"].max()),
            "min bulk ESS": float(az.ess(idata, var_names=["theta"])["theta"].min()),
        }
        for name, idata in runs.items()
    }
).T
diagnostics["min ESS per 1000 solves"] = (
    1000 * diagnostics["min bulk ESS"] / diagnostics["ODE solves"]
)
diagnostics.round(2)

# %% [markdown]
# ## The posterior
#
# `AdaptiveMetropolis`'s marginals with the true parameters as dashed lines:

# %%
truth = xr.Dataset(
    {"theta": ("param", LOTKA_VOLTERRA_TRUE)}, coords={"param": list(LOTKA_VOLTERRA_NAMES)}
)
pc = az.plot_dist(runs["AdaptiveMetropolis"], var_names=["theta"], ci_prob=0.9)
az.add_lines(pc, truth)
plt.show()

# %% [markdown]
# Both samplers' summaries with 90 % intervals. At this number of solves `DEMetropolisZ`'s two
# chains disagree (R-hat about 2 at the full size): its summary is not an estimate of the
# posterior yet. The traces below show why: its chains are still finding the posterior.

# %%
summaries = {
    name: az.summary(idata, var_names=["theta"], ci_prob=0.9) for name, idata in runs.items()
}
summaries["AdaptiveMetropolis"]

# %%
summaries["DEMetropolisZ"]

# %% [markdown]
# Traces of $\alpha$ and $\gamma$, `AdaptiveMetropolis` first, then `DEMetropolisZ`:

# %%
for idata in runs.values():
    az.plot_trace_dist(idata, var_names=["theta"], coords={"param": ["alpha", "gamma"]})
    plt.show()

# %% [markdown]
# The fitted dynamics: ODE solutions at 50 posterior draws through the data.

# %%
draws = runs["AdaptiveMetropolis"].posterior["theta"].values.reshape(-1, 5)
rng = np.random.default_rng(0)
fine = np.linspace(0.5, 20, 200)
fig, ax = plt.subplots(figsize=(8, 3.5))
for theta in draws[rng.choice(len(draws), 50, replace=False)]:
    states = lotka_volterra_solve(theta, times=fine)
    ax.plot(fine, states[:, 0], color="C0", alpha=0.1)
    ax.plot(fine, states[:, 1], color="C1", alpha=0.1)
ax.plot(times, observed[:, 0], "o", color="C0", label="prey (observed)")
ax.plot(times, observed[:, 1], "s", color="C1", label="predator (observed)")
ax.set_xlabel("t")
ax.set_yscale("log")
ax.legend()
plt.show()

# %% [markdown]
# ## Are the true parameters recovered?
#
# One simulated data set does not put the truth at the posterior centre: the noise of these 40
# observations shifts the posterior by about two of its standard deviations in the correlated
# directions of $(\alpha, \gamma, \sigma)$, so the **90 %** intervals miss some true values.
# That is a property of the data set, not of the sampler: the package's reference posterior
# for this data set (`TARGETS["ode"].reference`: importance sampling from a Laplace
# approximation, 16,000 draws, Kish ESS 7300) has the 90 % intervals
# $\alpha \in [0.561, 0.656]$ and $\gamma \in [0.717, 0.822]$, which miss the true 0.55 and
# 0.84 too. The table gives each true value's distance from the posterior mean in posterior
# standard deviations, whether the 90 % and 99 % equal-tailed intervals contain it, and the
# $z$-score of the posterior mean against the reference's
# ($z = (\text{mean} - \text{reference}) / \text{MCSE}$, both runs' Monte Carlo errors
# combined).

# %%
draws = runs["AdaptiveMetropolis"].posterior["theta"].values.reshape(-1, 5)
quantiles = np.quantile(draws, [0.005, 0.05, 0.95, 0.995], axis=0)
table = pd.DataFrame(
    {
        "true": LOTKA_VOLTERRA_TRUE,
        "mean": draws.mean(axis=0),
        "99% lower": quantiles[0],
        "90% lower": quantiles[1],
        "90% upper": quantiles[2],
        "99% upper": quantiles[3],
    },
    index=list(LOTKA_VOLTERRA_NAMES),
)
table["(true - mean) / sd"] = (table["true"] - table["mean"]) / draws.std(axis=0)
table["in 90%"] = (table["90% lower"] <= table["true"]) & (table["true"] <= table["90% upper"])
table["in 99%"] = (table["99% lower"] <= table["true"]) & (table["true"] <= table["99% upper"])
reference = TARGETS["ode"].reference
mcse = az.mcse(runs["AdaptiveMetropolis"], var_names=["theta"])["theta"].values
table["reference mean"] = reference["mean"]
table["z vs reference"] = (table["mean"] - reference["mean"]) / np.hypot(
    mcse, reference["mcse_mean"]
)
table.round(4)

# %% [markdown]
# ## The claim, checked
#
# The parameters are recovered in the sense this data set allows: every true parameter lies
# within 3.5 posterior standard deviations of `AdaptiveMetropolis`'s posterior mean, the
# sampler's chains agree (R-hat below 1.1), and its posterior means agree with the reference
# posterior within Monte Carlo error ($|z| < 4$ for every parameter). `DEMetropolisZ` had not
# converged at the same number of solves. The assertions hold at the full size and at the
# reduced size with this seed.

# %%
assert (table["(true - mean) / sd"].abs() < 3.5).all(), table
assert diagnostics.loc["AdaptiveMetropolis", "max R-hat"] < 1.1, diagnostics
assert (table["z vs reference"].abs() < 4).all(), table
