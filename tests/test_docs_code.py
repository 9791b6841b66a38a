"""Every ```python block of README.md and docs/**/*.md runs.

The blocks of one file run in order in one namespace (as a reader would paste them into one
session), in a temporary working directory. A block is skipped only if its first line is a
comment ``# not run in the tests: <reason>`` with a non-empty reason, shown in the page.

The code runs as written, except that ``pm.sample`` runs its chains in this process when a block
does not choose ``cores``: worker processes would cost more start-up time than the sampling
itself, and oversubscribe the machine under ``pytest -n 2`` (parallel chains have their own
tests in ``tests/steps``).
"""

from __future__ import annotations

import logging
import re
import warnings
from pathlib import Path

import matplotlib
import pymc as pm
import pytest

ROOT = Path(__file__).resolve().parents[1]
SKIP_MARK = "# not run in the tests:"
#: generated at build time (notebooks copied from examples/, which the notebook tests run)
GENERATED = {ROOT / "docs" / "_build", ROOT / "docs" / "examples"}

_FENCE = re.compile(r"^(?P<indent> *)(?P<fence>`{3,}|~{3,})(?P<info>[^\n`]*)$")


def _markdown_files() -> list[Path]:
    files = [ROOT / "README.md"]
    for path in sorted((ROOT / "docs").rglob("*.md")):
        if not any(parent in GENERATED for parent in path.parents):
            files.append(path)
    return files


def python_blocks(text: str) -> list[tuple[int, str]]:
    """(first line number, code) of each fenced block whose info string is ``python``."""
    blocks, lines, i = [], text.splitlines(), 0
    while i < len(lines):
        match = _FENCE.match(lines[i])
        if not match:
            i += 1
            continue
        fence, info, indent = match["fence"], match["info"].strip(), len(match["indent"])
        body, j = [], i + 1
        while j < len(lines) and not (
            lines[j].strip().startswith(fence) and set(lines[j].strip()) == {fence[0]}
        ):
            body.append(lines[j][indent:] if lines[j][:indent].isspace() else lines[j])
            j += 1
        if info.split()[:1] in (["python"], ["py"]):
            blocks.append((i + 2, "\n".join(body) + "\n"))
        i = j + 1
    return blocks


def test_block_extraction():
    text = "\n".join(
        [
            "text",
            "```python",
            "a = 1",
            "```",
            "```bash",
            "make test",
            "```",
            "- item",
            "  ```python",
            "  b = a + 1",
            "  ```",
            "````md",
            "```python",
            "not_python_inside_a_md_block",
            "```",
            "````",
        ]
    )
    assert python_blocks(text) == [(3, "a = 1\n"), (10, "b = a + 1\n")]


FILES = [path for path in _markdown_files() if python_blocks(path.read_text(encoding="utf-8"))]


def test_docs_have_code_to_test():
    names = {path.relative_to(ROOT).as_posix() for path in FILES}
    assert {"README.md", "docs/usage.md", "docs/getting-started.md"} <= names


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_code_blocks_run(path, tmp_path, monkeypatch):
    matplotlib.use("Agg")
    monkeypatch.chdir(tmp_path)
    sample = pm.sample

    def sample_in_process(*args, **kwargs):
        kwargs.setdefault("cores", 1)
        return sample(*args, **kwargs)

    monkeypatch.setattr(pm, "sample", sample_in_process)
    namespace = {"__name__": "__main__"}  # a block runs as a script does: guards included
    relative = path.relative_to(ROOT).as_posix()
    for line, code in python_blocks(path.read_text(encoding="utf-8")):
        first = code.lstrip().splitlines()[0] if code.strip() else ""
        if first.startswith(SKIP_MARK):
            reason = first[len(SKIP_MARK) :].strip()
            assert reason, f"{relative}:{line}: a skipped block must say why"
            continue
        compiled = compile(code, f"{relative}:{line}", "exec")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            logging.getLogger("pymc").setLevel(logging.ERROR)
            try:
                exec(compiled, namespace)
            except Exception as error:
                raise AssertionError(
                    f"the python block at {relative}:{line} failed: {type(error).__name__}: {error}"
                ) from error


def test_api_reference_lists_every_public_name():
    """docs/api.md documents every name the package exports (add a directive for a new one)."""
    import pymc_kernel_steps

    text = (ROOT / "docs" / "api.md").read_text(encoding="utf-8")
    documented = set(
        re.findall(r"\.\. auto(?:class|function|exception|data):: (?:[\w.]+\.)?(\w+)", text)
    )
    exported = set(pymc_kernel_steps.__all__) - {"__version__", "core", "options"}
    missing = sorted(exported - documented)
    assert not missing, f"add to docs/api.md: {missing}"
