"""Code that stops before it trains (a typo, a NameError) is not judged: it uses no attempt
and may be sent again, a bounded number of times per served card (bot/engine/tutor.py,
`_answer_code`). What "ran no training" means comes from the checker's observations
(`content/checkers/_verdict.trained`; for a behaviour card, whether any case returned:
`behaviour.progressed`) and the sandbox's status (`CodeReport.ran_no_training`).
"""

from __future__ import annotations

import pytest

from bot.engine import FREE_RETRIES, AlreadyCounted, CodeReport
from bot.engine.code_judge import report_from
from bot.engine.tutor import Tutor
from bot.sandbox.protocol import CheckReport, RunResult
from bot.sandbox.service.checker_process import answer as judge_in_process
from content.checkers import behaviour, train_loop
from content.checkers._verdict import trained
from tests.helpers.engines import engine_of
from tests.helpers.train_loop import REFERENCE

TYPO = CodeReport("error", False, (), ("line 7: `AttributeError: 'Tensor' object has no "
                                       "attribute 'backwrd'`",), trained=False)
PASSED = CodeReport("ok", True)


def scripted(*reports: CodeReport):
    """A code judge that answers with `reports` in turn, and counts its runs."""
    queue = list(reports)

    def judge(card, code, learner=None) -> CodeReport:
        judge.runs += 1
        return queue.pop(0)

    judge.runs = 0
    return judge


def code_tutor(store, library, clock, judge) -> Tutor:
    return Tutor(store, library, clock=clock, code_judge=judge)


# -- what "ran no training" means, on real code ---------------------------------------------

def observed(code: str) -> dict:
    from content.checkers._observe import observe

    return observe(code, train_loop.plan(0))


@pytest.mark.parametrize("code", [
    "for x, y in dataloader\n    pass\n",  # SyntaxError: nothing ran
    REFERENCE.replace("enumerate(dataloader)", "enumerate(dataloder)"),  # NameError
    REFERENCE.replace("loss.backward()", "loss.backwrd()"),  # a loss, no backward()
    "import nonexistent_module\n" + REFERENCE,
])
def test_code_that_raised_before_any_backward_or_step_did_not_train(code):
    observations = observed(code)
    assert observations["error"] is not None
    assert trained(observations) is False
    reply = judge_in_process({"checker": "train_loop", "salt": 0, "observations": observations})
    assert reply["report"]["status"] == "error" and reply["report"]["trained"] is False


@pytest.mark.parametrize("code", [
    REFERENCE.replace("optimizer.step()", "optimizer.stepp()"),  # after backward()
    REFERENCE + "raise RuntimeError('done')\n",  # after the whole first scenario trained
    REFERENCE,
])
def test_code_that_ran_a_backward_or_a_step_trained(code):
    observations = observed(code)
    assert trained(observations) is True
    reply = judge_in_process({"checker": "train_loop", "salt": 0, "observations": observations})
    assert reply["report"]["trained"] is True


@pytest.mark.parametrize("record", [None, [], {"scenarios": "x"}, {"scenarios": [5]},
                                    {"scenarios": [{"events": [[]]}]},
                                    {"scenarios": [{"events": [["F", 0], 7]}]}])
def test_a_record_of_another_shape_counts_as_trained(record):
    assert trained(record) is True  # a forged record gains no free run


def behaviour_record(mine) -> dict:
    """A behaviour check on two cases, f(x) = 2x, where the learner's run reported `mine`."""
    return {"entry": "f", "compare": None, "versions": [],
            "author": {"inputs": {"list": [{"tuple": [1]}, {"tuple": [2]}]}, "digest": "d",
                       "programs": [{"outcomes": [{"value": 2}, {"value": 4}]}]},
            "learner": {"digest": "d", "programs": [mine]}}


NAME_ERROR = {"type": "NameError", "message": "name 'torhc' is not defined", "line": 2}


@pytest.mark.parametrize("mine, returned", [
    ({"error": {"type": "SyntaxError", "message": "expected ':'", "line": 1}}, False),
    ({"outcomes": [{"raised": NAME_ERROR}] * 2}, False),  # a typo in the body: every call
    ({"outcomes": [{"value": 3}, {"raised": NAME_ERROR}]}, True),
    ({"outcomes": [{"unencodable": "is a set"}, {"raised": NAME_ERROR}]}, True),
    ({"outcomes": [{"value": 2}, {"value": 5}]}, True),
])
def test_a_behaviour_run_progressed_when_any_case_returned(mine, returned):
    reply = judge_in_process({"checker": "behaviour", "salt": 0,
                              "observations": behaviour_record(mine)})
    assert reply["report"]["trained"] is returned
    report = report_from(RunResult("ok", report=CheckReport.from_wire(reply["report"])))
    assert report.ran_no_training is (not returned)


@pytest.mark.parametrize("record", [None, [], {"learner": 5}, {"learner": {"programs": []}},
                                    {"learner": {"programs": [{"outcomes": "x"}]}}])
def test_a_behaviour_record_of_another_shape_counts_as_progressed(record):
    assert behaviour.progressed(record) is True


def test_only_an_explicit_false_from_the_checker_says_no_training():
    assert CheckReport.from_wire({"status": "error"}).trained is True  # an older service
    assert CheckReport.from_wire({"status": "error", "trained": 0}).trained is True
    assert CheckReport.from_wire({"status": "error", "trained": False}).trained is False


def test_the_sandbox_status_decides_when_no_checker_reported():
    refused = report_from(RunResult("refused", error="the code is larger than 64 KB"))
    assert refused.ran_no_training  # nothing ran at all
    for status in ("timeout", "memory", "output_limit", "error"):  # may be mid-training
        assert not report_from(RunResult(status, error="stopped")).ran_no_training
    raised = RunResult("error", report=CheckReport("error", False, (), ("x",), None, False))
    assert report_from(raised).ran_no_training


def test_only_an_unjudged_failure_is_free():
    assert TYPO.ran_no_training
    assert not CodeReport("ok", False, trained=False).ran_no_training  # ran to the end
    assert not CodeReport("error", False, ("optimizer_step_instead_of_scaler_step",),
                          trained=False).ran_no_training  # the error is the mistake
    assert not CodeReport("error", False).ran_no_training  # nobody could tell
    assert not CodeReport("timeout", False, trained=False).ran_no_training


# -- the engine's rule ------------------------------------------------------------------------

def test_a_typo_uses_no_attempt_and_a_pass_after_it_grades_as_a_first_try(store, mini_library,
                                                                          clock):
    judge = scripted(TYPO, PASSED)
    tutor = code_tutor(store, mini_library, clock, judge)
    served = tutor.next_card(tutor.learner("local:ann"), topic="loop")
    retry = tutor.answer(served, "loss.backwrd()")
    assert (retry.retry, retry.finished, retry.correct) == (True, False, False)
    assert (retry.served.attempts, retry.served.retries, retry.retries_left) == (
        0, 1, FREE_RETRIES - 1)
    assert retry.report == TYPO and retry.findings == ()
    assert store.reviews.get(served.serve_id) is None  # nothing recorded
    clock.advance(minutes=4)
    verdict = tutor.answer(retry.served, "loss.backward()")
    assert verdict.correct and verdict.finished and verdict.quality == 5
    log = store.reviews.get(served.serve_id)
    assert (log.attempts, log.chosen) == (1, [{"status": "ok", "mistakes": [], "retries": 1}])


def test_past_the_free_retries_a_run_that_did_not_train_decides_the_card(store, mini_library,
                                                                         clock):
    judge = scripted(*[TYPO] * (FREE_RETRIES + 1))
    tutor = code_tutor(store, mini_library, clock, judge)
    served = tutor.next_card(tutor.learner("local:ann"), topic="loop")
    for used in range(1, FREE_RETRIES + 1):
        verdict = tutor.answer(served, "loss.backwrd()")
        served = verdict.served
        assert verdict.retry and served.retries == used
    assert verdict.retries_left == 0
    last = tutor.answer(served, "loss.backwrd()")
    assert last.finished and not last.correct and not last.retry and last.quality == 0
    assert judge.runs == FREE_RETRIES + 1


@pytest.mark.parametrize("report", [
    CodeReport("error", False, (), ("line 9: `RuntimeError: boom`",)),  # after training
    CodeReport("timeout", False, (), ("ran too long",)),
    CodeReport("ok", False, ("no_scaling",), ("4x",)),
])
def test_a_judged_or_mid_training_failure_ends_the_card(store, mini_library, clock, report):
    tutor = code_tutor(store, mini_library, clock, scripted(report))
    served = tutor.next_card(tutor.learner("local:ann"), topic="loop")
    verdict = tutor.answer(served, "for x in dataloader: pass")
    assert verdict.finished and not verdict.retry


# -- stored between clicks: a restart, a second click ----------------------------------------

def test_a_retry_is_stored_and_survives_a_restart(store, mini_library, clock):
    judge = scripted(TYPO, TYPO, PASSED)
    play = engine_of(code_tutor(store, mini_library, clock, judge)).cards
    learner = play.tutor.learner("local:ann")
    playing = play.serve(learner, mode="practice", topic="loop")
    first = play.answer(playing.served.serve_id, 0, learner, "loss.backwrd()")
    assert first.retry and first.served.retries == 1
    # A new process on the same store: the retry is there, the card still at attempt 0.
    again = engine_of(code_tutor(store, mini_library, clock, judge)).cards
    mine = again.open_code_card(learner)
    assert (mine.served.attempts, mine.served.retries) == (0, 1)
    second = again.answer(mine.served.serve_id, 0, learner, "loss.backwrd()")
    assert second.served.retries == 2 and second.retries_left == FREE_RETRIES - 2
    verdict = again.answer(mine.served.serve_id, 0, learner, "loss.backward()")
    assert verdict.correct and store.reviews.get(mine.served.serve_id).chosen[0]["retries"] == 2


def test_a_second_click_on_the_state_before_a_retry_changes_nothing(store, mini_library, clock):
    judge = scripted(TYPO, TYPO, PASSED)
    play = engine_of(code_tutor(store, mini_library, clock, judge)).cards
    learner = play.tutor.learner("local:ann")
    playing = play.serve(learner, mode="practice", topic="loop")
    play.judge(playing, "loss.backwrd()")
    # Loaded before the first was stored (two modals at once): counted once, not twice.
    with pytest.raises(AlreadyCounted):
        play.judge(playing, "loss.backwrd()")
    with pytest.raises(AlreadyCounted):
        play.judge(playing, "loss.backward()")  # nor can a stale load finish the card
    assert play.current(playing.served.serve_id, learner).served.retries == 1
    assert store.reviews.get(playing.served.serve_id) is None


def test_a_hint_after_a_retry_keeps_the_retry(store, mini_library, clock):
    play = engine_of(code_tutor(store, mini_library, clock, scripted(TYPO))).cards
    learner = play.tutor.learner("local:ann")
    playing = play.serve(learner, mode="practice", topic="loop")
    play.judge(playing, "loss.backwrd()")
    hinted = play.hint(playing.served.serve_id, 0, learner)
    assert hinted.served.hint_used and hinted.served.retries == 1
    stored = play.current(playing.served.serve_id, learner).served
    assert (stored.hint_used, stored.retries) == (True, 1)
