"""Copy the suite's data and reference draws out of a posteriordb checkout (once; offline after).

``python -m pymc_kernel_steps_bench.posteriordb.vendor PATH`` with ``PATH`` a checkout of the public
stan-dev/posteriordb repository (BSD-3-Clause; the licence is copied beside the files). For every
posterior of :data:`~pymc_kernel_steps_bench.posteriordb.POSTERIORS` it writes

- ``data/<data name>.json.gz``: the data set, the repository's JSON unchanged, gzip-compressed;
- ``data/<posterior>.npz``: the reference draws, one array per Stan variable, shape
  ``(chains, draws, *shape)`` (Stan's ``beta[2]`` is ``beta[..., 1]``), compressed;
- ``data/LICENSE-posteriordb``: the repository's licence.
"""

from __future__ import annotations

import gzip
import io
import json
import re
import sys
import zipfile
from pathlib import Path

import numpy as np

from . import DATA_DIR, POSTERIORS

_INDEX = re.compile(r"^(?P<name>[A-Za-z_][A-Za-z0-9_]*)(\[(?P<index>[0-9,]+)\])?$")


def _unzip_json(path: Path):
    with zipfile.ZipFile(path) as archive:
        (member,) = archive.namelist()
        return json.loads(archive.read(member))


def stan_draws_to_arrays(chains: list[dict]) -> dict[str, np.ndarray]:
    """posteriordb's reference draws (a list of chains, each ``{"beta[1]": [...], ...}``) as
    ``{name: array (chains, draws, *shape)}``, Stan's 1-based indices made 0-based."""
    columns: dict[str, dict[tuple[int, ...], np.ndarray]] = {}
    for label in chains[0]:
        match = _INDEX.match(label)
        if match is None:
            raise ValueError(f"cannot parse the reference variable {label!r}")
        index = match["index"]
        key = () if index is None else tuple(int(i) - 1 for i in index.split(","))
        values = np.array([chain[label] for chain in chains], dtype=np.float64)
        columns.setdefault(match["name"], {})[key] = values
    arrays = {}
    for name, parts in columns.items():
        if list(parts) == [()]:
            arrays[name] = parts[()]
            continue
        shape = tuple(max(k[i] for k in parts) + 1 for i in range(len(next(iter(parts)))))
        first = next(iter(parts.values()))
        out = np.full(first.shape + shape, np.nan)
        for key, values in parts.items():
            out[(..., *key)] = values
        if np.isnan(out).any():
            raise ValueError(f"reference variable {name!r} has missing elements")
        arrays[name] = out
    return arrays


def vendor(source: Path, target: Path = DATA_DIR) -> None:
    database = Path(source) / "posterior_database"
    target.mkdir(parents=True, exist_ok=True)
    for name, spec in POSTERIORS.items():
        data = _unzip_json(database / "data" / "data" / f"{spec.data_name}.json.zip")
        with gzip.GzipFile(target / f"{spec.data_name}.json.gz", "wb", mtime=0) as out:
            out.write(json.dumps(data).encode())
        draws = _unzip_json(
            database / "reference_posteriors" / "draws" / "draws" / f"{name}.json.zip"
        )
        buffer = io.BytesIO()
        np.savez_compressed(buffer, **stan_draws_to_arrays(draws))
        (target / f"{name}.npz").write_bytes(buffer.getvalue())
        print(f"{name}: data {spec.data_name}, {len(draws)} chains of reference draws")
    licence = (Path(source) / "LICENCE.md").read_text()
    (target / "LICENSE-posteriordb").write_text(
        "The data sets and reference draws in this folder come from posteriordb\n"
        "(https://github.com/stan-dev/posteriordb), under the licence below.\n\n" + licence
    )


if __name__ == "__main__":  # pragma: no cover - a one-off copy
    if len(sys.argv) != 2:
        sys.exit("usage: python -m pymc_kernel_steps_bench.posteriordb.vendor POSTERIORDB_CHECKOUT")
    vendor(Path(sys.argv[1]))
