"""Do the ``slow`` statistical tests hold for other random streams than the one they were written
on?

Runs ``pytest -m slow`` (the statistical sampling checks, less the files in ``EXCLUDED``) once per
variant and writes a table, pass or fail per test per variant, to ``results.md`` beside this file
(rewritten after every variant, so an interrupted run reports what finished):

- ``offset k``: ``PKS_TEST_SEED_OFFSET=k`` (``tests/conftest.py``): every integer ``random_seed``
  given to ``pm.sample`` is ``k`` higher, another random stream on this machine;
- ``perturbed``: the committed seeds under another floating-point environment, as on another
  machine: numba compiled for a generic x86-64 CPU, numpy's AVX-512 dispatch disabled, OpenBLAS's
  ``SandyBridge`` kernels (the tests otherwise use ``Haswell``'s). What took effect is checked
  and written to the page.

``python benchmarks/test_seeds/run.py --offsets 0 1 2 --perturbed`` (``-n 2`` workers by default;
``--all`` keeps the excluded files; ``-k`` passes a selection to pytest). Run time on the shared
2-core development machine: see the page.
"""

from __future__ import annotations

import argparse
import os
import shlex
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent

#: slow tests left out, and why: they are not statistical checks of the samplers' draws
EXCLUDED = {
    "tests/test_examples.py": "the example notebooks at reduced size, minutes each",
    "tests/test_distributed.py": "a wall-clock speed-up; the pool seeds its own chains",
    "tests/bench": "posteriordb translations checked with NUTS, suite pages, bit-for-bit repeats",
    "tests/steps/test_reproducibility.py": "same seed, same draws, which holds for any offset",
}

#: the floating-point environment of another x86-64 machine (AVX2 without AVX-512); numpy ≥ 2.4
#: names its AVX-512 dispatch targets X86_V4, AVX512_ICL, AVX512_SPR
PERTURBED = {
    "NUMBA_CPU_NAME": "generic",
    "NPY_DISABLE_CPU_FEATURES": "X86_V4 AVX512_ICL AVX512_SPR",
    "OPENBLAS_CORETYPE": "SandyBridge",
}

PROBE = """
import json, numba, numpy as np, threadpoolctl
from numpy._core._multiarray_umath import __cpu_features__ as features
print(json.dumps({
    "numba CPU": numba.config.CPU_NAME or "host",
    "numpy AVX-512 (X86_V4) dispatch": features.get("X86_V4"),
    "OpenBLAS kernels": [i.get("architecture") for i in threadpoolctl.threadpool_info()
                         if i["internal_api"] == "openblas"],
}))
"""


def environment(variant: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in PERTURBED}
    env.pop("PKS_TEST_SEED_OFFSET", None)
    if variant == "perturbed":
        env.update(PERTURBED)
    else:
        env["PKS_TEST_SEED_OFFSET"] = variant.removeprefix("offset ")
        env.setdefault("OPENBLAS_CORETYPE", "Haswell")  # as tests/conftest.py sets it
    return env


def probe(variant: str) -> str:
    env = environment(variant)
    env.setdefault("OPENBLAS_NUM_THREADS", "1")
    out = subprocess.run(
        [sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, cwd=ROOT
    )
    return out.stdout.strip() or out.stderr.strip().splitlines()[-1]


def run_variant(variant: str, args) -> tuple[dict[str, tuple[str, str]], float]:
    """``{test id: (outcome, first line of its failure)}`` and the minutes it took."""
    report = HERE / f".junit-{variant.replace(' ', '-')}.xml"
    command = [
        sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-m", "slow", "-q",
        "-n", str(args.workers), "--dist", "worksteal", f"--junitxml={report}",
    ]  # fmt: skip
    if not args.all:
        command += [f"--ignore={path}" for path in EXCLUDED]
    if args.k:
        command += ["-k", args.k]
    start = time.monotonic()
    subprocess.run(command, env=environment(variant), cwd=ROOT, stdout=subprocess.DEVNULL)
    minutes = (time.monotonic() - start) / 60
    results = {}
    for case in ET.parse(report).getroot().iter("testcase"):
        name = f"{case.get('classname').replace('.', '/')}.py::{case.get('name')}"
        outcome, message = "pass", ""
        for tag in ("failure", "error", "skipped"):
            found = case.find(tag)
            if found is not None:
                outcome = {"failure": "FAIL", "error": "ERROR", "skipped": "skip"}[tag]
                message = (found.get("message") or "").strip().splitlines()
                message = message[0][:300] if message else ""
                break
        results[name] = (outcome, message)
    report.unlink()
    return results, minutes


def write_page(variants, results, minutes, probes, args) -> None:
    tests = sorted({name for done in results.values() for name in done})
    lines = [
        "# The slow statistical tests under other random streams",
        "",
        f"`python benchmarks/test_seeds/run.py {shlex.join(args.argv)}`; "
        f"{len(tests)} tests, `-n {args.workers}`. Variants: `offset k` adds k to every integer "
        "`random_seed` of `pm.sample` (`PKS_TEST_SEED_OFFSET`); `perturbed` keeps the seeds "
        "and changes the floating-point environment "
        f"({', '.join(f'`{k}={v}`' for k, v in PERTURBED.items())}).",
        "",
        "What took effect:",
        "",
        *[f"- {variant}: `{probes[variant]}`" for variant in variants if variant in probes],
        "",
        "Left out: " + "; ".join(f"`{p}` ({why})" for p, why in EXCLUDED.items()) + "."
        if not args.all
        else "Nothing left out (`--all`).",
        "",
        "| test | "
        + " | ".join(f"{v} ({minutes[v]:.0f} min)" for v in variants if v in results)
        + " |",
        "|---|" + "---|" * sum(v in results for v in variants),
    ]
    for name in tests:
        cells = [results[v].get(name, ("-", ""))[0] for v in variants if v in results]
        if all(c == "pass" for c in cells) and args.failures_only:
            continue
        lines.append(f"| `{name}` | " + " | ".join(cells) + " |")
    passing = [
        name for name in tests if all(results[v].get(name, ("",))[0] == "pass" for v in results)
    ]
    lines += ["", f"{len(passing)} of {len(tests)} tests passed in every variant.", ""]
    for variant in variants:
        for name, (outcome, message) in sorted(results.get(variant, {}).items()):
            if outcome in ("FAIL", "ERROR"):
                lines.append(f"- {variant}, `{name}`: {message}")
    (HERE / args.output).write_text("\n".join(lines) + "\n")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--offsets", type=int, nargs="*", default=[1, 2])
    parser.add_argument("--perturbed", action="store_true")
    parser.add_argument("-n", "--workers", type=int, default=2)
    parser.add_argument("-k", default=None, help="pytest's -k selection")
    parser.add_argument("--all", action="store_true", help="keep the excluded files")
    parser.add_argument("--failures-only", action="store_true", help="list failing tests only")
    parser.add_argument("--output", default="results.md", help="the page, beside this file")
    args = parser.parse_args(argv)
    args.argv = sys.argv[1:] if argv is None else list(argv)
    variants = [f"offset {k}" for k in args.offsets] + (["perturbed"] if args.perturbed else [])
    results, minutes, probes = {}, {}, {}
    for variant in variants:
        probes[variant] = probe(variant)
        print(f"{variant}: {probes[variant]}", flush=True)
        results[variant], minutes[variant] = run_variant(variant, args)
        failed = [n for n, (o, _) in results[variant].items() if o in ("FAIL", "ERROR")]
        print(f"{variant}: {len(failed)} failed in {minutes[variant]:.1f} min", flush=True)
        write_page(variants, results, minutes, probes, args)


if __name__ == "__main__":
    main()
