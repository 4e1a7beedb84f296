"""A learner's hostile exception in the terminal and in `tutor check`: the same safe line
as the Discord embed shows (tests/discord/test_hostile_text.py), nothing a terminal acts on."""

from __future__ import annotations

import io
import json

import pytest

import bot.cli.main as cli
import bot.cli.sandbox as sandbox_cli
from bot.engine.tutor import Tutor
from bot.terminal import Console
from tests.helpers.engines import engine_of
from tests.helpers.hostile import SAFE_LINE, invisible, judge, sandbox_result


def words(text: str) -> str:
    return " ".join(text.split())


@pytest.fixture
def check(tmp_path, monkeypatch, capsys):
    """`tutor check` on the train-loop card, the sandbox answering as for HOSTILE."""
    monkeypatch.setattr(sandbox_cli, "_sandboxed", lambda code, **options: sandbox_result())
    loop = tmp_path / "loop.py"
    loop.write_text("raise ValueError(...)\n")

    def run(*flags: str) -> str:
        args = cli.build_parser().parse_args(
            ["check", "gradient-accumulation/train-loop", str(loop), *flags])
        assert args.func(args) == 1
        return capsys.readouterr().out
    return run


def test_tutor_check_json_carries_the_safe_line_and_a_clean_stdout(check):
    report = json.loads(check("--json"))
    assert report["feedback"] == [SAFE_LINE]
    assert report["stdout"] == "[2Jprinted"  # no escape character, no bidi override


def test_tutor_check_prints_the_same_line(check):
    out = check()
    assert f"- {SAFE_LINE}\n" in out and not invisible(out)


def test_the_terminal_shows_the_same_line(store, mini_library, clock):
    tutor = Tutor(store, mini_library, clock=clock, code_judge=judge)
    learner = tutor.learner("local:sam", display_name="sam")
    lines = iter(["raise ValueError(...)", "EOF", "q"])
    out = io.StringIO()
    Console(engine_of(tutor), learner, "mini", topic="loop", out=out,
            read=lambda _: next(lines)).run()
    text = out.getvalue()
    assert words(f"- {SAFE_LINE}") in words(text)  # wrapped to the terminal's width
    assert not invisible(text)
