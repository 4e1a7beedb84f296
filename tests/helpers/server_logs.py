"""A server's review history written straight into the log: learners whose memory is
FSRS-6 with parameters of the test's choosing (`fsrs_world`), or the simulated learners of
bot/bench/sim/ (`simulated_server`), graded as the product grades."""

from __future__ import annotations

from datetime import UTC, date, datetime, time, timedelta
from functools import lru_cache
from random import Random

from fsrs.scheduler import DEFAULT_PARAMETERS

from bot.bench.fsrs_evaluate import simulated_log
from bot.bench.sim.deck import sim_cards
from bot.bench.sim.run import SimConfig
from content.loader import DeckLibrary
from scheduler.fsrs_review import next_memory, rating_for, recall_after, review_fsrs, scheduler_with
from scheduler.replay import LoggedReview, replay
from scheduler.storage.models import CardState, ReviewLog
from scheduler.storage.store import Store


@lru_cache(maxsize=4)
def simulated_server(learners: int, days: int, seed: int) -> tuple[tuple, ...]:
    """(learner, day, card, quality) per scheduling review, in time order."""
    cards = sim_cards(DeckLibrary.load().cards(None))
    return tuple((learner, day, card, quality) for learner, day, card, quality, _ in
                 simulated_log(SimConfig(learners=learners, days=days, seed=seed), cards))


# Learners who forget faster than FSRS's defaults expect: every first stability a third,
# and a recall grows stability half as much (w8, its log scale, 0.7 lower).
FAST_FORGETTERS = (*(w / 3 for w in DEFAULT_PARAMETERS[:4]), *DEFAULT_PARAMETERS[4:8],
                   DEFAULT_PARAMETERS[8] - 0.7, *DEFAULT_PARAMETERS[9:])


@lru_cache(maxsize=8)
def fsrs_world(learners: int, days: int, seed: int,
               memory: tuple[float, ...] = tuple(DEFAULT_PARAMETERS),
               new_per_day: int = 6) -> tuple[tuple, ...]:
    """(learner, day, card, quality) per review, in time order: each learner meets
    ``new_per_day`` new cards a day and reviews each on the day the product's FSRS (default
    parameters) makes it due; they recall it with the chance FSRS-6 with ``memory`` gives
    (quality 4, Good), else fail it (quality 1, Again)."""
    rng = Random(seed)
    truth = scheduler_with(memory)
    due: dict[tuple[int, str], tuple] = {}  # (learner, card) -> (due day, product, true)
    out = []
    for day in range(days):
        for learner in range(learners):
            cards = [key for key, entry in due.items() if key[0] == learner
                     and entry[0] <= day] + [(learner, f"c{day}-{n}")
                                             for n in range(new_per_day)]
            for key in cards:
                _, product, true = due.get(key, (day, None, None))
                if true is None:
                    recalled = rng.random() < 0.5  # a first meeting: half knew it
                else:
                    elapsed = day - true[2]
                    recalled = rng.random() < recall_after(true[0], elapsed, truth)
                quality = 4 if recalled else 1
                product, interval = review_fsrs(product, quality, _day(day))
                memory_now = next_memory(None if true is None else true[:2],
                                         rating_for(quality), 0 if true is None
                                         else day - true[2], truth)
                due[key] = (day + interval, product, (*memory_now, day))
                out.append((learner, day, key[1], quality))
    return tuple(out)


def _day(n: int) -> date:
    return date(2026, 1, 1) + timedelta(days=n)


def seed_server_log(store: Store, guild_id: int, reviews, first_day: date) -> dict[int, int]:
    """Write ``reviews`` (`simulated_server`'s) as the server's log, day 0 = ``first_day``;
    the simulated learner -> their learner id."""
    learners: dict[int, int] = {}
    seen: set[tuple[int, str]] = set()
    rows = []
    for n, (learner, day, card, quality) in enumerate(reviews):
        if learner not in learners:
            learners[learner] = store.learners.get_or_create(
                f"discord:{guild_id}{learner:04d}", now=datetime.now(UTC)).id
        study = first_day + timedelta(days=day)
        key = (learners[learner], card)
        rows.append(dict(
            answer_id=f"sim-{guild_id}-{n}", learner_id=key[0], card_id=card,
            deck_id=card.split("/")[0], card_rev=1, guild_id=guild_id,
            kind="review" if key in seen else "new",
            reviewed_at=datetime.combine(study, time(12), tzinfo=UTC), study_day=study,
            quality=quality, correct=quality >= 3, attempts=1 if quality >= 3 else 2,
            hint_used=False, latency_ms=5_000, chosen=[], mistake_ids=[], ef100_after=250,
            interval_after=1, due_day_after=study + timedelta(days=1)))
        seen.add(key)
    states = [_state(key, history) for key, history in _by_card(rows).items()]
    with store.engine.begin() as conn:
        conn.execute(ReviewLog.__table__.insert(), rows)
        conn.execute(CardState.__table__.insert(), states)
    return learners


def _by_card(rows: list[dict]) -> dict[tuple[int, str], list[dict]]:
    cards: dict[tuple[int, str], list[dict]] = {}
    for row in rows:
        cards.setdefault((row["learner_id"], row["card_id"]), []).append(row)
    return cards


def _state(key: tuple[int, str], history: list[dict]) -> dict:
    """The card's state as the product's answers would have left it (scheduler/replay.py)."""
    done = replay(LoggedReview(r["kind"], r["quality"], r["study_day"]) for r in history)
    last = history[-1]
    return dict(learner_id=key[0], card_id=key[1], deck_id=last["deck_id"], card_rev=1,
                ef100=done.sm2.ef100, repetitions=done.sm2.repetitions,
                interval=done.sm2.interval, due_day=done.sm2_due, lapses=done.lapses,
                review_count=len(history), drill_pending=False,
                last_review_day=last["study_day"], last_reviewed_at=last["reviewed_at"],
                fsrs_stability=done.fsrs.stability, fsrs_difficulty=done.fsrs.difficulty,
                fsrs_due_day=done.fsrs_due)
