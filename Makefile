# `make run` and `make test` do all the set-up on a fresh machine (a venv in .venv).
PYTHON ?= python3
VENV := .venv
STAMP := $(VENV)/.installed-stamp

.PHONY: run test bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 11) and "Python 3.11+ is needed")'
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/python -m pip install --quiet --disable-pip-version-check -e '.[test]'
	touch $(STAMP)

run: $(STAMP)
	$(VENV)/bin/tutor

# The layers (lint-imports: pyproject.toml, docs/architecture.md), the whole suite, then the
# PostgreSQL run: the test modules marked `postgres` (pytestmark; storage, engine, reminder
# and leaderboard tests, and playing cards through discord.py, whose engine calls run on
# worker threads there) run again on a throwaway PostgreSQL. Each stage runs whatever the one
# before it said (a failed main run must not skip the PostgreSQL run); the target fails,
# naming the stages that failed. Test files run side by side, one per CPU up to 4
# (pytest-xdist; a file's tests stay together in one process, as its fixtures expect):
# on the 2-core box the suite took 19-22 minutes one file at a time, 8 two at a time.
PARALLEL := -n auto --maxprocesses 4 --dist loadfile
test: $(STAMP)
	@failed=""; \
	$(VENV)/bin/lint-imports || failed="$$failed lint-imports"; \
	$(VENV)/bin/pytest $(PARALLEL) || failed="$$failed pytest"; \
	tests/postgres.sh $(VENV)/bin/pytest -q $(PARALLEL) -m postgres || failed="$$failed postgresql"; \
	if [ -n "$$failed" ]; then echo "make test failed:$$failed" >&2; exit 1; fi

bench: $(STAMP)
	$(VENV)/bin/tutor bench answers --json

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis
