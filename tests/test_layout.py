"""The package's layout: a lazy top level, samplers that never import the harness (its own
distribution, ``pymc-kernel-steps-bench`` in ``bench/``)."""

from __future__ import annotations

import ast
import pickle
import subprocess
import sys
from pathlib import Path

import pytest

import pymc_kernel_steps as pks
import pymc_kernel_steps_bench as harness

PACKAGE = Path(pks.__file__).resolve().parent
ROOT = PACKAGE.parent
#: the benchmark harness: its own distribution, whose project is ``bench/``
HARNESS = Path(harness.__file__).resolve().parent
HARNESS_ROOT = HARNESS.parent
HARNESS_NAME = HARNESS.name  # pymc_kernel_steps_bench


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
        "loaded = [m for m in ('pytensor', 'arviz', 'pandas', 'pymc_kernel_steps_bench', "
        "'pymc_kernel_steps.steps') if m in sys.modules]\n"
        "assert not loaded, loaded"
    )
    assert result.returncode == 0, result.stderr


def test_sampling_does_not_load_the_harness():
    result = _run(
        "import sys, numpy as np, pymc as pm, pymc_kernel_steps as pks\n"
        "from pymc_kernel_steps import diagnostics, pseudo_marginal, distributed\n"
        "with pm.Model():\n"
        "    pm.Normal('x', shape=2)\n"
        "    pm.sample(draws=20, tune=20, chains=1, step=pks.KAMH(), progressbar=False,\n"
        "              compute_convergence_checks=False, random_seed=1)\n"
        "loaded = sorted(m for m in sys.modules if m.startswith('pymc_kernel_steps_bench'))\n"
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
    root = HARNESS_ROOT if HARNESS in path.parents else ROOT
    module = ".".join(path.relative_to(root).with_suffix("").parts)
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


def _strings(path: Path) -> list[str]:
    """The string constants of ``path`` that are not docstrings (an ``importlib`` target, say)."""
    tree = ast.parse(path.read_text(), str(path))
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    return [
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and id(node) not in docstrings
    ]


def test_the_samplers_never_import_the_harness():
    """No module of the samplers' package imports the harness, by an import statement (inside a
    function too) or by name (``importlib``): the samplers' distribution works without it."""
    for path in sorted(PACKAGE.rglob("*.py")):
        bad = sorted(n for n in _imported_modules(path) if n.split(".")[0] == HARNESS_NAME)
        assert not bad, f"{path.relative_to(ROOT)} imports {bad}"
        named = [s for s in _strings(path) if s.startswith(HARNESS_NAME)]
        assert not named, f"{path.relative_to(ROOT)} names the harness: {named}"


def test_the_harness_scan_finds_an_import(tmp_path):
    source = tmp_path / "mod.py"
    source.write_text(
        '"""Mentions pymc_kernel_steps_bench in its docstring only."""\n'
        "def f():\n    import importlib\n"
        "    return importlib.import_module('pymc_kernel_steps_bench.targets')\n"
    )
    assert _strings(source) == ["pymc_kernel_steps_bench.targets"]


@pytest.mark.parametrize(
    "old", ["bench", "comparison", "targets", "demo"], ids=lambda name: f"pymc_kernel_steps.{name}"
)
def test_the_harness_left_the_samplers_package(old):
    """The harness, its former re-exports and the demo live in pymc_kernel_steps_bench."""
    assert not (PACKAGE / old).exists() and not (PACKAGE / f"{old}.py").exists()


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


#: the parts of the package and the parts each may import (besides itself): the numeric core
#: nothing of ours; the steps the core and the argument checks; the pseudo-marginal helper and
#: the Dask runner what they use; the harness (its own distribution, pymc_kernel_steps_bench:
#: the targets, runners, suite and the demo) anything of the samplers. No part of the samplers
#: may import the harness. A part not listed here fails the test until it is placed.
ALLOWED_ARROWS = {
    "core": set(),
    "steps": {"core", "_validation", "options"},
    "options": {"core", "_validation"},
    "_validation": set(),
    "_version": set(),
    "_objmode": set(),
    "diagnostics": set(),
    "pseudo_marginal": {"_objmode", "_validation"},
    "distributed": {"core", "steps", "_validation"},
    "__init__": {"_version"},  # the rest lazily, by name (importlib), not by import statements
    HARNESS_NAME: None,  # None: anything (of the samplers; the harness is one part)
}


def _module_name(path: Path) -> str:
    root = HARNESS_ROOT if HARNESS in path.parents else ROOT
    return ".".join(path.relative_to(root).with_suffix("").parts).removesuffix(".__init__")


def _part(module: str) -> str | None:
    parts = module.split(".")
    if parts[0] == HARNESS_NAME:
        return HARNESS_NAME
    if parts[0] != "pymc_kernel_steps":
        return None
    return "__init__" if len(parts) == 1 else parts[1]


def _module_graph() -> dict[str, set[str]]:
    """Every module of the samplers' package and of the harness -> the modules of either it
    imports (imports inside functions included; a package's ``__init__`` importing its own
    submodules not counted)."""
    paths = {
        _module_name(path): path for folder in (PACKAGE, HARNESS) for path in folder.rglob("*.py")
    }
    graph = {}
    for module, path in paths.items():
        targets = set()
        for name in _imported_modules(path):
            while name and name not in paths:  # `from pkg import name` names an attribute
                name = name.rpartition(".")[0]
            if (
                name
                and name != module
                and not (path.name == "__init__.py" and name.startswith(module + "."))
            ):
                targets.add(name)
        graph[module] = targets
    return graph


def test_the_parts_import_only_what_their_contract_allows():
    """Import contracts instead of a line cap: which part of the package may import which (the
    samplers' parts never the harness)."""
    for module, targets in sorted(_module_graph().items()):
        part = _part(module)
        assert part in ALLOWED_ARROWS, f"{module}: part {part!r} has no contract; add it"
        allowed = ALLOWED_ARROWS[part]
        if allowed is None:
            continue
        bad = sorted(t for t in targets if _part(t) not in allowed | {part})
        assert not bad, f"{module} ({part}) imports {bad}, outside its contract {sorted(allowed)}"


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index, low, on_stack, stack, found = {}, {}, set(), [], []

    def visit(node):
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in graph.get(node, ()):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_no_import_cycles():
    """No cycle among the package's modules, imports inside functions included (an import
    moved into a function to dodge a cycle is still one)."""
    assert _cycles(_module_graph()) == []


def test_the_cycle_finder_finds_a_cycle():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _cycles(graph) == [["a", "b", "c"]]


def _scripts() -> list[Path]:
    return sorted((ROOT / "benchmarks").rglob("*.py"))


def test_the_studies_import_only_the_package():
    scripts = {path.stem for path in _scripts()}
    for path in _scripts():
        text = path.read_text()
        assert "sys.path" not in text, f"{path.relative_to(ROOT)} edits sys.path"
        roots = {name.split(".")[0] for name in _imported_modules(path)}
        bad = sorted(roots & (scripts | {"tests", "benchmarks", "helpers"}))
        assert not bad, (
            f"{path.relative_to(ROOT)} imports {bad}: move what it shares to the harness (bench/)"
        )


def test_no_test_loads_a_script():
    for path in sorted((ROOT / "tests").rglob("*.py")):
        text = path.read_text()
        for needle in ("spec_from_file_location", "importlib.util", "from benchmarks"):
            assert needle not in text or path.name == "test_layout.py", (
                f"{path.relative_to(ROOT)} loads a script ({needle}): test the package instead"
            )


def _adapter_names() -> set[str]:
    """The names of the adapter protocol and of every tuner that implements it."""
    from pymc_kernel_steps.core.adaptation import Adapter

    names, pending = {Adapter.__name__}, [Adapter]
    while pending:
        for subclass in pending.pop().__subclasses__():
            names.add(subclass.__name__)
            pending.append(subclass)
    return names


def _type_tests_on(names: set[str], source: str) -> list[int]:
    """Lines of ``source`` that test an object's type against one of ``names``:
    ``isinstance``/``issubclass`` calls and ``type(x) is/== Name`` comparisons."""

    def named(node) -> bool:
        return any(
            (isinstance(n, ast.Name) and n.id in names)
            or (isinstance(n, ast.Attribute) and n.attr in names)
            for n in ast.walk(node)
        )

    lines = []
    for node in ast.walk(ast.parse(source)):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in ("isinstance", "issubclass")
            and len(node.args) == 2
            and named(node.args[1])
        ):
            lines.append(node.lineno)
        elif isinstance(node, ast.Compare):
            calls_type = any(
                isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "type"
                for n in ast.walk(node)
            )
            if calls_type and named(node):
                lines.append(node.lineno)
    return sorted(lines)


def test_moves_and_steps_never_test_a_tuners_type():
    """One adapter protocol: the moves and steps use a tuner through it (propose, update, value,
    final) and never branch on which tuner it is."""
    names = _adapter_names()
    assert {"RobbinsMonroScale", "WindowedTuner", "JumpRateWeights"} <= names
    for folder in (PACKAGE / "core" / "moves", PACKAGE / "steps"):
        for path in sorted(folder.rglob("*.py")):
            lines = _type_tests_on(names, path.read_text())
            assert not lines, f"{path.relative_to(ROOT)}:{lines} tests a tuner's type"


def test_the_tuner_type_scan_finds_type_tests():
    names = {"WindowedTuner", "DualAveraging"}
    source = (
        "if isinstance(self.tuner, WindowedTuner):\n    pass\n"
        "ok = isinstance(metric, Whitening)\n"
        "if self.tuning and isinstance(tuner, (adaptation.DualAveraging, int)):\n    pass\n"
        "if type(tuner) is WindowedTuner:\n    pass\n"
    )
    assert _type_tests_on(names, source) == [1, 4, 6]


#: the names a step could test to fork on its surrogate: the keyword's values and the estimators'
SURROGATE_NAMES = frozenset({"regression", "score_matching", "lite", "finite"})


def _surrogate_forks(source: str) -> list[str]:
    """Where ``source`` forks on which surrogate it has: a ``surrogate_kind`` name or attribute,
    or a comparison with a surrogate's name (the steps ask their fitter instead)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        name = node.id if isinstance(node, ast.Name) else getattr(node, "attr", None)
        if name == "surrogate_kind":
            found.append(f"line {node.lineno}: surrogate_kind")
        if isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
            for operand in operands:
                constants = (
                    operand.elts
                    if isinstance(operand, ast.Tuple | ast.Set | ast.List)
                    else [operand]
                )
                if any(
                    isinstance(c, ast.Constant) and c.value in SURROGATE_NAMES for c in constants
                ):
                    found.append(f"line {node.lineno}: compares with a surrogate's name")
        if (
            isinstance(node, ast.MatchValue)
            and getattr(node.value, "value", None) in SURROGATE_NAMES
        ):
            found.append(f"line {node.lineno}: matches a surrogate's name")
    return found


def test_the_steps_never_fork_on_the_surrogate():
    """The steps hold a fitter (``core.surrogates``) and ask it what they need: no
    ``surrogate_kind``, no comparison with a surrogate's name."""
    for path in sorted((PACKAGE / "steps").rglob("*.py")):
        forks = _surrogate_forks(path.read_text())
        assert not forks, f"{path.relative_to(ROOT)} forks on the surrogate: {forks}"


@pytest.mark.parametrize(
    "source",
    [
        "if self.surrogate_kind: pass",
        "x = surrogate == 'regression'",
        "x = 'score_matching' != kind",
        "x = name in ('lite', 'other')",
        "match kind:\n    case 'finite':\n        pass",
    ],
)
def test_the_fork_finder_finds_a_fork(source):
    assert _surrogate_forks(source)


def test_the_fork_finder_lets_a_mapping_by_name_be():
    assert not _surrogate_forks("FITTERS = {'regression': 1}\nfitter = FITTERS[name]")
