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

# Storage, engine, reminder and leaderboard tests, and playing cards through discord.py
# (engine calls on worker threads there), run again on a throwaway PostgreSQL.
POSTGRES_TESTS := tests/test_store.py tests/test_tutor.py tests/test_reminders.py \
	tests/discord/test_play.py tests/discord/test_forged_input.py tests/test_community_decks.py \
	tests/test_streaks.py tests/test_leaderboard.py tests/test_schedulers.py \
	tests/test_remediation.py tests/discord/test_learning_choices.py tests/test_deck_choices.py \
	tests/discord/test_deck_admin.py tests/test_play.py tests/test_served_races.py

test: $(STAMP)
	$(VENV)/bin/lint-imports  # the layers (pyproject.toml, docs/architecture.md)
	$(VENV)/bin/pytest
	tests/postgres.sh $(VENV)/bin/pytest -q $(POSTGRES_TESTS)

bench: $(STAMP)
	$(VENV)/bin/tutor bench answers --json

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis
