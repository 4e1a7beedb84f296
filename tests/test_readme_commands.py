"""README's command table lists every command `tutor --help` has, and nothing it lacks."""

from __future__ import annotations

import argparse
import re

from bot.cli.main import build_parser
from tests.helpers.paths import REPO


def _commands(parser: argparse.ArgumentParser, prefix: str = "tutor") -> set[str]:
    """Every leaf command's words (`tutor deck import`); a positional with choices (`tutor
    bench NAME`) counts as one command per choice."""
    found = set()
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                found |= _commands(sub, f"{prefix} {name}")
            return found
    choices = [a.choices for a in parser._actions if not a.option_strings and a.choices]
    if choices:
        return {f"{prefix} {choice}" for choice in choices[0]}
    return {prefix}


def _table_commands() -> set[str]:
    """The words before the first option or placeholder in each row of the command table
    (a row of the metrics table, `tutor_sandbox_...`, names no command)."""
    rows = re.findall(r"^\| `(tutor(?: [^`]*)?)`", (REPO / "README.md").read_text(), re.M)
    return {" ".join(w for w in re.split(r"\s+", row)
                     if re.fullmatch(r"[a-z][a-z-]*", w)) for row in rows}


def test_every_command_has_a_row_and_every_row_a_command():
    commands, rows = _commands(build_parser()), _table_commands()
    assert commands - rows == set(), "commands missing from README's table"
    assert rows - commands - {"tutor"} == set(), "README rows naming no command"
