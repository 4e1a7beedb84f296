"""Remediation: an answer that shows a misconception brings the learner's other cards on the
same mistake id forward, within bounds. Pure; the engine (bot/engine/tutor.py) and the learning
simulation (bot/bench/sim/) both decide with these functions.

- A card the learner has met gets a *remedy* on ``today + REMEDY_DELAY_DAYS``: served after
  the day's due reviews and new cards, before rule-7 drills, graded and logged but moving no
  schedule (like a drill), so SM-2 stays exact and FSRS never sees an early review.
- A card never met that tests an open misconception comes first among the new cards (still
  within the learner's new cards per day).
- Bounds: at most REMEDIES_PER_MISTAKE cards per mistake per answer, at most REMEDIES_PER_DAY
  remedies pending or served per learner and study day; a card reviewed today, due by the
  remedy day anyway, or already holding a remedy is not picked.

A misconception is *open* from an answer that chose it until the learner answers right on
the first try, without the hint, a card that tests it (faced the lure and passed it by).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import date, timedelta

__all__ = ["REMEDIES_PER_DAY", "REMEDIES_PER_MISTAKE", "REMEDY_DELAY_DAYS", "Candidate",
           "corrects", "new_card_order", "pick_remedies", "remedy_day"]

REMEDY_DELAY_DAYS = 1
REMEDIES_PER_MISTAKE = 2
REMEDIES_PER_DAY = 4


@dataclass(frozen=True, slots=True)
class Candidate:
    """What remediation needs of one card the learner has met (its active schedule)."""

    card_id: str
    due_day: date
    last_review_day: date | None
    remedy_pending: bool


def remedy_day(today: date, delay_days: int = REMEDY_DELAY_DAYS) -> date:
    return today + timedelta(days=delay_days)


def pick_remedies(mistakes: Iterable[str], answered: str, tests: Mapping[str, frozenset[str]],
                  met: Mapping[str, Candidate], today: date, budget: int,
                  delay_days: int = REMEDY_DELAY_DAYS) -> list[str]:
    """The met cards to remedy after ``answered`` showed ``mistakes``; ``tests`` maps each
    card (in deck order) to the mistake ids it tests; ``budget`` is what today's bound
    leaves. Per mistake, the cards reviewed longest ago first."""
    day = remedy_day(today, delay_days)
    picked: list[str] = []
    for mistake in sorted(set(mistakes)):
        eligible = [met[card_id] for card_id, tested in tests.items()
                    if mistake in tested and card_id != answered and card_id in met
                    and card_id not in picked]
        eligible = [c for c in eligible if not c.remedy_pending and c.due_day > day
                    and c.last_review_day != today]
        eligible.sort(key=lambda c: (c.last_review_day or date.min, c.card_id))
        for candidate in eligible[:REMEDIES_PER_MISTAKE]:
            if len(picked) >= budget:
                return picked
            picked.append(candidate.card_id)
    return picked


def new_card_order(unseen: list[str], tests: Mapping[str, frozenset[str]],
                   open_mistakes: Iterable[str]) -> list[str]:
    """Unseen cards (deck order) with those testing an open misconception first."""
    held = frozenset(open_mistakes)
    if not held:
        return unseen
    return sorted(unseen, key=lambda card_id: held.isdisjoint(tests.get(card_id, ())))


def corrects(tested: frozenset[str], correct: bool, attempts: int, hint_used: bool,
             shown: Iterable[str]) -> frozenset[str]:
    """The mistake ids an answer corrects: all the card tests, when it was right on the first
    try without the hint (none of them was shown)."""
    if not (correct and attempts == 1 and not hint_used):
        return frozenset()
    return tested - frozenset(shown)
