"""The result pages' helpers: the provenance header a merge keeps, and relabelling of samplers."""

import pandas as pd
import pytest

from pymc_kernel_steps_bench.pages import page_header, parse_relabel, relabel_samplers

PAGE = """# pima: error-based ESS per 1000 target evaluations

- date: 2026-11-25 09:19 UTC
- command: `python benchmarks/compare/compare.py --merge`
  - a nested line
- labels: the rows run as `KMCLite` were `moves="fixed"`

| sampler | evals (mean) |
|:--|--:|
| SMC | 11909 |

![pima](pima.png)
"""


def test_page_header_is_the_lines_between_title_and_table():
    assert page_header(PAGE) == [
        "- date: 2026-11-25 09:19 UTC",
        "- command: `python benchmarks/compare/compare.py --merge`",
        "  - a nested line",
        '- labels: the rows run as `KMCLite` were `moves="fixed"`',
    ]


def test_page_header_needs_a_title():
    with pytest.raises(ValueError, match="title"):
        page_header("- date: today\n| a |")


def test_parse_relabel():
    assert parse_relabel(["KMCLite=KMCLite-fixed", " KAMH = KAMH-fixed"]) == {
        "KMCLite": "KMCLite-fixed",
        "KAMH": "KAMH-fixed",
    }
    assert parse_relabel(None) == {}
    for bad in (["KMCLite"], ["=x"], ["x="]):
        with pytest.raises(ValueError, match="OLD=NEW"):
            parse_relabel(bad)
    with pytest.raises(ValueError, match="twice"):
        parse_relabel(["a=b", "a=c"])


def _frame():
    return pd.DataFrame({"sampler": ["KMCLite", "KMCLite", "SMC"], "estimate": [1.0, 2.0, 3.0]})


def test_relabel_samplers_renames_and_leaves_the_input():
    frame = _frame()
    out = relabel_samplers(frame, {"KMCLite": "KMCLite-fixed"})
    assert out["sampler"].tolist() == ["KMCLite-fixed", "KMCLite-fixed", "SMC"]
    assert out["estimate"].tolist() == [1.0, 2.0, 3.0]
    assert frame["sampler"].tolist() == ["KMCLite", "KMCLite", "SMC"]
    swapped = relabel_samplers(frame, {"KMCLite": "SMC", "SMC": "KMCLite"})
    assert swapped["sampler"].tolist() == ["SMC", "SMC", "KMCLite"]


def test_relabel_samplers_refuses_unknown_and_clashing_labels():
    with pytest.raises(ValueError, match="KAMH"):
        relabel_samplers(_frame(), {"KAMH": "KAMH-fixed"})
    with pytest.raises(ValueError, match="two samplers"):
        relabel_samplers(_frame(), {"KMCLite": "SMC"})
    with pytest.raises(ValueError, match="two samplers"):
        relabel_samplers(pd.DataFrame({"sampler": ["a", "b"]}), {"a": "c", "b": "c"})


INDEX = """# Benchmarks: accuracy per target evaluation

- date: 2026-11-25 13:15 UTC

Per target: ...

| target | budget | ours: best | ESS_err / 1k | peer: best | ESS_err / 1k | ratio |
|:--|--:|:--|--:|:--|--:|--:|
| [banana](banana.md) | 12,000 | KMCLite | 28.2 | SMC | 0.882 | 32.0 |
| [ode](ode.md) | 12,000 | KMCLite | 260 | SMC | 0.134 | not meaningful (below) |

ode: SMC's worst coordinate is one under-converged run.

- a second note
"""


def _row(name, ratio):
    return f"| [{name}]({name}.md) | 12,000 | KAMH | 1 | SMC | 1 | {ratio} |"


def test_index_page_keeps_other_rows_hand_edits_and_notes():
    from pymc_kernel_steps_bench.pages import INDEX_COLUMNS, index_page

    text = index_page(
        INDEX,
        {"banana": _row("banana", "1.00")},
        ["- date: today"],
        fallback_rows={"ode": _row("ode", "1942"), "abc": _row("abc", "107")},
    )
    lines = text.splitlines()
    assert lines[0] == "# Benchmarks: accuracy per target evaluation"
    assert "- date: today" in lines and "- date: 2026-11-25 13:15 UTC" not in lines
    start = lines.index(INDEX_COLUMNS[0])
    assert lines[start + 1] == INDEX_COLUMNS[1]
    # this run's row replaces its target's; the ode row keeps its hand edit over the frame's
    # figure; a target with a frame and no row gets the computed one; sorted by target
    assert lines[start + 2 : start + 5] == [
        _row("abc", "107"),
        _row("banana", "1.00"),
        "| [ode](ode.md) | 12,000 | KMCLite | 260 | SMC | 0.134 | not meaningful (below) |",
    ]
    assert lines[start + 5 :] == [
        "",
        "ode: SMC's worst coordinate is one under-converged run.",
        "",
        "- a second note",
    ]


def test_index_page_without_an_existing_page():
    from pymc_kernel_steps_bench.pages import index_page

    text = index_page(None, {"banana": _row("banana", "2.0")}, ["- date: today"])
    assert text.endswith(_row("banana", "2.0") + "\n")


def test_index_page_refuses_a_table_it_cannot_carry_over():
    from pymc_kernel_steps_bench.pages import index_page

    other = INDEX.replace("| ratio |\n", "| ratio | minutes |\n", 1)
    with pytest.raises(ValueError, match="other columns"):
        index_page(other, {}, ["- date: today"])


def test_compare_merge_writes_the_page_and_keeps_the_index(tmp_path):
    """``benchmarks/compare/compare.py --merge`` run as a script: the page is written and the
    index keeps its other rows and its notes (the script's ``main`` guard was once lost, and
    it then did nothing without a word)."""
    import shutil
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    docs = root / "docs" / "benchmarks"
    out = tmp_path / "out"
    out.mkdir()
    shutil.copy(docs / "index.md", out / "index.md")
    shutil.copy(docs / "banana.md", out / "banana.md")
    frame = tmp_path / "banana-runs.csv.gz"
    shutil.copy(docs / "banana-runs.csv.gz", frame)
    subprocess.run(
        [sys.executable, str(root / "benchmarks" / "compare" / "compare.py"), "--merge",
         str(frame), "--out", str(out), "--keep-header"],
        check=True, capture_output=True, cwd=tmp_path,
    )  # fmt: skip
    assert (out / "banana-runs.csv.gz").exists() and (out / "banana.png").exists()
    index = (out / "index.md").read_text()
    assert "[pima](pima.md)" in index and "[banana](banana.md)" in index
    assert "ode: SMC's worst coordinate" in index
