"""Sandbox results as the engine's code reports: every way a run can end."""

from __future__ import annotations

import pytest

from bot.engine.code_judge import report_from
from bot.sandbox.protocol import ERROR, MEMORY, OUTPUT_LIMIT, REFUSED, TIMEOUT, RunResult

CHECKED = RunResult.from_wire({"status": ERROR, "stdout": "hi\n", "report": {
    "status": "ok", "passed": False, "mistakes": ["no_loss_scaling"],
    "feedback": ["gradients were 4x too large"]}})


def test_a_finished_check_keeps_the_checkers_verdict():
    report = report_from(CHECKED)
    assert (report.status, report.passed, report.mistakes, report.stdout) == (
        "ok", False, ("no_loss_scaling",), "hi\n")
    assert report.feedback == ("gradients were 4x too large",)


@pytest.mark.parametrize("status, words", [
    (TIMEOUT, "ran too long"), (MEMORY, "more memory"), (OUTPUT_LIMIT, "printed too much")])
def test_a_stopped_run_says_why(status, words):
    report = report_from(RunResult(status))
    assert report.status == status and not report.passed and words in report.feedback[0]


def test_refused_and_crashed_runs_carry_their_reason_and_line():
    refused = report_from(RunResult(REFUSED, error="line 2: not valid Python"))
    assert refused.feedback == ("Your code was not run: `line 2: not valid Python`",)
    crashed = report_from(RunResult(ERROR, error="the program ended abruptly (exit -11)"))
    assert crashed.feedback == ("`the program ended abruptly (exit -11)`",)
    assert report_from(RunResult(ERROR, error="boom", line=3)).feedback == (
        "line 3: `boom`",)
