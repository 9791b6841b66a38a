"""The result pages' helpers: the provenance header a merge keeps, and relabelling of samplers."""

import pandas as pd
import pytest

from pymc_kernel_steps.bench.pages import page_header, parse_relabel, relabel_samplers

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
