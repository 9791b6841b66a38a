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
# # Chains on a Dask cluster: the Lotka–Volterra ODE
#
# A chain of a gradient-free sampler evaluates the model once per iteration, so its wall time
# falls only with more chains running at once. `pm.sample(cores=...)` runs a chain per core of
# one machine; `pymc_kernel_steps.distributed.sample` runs each chain as a task on a
# [Dask](https://distributed.dask.org) cluster: the cores of this machine through a
# `LocalCluster`, or any cluster a `distributed.Client` connects to, with the same call. It is
# called like `pm.sample` and returns the same `DataTree`; chain `c`'s draws are those of
# `pm.sample(..., chains=C, random_seed=s)`'s chain `c`, however many workers there are.
#
# The model is the package's Lotka–Volterra ODE (`pymc_kernel_steps_bench.targets`, also in
# the notebook *A black-box ODE*): predator–prey dynamics solved by `scipy.integrate.solve_ivp`
# in an `Op` without gradient, a few milliseconds per evaluation, five parameters
# $\theta = (\alpha, \beta, \gamma, \delta, \sigma)$. Dask needs the optional extra:
# `pip install "pymc-kernel-steps[distributed]"`.

# %%
import logging
import os
import time

import arviz as az
import distributed
import numpy as np
import pandas as pd
import pymc as pm

from pymc_kernel_steps import KMCLite
from pymc_kernel_steps.distributed import sample
from pymc_kernel_steps_bench.targets import LOTKA_VOLTERRA_NAMES, TARGETS, lotka_volterra_model

logging.getLogger("pymc").setLevel(logging.ERROR)  # keep the saved outputs short
logging.getLogger("distributed").setLevel(logging.ERROR)

# Size: EXAMPLES_FAST=1 (the tests) runs a reduced version; the saved outputs are at full size.
FAST = os.environ.get("EXAMPLES_FAST", "0") == "1"
TUNE, DRAWS, CHAINS = (1500, 500, 2) if FAST else (1500, 1500, 4)
SEED = 4
print(f"{'reduced' if FAST else 'full'} size: {CHAINS} chains x ({TUNE} tune + {DRAWS} draws)")

# %% [markdown]
# ## A cluster on this machine
#
# Two single-threaded worker processes (this machine has two cores; each chain's ODE solves
# use one). On a real cluster, connect a `distributed.Client` to its scheduler instead and pass
# it the same way. In a script, create the cluster under `if __name__ == "__main__":`, as for
# any code that starts worker processes.

# %%
cluster = distributed.LocalCluster(
    n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0"
)
client = distributed.Client(cluster)
len(client.nthreads())

# %% [markdown]
# ## Sampling
#
# `KMCLite` with its defaults, four chains on the two workers (two at a time).

# %%
model = lotka_volterra_model()
with model:
    start = time.perf_counter()
    idata = sample(
        DRAWS,
        tune=TUNE,
        chains=CHAINS,
        step=KMCLite(),
        random_seed=SEED,
        client=client,
        progressbar=False,
    )
    seconds = time.perf_counter() - start
print(f"{seconds:.0f} s")
az.summary(idata, var_names=["theta"], ci_prob=0.9)

# %% [markdown]
# ## The same draws as `pm.sample`
#
# The chains' random generators and initial points come from `random_seed` as `pm.sample`
# derives them, and each chain runs PyMC's own sampling loop on its worker: a short run gives
# the draws of `pm.sample` with the same seed, bit for bit.

# %%
with model:
    short = dict(draws=20, tune=50, chains=CHAINS, random_seed=SEED, progressbar=False)
    on_dask = sample(step=KMCLite(), client=client, **short)
    in_process = pm.sample(step=KMCLite(), cores=1, compute_convergence_checks=False, **short)
identical = np.array_equal(on_dask.posterior["theta"].values, in_process.posterior["theta"].values)
identical

# %% [markdown]
# ## Pooled tuning
#
# With `pooled_tuning=True` the chains tune together: tuning is cut into windows, after each
# one every chain sends its evaluations and recent states to the others, and each chain's next
# surrogate is fitted on all of them, four times the evaluations at the same wall time. At the
# end of tuning the kernel is frozen as usual, so the draws stay exact. Whether that buys
# accuracy is measured on the documentation page *Chains on a Dask cluster*; here, the
# diagnostics of both runs side by side.

# %%
with model:
    start = time.perf_counter()
    pooled = sample(
        DRAWS,
        tune=TUNE,
        chains=CHAINS,
        step=KMCLite(),
        random_seed=SEED,
        client=client,
        progressbar=False,
        pooled_tuning=True,
    )
    pooled_seconds = time.perf_counter() - start
client.close()
cluster.close()
diagnostics = pd.DataFrame(
    {
        name: {
            "seconds": run_seconds,
            "max R-hat": float(az.rhat(run, var_names=["theta"])["theta"].max()),
            "min bulk ESS": float(az.ess(run, var_names=["theta"])["theta"].min()),
        }
        for name, run, run_seconds in [
            ("independent tuning", idata, seconds),
            ("pooled tuning", pooled, pooled_seconds),
        ]
    }
).T
diagnostics.round(3)

# %% [markdown]
# ## Against the reference posterior
#
# The posterior means of both runs against the package's reference for this data set
# (`TARGETS["ode"].reference`: importance sampling from a Laplace approximation), as
# $z = (\text{mean} - \text{reference}) / \text{MCSE}$ with both Monte Carlo errors combined.

# %%
reference = TARGETS["ode"].reference
table = pd.DataFrame({"reference mean": reference["mean"]}, index=list(LOTKA_VOLTERRA_NAMES))
for name, run in [("independent", idata), ("pooled", pooled)]:
    mean = run.posterior["theta"].mean(("chain", "draw")).values
    mcse = az.mcse(run, var_names=["theta"])["theta"].values
    table[f"{name} mean"] = mean
    table[f"{name} z"] = (mean - reference["mean"]) / np.hypot(mcse, reference["mcse_mean"])
table.round(4)

# %% [markdown]
# ## The claims, checked
#
# The Dask chains are `pm.sample`'s chains, and both runs, independent and pooled tuning,
# agree with the reference posterior within Monte Carlo error ($|z| < 4$) with chains that
# agree with each other (R-hat below 1.1).

# %%
assert identical
assert (diagnostics["max R-hat"] < 1.1).all(), diagnostics
assert (table[["independent z", "pooled z"]].abs() < 4).all().all(), table
