"""Rows and answers tests write."""

from __future__ import annotations

from datetime import UTC, date, datetime

from scheduler.storage.store import ReviewRecord

NOW = datetime(2026, 12, 2, 12, tzinfo=UTC)
DAY = date(2026, 12, 2)
# The right answer to each card of tests/fixtures/mini.yaml.
RIGHT = {
    "mini/clear": {"method": "zero_grad"},
    "mini/scale": {"divisor": "accumulation_steps", "call": "backward"},
    "mini/why": "average",
}


def record(learner_id: int, answer_id: str, card_id: str = "d/c", **overrides) -> ReviewRecord:
    values = dict(
        answer_id=answer_id, learner_id=learner_id, card_id=card_id, deck_id="d", card_rev=1,
        kind="new", reviewed_at=NOW, study_day=DAY, quality=5, correct=True, attempts=1,
        hint_used=False, latency_ms=900, chosen=["opt"], mistake_ids=[], guild_id=None,
        ef100=260, repetitions=1, interval=1, due_day=date(2026, 12, 3), lapses=0,
        drill_pending=False, expected_count=None, changes_schedule=True,
    )
    values = {**values, **overrides}
    values.setdefault("told_interval", values["interval"])
    values.setdefault("told_due_day", values["due_day"])
    return ReviewRecord(**values)
