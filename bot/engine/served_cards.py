"""Served cards kept in the store between clicks, for front ends that need it (Discord): a
served card's life from serve to review, so any click (after a restart, from another bot
process, twice at once) finds the same state. The terminal keeps its `Served` in memory and
calls `Tutor` directly instead.

Every method takes what a click carries (serve id, attempt, the learner) and either does
what was asked or raises a TutorError whose text the learner can be shown; nothing is
changed by a refused request. The attempt number is the one guard against double clicks
and outdated renderings: an answer is written with a compare-and-set on it, in the same
transaction as its review (`Tutor.answer(..., stored=True)`). A click whose write lost
to a move that was no attempt (a hint, a free code retry) or to a new version of the
card's deck is judged again on what the store has (`ServedCards._on_store`): "already
counted" is only said when something was.
"""

from __future__ import annotations

import contextlib
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TypeVar

from bot.engine.errors import (
    AlreadyCounted,
    Finished,
    Gone,
    InvalidAnswer,
    NotYours,
    StaleCard,
    TryAgain,
    TutorError,
)
from bot.engine.judging import Response
from bot.engine.outcomes import Verdict
from bot.engine.plays import Plays
from bot.engine.served import Served
from bot.engine.tutor import Tutor
from content.loader import AnyCard
from content.schema import ChoiceCard, CodeCard, FillInCard
from scheduler.storage.models import Learner
from scheduler.storage.store import Advance, Store

RECENT_CARDS = 4096  # served cards kept in memory for their next click (~2 KB each)
# Lost compare-and-sets one click may be judged again after: a hint, free code retries and
# deck versions stored meanwhile; never reached by a learner's clicks alone.
LOST_RACES = 8
T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class CardInPlay:
    """A served card being played: the `Served` value (attempt state), the deck card it
    shows, and the learner's select-menu picks so far."""

    served: Served
    card: AnyCard
    draft: dict  # select-menu picks not yet submitted, by blank id


class _Recent:
    """The served cards this process stored last (serve id -> the card and its owner's
    external id), so that an option click, the hot path, skips loading its card. Taken
    out when used: two clicks at once (worker threads) never share one."""

    def __init__(self, size: int = RECENT_CARDS):
        self.size = size
        self._cards: OrderedDict[str, tuple[Served, str]] = OrderedDict()
        self._lock = threading.Lock()

    def put(self, served: Served, owner: str) -> None:
        with self._lock:
            self._cards[served.serve_id] = (served, owner)
            if len(self._cards) > self.size:
                self._cards.popitem(last=False)

    def take(self, serve_id: str) -> tuple[Served, str] | None:
        with self._lock:
            return self._cards.pop(serve_id, None)


class ServedCards:
    """The store's served cards, read and moved only under each click's checks."""

    def __init__(self, tutor: Tutor, store: Store, plays: Plays):
        self.tutor, self.store, self.plays = tutor, store, plays
        self._recent = _Recent()

    def serve(self, learner: Learner, *, mode: str = "auto", topic: str | None = None,
              guild_id: int | None = None, card_id: str | None = None) -> CardInPlay | None:
        """The next card for this learner from the decks they play here (in a DM: those
        of the server they used last), stored; None when nothing is left."""
        served = self.plays.next_card(learner, guild_id, mode=mode, topic=topic, only=card_id)
        if served is None:
            return None
        self.store.served.save(served.serve_id, learner.id, served.to_json(), served.served_at)
        card = self.tutor.card(served)
        if isinstance(card, ChoiceCard):  # the cards answered by one click (`answer`)
            self._recent.put(served, learner.external_id)
        return CardInPlay(served, card, {})

    def current(self, serve_id: str, learner: Learner | str) -> CardInPlay:
        """The card as it stands now, for this learner (or the learner of this external
        id: no lookup); Gone, NotYours or Finished."""
        self._recent.take(serve_id)  # whatever this click does, the store has it after
        row = self.store.served.load(serve_id)
        if row is None:
            raise Gone
        served = Served.from_json(row.served)
        if row.owner != _external_id(learner):
            raise NotYours
        if row.finished:
            raise Finished
        try:
            card = self.tutor.card(served)
        except StaleCard:  # the deck changed under it: it can never be answered now
            self.store.served.advance(Advance(serve_id, served.moves, served.to_json(),
                                              True))
            raise
        return CardInPlay(served, card, row.draft)

    def at(self, serve_id: str, attempt: int, learner: Learner | str) -> CardInPlay:
        """The card, if the click was made on its current attempt (AlreadyCounted if not:
        a double click, or a click on an outdated rendering)."""
        playing = self.current(serve_id, learner)
        if attempt != playing.served.attempts:
            raise AlreadyCounted("That click was already counted.")
        return playing

    def answer(self, serve_id: str, attempt: int, learner: Learner | str,
               response: Response) -> Verdict:
        """Judge one attempt and store it (with its review, when it finishes the card).

        A card this process stored last is judged as it kept it, without loading it: the
        store's compare-and-set on its moves still decides. Any refusal then (another
        process moved it or forgot it, a double click) is asked of the store again, whose
        answer stands (`_on_store`)."""
        owner = _external_id(learner)
        verdict = None
        if (playing := self._kept(serve_id, attempt, owner)) is not None:
            with contextlib.suppress(TutorError):
                verdict = self.judge(playing, response)
        if verdict is None:
            playing, verdict = self._on_store(serve_id, attempt, owner,
                                              lambda playing: self.judge(playing, response))
        if not verdict.finished and isinstance(playing.card, ChoiceCard):
            self._recent.put(verdict.served, owner)
        return verdict

    def _on_store(self, serve_id: str, attempt: int, owner: str,
                  act: Callable[[CardInPlay], T]) -> tuple[CardInPlay, T]:
        """`act` (a judgment, a hint) on the card as the store has it, at the click's
        attempt. Its compare-and-set loses to any move since the load: one that counted
        (an attempt, an answer) makes the next load refuse the click (AlreadyCounted,
        Finished); a hint or a free code retry is no attempt, and a newer version of the
        card's deck is no move of the learner's at all, so the click is judged again on
        what moved, with the library refreshed (a deck version fails the check too)."""
        for _ in range(LOST_RACES):
            playing = self.at(serve_id, attempt, owner)
            try:
                return playing, act(playing)
            except AlreadyCounted:  # raised by `act` only when its compare-and-set lost
                self.tutor.decks.refresh(force=True)
        raise TryAgain("This card kept changing while your click was judged; nothing was "
                       "counted. Please try again.")

    def _kept(self, serve_id: str, attempt: int, owner: str) -> CardInPlay | None:
        """The card as this process stored it last, if this click can be judged on it."""
        kept = self._recent.take(serve_id)
        if kept is None or kept[1] != owner or kept[0].attempts != attempt:
            return None
        try:
            return CardInPlay(kept[0], self.tutor.card(kept[0]), {})
        except StaleCard:  # the store's path says so, and retires the card
            return None

    def judge(self, playing: CardInPlay, response: Response) -> Verdict:
        """Judge an attempt on a card already loaded for this click; the store's
        compare-and-set on its attempt still refuses it if another click got there first."""
        return self.tutor.answer(playing.served, response, stored=True)

    def judge_code(self, playing: CardInPlay, code: str, learner: Learner | str) -> Verdict:
        """A code answer, run in the sandbox once (seconds). A write that loses meanwhile
        to a move that is no attempt (the learner's hint, a free retry from another
        process, a new version of the card's deck) records the same report on the card as
        the store has it, as a click's does (`_on_store`): never "already counted" for a
        code answer nothing counted, and never a second run."""
        report = self.tutor.code_report(playing.card, code, playing.served.learner_id)

        def record(on: CardInPlay) -> Verdict:
            return self.tutor.answer(on.served, code, stored=True, report=report)

        try:
            return record(playing)
        except AlreadyCounted:
            self.tutor.decks.refresh(force=True)
        return self._on_store(playing.served.serve_id, playing.served.attempts,
                              _external_id(learner), record)[1]

    def submit(self, serve_id: str, attempt: int, learner: Learner | str) -> Verdict:
        """Answer a fill-in card with the chips picked so far."""
        return self._on_store(serve_id, attempt, _external_id(learner), self._submit)[1]

    def _submit(self, playing: CardInPlay) -> Verdict:
        card = _fill_in(playing.card)
        # Only picks the card still has: a version may have dropped a blank or a chip since.
        chips = {chip.id for chip in card.chips}
        picks = {b.id: playing.draft[b.id] for b in card.blanks
                 if playing.draft.get(b.id) in chips}
        missing = [i for i, b in enumerate(card.blanks, 1) if b.id not in picks]
        if missing:
            raise InvalidAnswer("Pick an option for blank "
                                + ", ".join(f"[{i}]" for i in missing) + " first.")
        return self.judge(playing, picks)

    def pick(self, serve_id: str, learner: Learner | str, blank_id: str, chip_id: str) -> None:
        """Remember one select-menu pick; only a blank and a chip the card has."""
        card = _fill_in(self.current(serve_id, learner).card)
        if blank_id not in {b.id for b in card.blanks} or chip_id not in {
                c.id for c in card.chips}:
            raise InvalidAnswer("That is not one of this card's blanks or options.")
        if self.store.served.set_draft(serve_id, blank_id, chip_id) is None:
            raise Finished("This card was already answered.")

    def hint(self, serve_id: str, attempt: int, learner: Learner | str) -> CardInPlay:
        """The card with its hint shown (which caps the grade)."""
        return self._on_store(serve_id, attempt, _external_id(learner), lambda playing: replace(
            playing, served=self.tutor.hint(playing.served, stored=True)[0]))[1]

    def code_card(self, serve_id: str, attempt: int, learner: Learner | str) -> CardInPlay:
        """A code card about to be written; InvalidAnswer for any other card."""
        playing = self.at(serve_id, attempt, learner)
        if not isinstance(playing.card, CodeCard):
            raise InvalidAnswer("This card is not answered with code.")
        return playing

    def reference(self, serve_id: str, learner: Learner | str) -> CodeCard | ChoiceCard:
        """A code card or a multiple-choice card this learner finished, to show its
        solution: the reference, or the steps (Gone, NotYours; an unfinished card's stays
        hidden: InvalidAnswer)."""
        row = self.store.served.load(serve_id)
        if row is None:
            raise Gone
        if row.owner != _external_id(learner):
            raise NotYours
        card = self.tutor.card(Served.from_json(row.served))
        if not isinstance(card, CodeCard | ChoiceCard):
            raise InvalidAnswer("This card has no solution to show.")
        if not row.finished:
            raise InvalidAnswer("The solution is shown once the card is answered.")
        return card

    def open_code_card(self, learner: Learner) -> CardInPlay | None:
        """The learner's newest unfinished code card, for a code reply sent as a message."""
        for row in self.store.served.unfinished(learner.id):
            served = Served.from_json(row.served)
            if self.tutor.library.has_card(served.card_id) and isinstance(
                    self.tutor.library.card(served.card_id), CodeCard):
                return CardInPlay(served, self.tutor.card(served), row.draft)
        return None


def _external_id(learner: Learner | str) -> str:
    return learner if isinstance(learner, str) else learner.external_id


def _fill_in(card: AnyCard) -> FillInCard:
    if not isinstance(card, FillInCard):
        raise InvalidAnswer("This card has no blanks to fill.")
    return card
