"""How far the frozen KMC kernel is from HMC with the true gradient on the 8-d banana, and why.

For each seed, ``KMCLite`` / ``KMCFinite`` (defaults) tune for ``--tune`` iterations on the
banana as in ``benchmarks/compare/compare.py`` (half of 12,000 evaluations). Then, with the frozen
kernel's whitening, mass matrix, step size and ``n_steps`` range, two Markov chains of
``--iterations`` pure trajectory moves (no random-walk share) start from the chain's last state:

- **surrogate**: the frozen surrogate's leapfrog (what the sampler does), accepted with the true
  log density;
- **true gradient**: the same leapfrog with the banana's exact gradient (the ceiling a perfect
  surrogate would reach from one evaluation per iteration).

Reported per seed: the acceptance rate and ArviZ's bulk ESS of x₁ per 1000 iterations of both
chains, and the surrogate's errors on exact draws in the whitened frame: the relative mean
squared error of its gradient, ``E‖∇f − ∇log π‖² / E‖∇log π‖²``, and the standard deviation
of ``f − log π`` (``f`` is known up to a constant, so its mean is removed). The same errors of
the Gaussian of the history's mean and covariance (the whitened ``−‖u‖²/2``) are the baseline.

This is a within-run diagnostic of the kernel's quality, not an accuracy figure: the
accuracy per evaluation is ``benchmarks/compare/compare.py``'s.

Usage::

    python benchmarks/kmc_headroom/kmc_headroom.py --seeds 5 \
        --out benchmarks/kmc_headroom/kmc-headroom.md
"""

from __future__ import annotations

import argparse
import datetime
import math
import platform
import sys
import time
from pathlib import Path

import arviz as az
import numpy as np
import pymc as pm

import pymc_kernel_steps as pks
from pymc_kernel_steps.core import Confinement
from pymc_kernel_steps_bench.targets import banana_logp, banana_model, banana_sample

TWIST, VARIANCE = 0.03, 100.0  # the benchmark banana's b and V (banana_logp's defaults)


def banana_gradient(x: np.ndarray) -> np.ndarray:
    """Gradient of the banana's log density (``banana_logp``); works on ``(d,)`` and ``(n, d)``."""
    x = np.asarray(x, dtype=float)
    y2 = x[..., 1] + TWIST * (x[..., 0] ** 2 - VARIANCE)
    gradient = -x.copy()
    gradient[..., 0] = -x[..., 0] / VARIANCE - 2.0 * TWIST * x[..., 0] * y2
    gradient[..., 1] = -y2
    return gradient


def true_gradient_leapfrog(u, p, step_size, n_steps, inv_mass, whitening):
    """Leapfrog in the whitened frame ``x = μ + L u`` with the exact gradient ``Lᵀ ∇log π(x)``."""

    def gradient(v):
        return whitening.chol.T @ banana_gradient(whitening.unwhiten(v))

    p = p + 0.5 * step_size * gradient(u)
    for step in range(n_steps):
        u = u + step_size * inv_mass * p
        if not np.all(np.isfinite(u)):
            return u, p
        weight = step_size if step < n_steps - 1 else 0.5 * step_size
        p = p + weight * gradient(u)
    return u, p


def frozen_chain(step, start, iterations, rng, exact_gradient: bool):
    """``iterations`` trajectory moves of the frozen kernel (no random-walk share) from
    ``start``, accepted with the true log density; returns the states and the acceptance rate."""
    chain = step.chain
    whitening, inv_mass = chain.whitening, chain.inv_mass
    # the chain's wall, without its abort ball (this study's trajectories never abort)
    wall_without_abort = Confinement(chain.confinement.radius, chain.confinement.stiffness)
    low, high = step.n_steps_range
    x, log_density = start.copy(), banana_logp(start)
    states = np.empty((iterations, start.size))
    accepted = 0
    for i in range(iterations):
        step_size = chain.step_size * (1.0 + step.step_size_jitter * (2.0 * rng.uniform() - 1.0))
        n_steps = int(rng.integers(low, high + 1))
        momentum = rng.standard_normal(start.size) / np.sqrt(inv_mass)
        u = whitening.whiten(x)
        if exact_gradient:
            u_new, p_new = true_gradient_leapfrog(
                u, momentum, step_size, n_steps, inv_mass, whitening
            )
        else:
            u_new, p_new = chain.surrogate.trajectory(
                u, momentum, step_size, n_steps, inv_mass, wall_without_abort
            )
        x_new = whitening.unwhiten(u_new)
        kinetic_old = 0.5 * float(np.sum(inv_mass * momentum**2))
        kinetic_new = 0.5 * float(np.sum(inv_mass * p_new**2))
        if np.all(np.isfinite(x_new)) and math.isfinite(kinetic_new):
            new_log_density = banana_logp(x_new)
            log_ratio = new_log_density - log_density + kinetic_old - kinetic_new
            if math.log(rng.uniform()) < log_ratio:
                x, log_density = x_new, new_log_density
                accepted += 1
        states[i] = x
    return states, accepted / iterations


def surrogate_errors(step, exact_draws):
    """Relative gradient MSE and sd of the log-density error of the frozen surrogate, and of the
    whitened Gaussian ``−‖u‖²/2``, on exact draws."""
    whitening = step.chain.whitening
    u = whitening.whiten(exact_draws)
    true_gradient = banana_gradient(exact_draws) @ whitening.chol
    true_log_density = np.array([banana_logp(x) for x in exact_draws])
    norm = float(np.mean(np.sum(true_gradient**2, axis=1)))

    def errors(gradient, log_density):
        relative = float(np.mean(np.sum((gradient - true_gradient) ** 2, axis=1))) / norm
        return relative, float(np.std(log_density - true_log_density))

    surrogate = step.chain.surrogate
    return (
        errors(np.asarray(surrogate.grad(u)), np.asarray(surrogate.log_density(u))),
        errors(-u, -0.5 * np.sum(u**2, axis=1)),
    )


def bulk_ess_per_1000(states) -> float:
    return 1000.0 * float(az.ess(states[None, :, 0])) / len(states)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--samplers", default="KMCLite,KMCFinite")
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--tune", type=int, default=6000)
    parser.add_argument("--iterations", type=int, default=3000)
    parser.add_argument("--out", help="markdown file to write (default: print only)")
    args = parser.parse_args(argv)
    exact_draws = banana_sample(np.random.default_rng(12345), 2000, dim=8)
    rows = []
    for name in args.samplers.split(","):
        for seed in range(args.seeds):
            started = time.perf_counter()
            model = banana_model(8)
            with model:
                step = getattr(pks, name)()
                idata = pm.sample(
                    tune=args.tune,
                    draws=1,
                    chains=1,
                    cores=1,
                    step=step,
                    random_seed=seed,
                    progressbar=False,
                    compute_convergence_checks=False,
                )
            start = idata.posterior["x"].values[0, -1]
            (grad_error, value_error), (gauss_grad, gauss_value) = surrogate_errors(
                step, exact_draws
            )
            rng = np.random.default_rng(seed)
            surrogate_states, surrogate_accept = frozen_chain(
                step, start, args.iterations, rng, exact_gradient=False
            )
            true_states, true_accept = frozen_chain(
                step, start, args.iterations, rng, exact_gradient=True
            )
            row = (
                f"| {name} | {seed} | {step.chain.step_size:.3f} | {surrogate_accept:.2f} | "
                f"{bulk_ess_per_1000(surrogate_states):.1f} | {true_accept:.2f} | "
                f"{bulk_ess_per_1000(true_states):.1f} | {grad_error:.2f} | {value_error:.2f} | "
                f"{gauss_grad:.2f} | {gauss_value:.2f} |"
            )
            rows.append(row)
            print(row, f"({time.perf_counter() - started:.0f} s)", flush=True)
    header = [
        "# KMC's frozen kernel against HMC with the true gradient (8-d banana)",
        "",
        f"- date: {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC",
        "- command: `python benchmarks/kmc_headroom/kmc_headroom.py "
        f"{' '.join(argv or sys.argv[1:])}`",
        f"- machine: {platform.platform()}, python {platform.python_version()}, "
        f"pymc {pm.__version__}",
        "",
        f"Tuning: {args.tune} iterations (default settings). Then {args.iterations} trajectory "
        "moves of the frozen kernel from the chain's last state, with the surrogate's gradient "
        "(what the sampler does) and with the exact gradient (same whitening, mass matrix, step "
        "size and n_steps range), both accepted with the exact log density. ESS: ArviZ bulk ESS "
        "of x₁ per 1000 iterations (within-run). Errors on 2000 exact draws in the whitened "
        "frame: relative gradient MSE and sd of the log-density error, of the surrogate and of "
        "the history's Gaussian.",
        "",
        "| sampler | seed | step size | accept (surrogate) | ESS/1k (surrogate) | "
        "accept (true gradient) | ESS/1k (true gradient) | gradient error | log-density error "
        "sd | Gaussian: gradient error | Gaussian: log-density error sd |",
        "|:--|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|",
    ]
    text = "\n".join(header + rows) + "\n"
    if args.out:
        Path(args.out).write_text(text)
    print(text)


if __name__ == "__main__":
    main()
