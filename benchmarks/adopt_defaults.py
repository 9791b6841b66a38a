"""Put runs of new defaults into a study's committed frames (issue 24: ``moves="learned"``).

When a default changes, the committed rows of that sampler in ``<study>/runs/<name>.csv.gz`` were
made by the former default. This script relabels them ``"<sampler>[fixed]"`` (the former default,
still available as ``moves="fixed"``) and adds the rows of ``--from`` (runs of the
``"<sampler>[learned]"`` variant, same seeds and budget) under the sampler's own label.

That is the same as re-running the new default: a variant's runs and the default's draw the same
numbers bit for bit once the variant is the default (checked: ``KMCLite`` and ``KAMH`` re-run on
``gp_pois_regr-gp_regr`` and ``kidiq-kidscore_momiq`` reproduced every estimate of the variant's
frames). The rows keep their ``command`` and ``git_commit``; their ``sampler`` column is rewritten.

Usage (the posteriordb suite, then the robustness study)::

    python benchmarks/adopt_defaults.py --from benchmarks/posteriordb/runs-learned \
        --runs-dir benchmarks/posteriordb/runs --samplers KMCLite KMCFinite KAMH
    python benchmarks/adopt_defaults.py --from benchmarks/robustness/runs-learned \
        --runs-dir benchmarks/robustness/runs --samplers KMCLite KMCFinite KAMH
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd


def adopt(frame: pd.DataFrame, new: pd.DataFrame, samplers) -> pd.DataFrame:
    """``frame`` with each of ``samplers``' rows relabelled ``[fixed]`` and ``new``'s
    ``[learned]`` rows of them added under the plain label (raises if a sampler already has
    ``[fixed]`` rows: adopting twice would lose the former default's runs)."""
    frame = frame.copy()
    added = []
    for sampler in samplers:
        if (frame["sampler"] == f"{sampler}[fixed]").any():
            raise ValueError(f"{sampler}[fixed] rows already exist: adopted before")
        frame.loc[frame["sampler"] == sampler, "sampler"] = f"{sampler}[fixed]"
        rows = new[new["sampler"] == f"{sampler}[learned]"].copy()
        rows["sampler"] = sampler
        added.append(rows)
    return pd.concat([frame, *added], ignore_index=True)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--from", dest="source", type=Path, required=True)
    parser.add_argument("--samplers", nargs="+", required=True)
    parser.add_argument("--runs-dir", type=Path, required=True)
    args = parser.parse_args(argv)
    for path in sorted(args.source.glob("*.csv.gz")):
        target = args.runs_dir / path.name
        frame = pd.read_csv(target, dtype={"git_commit": str})
        new = pd.read_csv(path, dtype={"git_commit": str})
        present = [s for s in args.samplers if (new["sampler"] == f"{s}[learned]").any()]
        adopt(frame, new, present).to_csv(target, index=False)
        print(f"{path.name}: {', '.join(present)}")


if __name__ == "__main__":
    main()
