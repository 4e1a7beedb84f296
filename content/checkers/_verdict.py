"""A checker's result: every scenario's findings gathered into one verdict, or the error the
learner's code raised. Pure Python, shared by the judge modules."""

from __future__ import annotations

import re
from collections.abc import Iterable

from content.checkers._trace import Malformed
from content.safe_text import code_span

Finding = tuple[str | None, str]  # (mistake id or None, feedback)


def scenarios(observations, expected: int) -> list:
    """The observed scenarios, once the observations have the observer's shape. With an
    error, fewer than `expected` may have been observed (the code stopped at it)."""
    if not isinstance(observations, dict) or not isinstance(observations.get("scenarios"),
                                                             list):
        raise Malformed("no scenarios were observed")
    observed = observations["scenarios"]
    if observations.get("error") is None and len(observed) != expected:
        raise Malformed("not every scenario was observed")
    if len(observed) > expected:
        raise Malformed("more scenarios were observed than planned")
    return observed


def verdict(per_scenario: Iterable[list[Finding]], mistakes: tuple[str, ...],
            warnings: set[str]) -> dict:
    """One result from each scenario's findings: a mistake is told once (with the first
    scenario's numbers), and an unexplained finding once per story."""
    found: dict[str, str] = {}
    unexplained: list[str] = []
    for findings in per_scenario:
        for mistake, text in findings:
            if mistake is None:  # the same story told with another scenario's numbers
                if _shape(text) not in map(_shape, unexplained):
                    unexplained.append(text)
            else:
                found.setdefault(mistake, text)
    ids = [m for m in mistakes if m in found]
    return {
        "status": "ok",
        "passed": not unexplained and set(ids) <= warnings,
        "mistakes": ids,
        "feedback": [found[m] for m in ids] + unexplained,
        "error": None,
    }


def _shape(text: str) -> str:
    return re.sub(r"\d+(\.\d+)?", "#", text)


def error_result(error, explained: Finding | None = None) -> dict:
    """The result for code that raised. `explained`: what the error means in this exercise
    (a mistake id or None, and plain words), told before torch's own message. The type and
    message are the learner's (any exception, any text): the feedback quotes them as code."""
    if not isinstance(error, dict):
        raise Malformed("error detail")
    kind, message, line = (str(error.get("type"))[:100], str(error.get("message"))[:2000],
                           error.get("line"))
    if not isinstance(line, int) or isinstance(line, bool):
        line = None
    where = f"line {line}: " if line else ""
    quoted = code_span(f"{kind}: {message}", 500)  # enough to read; `error` keeps it all
    text = f"{where}{quoted}"
    if explained is not None:
        text = f"{where}{explained[1]} ({quoted})"
    return {
        "status": "error", "passed": False,
        "mistakes": [explained[0]] if explained is not None and explained[0] else [],
        "feedback": [text],
        "error": {"type": kind, "message": message, "line": line},
    }


# Events that are training: a backward() that reported a loss, one that reached .grad, a step.
TRAINING_EVENTS = frozenset({"B", "A", "S"})


def trained(observations) -> bool:
    """Whether any training happened before the code stopped: a backward() or an optimizer
    step in any observed scenario. A record of another shape counts as trained (a learner
    who forged one gains nothing: only code that did not train may be sent again free)."""
    if not isinstance(observations, dict) or not isinstance(observations.get("scenarios"),
                                                             list):
        return True
    for scenario in observations["scenarios"]:
        events = scenario.get("events") if isinstance(scenario, dict) else None
        if not isinstance(events, list):
            return True
        if any(not isinstance(e, list) or not e or e[0] in TRAINING_EVENTS for e in events):
            return True
    return False
