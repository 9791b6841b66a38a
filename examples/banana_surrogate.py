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
# # The banana: what KMC's surrogate learns
#
# Kernel Hamiltonian Monte Carlo (`KMCLite`, `KMCFinite`) makes HMC-like long moves **without
# the model's gradient**: during tuning it fits a surrogate log density $f$ to the chain's own
# history by *score matching* (which needs samples only, no density or gradient values), runs
# leapfrog trajectories on $\nabla f$, and accepts the end point with the **true** log density.
# So the surrogate's quality decides how far the moves go, never whether the draws are correct.
# This is the papers' surrogate, `KMCLite(surrogate="score_matching")`; `KMCLite()`'s default,
# `surrogate="regression"`, fits the log densities the chain evaluated instead (the samplers
# page of the documentation says why and by how much).
#
# This notebook opens the box on the banana of Haario et al. ($x_1 \sim N(0, 100)$,
# $x_2 + 0.03(x_1^2 - 100) \sim N(0, 1)$) in two dimensions, so that the whole density fits in
# one picture, written as a black-box `Op` without a gradient: it samples with `KMCLite`,
# refits the surrogate from the tuning history with the package's core estimators (as
# `KMCLite` does), draws it next to the true log density, and runs one trajectory on it.
# Because the banana has a differentiable twin, we also run NUTS on it — what you would use if
# you had a gradient.

# %%
import logging
import os

import arviz as az
import matplotlib.pyplot as plt
import numpy as np
import pymc as pm

from pymc_kernel_steps import KMCLite
from pymc_kernel_steps.core import (
    GaussianKernel,
    LiteScoreEstimator,
    Whitening,
    kinetic_energy,
    leapfrog,
    median_lengthscale,
    select_hyperparameters,
)
from pymc_kernel_steps_bench.targets import banana_logp, banana_model, banana_moments, banana_sample

logging.getLogger("pymc").setLevel(logging.ERROR)  # keep the saved outputs short

# Size: EXAMPLES_FAST=1 (the tests) runs a reduced version; the saved outputs are at full size.
FAST = os.environ.get("EXAMPLES_FAST", "0") == "1"
TUNE, DRAWS, CHAINS = (2000, 1000, 2) if FAST else (6000, 3000, 2)
SEED = 2
DIM = 2
print(f"{'reduced' if FAST else 'full'} size: {CHAINS} chains x ({TUNE} tune + {DRAWS} draws)")

# %% [markdown]
# ## Sampling
#
# `KMCLite` and `DEMetropolisZ` on the black box at the same number of log-density evaluations
# (`DEMetropolisZ` evaluates twice per iteration, so it gets half the iterations), and NUTS on
# the differentiable twin (its cost is counted in gradient evaluations: leapfrog steps). The
# banana's curved arms are hard for NUTS too: with the default `target_accept=0.8` it reports
# divergences there, so we raise it to 0.95, as its warning advises.

# %%
model = banana_model(DIM)
common = dict(chains=CHAINS, cores=1, progressbar=False, random_seed=SEED)
with model:
    idata_kmc = pm.sample(
        tune=TUNE,
        draws=DRAWS,
        step=KMCLite(surrogate="score_matching"),
        discard_tuned_samples=False,
        **common,
    )
    idata_demz = pm.sample(tune=TUNE // 2, draws=DRAWS // 2, step=pm.DEMetropolisZ(), **common)
with banana_model(DIM, black_box=False):
    idata_nuts = pm.sample(
        tune=1000, draws=DRAWS, target_accept=0.95, discard_tuned_samples=False, **common
    )

mean, var = banana_moments(DIM)
evaluations = {
    "KMCLite": CHAINS * (TUNE + DRAWS + 1),
    "DEMetropolisZ": CHAINS * (TUNE + DRAWS),
    "NUTS (gradient)": int(idata_nuts.sample_stats["n_steps"].sum())
    + int(idata_nuts.warmup_sample_stats["n_steps"].sum()),
}
for name, idata in [("KMCLite", idata_kmc), ("DEMetropolisZ", idata_demz), ("NUTS", idata_nuts)]:
    x = idata.posterior["x"].values.reshape(-1, DIM)
    ess = az.ess(idata, var_names=["x"])["x"].values
    print(
        f"{name:14s} E[x1] {x[:, 0].mean():6.2f} (exact 0)  Var[x1] {x[:, 0].var():6.1f} "
        f"(exact {var[0]:.0f})  Var[x2] {x[:, 1].var():5.1f} (exact {var[1]:.0f})  "
        f"min bulk ESS {ess.min():6.1f}"
    )
print("log-density evaluations:", evaluations)

# %% [markdown]
# `DEMetropolisZ` and `KMCLite` spend the same number of evaluations; NUTS's cost is in gradient
# evaluations (leapfrog steps, tuning included). Within-run ESS can be optimistic on this
# target — a chain that has not reached the ends of the arms looks well mixed — so
# `docs/benchmarks.md` measures the error over independent runs instead (on the 8-d banana at
# 12,000 evaluations, KMC is level with `DEMetropolisZ` on the worst coordinate, the long axis).
# The traces of $x_1$ show how far each `KMCLite` chain travels along the banana:

# %%
az.plot_trace_dist(idata_kmc, var_names=["x"])
plt.show()

# %% [markdown]
# ## The surrogate, refitted from the tuning history
#
# `KMCLite` fits its surrogate on a sub-sample of (by default) 500 states from the most recent
# half of the history, in coordinates whitened by the history's mean and covariance, with the
# kernel lengthscale and regulariser chosen by cross-validation of the score-matching
# objective. We do the same with the core functions on chain 0's tuning states.

# %%
rng = np.random.default_rng(SEED)
history = idata_kmc.warmup_posterior["x"].values[0]  # chain 0's tuning states, (TUNE, DIM)
recent = history[len(history) // 2 :]
whitening = Whitening.from_points(recent)
train = whitening.whiten(recent[rng.choice(len(recent), min(500, len(recent)), replace=False)])
_, first = np.unique(train, axis=0, return_index=True)
distinct = train[np.sort(first)]  # validate on distinct states, as KMCLite does
lengthscale, regularization, _ = select_hyperparameters(
    distinct,
    estimator="lite",
    lengthscales=median_lengthscale(distinct) * np.array([1.0, 1.5, 2.0, 3.0]),
    rng=rng,
)
surrogate = LiteScoreEstimator(GaussianKernel(lengthscale), regularization=regularization)
surrogate.fit(train)
print(
    f"{len(train)} training states with x1 in [{recent[:, 0].min():.1f}, "
    f"{recent[:, 0].max():.1f}]; lengthscale {lengthscale:.2f} (whitened units), "
    f"regularisation {regularization:.0e}"
)

# %% [markdown]
# How good is it? On 2000 fresh exact draws of the banana we compare the surrogate's gradient
# with the true gradient (which the sampler never sees), both in the whitened coordinates the
# trajectories run in: the cosine of the angle between them, in three regions: the centre of
# the banana ($|x_1| < 10$, one standard deviation of the long axis), the parts of the arms the
# training states reach (within their range of $x_1$), and the rest of the arms, beyond it.


# %%
def banana_grad(x, b=0.03, V=100.0):
    """The true gradient of the banana's log density (for checking only)."""
    x = np.atleast_2d(x)
    y2 = x[:, 1] + b * (x[:, 0] ** 2 - V)
    g = -x.copy()
    g[:, 0] = -x[:, 0] / V - y2 * 2 * b * x[:, 0]
    g[:, 1] = -y2
    return g


exact = banana_sample(rng, 2000, DIM)
shown = whitening.unwhiten(train)  # the training states, in the model's coordinates
central = np.abs(exact[:, 0]) < 10
reached = (exact[:, 0] >= shown[:, 0].min()) & (exact[:, 0] <= shown[:, 0].max())
regions = {
    "centre": central,
    "arms, reached": ~central & reached,
    "arms, beyond": ~central & ~reached,
}
g_true = banana_grad(exact) @ whitening.chol  # chain rule: the gradient in whitened coordinates
g_fit = surrogate.grad(whitening.whiten(exact))
cosine = np.sum(g_true * g_fit, 1) / (
    np.linalg.norm(g_true, axis=1) * np.linalg.norm(g_fit, axis=1)
)
median_cosine = {
    name: float(np.median(cosine[mask])) if mask.any() else np.nan for name, mask in regions.items()
}
for name, mask in regions.items():
    print(
        f"{name:14s} {mask.sum():5d} exact draws, median cosine(surrogate gradient, "
        f"true gradient) {median_cosine[name]:.2f}"
    )

# %% [markdown]
# ## The picture: surrogate and truth, and KMC trajectories
#
# Both log densities, each shifted to a maximum of 0 (the surrogate is unnormalised). White
# dots: the training states. Red: five KMC trajectories on the surrogate's gradient, each with
# a fresh momentum, from the training state nearest the banana's mode $(0, 3)$, with the step
# size and the largest number of leapfrog steps chain 0 used after tuning — the moves
# `KMCLite` proposes; each end point (a cross) is then accepted or rejected with the true
# density (the probabilities are printed).

# %%
x1, x2 = np.meshgrid(np.linspace(-30, 30, 121), np.linspace(-25, 8, 100))
plane = np.column_stack([x1.ravel(), x2.ravel()])
true_logp = np.array([banana_logp(x) for x in plane]).reshape(x1.shape)
fit_logp = surrogate.log_density(whitening.whiten(plane)).reshape(x1.shape)

inv_mass = train.var(axis=0)
kmc_stats = idata_kmc.sample_stats  # chain 0's surrogate moves after tuning
moves = kmc_stats["n_steps"].values[0] > 0
step_size = float(np.median(kmc_stats["step_size"].values[0][moves]))
n_steps = int(np.max(kmc_stats["n_steps"].values[0][moves]))
print(f"chain 0 after tuning: step size {step_size:.3f}, at most {n_steps} leapfrog steps")
start = shown[np.argmin(np.linalg.norm(shown - [0.0, 3.0], axis=1))]  # near the mode
momentum_rng = np.random.default_rng(1)
paths, accepts = [], []
for _ in range(5):
    q = whitening.whiten(start)
    p = p0 = momentum_rng.standard_normal(DIM) / np.sqrt(inv_mass)
    path = [q]
    for _ in range(n_steps):  # one leapfrog step at a time, to draw the path
        q, p = leapfrog(surrogate.grad, q, p, step_size, n_steps=1, inv_mass_diag=inv_mass)
        path.append(q)
    path = whitening.unwhiten(np.array(path))
    log_accept = (
        banana_logp(path[-1])
        - kinetic_energy(p, inv_mass)
        - banana_logp(path[0])
        + kinetic_energy(p0, inv_mass)
    )
    paths.append(path)
    accepts.append(min(1.0, float(np.exp(log_accept))) if np.isfinite(log_accept) else 0.0)
ends = [round(float(path[-1, 0]), 1) for path in paths]
print(f"trajectories from x1 = {start[0]:.1f}: end points x1 = {ends}")
print("acceptance probabilities with the true density:", np.round(accepts, 2))

fig, axes = plt.subplots(1, 2, figsize=(12, 4.5), sharey=True)
levels = np.linspace(-30, 0, 16)
for ax, values, title in [
    (axes[0], true_logp, "true log density"),
    (axes[1], fit_logp, "score-matched surrogate (from the tuning history)"),
]:
    mesh = ax.contourf(x1, x2, np.maximum(values - values.max(), -30), levels=levels)
    ax.plot(shown[:, 0], shown[:, 1], ".", color="white", ms=2, alpha=0.4)
    for path in paths:
        ax.plot(path[:, 0], path[:, 1], "-", color="red", lw=1.5)
        ax.plot(*path[-1], "x", color="red")
    ax.plot(*start, "o", color="red")
    ax.set_title(title)
    ax.set_xlabel("$x_1$")
    ax.set_ylim(-25, 8)
axes[0].set_ylabel("$x_2$")
fig.colorbar(mesh, ax=axes, label="log density - max")
plt.show()

# %% [markdown]
# The surrogate learns the banana's curve where the chain has been, and only there: beyond the
# training states it falls off (a Gaussian-kernel expansion vanishes far from its centres;
# `KMCLite` adds a confining term there so trajectories turn back), and where the history is
# thin it can have spurious bumps (in the full-size run, a separate maximum at the tip of the
# left arm, around a small cluster of training states). The trajectories oscillate across the
# banana's narrow direction and drift along its curve, as HMC moves on the true density would,
# and each costs **one** evaluation of the true density. In higher dimensions the
# same budget of tuning iterations covers less of the posterior: on the 8-d banana of
# `docs/benchmarks.md`, 2000 tuning evaluations do not show a chain the ends of the arms, and
# the surrogate cannot know them either. Give KMC a tuning phase long enough to visit the
# whole posterior (`docs/usage.md`).
#
# ## The claim, checked
#
# Learned from the chain's own tuning history alone, the surrogate's gradient points the way
# of the true gradient wherever the chain has been: median cosine above 0.8 in the centre and
# in the parts of the arms the training states reach. Beyond them no claim is made (the
# printed figure shows how much worse it is there). This holds at the full size and at the
# reduced size with this seed.

# %%
assert median_cosine["centre"] > 0.8, median_cosine
assert median_cosine["arms, reached"] > 0.8, median_cosine
