"""`make demo` runs end to end (at a tiny budget) and prints one row per sampler."""

from __future__ import annotations

import pytest

from pymc_kernel_steps import demo


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
        ]
    )
    lines = table.splitlines()
    assert lines[0].split()[:3] == ["sampler", "evals", "min"]
    assert [line.split()[0] for line in lines[2:]] == ["KMCLite", "CKAM", "DEMetropolisZ"]
    evals = {line.split()[0]: int(line.split()[1]) for line in lines[2:]}
    assert evals["KMCLite"] == 181  # one per iteration, plus the start point
    assert evals["DEMetropolisZ"] >= 2 * 180
    assert "8-d banana" in capsys.readouterr().out


def test_demo_rejects_unknown_samplers():
    with pytest.raises(SystemExit):
        demo.main(["--samplers", "NoSuchSampler"])
