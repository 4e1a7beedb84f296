"""Leaderboards and insights: what a server, or one learner, did and got wrong."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from bot.engine.errors import TutorError
from bot.engine.misconceptions import mistake_title
from bot.engine.plays import Plays
from bot.engine.tutor import Tutor
from bot.engine.wording import card_label
from scheduler import leaderboard as lb
from scheduler.storage.boards import board_page
from scheduler.storage.models import GuildSettings, Learner
from scheduler.storage.store import Store

PERIODS = ("week", "season")
Ranking = Sequence  # of a board's rows, best first (scheduler.storage.boards)
MAX_PAGE = 10_000


class BadChoice(TutorError):
    pass


@dataclass(frozen=True, slots=True)
class Missed:
    """What went wrong most, in words: each mistake titled by its own deck."""

    missed_cards: list[tuple[str, int, int]]  # card id, missed on first try, reviews
    mistakes: list[tuple[str, int]]  # title, times


@dataclass(frozen=True, slots=True)
class Activity:
    daily: dict
    retention: list
    insights: Missed


class Boards:
    def __init__(self, tutor: Tutor, store: Store, plays: Plays):
        self.tutor, self.store, self.plays = tutor, store, plays

    def board(self, guild_id: int, period: str, page: int, caller: Learner | None,
              per_page: int) -> tuple[GuildSettings, lb.Board]:
        """One page of the server's board for `period`, and `caller`'s own standing (None:
        a visitor who never played, or nobody)."""
        settings = self.store.servers.settings(guild_id)
        since = self.period_start(settings, period)
        return settings, self.page(self.ranking(guild_id, since), page, caller, per_page)

    def period_start(self, settings: GuildSettings, period: str) -> datetime | None:
        """Where the server's board for `period` starts now (None: all time)."""
        if period not in PERIODS:
            raise BadChoice(f"The board covers one of: {', '.join(PERIODS)}.")
        return lb.period_start(settings, period, self.tutor.clock())

    def ranking(self, guild_id: int, since: datetime | None) -> Ranking:
        """Everyone on the server's board since `since`, best first (`page` pages it)."""
        return self.store.boards.ranking(guild_id, since)

    @staticmethod
    def page(ranking: Ranking, page: int, caller: Learner | None,
             per_page: int) -> lb.Board:
        """One page of a ranking, and `caller`'s own standing in it."""
        if isinstance(page, bool) or not isinstance(page, int) or not 1 <= page <= MAX_PAGE:
            raise BadChoice(f"Pages go from 1 to {MAX_PAGE}.")
        return board_page(ranking, page, per_page, caller and caller.id)

    def server_insights(self, guild_id: int, days: int) -> Missed:
        """What the server's learners got wrong in the decks it plays now, over the last
        `days` UTC days (today the last)."""
        now = self.tutor.clock()
        first_day = (now.astimezone(UTC) - timedelta(days=days - 1)).date()
        return self._titled(self.store.insights.server(
            guild_id, first_day, now, decks=self.plays.server_decks(guild_id)))

    def card_labels(self, card_ids: list[str]) -> dict[str, str]:
        """Each card as learners know it: its prompt's first line (`card_label`); a card
        since removed from its deck: the last part of its id."""
        library = self.tutor.library
        return {card_id: card_label(library.card(card_id).prompt)
                if library.has_card(card_id) else card_id.rsplit("/", 1)[-1]
                for card_id in card_ids}

    def _titled(self, found: lb.Insights) -> Missed:
        """Each (deck id, mistake id) by its deck's title; the id once that deck no
        longer registers it (a review's history stays)."""
        library = self.tutor.library
        return Missed(found.missed_cards, [
            (mistake_title(library, deck_id, mistake_id) or mistake_id, times)
            for (deck_id, mistake_id), times in found.mistakes])

    def activity(self, learner: Learner, days: int, top: int, guild_id: int | None = None,
                 *, only_here: bool = False) -> Activity:
        """A learner's reviews per day and retention per week over `days` (everywhere, or
        `only_here`: in this server), and what they missed most in the decks they play
        here (cards they can be offered again; `top` 0: not read)."""
        since = self.tutor.clock() - timedelta(days=days)
        missed = Missed([], []) if top == 0 else self._titled(self.store.insights.learner(
            learner.id, since, top=top, decks=self.plays.decks(learner.id, guild_id)))
        counted_in = guild_id if only_here else None
        reviews = self.store.reviews
        return Activity(reviews.per_day(learner.id, since, counted_in),
                        reviews.retention_by_week(learner.id, since, counted_in), missed)


# The board's values as the front ends read them (scheduler/leaderboard.py makes them).
Board, Standing = lb.Board, lb.Standing
