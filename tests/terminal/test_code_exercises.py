"""`tutor practice` on a community deck's behaviour card, judged in the real sandbox (issue 40,
point 6): a run that stops on a typo before any case returns is not judged, as for
train-loop cards: no attempt is used and the reference is not shown; the fixed code is
judged as the first try."""

from __future__ import annotations

import io

import pytest

from bot.engine import FREE_RETRIES, Uploaded
from bot.terminal import Console
from tests.helpers.engines import engine_of
from tests.helpers.exercises import EXAMPLE, MASK, MASK_TYPO, RIGHT

NAME = MASK_TYPO  # a NameError on every case
TYPO = RIGHT[MASK].replace("torch.tril(", "torch.trill(")  # an AttributeError on every case


@pytest.fixture
def exercises(tutor, sandbox_judge):
    """The tutor with the example deck uploaded (tried in the sandbox) and its judge."""
    tutor.code_judge = sandbox_judge
    uploaded = engine_of(tutor).decks.upload(7, EXAMPLE.name, EXAMPLE.read_bytes(), "author")
    assert isinstance(uploaded, Uploaded), uploaded
    return tutor


def practise(tutor, name: str, answers: list[str]) -> str:
    """What the terminal shows learner `name` sending each of `answers` to the mask card."""
    learner = tutor.learner(f"local:{name}", display_name=name)
    lines = iter([line for code in answers for line in [*code.splitlines(), "EOF"]] + ["q"])
    out = io.StringIO()
    Console(engine_of(tutor), learner, "pytorch-exercises", out=out,
            read=lambda prompt: next(lines), topic="attention").run()
    return out.getvalue()


def test_a_typo_before_any_case_returned_uses_no_attempt_up_to_the_free_runs(exercises,
                                                                             store, clock):
    text = practise(exercises, "sam", [NAME, TYPO, RIGHT[MASK]])
    runs = text.split("Running your code in the sandbox...")[1:]
    assert len(runs) == 3
    for run, error in zip(runs[:2], ("NameError: name 'kept' is not defined",
                                     "AttributeError: module 'torch' has no attribute "
                                     "'trill'"), strict=True):
        assert "Not judged: your code stopped before any case returned." in run
        assert error in run
        assert "That run used no attempt" in run.replace("\n  ", " ")
        assert "A working solution" not in run and "Not this time." not in run
    assert f"({FREE_RETRIES - 2} more such run free on this card)" in runs[1].replace(
        "\n  ", " ")
    assert "Correct!" in runs[2]
    learner = exercises.learner("local:sam")
    (log,) = store.reviews.on_day(learner.id, clock.now.date())
    assert (log.correct, log.attempts, log.chosen[0]["retries"]) == (True, 1, 2)
    # Past the free runs a typo is judged (another learner: each may run 6 a minute).
    text = practise(exercises, "kim", [NAME] * (FREE_RETRIES + 1))
    *free, judged = text.split("Running your code in the sandbox...")[1:]
    assert len(free) == FREE_RETRIES
    assert "counts even if it stops before any case returns" in free[-1].replace("\n  ", " ")
    assert "Not this time." in judged and "A working solution:" in judged
