# Set-up and everyday commands. `make demo` and `make test` build .venv themselves on a fresh machine.
SHELL := /bin/bash
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

# First interpreter >= 3.12 found: python3.13, python3.12, then pyenv-managed versions.
find_python = for cand in "python3.13" "python3.12" "PYENV_VERSION=3.13.0 python3.13" \
	"PYENV_VERSION=3.12.1 python3.12" "python3"; do \
	  if env $$cand -c 'import sys; sys.exit(sys.version_info < (3, 12))' >/dev/null 2>&1; then \
	    echo "$$cand"; break; fi; done

BENCH_STAMP := $(VENV)/.bench-installed
DOCS_STAMP := $(VENV)/.docs-installed

.PHONY: venv demo test test-examples test-translations test-fast lint docs bench bench-suite bench-quick bench-within clean

# The samplers and, editable beside them, the benchmark harness (bench/, its own distribution
# pymc-kernel-steps-bench): the tests, the demo, the examples and the studies use it. The
# installed files are byte-compiled on every core afterwards (pip compiles one file at a time:
# 48 s against 36 s in all); a file that does not compile only imports more slowly, as pip
# would leave it.
$(STAMP): pyproject.toml bench/pyproject.toml
	@PYTHON="$$($(find_python))"; \
	if [ -z "$$PYTHON" ]; then echo "error: no Python >= 3.12 found (tried python3.13, python3.12)" >&2; exit 1; fi; \
	echo "Using $$PYTHON"; \
	env $$PYTHON -m venv $(VENV)
	$(PY) -m pip install --quiet --no-compile -e ".[test,examples,distributed]" -e ./bench
	-@$(PY) -m compileall -qq -j 0 "$$($(PY) -c 'import sysconfig; print(sysconfig.get_path("purelib"))')"
	@touch $(STAMP)

venv: $(STAMP)

demo: $(STAMP)
	$(PY) -m pymc_kernel_steps_bench.demo

test: $(STAMP)
	$(PY) -m pytest -n 2 --dist worksteal -m "not timing and not notebook and not translation" --durations=15
	$(PY) -m pytest -m timing

# The example notebooks at their reduced size, each ending with asserts of its claims (CI runs
# this after `make test`): about 2 minutes on 2 idle cores.
test-examples: $(STAMP)
	$(PY) -m pytest -n 2 --dist worksteal -m notebook --durations=8

# The harness's data: each posteriordb translation sampled with NUTS and checked against the
# reference draws (CI runs this after `make test`): about a minute on 2 idle cores.
test-translations: $(STAMP)
	$(PY) -m pytest -n 2 --dist worksteal -m translation --durations=5

test-fast: $(STAMP)
	$(PY) -m pytest -n 2 --dist worksteal -m "not slow and not timing and not notebook and not translation"

lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

$(DOCS_STAMP): $(STAMP) pyproject.toml
	$(PY) -m pip install --quiet -e ".[docs]"
	@touch $(DOCS_STAMP)

# The documentation site (Sphinx, PyData theme, MyST; notebooks from examples/ shown with their saved
# outputs) into docs/_build/html, offline, warnings as errors.
docs: $(DOCS_STAMP)
	$(PY) -m sphinx -E -W --keep-going -b html docs docs/_build/html
	@echo "Open docs/_build/html/index.html"

$(BENCH_STAMP): $(STAMP) bench/pyproject.toml
	$(PY) -m pip install --quiet -e . -e "./bench[peers]"
	@touch $(BENCH_STAMP)

# Accuracy per target evaluation against SMC, emcee, DEMetropolisZ and NUTS on every target with a
# reference: budget 12,000, 10 replicates; writes docs/benchmarks/ (index.md records the minutes per
# target). Run time on the shared 2-core development machine: on the cheap targets (banana, Pima,
# bimodal, ABC) KMCLite and KMCFinite dominate, at 15-150 s per 12,000-evaluation run depending on
# the load, every other sampler under 10 s: 3-50 minutes per target. Expensive models take longer:
# the ODE (5-10 ms per evaluation) 100 minutes, the glass GP (6-40 ms) several hours; run those
# with OMP_NUM_THREADS=1. BENCH_ARGS="--cores 2" runs two targets at a time.
bench: $(BENCH_STAMP)
	$(PY) benchmarks/compare/compare.py --verbose --csv $(BENCH_ARGS)

# The yardstick: the posteriordb suite (15 posteriors as black boxes, our samplers against SMC,
# emcee, DEMetropolisZ, NUTS on finite differences, nautilus, pocoMC, dynesty and zeus (the
# harness's `peers` extra); budget 10,000, 10 runs each), then its page
# docs/benchmarks/posteriordb.md from every frame in benchmarks/posteriordb/runs/. About 10-15
# minutes per posterior on the 2-core development machine, the Lotka-Volterra ODE (5-7 ms per
# evaluation) about an hour: 4-5 hours in all. SUITE_ARGS="--run arK-arK" runs one posterior.
# Then the step methods again with four chains sharing each run's budget (PyMC's default on a
# machine with four cores), whose page docs/benchmarks/posteriordb-four-chains.md takes the
# populations' rows from the one-chain runs (they run no chains): about 2-3 more hours.
# Every frame records the commit and the machine; benchmarks/check_frames.py re-runs one
# replicate per sampler and posterior against its frame.
SUITE_ARGS ?= --run all
FOUR_CHAIN_SAMPLERS := KMCLite KMCFinite KAMH AdaptiveMetropolis CKAM DEMetropolisZ NUTS-FD
bench-suite: $(BENCH_STAMP)
	$(PY) benchmarks/posteriordb/suite.py $(SUITE_ARGS) --report
	$(PY) benchmarks/posteriordb/suite.py $(SUITE_ARGS) --chains 4 \
		--samplers $(FOUR_CHAIN_SAMPLERS) --runs-dir benchmarks/posteriordb/runs-4-chains \
		--populations-from benchmarks/posteriordb/runs --report \
		--page docs/benchmarks/posteriordb-four-chains.md

# A small subset of the suite (three posteriors, budget 2,000, 3 runs, every sampler and peer),
# written to bench-output/quick/ (not committed). pocoMC, which cannot stop at a budget, takes
# most of it: 90,000-160,000 evaluations and 3-6 minutes a run on sblrc-blr, 60,000 and about
# 4 minutes on arK-arK (2 shared cores): about 35 minutes in all (estimated from those runs).
bench-quick: $(BENCH_STAMP)
	$(PY) benchmarks/posteriordb/suite.py --run sblrc-blr arK-arK gp_pois_regr-gp_regr \
		--budget 2000 --replicates 3 --runs-dir bench-output/quick \
		--report --page bench-output/quick/posteriordb.md

# Within-run ESS per evaluation and per second (the older benchmark, benchmarks/within_run/run.py).
bench-within: $(STAMP)
	$(PY) benchmarks/within_run/run.py

# Re-execute every example notebook (examples/*.py, jupytext percent format) at full size and save
# its outputs to the paired .ipynb, one at a time (1-4 minutes each on one core).
.PHONY: examples
examples: $(STAMP)
	$(PY) examples/_execute.py

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache *.egg-info docs/_build docs/examples
