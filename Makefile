# stormwatch — developer entry points. `make test` is what CI runs.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: test test-reliability lint check-node-install demo bench bench-quick venv system-deps clean

venv: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[test]'
	touch $(STAMP)

# Services the integration tests start themselves (on free ports, in temp dirs).
# Installed only when missing and only when we may (root); otherwise the tests
# that need them say so and skip.
system-deps:
	@bash deploy/install-test-deps.sh

# Two worker processes (pytest-xdist): most of the suite waits on real services
# and child processes, so two of them share a 2-core machine well (measured: some
# 1 500 tests in about 11 min idle, 17.5 beside a busy core; README.md). Work
# stealing, because a few tests take half a minute or more each.
# PYTEST_WORKERS=0 runs everything in one process.
PYTEST_WORKERS ?= 2
PYTEST_PARALLEL := -n $(PYTEST_WORKERS) --dist worksteal

test: venv system-deps
	$(PY) -m pytest -q $(PYTEST_PARALLEL) $(PYTEST_ARGS)

# The reliability suite alone: the real daemon through outages,
# asserted by counts, one summary line per scenario. `make test` runs it too.
test-reliability: venv system-deps
	$(PY) -m pytest -q $(PYTEST_PARALLEL) tests/reliability $(PYTEST_ARGS)

lint: venv
	$(VENV)/bin/ruff check monitor sensors tests bench
	$(VENV)/bin/mypy monitor sensors tests bench

# The sensor node's own install (`pip install ./sensors`, sensors/pyproject.toml)
# in a fresh virtualenv: it imports, validates a configuration, and brings none
# of the daemon's libraries (pandas, matplotlib, influxdb-client, apprise, amqtt).
check-node-install:
	PYTHON=$(PYTHON) bash .ci/node-install

# The demo needs the runtime only: `-e .` without the test extras (mypy, ruff,
# hypothesis, the node's hardware libraries: some 70 packages it never imports).
DEMO_STAMP := $(VENV)/.installed-demo

$(DEMO_STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q -e .
	touch $(DEMO_STAMP)

demo: $(DEMO_STAMP)
	$(VENV)/bin/stormwatch demo

# Every benchmark of bench/ (bench/run.py has the list and the arguments), then
# each one's ratio lines together. bench: the parameters of bench/README.md's
# Performance table (about 40 min); bench-quick: a short version of each (about
# 2 min). The MQTT ones start Mosquitto, hence system-deps.
bench: venv system-deps
	$(PY) bench/run.py

bench-quick: venv system-deps
	$(PY) bench/run.py --quick

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .hypothesis
