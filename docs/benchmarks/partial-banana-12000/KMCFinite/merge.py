"""Merge the two 5-replicate KMCFinite runs (seeds 1 and 2) into one 10-replicate table.

``python docs/benchmarks/partial-banana-12000/KMCFinite/merge.py`` (from the repository root)
reads ``seed1/banana-runs.csv.gz`` and ``seed2/banana-runs.csv.gz`` next to this file and writes
``banana-runs.csv.gz`` (the merged frame) and ``table.md``. The ESS_err is recomputed from the
squared errors of all 10 replicates; the pooled ArviZ columns (pooled over each 5-replicate run
only) are blanked.
"""

import sys
from pathlib import Path

import pandas as pd

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[3] / "benchmarks"))
from compare import markdown_table  # noqa: E402

from pymc_kernel_steps.comparison import ess_err_table  # noqa: E402

a = pd.read_csv(HERE / "seed1" / "banana-runs.csv.gz")
b = pd.read_csv(HERE / "seed2" / "banana-runs.csv.gz")
b["replicate"] += a["replicate"].max() + 1
df = pd.concat([a, b], ignore_index=True)
for key in ("ess_bulk_pooled", "ess_tail_pooled", "r_hat_pooled"):
    df[key] = float("nan")
df.to_csv(HERE / "banana-runs.csv.gz", index=False)
table = markdown_table(ess_err_table(df))
(HERE / "table.md").write_text(table + "\n")
print(table)
