"""The draws of CKAM's sampling phases: the ones to use for estimates.

Which draws to use for what
---------------------------
``pm.sample(step=CKAM())`` keeps every iteration in the trace and flags it with the sample stat
``exploring``.

* **Estimates** (means, quantiles, ESS, R-hat): use :func:`sampling_phase` ``(idata)``, the
  sampling-phase draws only, as the paper does. Each of those draws comes from a Metropolis move
  whose proposal (a fixed mixture of the random walk ``N(x, ν_t² Σ)``, mode hops and blind
  jumps, all frozen for the phase) is symmetric, so each move leaves the posterior invariant.
* **Exploration-phase draws** are kept for diagnostics (where the sampler went looking, how the
  modes were found). They come from moves that adapt as they go and restart every cycle; do not
  average them.
"""

from __future__ import annotations

import numpy as np

__all__ = ["sampling_phase"]


def sampling_phase(idata, *, flag: str = "exploring"):
    """The draws of the sampling phases only (the ones to use for estimates).

    Parameters
    ----------
    idata : DataTree
        Result of ``pm.sample`` with a :class:`CKAM` step: its ``sample_stats`` (and
        ``warmup_sample_stats``, if tuning draws were kept) must hold the stat ``exploring``.
        When several steps emit ``exploring`` (several CKAM blocks) a draw counts as exploring
        if any block explores.
    flag : str
        Name of the boolean stat marking exploration draws.

    Returns
    -------
    DataTree
        A copy in which every group of the MCMC draws (``posterior``, ``sample_stats``,
        ``log_likelihood``, ``posterior_predictive``, their ``warmup_`` twins...) keeps only
        the sampling-phase draws; ``prior`` and ``prior_predictive``, whose draws are not the
        chain's, and the groups without draws are kept as they are. The
        cycle schedule depends only on the iteration number, so when every chain has the same
        schedule (the usual case: one ``cycle_length`` and ``tune`` for all chains) the
        exploration draws are *removed* and the sampling phases of consecutive cycles are
        concatenated along ``draw`` (the original iteration numbers stay in the ``draw``
        coordinate); ArviZ functions (``az.summary``, ``az.ess``, ``az.mcse``, ``az.rhat``,
        plots) then work as usual and treat the concatenated segments as one chain, which is
        conservative for ESS. If the chains' schedules differ, the exploration draws are
        replaced by NaN instead (most ArviZ statistics then need ``skipna``-aware use).
    """
    import xarray as xr

    if not isinstance(idata, xr.DataTree) or "posterior" not in idata.children:
        raise TypeError(
            "`idata` must be the DataTree that pm.sample returns (with its posterior and "
            f"sample_stats groups), got {type(idata).__name__}"
            + (" without a posterior group" if isinstance(idata, xr.DataTree) else "")
            + "; pass the whole result, not idata.posterior or a MultiTrace."
        )
    groups = {}
    for path, node in idata.children.items():
        dataset = node.to_dataset()
        if "draw" not in dataset.dims or path.startswith("prior"):
            groups[path] = dataset  # no draws, or draws that are not the chain's
            continue
        stats_name = "warmup_sample_stats" if path.startswith("warmup") else "sample_stats"
        if stats_name not in idata.children:
            raise ValueError(f"`idata` has no {stats_name!r} group to read {flag!r} from.")
        stats = idata[stats_name].to_dataset()
        if flag not in stats:
            raise ValueError(
                f"`idata.{stats_name}` has no stat {flag!r}: was the trace sampled with CKAM?"
            )
        exploring = stats[flag]
        extra = [dim for dim in exploring.dims if dim not in ("chain", "draw")]
        if extra:  # one column per CKAM block
            exploring = exploring.any(dim=extra)
        if dataset.sizes["draw"] != exploring.sizes["draw"]:
            raise ValueError(
                f"`idata.{path}` has {dataset.sizes['draw']} draws and `idata.{stats_name}` "
                f"{exploring.sizes['draw']}: its draws are not the chain's iterations, so "
                "the sampling phases cannot be picked from it."
            )
        keep = ~exploring.astype(bool)
        per_chain = keep.values
        if np.all(per_chain == per_chain[:1]):
            groups[path] = dataset.isel(draw=np.flatnonzero(per_chain[0]))
        else:
            groups[path] = dataset.where(keep)
    return xr.DataTree.from_dict({**groups}, name=idata.name)
