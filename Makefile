# One-command entry points. `make run` installs (idempotently) and runs the whole pipeline on the
# embedded digits; `make test` installs, lints and runs the test suite (what CI's .ci/run calls).
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
# TFX 1.16 declares Requires-Python <3.11 but runs on 3.11; see docs/install.md.
PIP_FLAGS := --ignore-requires-python --disable-pip-version-check -q -c constraints.txt

.PHONY: install run lint test test-fast bench clean

# SeaweedFS, the S3 server the tests start (tests/support/seaweedfs.py; docs/testing.md "S3"),
# built from the Go module proxy when missing: minutes cold, seconds from Go's build cache.
WEED := .tools/weed

install: $(STAMP)

# The stamp depends on the lock and the package metadata, so editing either reinstalls.
$(STAMP): constraints.txt setup.py
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info[:2] == (3, 11) else \
	  "Python 3.11 is required (found %d.%d at $(PYTHON)); see docs/install.md" \
	  % sys.version_info[:2])'
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install $(PIP_FLAGS) --upgrade 'pip==24.2'
	$(BIN)/pip install $(PIP_FLAGS) -e '.[dev,kubeflow]'
	@touch $(STAMP)

run: install
	$(BIN)/python runner.py --local $(ARGS)

# ruff.toml: pyflakes, syntax and statement errors, lines over 100 characters.
lint: install
	$(BIN)/ruff check .

# Two pytest-xdist workers, as many as CI's cores; a file (and the e2e files sharing one run) is
# one group on one worker, the long groups first (tests/conftest.py). TEST_WORKERS=0 runs in
# this process, one by one.
TEST_WORKERS ?= 2
test: lint $(WEED)
	$(BIN)/python -m pytest -q -n $(TEST_WORKERS) --dist loadgroup --no-loadscope-reorder \
	  $(PYTEST_ARGS)

# Unit and executor tests only (no end-to-end pipeline runs, no multi-process training).
test-fast: install $(WEED)
	$(BIN)/python -m pytest -q -m 'not e2e and not slow' $(PYTEST_ARGS)

$(WEED): tools/seaweedfs/go.mod tools/seaweedfs/go.sum
	cd tools/seaweedfs && CGO_ENABLED=0 go build -o ../../$(WEED) \
	  github.com/seaweedfs/seaweedfs/weed

clean:
	rm -rf $(VENV) runs .pytest_cache .tools

# Benchmarks print tables of ratios measured side by side; see bench/.
bench: install
	$(BIN)/python -m bench.bench_trainer
