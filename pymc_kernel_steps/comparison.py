"""Deprecated: the comparison harness moved to :mod:`pymc_kernel_steps.bench`.

Import from there (``from pymc_kernel_steps.bench import compare_samplers``); this module only
re-exports the public names and warns.
"""

from .bench._moved import warn_moved as _warn_moved
from .bench.metrics import ess_err_table
from .bench.plots import plot_comparison
from .bench.population import run_emcee, run_smc
from .bench.references import Reference, reference_run_var_sq
from .bench.runners import SAMPLER_KINDS, Sampler, as_sampler, compare_samplers

__all__ = [
    "SAMPLER_KINDS",
    "Reference",
    "Sampler",
    "as_sampler",
    "compare_samplers",
    "ess_err_table",
    "plot_comparison",
    "reference_run_var_sq",
    "run_emcee",
    "run_smc",
]

_warn_moved(
    "pymc_kernel_steps.comparison is deprecated: import from pymc_kernel_steps.bench "
    "(compare_samplers, ess_err_table, plot_comparison, Reference, run_emcee, run_smc, ...)",
    __file__,
)
