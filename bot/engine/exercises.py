"""A deck's behaviour exercises, tried in the sandbox before the deck is stored (issue 27).

A `behaviour` code card carries author code: its cases, its reference and a wrong version
per mistake. The schema and lint see only its shape; whether the reference runs and is
deterministic for a seed, and whether each version can be told from the reference and
from every other version, only running them says. The engine's code judge does that
(`SandboxJudge.vet`: three jailed runs and the judge's `vet`; its problems, and whether a
limit stopped them), one card after another,
and every problem comes back as "line N: card id: why", the way an upload's others do.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator

from bot.engine.errors import NotJudged, TryAgain
from content import checkers
from content.loader import line_finder
from content.schema import CodeCard, Deck

MAX_EXERCISES = 24  # behaviour cards a deck may have: each is tried (three runs) on upload
STOPPED_LIMIT = 3  # exercises stopped by a limit before the rest are left untried


class ExercisesUntried(Exception):
    """The exercises could not be tried now (no sandbox, or a busy one): nothing is stored.
    `reason`: why, in words for any caller (`tutor deck validate` says "not run: ...")."""

    def __init__(self, message: str, reason: str):
        super().__init__(message)
        self.reason = reason


def exercises_of(deck: Deck) -> list[tuple[int, CodeCard]]:
    """The deck's behaviour cards with their index."""
    return [(i, card) for i, card in enumerate(deck.cards)
            if isinstance(card, CodeCard) and card.checker == checkers.BEHAVIOUR]


def exercise_problems(judge, deck: Deck, text: str, server: int) -> list[str]:
    """Every problem of the deck's exercises, as "line N: message" ([] for none), tried
    for `server`'s upload. `judge`: the engine's code judge (None without a sandbox).
    ExercisesUntried when they cannot be tried now."""
    return [f"line {n}: {message}" for n, message in exercise_findings(judge, deck, text,
                                                                       server)]


def exercise_findings(judge, deck: Deck, text: str, server: int) -> list[tuple[int, str]]:
    """`exercise_problems` as (line, message) pairs, for a caller that names the file."""
    cards = exercises_of(deck)
    if not cards:
        return []
    line = line_finder(text)
    if len(cards) > MAX_EXERCISES:
        return [(line(("cards", cards[MAX_EXERCISES][0])), f"the deck has {len(cards)} "
                 f"behaviour cards; at most {MAX_EXERCISES} are accepted (each is tried in "
                 "the sandbox before the deck is stored)")]
    vet = getattr(judge, "vet", None)
    if vet is None:
        raise ExercisesUntried("This bot runs no code, so the deck's behaviour cards cannot "
                               "be tried (nor played); nothing was stored.",
                               "no code sandbox runs here")
    return list(_tried(functools.partial(vet, server=server), cards, line))


def _tried(vet, cards: list[tuple[int, CodeCard]], line) -> Iterator[tuple[int, str]]:
    stopped = 0
    for n, (index, card) in enumerate(cards):
        where = line(("cards", index, "behaviour"))
        if stopped >= STOPPED_LIMIT:
            left = ", ".join(c.id for _, c in cards[n:])
            yield (where, f"{card.id}: not tried, nor {len(cards) - n - 1} more after it "
                          f"({left}): {STOPPED_LIMIT} exercises were already stopped by a limit")
            return
        try:
            problems, limited = vet(card)
        except NotJudged as exc:  # no code runner, a crash of ours, no answer in time
            raise ExercisesUntried(f"The deck's behaviour cards could not be tried "
                                   f"({exc.reason}); nothing was stored. Try again in a "
                                   "minute.", exc.reason) from None
        except TryAgain as exc:
            raise ExercisesUntried(f"{exc} The deck's behaviour cards could not be tried; "
                                   "nothing was stored.", str(exc)) from None
        stopped += limited
        yield from ((where, f"{card.id}: {problem}") for problem in problems)
