"""The two distributions: the samplers' wheel holds the samplers only, no module of the benchmark
harness and no data file; the harness's wheel (``bench/``) holds the harness and its data.

Each wheel is built offline from a copy of the project (``pip wheel --no-deps
--no-build-isolation``, with the setuptools the environment has: PyTensor requires it), so a stale
``build/`` of the checkout cannot leak into it, and its file list is read."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

import pymc_kernel_steps

ROOT = Path(pymc_kernel_steps.__file__).resolve().parents[1]

#: what a copy of the project leaves out: environments, build output, caches, and the folders no
#: distribution packages (the copy keeps bench/, so a samplers' wheel that picked it up would fail)
_IGNORE = shutil.ignore_patterns(
    ".git",
    ".venv",
    "build",
    "dist",
    "*.egg-info",
    "__pycache__",
    ".pytest_cache",
    ".ruff_cache",
    "docs",
    "benchmarks",
    "examples",
    "tests",
    "demo-output",
    "bench-output",
)


def _wheel_files(project: Path, tmp_path: Path) -> list[str]:
    """The file list of the wheel built from a copy of ``project``."""
    source = tmp_path / "source"
    shutil.copytree(ROOT, source, ignore=_IGNORE)
    out = tmp_path / "wheel"
    result = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation"]
        + ["--no-cache-dir", "--quiet", "--wheel-dir", str(out)]
        + [str(source / project.relative_to(ROOT))],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    (wheel,) = out.glob("*.whl")
    with zipfile.ZipFile(wheel) as archive:
        return archive.namelist()


@pytest.fixture(scope="module")
def samplers_wheel(tmp_path_factory) -> list[str]:
    return _wheel_files(ROOT, tmp_path_factory.mktemp("samplers"))


def test_the_samplers_wheel_holds_no_harness_module(samplers_wheel):
    assert "pymc_kernel_steps/steps/kmc_lite.py" in samplers_wheel
    harness = [
        name
        for name in samplers_wheel
        if name.startswith("pymc_kernel_steps_bench")
        or name.startswith(
            (
                "pymc_kernel_steps/bench/",
                "pymc_kernel_steps/targets/",
                "pymc_kernel_steps/comparison.py",
                "pymc_kernel_steps/demo.py",
            )
        )
    ]
    assert not harness, harness
    packages = {name.split("/")[0] for name in samplers_wheel}
    assert {p for p in packages if not p.endswith(".dist-info")} == {"pymc_kernel_steps"}


def test_the_samplers_wheel_holds_no_data_file(samplers_wheel):
    data = [
        name
        for name in samplers_wheel
        if ".dist-info/" not in name and not name.endswith((".py", "/py.typed"))
    ]
    assert not data, data


def test_the_harness_wheel_holds_the_harness_and_its_data(tmp_path):
    files = _wheel_files(ROOT / "bench", tmp_path)
    assert not [name for name in files if name.startswith("pymc_kernel_steps/")]
    for needed in (
        "pymc_kernel_steps_bench/runners.py",
        "pymc_kernel_steps_bench/demo.py",
        "pymc_kernel_steps_bench/targets/references/glass.json",
        "pymc_kernel_steps_bench/posteriordb/data/LICENSE-posteriordb",
        "pymc_kernel_steps_bench/posteriordb/data/arK-arK.npz",
    ):
        assert needed in files, needed
    vendored = {
        path.relative_to(ROOT / "bench").as_posix()
        for path in (ROOT / "bench" / "pymc_kernel_steps_bench" / "posteriordb" / "data").iterdir()
    }
    assert vendored <= set(files), sorted(vendored - set(files))
