"""The benchmark harness: targets, references, runners for every peer, metrics and plots.

Its own distribution, ``pymc-kernel-steps-bench`` (``pip install -e ./bench`` from a checkout),
depending on the samplers' ``pymc-kernel-steps``; the samplers never import it. The field's peers
(nautilus, pocoMC, dynesty, zeus) come with its ``peers`` extra.

* :mod:`.targets` — the targets as PyMC models, with exact moments or cached reference runs;
* :mod:`.references` — :class:`Reference`, the truth a run is scored against;
* :mod:`.runners` — :func:`compare_samplers`: every sampler at one budget of counted evaluations;
* :mod:`.population` — ``emcee`` and SMC runs within a budget;
* :mod:`.metrics` — the error-based ESS table :func:`ess_err_table`;
* :mod:`.plots` — :func:`plot_comparison`;
* :mod:`.pages` — the context and table of a result page;
* :mod:`.posteriordb`, :mod:`.blackbox`, :mod:`.peers`, :mod:`.suite`, :mod:`.report` — the
  posteriordb suite.

The names below are importable from here (loaded on first access).
"""

import importlib as _importlib

#: public name -> module of this package that defines it
_LAZY = {
    "Reference": ".references",
    "reference_for": ".references",
    "reference_run_var_sq": ".references",
    "SAMPLER_KINDS": ".runners",
    "Sampler": ".runners",
    "as_sampler": ".runners",
    "compare_samplers": ".runners",
    "replicate_seeds": ".runners",
    "run_emcee": ".population",
    "run_smc": ".population",
    "ess_err_table": ".metrics",
    "worst_ess_err": ".metrics",
    "plot_comparison": ".plots",
}

__all__ = sorted(_LAZY)


def __getattr__(name: str):
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(_importlib.import_module(_LAZY[name], __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
