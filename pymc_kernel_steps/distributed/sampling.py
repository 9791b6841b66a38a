""":func:`sample`: every chain of :func:`pymc.sample` as one task on a Dask cluster.

The client does what :func:`pymc.sample` does before and after the chains (assign and build the
step methods, derive each chain's random generator and initial point from ``random_seed``, turn
the traces into a DataTree, run the convergence checks); each chain runs on a worker through
PyMC's own sampling loop. A chain's draws are a function of the model, the step, ``random_seed``
and the chain's index only, so they do not depend on how many workers there are, on the order
in which chains finish, or on how often a task is re-run after its worker died: they are the
draws of ``pm.sample(..., chains=C, random_seed=s)``'s chain ``c``. With ``pooled_tuning=True``
the chains share their tuning states, so each chain's draws depend on the others' too and
differ from :func:`pymc.sample`'s.
"""

from __future__ import annotations

import logging
import time
import uuid
import warnings
from collections.abc import Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from typing import Any

import cloudpickle
import distributed
import numpy as np

__all__ = ["ChainFailedError", "sample"]

_log = logging.getLogger("pymc")

#: seconds between a running chain's progress reports and checks for cancellation
REPORT_INTERVAL = 1.0

#: the names of the tasks: ``pks-chain-<index>-<run id>``
TASK_PREFIX = "pks-chain"


class ChainFailedError(RuntimeError):
    """A chain could not be completed on the cluster (its worker died more often than the
    scheduler's ``distributed.scheduler.allowed-failures`` allows); names the chain."""


@dataclass
class _Job:
    """What every chain's task needs, pickled together in one payload (cloudpickle keeps the
    references they share: the traced variables and the step's are the model's on the worker)."""

    model: Any
    step: Any
    trace_vars: list | None
    tune: int
    draws: int
    #: pooled tuning: the numbers of completed iterations after which the chains exchange data
    exchanges: tuple[int, ...] = ()


@dataclass
class _ChainResult:
    """A finished chain's trace: the arrays of PyMC's NDArray backend."""

    chain: int
    samples: dict[str, np.ndarray]
    stats: list[dict[str, np.ndarray]] | None
    draw_idx: int
    cancelled: bool = False


def sample(
    draws: int = 1000,
    *,
    tune: int = 1000,
    chains: int = 4,
    step=None,
    random_seed=None,
    progressbar: bool = True,
    initvals=None,
    var_names: Sequence[str] | None = None,
    discard_tuned_samples: bool = True,
    compute_convergence_checks: bool = True,
    keep_warning_stat: bool = False,
    idata_kwargs: dict[str, Any] | None = None,
    compile_kwargs: dict | None = None,
    quiet: bool = False,
    model=None,
    client: distributed.Client | None = None,
    pooled_tuning: bool = False,
    tuning_rounds: int = 4,
):
    """Draw samples as :func:`pymc.sample` does, with every chain a task on a Dask cluster.

    Parameters
    ----------
    draws, tune, chains : int
        Draws kept per chain, tuning iterations per chain, and the number of chains.
    step : step method or list of step methods, optional
        As for :func:`pymc.sample`: the variables no given step covers get PyMC's default step
        methods (NUTS for continuous variables with a gradient).
    random_seed : int, array-like of int, or numpy Generator, optional
        Chain ``c``'s random generator and initial point are derived from it as
        :func:`pymc.sample` derives them, so chain ``c`` has the draws of
        ``pymc.sample(..., chains=chains, random_seed=random_seed)``'s chain ``c``, whatever the
        number of workers and the order in which the chains finish.
    progressbar : bool
        Show each chain's progress (reported by the workers about once a second). True or
        False: ``pm.sample``'s bar styles (``"combined"``, ``"split"``) are not offered.
    initvals, var_names, discard_tuned_samples, compute_convergence_checks, keep_warning_stat, \
idata_kwargs, compile_kwargs, quiet
        As for :func:`pymc.sample`.
    model : pymc.Model, optional
        Default: the model of the ``with`` context.
    client : distributed.Client, optional
        The cluster to run on. Without one, a :class:`distributed.LocalCluster` of
        ``min(chains, os.cpu_count())`` single-threaded worker processes is started on this
        machine and closed at the end.
    pooled_tuning : bool
        Let the chains tune on each other's data (default False: every chain on its own). Tuning
        is cut into ``tuning_rounds + 1`` equal windows; after each window but the last, every
        chain publishes its :class:`~pymc_kernel_steps.steps.base.TuningData` (the recent half
        of its history and, for ``KMCLite``, its evaluations) and continues with the other
        chains' absorbed (``absorb_tuning_data``): its next fit of the proposal learns from all
        of them. At the end of tuning the kernel is frozen as usual, so the draws stay exact.
        The exchanges depend only on the chains' own draws, so the draws still depend only on
        ``random_seed`` (not on the workers), but they are no longer ``pm.sample``'s. A chain
        waiting for the others releases its worker's slot (``distributed.secede``), so any
        number of workers works. Every step method that supports it (``pools_tuning_data``:
        ``KMCLite``, ``KAMH``, ``AdaptiveMetropolis``) pools; at least one must.
    tuning_rounds : int
        Exchanges during tuning with ``pooled_tuning`` (default 4).

    Returns
    -------
    xarray.DataTree
        What :func:`pymc.sample` returns: posterior, sample_stats, observed data, and the warmup
        groups when ``discard_tuned_samples=False``. If sampling is interrupted (Ctrl-C), the
        chains that had finished, with their own indices as the ``chain`` coordinate, and a
        warning naming the missing ones.

    Raises
    ------
    pymc_kernel_steps.LogDensityError
        The model's log density failed on a worker (the exception raised there).
    ChainFailedError
        A chain's worker died more often than the scheduler allows (each time the chain is
        restarted from its seed, with the same draws).
    """
    import pymc as pm
    from pymc.backends import init_traces
    from pymc.model import modelcontext
    from pymc.sampling.mcmc import _print_step_hierarchy, _quiet_logging, _sample_return
    from pymc.util import get_random_generator

    from .._validation import require_bool, require_int

    require_int("draws", draws, minimum=1)
    require_int("tune", tune, minimum=0)
    require_int("chains", chains, minimum=1)
    require_bool("progressbar", progressbar)
    require_bool("discard_tuned_samples", discard_tuned_samples)
    require_bool("pooled_tuning", pooled_tuning)
    require_int("tuning_rounds", tuning_rounds, minimum=1)
    if client is not None and not isinstance(client, distributed.Client):
        raise TypeError(
            f"`client` must be a distributed.Client or None, got {type(client).__name__}."
        )
    model = modelcontext(model)
    if not model.free_RVs:
        raise pm.exceptions.SamplingError(
            "Cannot sample from the model, since the model does not contain any free variables."
        )
    if random_seed == -1:
        raise ValueError("`random_seed=-1` is not allowed (as in pm.sample); pass None instead.")

    # as pm.sample: one generator per chain, whose first integer seeds the initial point
    rngs = get_random_generator(random_seed).spawn(chains)
    initial_point_seeds = [rng.integers(2**30) for rng in rngs]
    step, initial_points = _steps_and_initial_points(
        model, step, chains, initvals, initial_point_seeds, compile_kwargs
    )
    trace_vars = None
    if isinstance(var_names, str):  # one name, not its letters
        var_names = [var_names]
    if var_names is not None:
        trace_vars = [v for v in model.unobserved_RVs if v.name in var_names]
        missing = set(var_names) - {v.name for v in trace_vars}
        if missing:
            raise ValueError(f"`var_names`: the model has no variables {sorted(missing)}.")
        trace_vars = model.replace_rvs_by_values(trace_vars)

    exchanges = ()
    if pooled_tuning:
        _check_pooling(step, tune, tuning_rounds)
        exchanges = tuple(tune * k // (tuning_rounds + 1) for k in range(1, tuning_rounds + 1))
    job = _Job(model, step, trace_vars, int(tune), int(draws), exchanges)
    payload = cloudpickle.dumps(job)
    started = time.time()
    with ExitStack() as stack:
        if client is None:
            client = stack.enter_context(_local_client(chains))
        if not quiet:
            workers = len(client.nthreads())
            _log.info(f"Distributed sampling ({chains} chains on {workers} Dask workers)")
            _print_step_hierarchy(step)
        results, missing = _run_chains(
            client, payload, rngs, initial_points, int(tune) + int(draws), progressbar, exchanges
        )
    sampling_seconds = time.time() - started

    _, traces = init_traces(
        backend=None,
        chains=chains,
        expected_length=int(tune) + int(draws),
        step=step,
        trace_vars=trace_vars,
        initial_point=initial_points[0],
        model=model,
        tune=int(tune),
    )
    finished = sorted(results)
    for chain in finished:
        result, trace = results[chain], traces[chain]
        trace.samples, trace._stats, trace.draw_idx = result.samples, result.stats, result.draw_idx
    with _quiet_logging(quiet):
        for chain in finished:
            _log_warning_stats(results[chain].stats)
        idata = _sample_return(
            run=None,
            traces=[traces[c] for c in finished],
            tune=int(tune),
            t_sampling=sampling_seconds,
            discard_tuned_samples=discard_tuned_samples,
            compute_convergence_checks=compute_convergence_checks and len(finished) > 0,
            return_inferencedata=True,
            keep_warning_stat=keep_warning_stat,
            idata_kwargs=dict(idata_kwargs or {}),
            model=model,
            quiet=quiet,
        )
    if missing:
        idata = _relabel_chains(idata, finished)
    return idata


def _pooling_steps(step) -> list:
    """The step methods of ``step`` (one, or a CompoundStep's) that pool tuning data."""
    methods = getattr(step, "methods", [step])
    return [m for m in methods if getattr(m, "pools_tuning_data", False)]


def _check_pooling(step, tune: int, rounds: int) -> None:
    """Raise an error naming the problem unless tuning can be pooled."""
    methods = getattr(step, "methods", [step])
    pooling = _pooling_steps(step)
    if not pooling:
        names = ", ".join(type(m).__name__ for m in methods)
        raise ValueError(
            f"`pooled_tuning=True`: no step method here pools tuning data ({names}); KMCLite, "
            "KAMH and AdaptiveMetropolis do."
        )
    for method in pooling:
        if method.adapt_after_tuning:
            raise ValueError(
                f"`pooled_tuning=True` with {type(method).__name__}(adapt_after_tuning=True): "
                "its adaptation, and with it the other chains' influence, never ends."
            )
    if tune < 2 * (rounds + 1):
        raise ValueError(
            f"`pooled_tuning=True` cuts tuning into `tuning_rounds + 1` = {rounds + 1} windows; "
            f"`tune={tune}` is too short for that."
        )


def _steps_and_initial_points(model, step, chains, initvals, seeds, compile_kwargs):
    """The step method and each chain's initial point, as :func:`pymc.sample` makes them."""
    from pymc.initial_point import make_initial_point_fns_per_chain
    from pymc.sampling.mcmc import assign_step_methods, init_nuts, instantiate_steppers
    from pymc.step_methods import NUTS, STEP_METHODS, CompoundStep

    provided, selected = assign_step_methods(model, step, methods=STEP_METHODS)
    exclusive_nuts = (not selected and len(provided) == 1 and isinstance(provided[0], NUTS)) or (
        not provided and len(selected) == 1 and issubclass(next(iter(selected)), NUTS)
    )
    if exclusive_nuts and not provided:
        initial_points, step = init_nuts(
            init="auto",
            chains=chains,
            model=model,
            random_seed=seeds,
            progressbar=False,
            initvals=initvals,
            compile_kwargs=compile_kwargs,
        )
        return step, initial_points
    ipfns = make_initial_point_fns_per_chain(
        model=model, overrides=initvals, jitter_rvs=set(), chains=chains
    )
    initial_points = [ipfn(seed) for ipfn, seed in zip(ipfns, seeds, strict=True)]
    step = instantiate_steppers(
        model,
        steps=provided,
        selected_steps=selected,
        initial_point=initial_points[0],
        compile_kwargs=compile_kwargs,
    )
    if isinstance(step, list):
        step = CompoundStep(step)
    return step, initial_points


@contextmanager
def _local_client(chains: int):
    """A client of a :class:`distributed.LocalCluster` of single-threaded worker processes,
    closed on exit."""
    import os

    workers = max(1, min(chains, os.cpu_count() or 1))
    with (
        distributed.LocalCluster(
            n_workers=workers,
            threads_per_worker=1,
            processes=True,
            dashboard_address=":0",  # any free port: never fails because 8787 is taken
            silence_logs=logging.ERROR,
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        yield client


def _run_chains(client, payload, rngs, initial_points, iterations, progressbar, exchanges):
    """Run every chain as a task; return ({chain: result} of the finished ones, the chains
    missing after an interruption). Waits for all chains; a failed chain cancels the others."""
    run_id = uuid.uuid4().hex
    try:
        return _run_chain_tasks(
            client, run_id, payload, rngs, initial_points, iterations, progressbar
        )
    finally:
        for names in _exchange_names(run_id, len(exchanges), len(rngs)):
            for name in names:
                try:
                    distributed.Variable(name, client=client).delete()
                    distributed.Event(name, client=client).clear()
                except Exception:  # the cluster may be gone; nothing is left to clean then
                    pass


def _run_chain_tasks(client, run_id, payload, rngs, initial_points, iterations, progressbar):
    cancel = distributed.Event(f"pks-cancel-{run_id}", client=client)
    topic = f"pks-progress-{run_id}"
    futures = {}
    for chain, (rng, start) in enumerate(zip(rngs, initial_points, strict=True)):
        future = client.submit(
            _run_chain,
            payload,  # in every task, not scattered: a restarted chain must not need a dead worker
            chain,
            rng,
            start,
            run_id,
            len(rngs),
            key=f"{TASK_PREFIX}-{chain}-{run_id}",
            pure=False,
            retries=0,
        )
        futures[future.key] = (chain, future)
    results: dict[int, _ChainResult] = {}
    bar = _ProgressBar(len(rngs), iterations) if progressbar else None
    with ExitStack() as stack:
        if bar is not None:
            stack.enter_context(bar)
            client.subscribe_topic(topic, bar.report)
            stack.callback(client.unsubscribe_topic, topic)
        try:
            for future in distributed.as_completed([f for _, f in futures.values()]):
                chain, _ = futures[future.key]
                results[chain] = _chain_result(future, chain)
                if bar is not None:
                    bar.finished(chain)
        except KeyboardInterrupt:
            # keep every chain that has finished, its result fetched or not yet
            for chain, future in futures.values():
                if chain not in results and future.status == "finished":
                    results[chain] = future.result()
            _cancel(client, cancel, [f for _, f in futures.values()])
            missing = sorted(set(range(len(rngs))) - set(results))
            if not results:
                raise
            warnings.warn(
                f"Sampling was interrupted: chains {missing} had not finished and are missing "
                f"from the result, which holds chains {sorted(results)} (labelled with their "
                "own indices).",
                UserWarning,
                stacklevel=3,
            )
            return results, missing
        except BaseException:
            _cancel(client, cancel, [f for _, f in futures.values()])
            raise
    return results, []


def _chain_result(future, chain: int) -> _ChainResult:
    """The result of a chain's task, or its error: the worker's exception as it was raised
    (a ``LogDensityError`` stays one), or :class:`ChainFailedError` if its workers died."""
    try:
        return future.result()
    except distributed.scheduler.KilledWorker as error:
        raise ChainFailedError(
            f"Chain {chain} failed: the worker running it died, and so did every worker it was "
            "restarted on (each restart begins the chain again from its seed). The scheduler "
            "gives up after `distributed.scheduler.allowed-failures` such deaths. A worker "
            f"that runs out of memory or crashes in compiled code dies this way. ({error})"
        ) from error


def _cancel(client, cancel, futures) -> None:
    """Tell the running chains to stop (they check about once a second) and drop the tasks."""
    try:
        cancel.set()
        client.cancel(futures, force=True)
    except Exception as error:  # the cluster may already be gone; the interruption stands
        _log.warning("Cancelling the chains on the cluster failed: %s", error)


def _relabel_chains(idata, chains: list[int]):
    """``idata`` with the ``chain`` coordinate set to the chains' own indices."""
    for node in idata.subtree:
        if "chain" in node.dims:
            node.dataset = node.to_dataset().assign_coords(chain=list(chains))
    return idata


def _log_warning_stats(stats) -> None:
    """Log the warnings the steps emitted on the worker, as :func:`pymc.sample` does."""
    from pymc.stats.convergence import log_warning_stats

    if not stats:
        return
    for sampler_stats in stats:
        warnings_ = sampler_stats.get("warning")
        if warnings_ is None:
            continue
        log_warning_stats([{"warning": w} for w in warnings_ if w is not None])


# ---------------------------------------------------------------------------- on the worker
def _run_chain(payload: bytes, chain: int, rng, start, run_id: str, chains: int) -> _ChainResult:
    """Run one chain through PyMC's sampling loop (as ``pm.sample`` runs it) on a worker; with
    pooled tuning, exchange tuning data with the other chains at ``job.exchanges``."""
    from pymc.backends import _init_trace
    from pymc.sampling.mcmc import _iter_sample

    job: _Job = cloudpickle.loads(payload)
    trace = _init_trace(
        expected_length=job.tune + job.draws,
        chain_number=chain,
        stats_dtypes=job.step.stats_dtypes,
        trace=None,
        model=job.model,
        trace_vars=job.trace_vars,
        initial_point=start,
    )
    monitor = _ChainMonitor(run_id, chain)
    iterations = _iter_sample(
        draws=job.tune + job.draws,
        step=job.step,
        start=start,
        trace=trace,
        chain=chain,
        tune=job.tune,
        rng=rng,
        model=job.model,
    )
    pymc_logger = logging.getLogger("pymc")
    level = pymc_logger.level
    pymc_logger.setLevel(logging.ERROR)  # the client logs the steps' warnings, once
    exchanges = {done: round_ for round_, done in enumerate(job.exchanges)}
    pooling = _pooling_steps(job.step)
    try:
        for done, _ in enumerate(iterations, start=1):
            cancelled = monitor.due() and monitor.report_and_check(done)
            if done in exchanges and not cancelled:
                names = _exchange_names(run_id, len(job.exchanges), chains)[exchanges[done]]
                cancelled = not _exchange(pooling, names, chain, monitor)
            if cancelled:
                iterations.close()
                return _ChainResult(chain, {}, None, 0, cancelled=True)
    finally:
        pymc_logger.setLevel(level)
    return _ChainResult(chain, trace.samples, trace._stats, trace.draw_idx)


def _exchange_names(run_id: str, rounds: int, chains: int) -> list[list[str]]:
    """The names of the Dask variables of pooled tuning: ``[round][chain]``."""
    return [[f"pks-pool-{run_id}-{r}-{c}" for c in range(chains)] for r in range(rounds)]


def _exchange(steps, names: list[str], chain: int, monitor: _ChainMonitor) -> bool:
    """Publish this chain's tuning data under ``names[chain]`` (a Dask variable, announced by
    the event of the same name), wait for the other chains' (not holding the worker's slot
    meanwhile) and absorb them in chain order; False if the run was cancelled while waiting.
    A chain re-run after its worker died publishes the same data again and finds the others'
    where it left them, so it repeats its draws."""
    mine = cloudpickle.dumps([step.tuning_data() for step in steps])
    distributed.Variable(names[chain]).set(mine)
    distributed.Event(names[chain]).set()
    others = []
    distributed.secede()
    try:
        for other, name in enumerate(names):
            if other == chain:
                continue
            while not distributed.Event(name).wait(timeout=REPORT_INTERVAL):
                if monitor.cancel.is_set():
                    return False
            others.append(cloudpickle.loads(distributed.Variable(name).get()))
    finally:
        distributed.rejoin()
    for index, step in enumerate(steps):
        step.absorb_tuning_data([data[index] for data in others])
    return True


class _ChainMonitor:
    """A running chain's link to the client: progress reports and the cancellation flag, at
    most every :data:`REPORT_INTERVAL` seconds (by the clock, so draws never depend on it)."""

    def __init__(self, run_id: str, chain: int):
        self.topic = f"pks-progress-{run_id}"
        self.cancel = distributed.Event(f"pks-cancel-{run_id}")
        self.chain = chain
        self.next_report = time.monotonic() + REPORT_INTERVAL

    def due(self) -> bool:
        return time.monotonic() >= self.next_report

    def report_and_check(self, done: int) -> bool:
        """Report ``done`` iterations; True if the run was cancelled."""
        self.next_report = time.monotonic() + REPORT_INTERVAL
        distributed.get_worker().log_event(self.topic, {"chain": self.chain, "done": done})
        return self.cancel.is_set()


class _ProgressBar:
    """One rich progress bar per chain, advanced by the workers' reports."""

    def __init__(self, chains: int, iterations: int):
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

        self.progress = Progress(
            "[progress.description]{task.description}",
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
        )
        self.tasks = [self.progress.add_task(f"Chain {c}", total=iterations) for c in range(chains)]
        self.iterations = iterations

    def __enter__(self):
        self.progress.start()
        return self

    def __exit__(self, *exc):
        self.progress.stop()

    def report(self, event) -> None:
        _, message = event
        self.progress.update(self.tasks[message["chain"]], completed=message["done"])

    def finished(self, chain: int) -> None:
        self.progress.update(self.tasks[chain], completed=self.iterations)
