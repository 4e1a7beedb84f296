"""A learner's own settings and data: checked where they enter, with what they change for
reminders decided here, not in a front end."""

from __future__ import annotations

from collections.abc import Collection
from datetime import datetime, timedelta

from bot.engine.errors import TutorError
from bot.engine.misconceptions import LearnerMistake, deck_tests, learner_mistakes
from bot.engine.tutor import Tutor
from content.schema import CodeCard
from scheduler.choice import SchedulerName
from scheduler.reminders import reschedule
from scheduler.storage.models import Learner
from scheduler.storage.store import Store
from scheduler.studyday import resolve_zone

# Setting: (lowest, highest). discord.py does not enforce a command's ranges when an
# interaction arrives, so a forged one can send anything: every value is checked here.
RANGES = {"reminder_hour": (0, 23), "quiet_start": (0, 23), "quiet_end": (0, 23),
          "new_per_day": (1, 50), "reminder_min_due": (1, 100), "daily_minimum": (1, 100)}
FLAGS = ("reminders_enabled", "leaderboard_visible")
SNOOZE = timedelta(hours=1)


class BadSetting(TutorError):
    pass


def checked(changes: dict) -> dict:
    """The changes with the timezone resolved; BadSetting naming the first bad one."""
    out = {}
    for name, value in changes.items():
        if name == "timezone":
            try:
                out[name] = resolve_zone(value).key
            except ValueError:
                raise BadSetting(f"'{value}' is not a timezone I know. Pick one from the "
                                 "list, e.g. Europe/Berlin.") from None
        elif name == "scheduler":  # None: follow the server's choice
            scheduler = SchedulerName.parse(value)
            if value is not None and scheduler is None:
                raise BadSetting("The scheduler is one of: " + ", ".join(SchedulerName)
                                 + " (or the server's choice).")
            out[name] = scheduler
        elif name in FLAGS:
            if not isinstance(value, bool):
                raise BadSetting(f"{name} must be true or false.")
            out[name] = value
        elif name in RANGES:
            low, high = RANGES[name]
            if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
                raise BadSetting(f"{name} must be a whole number from {low} to {high}.")
            out[name] = value
        else:
            raise BadSetting(f"There is no setting called {name}.")
    return out


class Learners:
    def __init__(self, tutor: Tutor, store: Store):
        self.tutor, self.store = tutor, store

    def update_settings(self, learner: Learner, changes: dict) -> Learner:
        """Apply checked changes and reschedule the next reminder, in one write; a bad
        value changes nothing."""
        changes = checked(changes)
        if not changes:
            return learner
        if changes.get("reminders_enabled"):  # a fresh start: DMs are worth trying again
            changes.update(reminders_ignored=0, unreachable=False)
        after = learner.model_copy(update=changes)
        changes["next_reminder_at"] = reschedule(after, self.tutor.clock())
        self.store.learners.update(learner.id, **changes)
        return self.store.learners.get(learner.id)

    def totals(self, learner: Learner, guild_id: int | None = None) -> tuple[int, int]:
        """(reviews, right on the first try), everywhere or in one server; cards seen of
        the decks played here are `Progress.seen`."""
        return self.store.reviews.totals(learner.id, guild_id)

    def snooze_reminders(self, learner: Learner) -> datetime:
        until = self.tutor.clock() + SNOOZE
        self.store.learners.update(learner.id, next_reminder_at=until)
        return until

    def pause_reminders(self, learner: Learner) -> None:
        self.store.learners.update(learner.id, reminders_enabled=False, next_reminder_at=None)

    def forget(self, learner: Learner) -> None:
        """Delete the learner and everything of theirs."""
        self.store.learners.delete(learner.id)

    def card_for_mistake(self, deck_id: str, mistake_id: str,
                         missed: Collection[str] = ()) -> str | None:
        """A card to practise ``mistake_id`` of deck ``deck_id`` on: one of ``missed`` (the
        learner's most-missed cards, in order) that tests it, else the deck's first that
        does, an option or chip card before a code card (no sandbox needed); None when no
        card tests it any more."""
        if deck_id not in self.tutor.library.decks:
            return None
        testing = [card for card, tested in deck_tests(self.tutor.library, deck_id).items()
                   if mistake_id in tested]
        if not testing:
            return None
        mine = next((card for card in missed if card in testing), None)
        code = {card.id for card in self.tutor.library.cards(deck_id)
                if isinstance(card, CodeCard)}
        return mine or min(testing, key=lambda card: card in code)

    def mistakes(self, learner: Learner,
                 decks: Collection[str] | None = None) -> list[LearnerMistake]:
        """The learner's misconceptions, open ones first (bot.engine.misconceptions); only
        those of `decks` when given (the decks played here: `Plays.decks`)."""
        held = learner_mistakes(self.store, self.tutor.library, learner.id)
        return held if decks is None else [m for m in held if m.deck_id in set(decks)]

