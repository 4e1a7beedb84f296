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

test: $(STAMP)
	$(VENV)/bin/pytest

bench: $(STAMP)
	$(VENV)/bin/tutor bench answers --json

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis
