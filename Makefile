# Two entry points for a fresh machine with only Python: `make demo` and `make test`.
# Both install autopdp the way users get it (a regular, non-editable install built from a
# wheel), so the tests exercise the installed package, never the source tree.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.autopdp-installed
SOURCES := pyproject.toml $(shell find autopdp -type f -not -path '*/__pycache__/*' -not -name '*.pyc' 2>/dev/null)

.PHONY: demo test fuzz wheel-check bench clean

$(STAMP): $(SOURCES)
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	rm -rf build  # a stale build/lib would put deleted modules into the wheel
	$(PY) -m pip install --quiet ".[test]"
	touch $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/autopdp demo --out demo-output

# pytest's own entry point (not `python -m pytest`) keeps the repository root off sys.path:
# `import autopdp` in the tests is the installed package.
test: $(STAMP)
	AUTOPDP_TEST_INSTALLED=1 $(VENV)/bin/pytest -q

# Opt-in random exploration of the property tests (make test draws the same examples on every run).
fuzz: $(STAMP)
	AUTOPDP_TEST_INSTALLED=1 HYPOTHESIS_PROFILE=explore $(VENV)/bin/pytest -q tests/test_reliability.py

# The wheel in a brand-new virtual environment with its dependencies from the package index:
# the demo and a short audit must run there (CI runs this after `make test`).
wheel-check:
	bash .ci/wheel-check

bench: $(STAMP)
	$(PY) benchmarks/bench_engine.py

clean:
	rm -rf $(VENV) demo-output build dist *.egg-info
