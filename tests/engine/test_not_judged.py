"""Our faults never cost a learner: a code answer the sandbox could not judge (no host, Redis
away, a crash of ours, no answer in time, the checker failing) uses no attempt, reveals
nothing, records nothing, keeps the card open, and tells the operator (a log line and
`tutor_sandbox_unjudged_total{cause}`). Every kind of fault, through the engine's real
judge, the stored card's path Discord uses, and the terminal."""

from __future__ import annotations

import logging

import pytest
import sqlalchemy as sa

from bot.engine import NotJudged
from bot.engine.tutor import Tutor
from bot.observability import SANDBOX_UNJUDGED
from tests.helpers.console import typed
from tests.helpers.engines import engine_of
from tests.helpers.faults import CAUSE, FAULTS, FaultyJudge
from tests.helpers.train_loop import REFERENCE


@pytest.fixture(params=FAULTS)
def fault(request):
    return request.param


@pytest.fixture
def judge(fault):
    judge = FaultyJudge(fault)
    yield judge
    judge.close()


def reviews_logged(store) -> int:
    with store.engine.connect() as connection:
        return connection.execute(sa.text("SELECT count(*) FROM review_log")).scalar()


def unjudged(cause: str) -> float:
    return SANDBOX_UNJUDGED.labels(cause=cause)._value.get()


def test_the_stored_card_is_untouched_and_the_operator_is_told(fault, judge, store,
                                                             mini_library, clock, caplog):
    tutor = Tutor(store, mini_library, clock=clock, code_judge=judge)
    play = engine_of(tutor).cards
    learner = tutor.learner("discord:1")
    playing = play.serve(learner, mode="practice", card_id="mini/loop")
    before = unjudged(CAUSE[fault])
    with caplog.at_level(logging.ERROR), pytest.raises(NotJudged) as refused:
        play.judge_code(playing, REFERENCE, learner)
    text = str(refused.value)
    assert text.startswith("Your code was not judged: ")
    assert "no attempt was used and nothing was recorded" in text
    assert "send your code again in a minute" in text
    assert refused.value.cause == CAUSE[fault]
    assert "not judged" in caplog.text  # the operator's line
    assert unjudged(CAUSE[fault]) == before + 1
    assert store.reviews.get(playing.served.serve_id) is None and reviews_logged(store) == 0
    kept = play.at(playing.served.serve_id, 0, learner)  # still open, at its first attempt
    assert (kept.served.attempts, kept.served.retries) == (0, 0)

    judge.client.heal()  # the same code, once the sandbox is back: a first-try pass
    verdict = play.judge_code(kept, REFERENCE, learner)
    assert verdict.correct and verdict.finished and verdict.served.attempts == 1
    assert store.reviews.get(playing.served.serve_id).quality >= 3


def test_the_terminal_says_so_and_keeps_the_card(fault, judge, store, mini_library, clock):
    tutor = Tutor(store, mini_library, clock=clock, code_judge=judge)
    text = typed(tutor, [*REFERENCE.splitlines(), "EOF", "q"], topic="loop")
    learner = tutor.learner("local:sam")
    assert "Your code was not judged: " in text
    after = text.split("Your code was not judged: ", 1)[1]
    assert "code> " in after  # asked for the code again: the card stayed open
    assert "Correct" not in after and "Not this time" not in after
    assert "The answer" not in after and "Reference" not in after  # nothing revealed
    assert reviews_logged(store) == 0
    assert tutor.progress(learner, "mini").seen == 0
