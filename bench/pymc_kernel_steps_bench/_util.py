"""What the runners share: counting ops, the model in its unconstrained space, quiet sampling."""

from __future__ import annotations

import math
import warnings

import numpy as np

BENCH_EXTRA = "pip install pymc-kernel-steps-bench"


def _counting_ops(model):
    from .targets import counting_ops

    return counting_ops(model)


def _reset(ops):
    for op in ops:
        op.reset()


def _measured(ops):
    if not ops:
        return None, 0.0
    return int(sum(op.n_calls for op in ops)), float(sum(op.seconds for op in ops))


def _quiet():
    """Silence sampling warnings and PyMC's progress logging inside a comparison."""
    import logging

    class _Ctx:
        def __enter__(self):
            self._w = warnings.catch_warnings()
            self._w.__enter__()
            warnings.simplefilter("ignore")
            self._logger = logging.getLogger("pymc")
            self._level = self._logger.level
            self._logger.setLevel(logging.ERROR)
            return self

        def __exit__(self, *exc):
            self._logger.setLevel(self._level)
            return self._w.__exit__(*exc)

    return _Ctx()


def sample_quietly(model, step, tune, draws, chains, seed, **options):
    """``pm.sample`` of ``model`` with ``step`` on one core, tuning draws kept, without progress
    bar, convergence checks, warnings or PyMC's progress logging."""
    import pymc as pm

    with model, _quiet():
        return pm.sample(
            tune=int(tune),
            draws=int(draws),
            chains=chains,
            cores=1,
            step=step,
            random_seed=seed,
            progressbar=False,
            discard_tuned_samples=False,
            compute_convergence_checks=False,
            **options,
        )


def _unconstrained(model):
    """``(x0, logp(x), to_posterior(draws))`` for the model's value variables, raveled."""
    from pymc.blocking import DictToArrayBijection, RaveledVars

    point = model.initial_point()
    names = [v.name for v in model.value_vars]
    x0 = DictToArrayBijection.map({n: point[n] for n in names})
    logp_fn = model.compile_logp()
    info = x0.point_map_info

    def logp(x):
        value = float(logp_fn(DictToArrayBijection.rmap(RaveledVars(np.asarray(x), info))))
        return value if not math.isnan(value) else -math.inf

    rv_names = [rv.name for rv in model.free_RVs] + [d.name for d in model.deterministics]
    outs = model.unobserved_value_vars
    transform = model.compile_fn(outs, inputs=model.value_vars, on_unused_input="ignore")
    out_names = [o.name for o in outs]

    def to_posterior(draws):
        """``draws (chain, draw, size)`` in the unconstrained space -> {name: values} of the free
        variables and the deterministics."""
        chains, n = draws.shape[:2]
        values = {name: [] for name in rv_names}
        for x in draws.reshape(chains * n, -1):
            result = transform(DictToArrayBijection.rmap(RaveledVars(x, info)))
            for name, value in zip(out_names, result, strict=True):
                if name in values:
                    values[name].append(np.asarray(value))
        return {name: np.stack(v).reshape(chains, n, *np.shape(v[0])) for name, v in values.items()}

    return np.asarray(x0.data, dtype=float), logp, to_posterior


def _datatree(posterior: dict, sample_stats: dict | None = None):
    import arviz as az

    groups = {"posterior": posterior}
    if sample_stats:
        groups["sample_stats"] = sample_stats
    with warnings.catch_warnings():  # many walkers, few iterations: chain longer than draw
        warnings.simplefilter("ignore", UserWarning)
        return az.from_dict(groups)
