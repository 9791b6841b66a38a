"""`make demo` runs end to end (at a tiny budget) and prints one row per sampler. The demo is
part of the benchmark harness (``pymc_kernel_steps_bench.demo``): it samples the harness's banana
and draws the harness's figure."""

from __future__ import annotations

from pathlib import Path

import pytest

import pymc_kernel_steps
import pymc_kernel_steps_bench
from pymc_kernel_steps_bench import demo

ROOT = Path(__file__).resolve().parents[1]


def test_demo_prints_a_row_per_sampler(capsys):
    table = demo.main(
        [
            "--samplers",
            "KMCLite,CKAM,DEMetropolisZ",
            "--tune",
            "120",
            "--draws",
            "60",
            "--chains",
            "1",
            "--figure",
            "",
        ]
    )
    lines = table.splitlines()
    assert lines[0].split()[:3] == ["sampler", "evals", "min"]
    assert [line.split()[0] for line in lines[2:]] == ["KMCLite", "CKAM", "DEMetropolisZ"]
    evals = {line.split()[0]: int(line.split()[1]) for line in lines[2:]}
    # at most one per iteration (an aborted surrogate trajectory is not evaluated), plus the start
    # point and its second differences (2 to 6 per coordinate)
    assert 181 < evals["KMCLite"] <= 181 + 6 * 8
    assert evals["DEMetropolisZ"] >= 2 * 180
    assert "8-d banana" in capsys.readouterr().out


def test_demo_rejects_unknown_samplers():
    with pytest.raises(SystemExit):
        demo.main(["--samplers", "NoSuchSampler"])


def test_demo_writes_the_benchmark_figure(tmp_path):
    out = demo.write_benchmark_figure(demo.repository_runs(ROOT), tmp_path / "figure.png")
    assert out is not None and out.stat().st_size > 10_000


def test_demo_says_why_when_there_are_no_benchmark_runs(tmp_path, capsys):
    assert demo.write_benchmark_figure(tmp_path / "missing.csv.gz", tmp_path / "f.png") is None
    assert "missing.csv.gz" in capsys.readouterr().out


def test_demo_finds_the_committed_runs_only_in_a_checkout(tmp_path, capsys):
    runs = demo.repository_runs(ROOT / "tests")
    assert runs is not None and runs.is_file() and ROOT in runs.parents
    assert demo.repository_runs(tmp_path) is None
    assert demo.write_benchmark_figure(None, tmp_path / "f.png") is None
    assert "--runs" in capsys.readouterr().out


@pytest.mark.parametrize(
    "package", [pymc_kernel_steps, pymc_kernel_steps_bench], ids=["samplers", "harness"]
)
def test_no_file_of_the_package_refers_to_the_docs(package):
    folder = Path(package.__file__).resolve().parent
    for path in sorted(folder.rglob("*.py")):
        assert "docs/" not in path.read_text(), f"{path.relative_to(ROOT)} refers to docs/"
