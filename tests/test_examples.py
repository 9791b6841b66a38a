"""The example notebooks (``examples/*.py``, jupytext percent format, paired with ``.ipynb``).

Every notebook runs at its reduced size (``EXAMPLES_FAST=1``) and ends with an ``assert`` of its
key claim, so running it checks the claim. Those runs (marked ``notebook``: three of them sample
models of milliseconds an evaluation, three minutes of CPU together) are ``make test-examples``,
which CI runs after ``make test``; the checks of the notebooks' form stay in ``make test``. The
``.ipynb`` twins (rendered by the docs with their saved outputs) must hold the same cells and
have been executed at full size (``make examples``).
"""

from __future__ import annotations

import ast
import runpy
from pathlib import Path

import pytest

EXAMPLES_DIR = Path(__file__).resolve().parents[1] / "examples"
EXAMPLES = sorted(p for p in EXAMPLES_DIR.glob("*.py") if not p.name.startswith("_"))
IDS = [path.stem for path in EXAMPLES]


def test_there_are_examples():
    assert len(EXAMPLES) >= 5, EXAMPLES


def test_the_reduced_size_switch_is_documented():
    """``EXAMPLES_FAST`` is read by every notebook; the README's development section says so."""
    readme = (EXAMPLES_DIR.parent / "README.md").read_text()
    development = readme[readme.index("## Development") :]
    assert "EXAMPLES_FAST=1" in development
    for path in EXAMPLES:
        assert 'os.environ.get("EXAMPLES_FAST"' in path.read_text(), path.name


def _code_cells(path: Path) -> list[str]:
    jupytext = pytest.importorskip("jupytext")
    return [c.source for c in jupytext.read(path).cells if c.cell_type == "code"]


@pytest.mark.parametrize("path", EXAMPLES, ids=IDS)
def test_example_ends_with_an_assert_of_its_claim(path):
    last = ast.parse(_code_cells(path)[-1])
    assert any(isinstance(node, ast.Assert) for node in last.body), (
        f"{path.name}: the last code cell must assert the notebook's key claim"
    )


@pytest.mark.parametrize("path", EXAMPLES, ids=IDS)
def test_ipynb_twin_in_sync_and_executed_at_full_size(path):
    jupytext = pytest.importorskip("jupytext")
    twin = path.with_suffix(".ipynb")
    assert twin.exists(), f"{twin.name} is missing: run `make examples`"
    source, saved = jupytext.read(path), jupytext.read(twin)

    def cells(nb):
        return [(cell.cell_type, cell.source.strip()) for cell in nb.cells]

    assert cells(saved) == cells(source), (
        f"{twin.name} differs from {path.name}: run `make examples` (or `jupytext --sync`)"
    )
    code = [cell for cell in saved.cells if cell.cell_type == "code"]
    assert all(cell.get("execution_count") for cell in code), f"{twin.name} was not executed"
    outputs = [output for cell in code for output in cell.get("outputs", [])]
    assert not [o for o in outputs if o.get("output_type") == "error"], f"{twin.name}: error"
    text = "".join(str(o.get("text", "")) for o in outputs if o.get("output_type") == "stream")
    assert "full size" in text and "reduced size" not in text, (
        f"{twin.name} must be saved from a full-size run (`make examples`, no EXAMPLES_FAST)"
    )


@pytest.mark.slow
@pytest.mark.notebook
@pytest.mark.parametrize("path", EXAMPLES, ids=IDS)
def test_example_runs_at_reduced_size_and_its_claim_holds(path, monkeypatch):
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    monkeypatch.setenv("EXAMPLES_FAST", "1")
    monkeypatch.chdir(EXAMPLES_DIR)
    try:
        # not as `__main__`: in Jupyter the main module has no file, so worker processes
        # started by spawn (Dask's LocalCluster) do not re-run the notebook; here they would
        namespace = runpy.run_path(str(path), run_name="__notebook__")  # ends with its asserts
    finally:
        plt.close("all")
    assert namespace["FAST"] is True
