"""The package's layout: a lazy top level, samplers that never import the harness."""

from __future__ import annotations

import ast
import pickle
import subprocess
import sys
from pathlib import Path

import pytest

import pymc_kernel_steps as pks

PACKAGE = Path(pks.__file__).resolve().parent
ROOT = PACKAGE.parent


def _run(code: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300
    )


def test_importing_core_does_not_load_pymc():
    result = _run("import pymc_kernel_steps.core, sys; assert 'pymc' not in sys.modules")
    assert result.returncode == 0, result.stderr


def test_importing_core_does_not_load_pytensor_or_the_harness():
    result = _run(
        "import pymc_kernel_steps, pymc_kernel_steps.core, sys\n"
        "loaded = [m for m in ('pytensor', 'arviz', 'pandas', 'pymc_kernel_steps.bench', "
        "'pymc_kernel_steps.steps') if m in sys.modules]\n"
        "assert not loaded, loaded"
    )
    assert result.returncode == 0, result.stderr


def test_public_names_are_reachable_and_listed():
    for name in pks.__all__:
        assert getattr(pks, name) is not None, name
    assert set(pks.__all__) <= set(dir(pks))
    from pymc_kernel_steps import KMCLite  # noqa: F401 - the import form users write

    with pytest.raises(AttributeError):
        pks.NoSuchSampler  # noqa: B018


def test_a_step_class_pickles_by_reference():
    assert pickle.loads(pickle.dumps(pks.KMCLite)) is pks.KMCLite


def _imported_modules(path: Path) -> set[str]:
    """Absolute names of every module ``path`` imports (relative imports resolved)."""
    module = ".".join(path.relative_to(ROOT).with_suffix("").parts)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    package = package.removesuffix(".__init__")
    names = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                prefix = ".".join(base)
                target = f"{prefix}.{node.module}" if node.module else prefix
            else:
                target = node.module
            names.add(target)
            names.update(f"{target}.{alias.name}" for alias in node.names)
    return names


@pytest.mark.parametrize("part", ["core", "steps"])
def test_the_samplers_never_import_the_harness(part):
    harness = (
        "pymc_kernel_steps.bench",
        "pymc_kernel_steps.comparison",
        "pymc_kernel_steps.bench.targets",
    )
    for path in sorted((PACKAGE / part).rglob("*.py")):
        bad = sorted(n for n in _imported_modules(path) if n.startswith(harness))
        assert not bad, f"{path.relative_to(ROOT)} imports {bad}"


def test_core_never_imports_pymc_or_pytensor():
    for path in sorted((PACKAGE / "core").rglob("*.py")):
        bad = sorted(n for n in _imported_modules(path) if n.split(".")[0] in ("pymc", "pytensor"))
        assert not bad, f"{path.relative_to(ROOT)} imports {bad}"


def test_only_the_distributed_module_imports_dask():
    """Dask is an optional extra: nothing else in the package may need it."""
    for path in sorted(PACKAGE.rglob("*.py")):
        if (PACKAGE / "distributed") in path.parents:
            continue
        bad = sorted(
            n for n in _imported_modules(path) if n.split(".")[0] in ("dask", "distributed")
        )
        assert not bad, f"{path.relative_to(ROOT)} imports {bad}"


#: the top-level modules that are part of the samplers (the others, the demo and the deprecated
#: harness re-exports, belong to the harness)
SAMPLER_TOP_LEVEL = ("__init__.py", "_version.py", "diagnostics.py", "pseudo_marginal.py")


def test_the_top_level_samplers_never_import_the_harness():
    harness = (
        "pymc_kernel_steps.bench",
        "pymc_kernel_steps.comparison",
        "pymc_kernel_steps.targets",
    )
    for name in SAMPLER_TOP_LEVEL:
        path = PACKAGE / name
        bad = sorted(n for n in _imported_modules(path) if n.startswith(harness))
        assert not bad, f"{path.relative_to(ROOT)} imports {bad}"


def test_no_package_file_is_over_600_lines():
    for path in sorted(PACKAGE.rglob("*.py")):
        lines = len(path.read_text().splitlines())
        assert lines <= 600, f"{path.relative_to(ROOT)} has {lines} lines"


@pytest.mark.parametrize(
    ("old", "new", "name"),
    [
        ("pymc_kernel_steps.comparison", "pymc_kernel_steps.bench", "compare_samplers"),
        ("pymc_kernel_steps.targets", "pymc_kernel_steps.bench.targets", "TARGETS"),
    ],
)
def test_the_old_harness_modules_warn_and_re_export(old, new, name):
    result = _run(
        "import importlib, warnings\n"
        "with warnings.catch_warnings(record=True) as caught:\n"
        "    warnings.simplefilter('always')\n"
        f"    old = importlib.import_module({old!r})\n"
        f"new = importlib.import_module({new!r})\n"
        "assert [w.category for w in caught] == [DeprecationWarning], caught\n"
        f"assert {new!r} in str(caught[0].message)\n"
        "assert caught[0].filename == '<string>', caught[0].filename\n"
        f"assert getattr(old, {name!r}) is getattr(new, {name!r})\n"
        "assert all(getattr(old, n) is not None for n in old.__all__)\n"
    )
    assert result.returncode == 0, result.stderr


def test_the_old_target_submodules_are_the_new_ones():
    result = _run(
        "import warnings\n"
        "warnings.simplefilter('ignore', DeprecationWarning)\n"
        "from pymc_kernel_steps.targets.synthetic import banana_model\n"
        "from pymc_kernel_steps.bench.targets import synthetic\n"
        "assert banana_model is synthetic.banana_model\n"
    )
    assert result.returncode == 0, result.stderr


def _scripts() -> list[Path]:
    return sorted((ROOT / "benchmarks").rglob("*.py"))


def test_the_studies_import_only_the_package():
    scripts = {path.stem for path in _scripts()}
    for path in _scripts():
        text = path.read_text()
        assert "sys.path" not in text, f"{path.relative_to(ROOT)} edits sys.path"
        roots = {name.split(".")[0] for name in _imported_modules(path)}
        bad = sorted(roots & (scripts | {"tests", "benchmarks", "helpers"}))
        assert not bad, f"{path.relative_to(ROOT)} imports {bad}: move what it shares to bench"


def test_no_test_loads_a_script():
    for path in sorted((ROOT / "tests").rglob("*.py")):
        text = path.read_text()
        for needle in ("spec_from_file_location", "importlib.util", "from benchmarks"):
            assert needle not in text or path.name == "test_layout.py", (
                f"{path.relative_to(ROOT)} loads a script ({needle}): test the package instead"
            )
