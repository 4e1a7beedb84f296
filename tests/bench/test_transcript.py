"""The session transcript (docs/transcript.md, issue 41): its script drives the real bot
through every step on the offline Discord, and the bot answers each one."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from bot.bench.transcript import COMMAND, STEPS
from bot.discord_ui.replies import APOLOGY
from tests.helpers.paths import REPO

RUN_S = 300  # a bound for a hung bot only: the session takes seconds


def steps_in(markdown: str) -> list[str]:
    """What each step says was done: the text after "**who** › "."""
    return re.findall(r"^\*\*[^*]+\*\* › (.*)$", markdown, re.M)


def check(markdown: str) -> None:
    done = steps_in(markdown)
    for step in STEPS:
        assert any(step in said for said in done), f"no step {step!r} in {done}"
    order = [next(i for i, said in enumerate(done) if step in said) for step in STEPS]
    assert order == sorted(order), done
    assert "Traceback" not in markdown and APOLOGY not in markdown
    assert COMMAND in markdown.split("\n\n", 2)[1]  # the top says how to regenerate it
    assert markdown.count("```") % 2 == 0  # every code block the bot sent stays closed


@pytest.mark.timeout(RUN_S + 30)
def test_the_script_runs_the_whole_session_and_the_bot_answers_every_step(tmp_path):
    out = tmp_path / "transcript.md"
    ran = subprocess.run([sys.executable, "-m", "bot.bench.transcript", "-o", str(out)],
                         cwd=REPO, capture_output=True, text=True, timeout=RUN_S)
    assert ran.returncode == 0, ran.stderr
    assert "Traceback" not in ran.stderr, ran.stderr
    markdown = out.read_text()
    check(markdown)
    # Each step has the bot's answer quoted under it.
    for block in re.split(r"^\*\*[^*]+\*\* › .*$", markdown, flags=re.M)[1:]:
        assert re.search(r"^> \S", block, re.M), block
    assert "Correct" in markdown and "Not quite" in markdown
    assert "Snoozed" in markdown and "Uploaded **Tensor basics**" in markdown


def test_the_committed_transcript_has_every_step():
    check((REPO / "docs" / "transcript.md").read_text())
