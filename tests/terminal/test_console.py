"""`tutor practice` as a learner uses it: in-process, through a pipe and through a pty."""

from __future__ import annotations

import io
import os
import sqlite3
import subprocess
import sys

import pexpect
import pytest

from bot.terminal import Console
from tests.helpers.console import letter_of, letters, shown_letters, typed
from tests.helpers.engines import engine_of
from tests.helpers.paths import REPO
from tests.helpers.records import RIGHT

WHY = {"To average gradients over the micro-batches", "To train faster", "To save memory"}


def play(tutor, lines: list, learner_name: str = "sam", scheduler: str | None = None,
         remediation: bool | None = None) -> str:
    return typed(tutor, lines, learner_name, scheduler=scheduler, remediation=remediation)


def test_a_wrong_chip_is_explained_then_the_right_one_is_scheduled(tutor):
    text = play(tutor, [letters("step"), letters("zero_grad"), "q"])
    assert "optimizer.[1]()" in text
    chips = shown_letters(text.split("Answer >")[0])
    assert set(chips) == {"zero_grad", "step", "backward"}
    assert sorted(chips.values()) == ["A", "B", "C"]
    assert "You chose 'step' for [1]: step() updates the weights." in text
    assert "Common mistake - Wrong method: That method does something else entirely." in text
    assert "2 attempts left." in text
    assert "Correct, on attempt 2." in text
    assert "Next review of this card: tomorrow." in text
    assert "Takeaway: Clear, then accumulate." in text
    assert "(1 code card needs the sandbox and is skipped here.)" in text


def test_multi_blank_answers_by_letter_or_text_and_only_wrong_blanks_are_explained(tutor):
    def mixed_case(output: str) -> str:  # letters in either case, with a comma
        return f"{letter_of(output, 'batch_size').lower()}, {letter_of(output, 'backward')}"

    text = play(tutor, ["zero_grad", mixed_case, "accumulation_steps backward", "q"])
    assert "loss = loss / [1]\n    loss.[2]()" in text
    assert "You chose 'batch_size' for [1]" in text and "for [2]" not in text
    assert text.count("Correct") == 2


def test_bad_input_costs_no_attempt_and_says_what_is_expected(tutor):
    text = play(tutor, ["z", letters("zero_grad", "step"), "", letters("zero_grad"), "q"])
    assert "'z' is not one of the options (A-C)." in text
    assert "This card has 1 blank: give 1 answer in order, e.g. 'a'." in text
    assert "Correct!" in text and "attempts left" not in text


def test_three_misses_reveal_the_answer_and_the_hint_is_shown(tutor):
    text = play(tutor, [letters("zero_grad"), "?",
                        letters("accumulation_steps", "accumulation_steps"),
                        letters("batch_size", "accumulation_steps"),
                        letters("backward", "backward"), "q"])
    assert "Hint: Divide by how many micro-batches make one update." in text
    assert "The answer: accumulation_steps, backward" in text
    assert "Divide, then call backward()." in text


def test_multiple_choice_shows_solution_steps(tutor):
    text = play(tutor, ["zero_grad", "accumulation_steps backward",
                        letters("To train faster"), "average", "q"])
    assert set(shown_letters(text)) == WHY
    chose = letter_of(text.split("You chose", 1)[0], "To train faster")
    assert f"You chose {chose} ('To train faster'): Scaling does not change speed." in text
    assert "1. Sum: N backward calls add N gradients." in text
    assert "Correct, on attempt 2." in text


def test_a_wrong_option_typed_again_is_refused_and_costs_no_attempt(tutor):
    text = play(tutor, ["zero_grad", "accumulation_steps backward",
                        letters("To train faster"), letters("To train faster"), "average",
                        "q"])
    assert "You already tried that option on this card, and it is not right" in text
    assert "This try used no attempt." in text and "Correct, on attempt 2." in text


def test_a_typed_letter_answers_the_option_shown_under_it(tutor):
    """Whatever the shuffle put under each letter, typing it answers that option."""
    for n, wrong in enumerate(sorted(WHY - {"To average gradients over the micro-batches"})):
        text = play(tutor, ["zero_grad", "accumulation_steps backward",
                            letters(wrong), "q"], learner_name=f"learner{n}")
        letter = letter_of(text.rsplit("Answer >", 1)[0], wrong)
        assert f"Answer > {letter}\nNot quite." in text
        assert f"You chose {letter} ('{wrong}')" in text


def test_a_finished_session_says_when_the_next_review_is(tutor, clock):
    text = play(tutor, ["zero_grad", "accumulation_steps backward",
                        letters("To average gradients over the micro-batches")])
    assert "Answered 3 cards this session." in text
    assert "All caught up. Next review: tomorrow." in text
    clock.advance(days=1)
    text = play(tutor, ["q"])
    assert "3 due now, 0 new left today." in text and "== review" in text


def test_a_misconception_comes_back_as_a_remedy(tutor, clock):
    learner = tutor.learner("local:sam", display_name="sam")
    for card_id in ("mini/clear", "mini/scale"):  # day 0: both met
        tutor.answer(tutor.next_card(learner, only=card_id), RIGHT[card_id])
    clock.advance(days=1)  # day 1: scale passes (due in 6 days), clear needs the hint
    tutor.answer(tutor.next_card(learner, only="mini/scale"), RIGHT["mini/scale"])
    served, _ = tutor.hint(tutor.next_card(learner, only="mini/clear"))
    tutor.answer(served, RIGHT["mini/clear"])
    clock.advance(days=1)
    text = play(tutor, ["step", "zero_grad", "q"], remediation=True)  # the wrong method first
    assert "Scheduler: SM-2; remediation of mistakes on." in text
    assert "Mistakes to work on: Wrong method (made 1x)." in text
    clock.advance(days=1)  # clear's review, the new card, then scale on the same mistake
    text = play(tutor, ["zero_grad", letters("To average gradients over the micro-batches"),
                        "accumulation_steps backward", "q"], remediation=True)
    assert text.index("== review") < text.index("== new card") < text.index(
        "== on a recent mistake")
    assert "Mistakes to work on" not in text  # clear's clean first try corrected it


def test_the_terminal_schedules_by_fsrs_when_asked(tmp_path):
    db = tmp_path / "learner.db"
    command = [sys.executable, "-m", "bot", "practice", "--db", str(db), "--learner", "kim",
               "--no-remediation", "--scheduler", "fsrs"]
    run = subprocess.run(command, input="zero_grad\n", capture_output=True, text=True,
                         env=_env(), cwd=tmp_path, timeout=60)
    assert run.returncode == 0, run.stderr
    assert "Scheduler: FSRS; remediation of mistakes off." in run.stdout
    with sqlite3.connect(db) as conn:
        told, fsrs_due = conn.execute(
            "SELECT l.due_day_after, s.fsrs_due_day FROM review_log l JOIN card_state s"
            " ON s.learner_id = l.learner_id AND s.card_id = l.card_id").fetchone()
        assert told == fsrs_due
        assert conn.execute("SELECT scheduler FROM review_log").fetchall() == [("fsrs",)]
    bad = subprocess.run([*command[:-1], "leitner"], capture_output=True, text=True,
                         env=_env(), cwd=tmp_path, timeout=60)
    assert bad.returncode == 2 and "invalid choice: 'leitner'" in bad.stderr


def _env() -> dict:
    env = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"}
    return {**env, "PYTHONPATH": str(REPO), "COLUMNS": "100"}


def test_piped_session_through_the_cli_persists_progress(tmp_path):
    db = tmp_path / "learner.db"
    command = [sys.executable, "-m", "bot", "practice", "--db", str(db), "--learner", "kim"]
    # A pipe cannot read the shuffled letters first: it answers with the chips' text.
    first = subprocess.run(command, input="step\nzero_grad\n", capture_output=True, text=True,
                           env=_env(), cwd=tmp_path, timeout=60)
    assert first.returncode == 0, first.stderr
    assert "0 due now, 10 new left today." in first.stdout
    assert "You chose 'step' for [1]" in first.stdout and "Common mistake" in first.stdout
    assert "Next review of this card: tomorrow" in first.stdout
    again = subprocess.run(command, input="q\n", capture_output=True, text=True,
                           env=_env(), cwd=tmp_path, timeout=60)
    assert "0 due now, 9 new left today." in again.stdout
    assert "Answered 0 cards this session." in again.stdout


def test_a_learner_in_a_real_terminal(tmp_path):
    child = pexpect.spawn(
        sys.executable, ["-m", "bot", "practice", "--db", str(tmp_path / "t.db"),
                         "--learner", "pty"],
        env=_env(), cwd=str(tmp_path), encoding="utf-8", timeout=30,
    )
    child.expect("optimizer.\\[1\\]\\(\\)")
    child.expect("Answer > ")
    card = child.before
    child.sendline("?")
    child.expect("Hint: ")
    child.expect("Answer > ")
    child.sendline(letter_of(card, "backward").lower())
    child.expect("You chose 'backward'")
    child.expect("2 attempts left")
    child.sendline(letter_of(card, "zero_grad"))
    child.expect("Correct, on attempt 2.")
    child.expect("Answer > ")  # the next card
    child.sendcontrol("d")
    child.expect("Answered 1 card this session.")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0


@pytest.mark.parametrize("deck", ["nope"])
def test_unknown_deck_is_a_clear_error(tmp_path, deck):
    result = subprocess.run(
        [sys.executable, "-m", "bot", "practice", "--deck", deck, "--db", str(tmp_path / "x.db")],
        capture_output=True, text=True, env=_env(), cwd=tmp_path, timeout=60,
    )
    assert result.returncode == 2
    assert "No deck 'nope'. Decks: gradient-accumulation" in result.stderr


def test_a_code_card_in_the_terminal_is_judged_in_the_sandbox(tmp_path):
    code = ("for i, (inputs, labels) in enumerate(dataloader):\n"
            "    loss = criterion(model(inputs), labels)\n"
            "    loss.backward()\n"
            "    if (i + 1) % accumulation_steps == 0 or i + 1 == len(dataloader):\n"
            "        optimizer.step()\n"
            "        optimizer.zero_grad()\n")
    # The topic's fill-in and MCQ by id (a pipe cannot read the shuffled letters), the loop.
    answers = ("accumulation_steps backward accumulation_steps\nstep-and-clear-per-window\n"
               + code + "EOF\nq\n")
    result = subprocess.run(
        [sys.executable, "-m", "bot", "practice", "--db", str(tmp_path / "c.db"),
         "--learner", "coder", "--topic", "training-loop"],
        input=answers, capture_output=True, text=True, env=_env(), cwd=tmp_path, timeout=120)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "Type or paste your code, then a line with just EOF." in out
    assert "Running your code in the sandbox..." in out
    verdict = out.split("Running your code in the sandbox...")[1]
    assert "Not this time." in verdict and "4x too large" in verdict
    assert "Common mistake - Loss not scaled" in verdict
    assert "A working solution:" in verdict


# -- a mistake explained once, when the card is done; code that ran no training sent again

def test_the_terminal_explains_each_mistake_once_when_the_card_is_done(tutor):
    text = play(tutor, ["zero_grad", letters("accumulation_steps", "batch_size"),
                        letters("batch_size", "accumulation_steps"),
                        letters("accumulation_steps", "backward"), "q"])
    before, done = text.split("Correct, on attempt 3.")
    # Before the last try: what each wrong pick does, in a line, and how to go on.
    assert "Common mistake" not in before
    assert "You chose 'accumulation_steps' for [2]: an int cannot be called." in before
    assert "  2 attempts left. Try again, or ? for a hint." in before
    wrong_method = "Common mistake - Wrong method: That method does something else entirely."
    assert done.count(wrong_method) == 1
    assert "Common mistake - Wrong divisor: Divide by the number" in done


def test_code_that_stopped_before_training_is_sent_again_in_the_terminal(store, mini_library,
                                                                         clock):
    from bot.engine import CodeReport
    from bot.engine.tutor import Tutor

    typo = CodeReport("error", False, (), ("line 1: `NameError: name 'lossy' is not defined`",),
                      trained=False)
    reports = iter([typo, CodeReport("ok", True)])
    tutor = Tutor(store, mini_library, clock=clock,
                  code_judge=lambda card, code, learner: next(reports))
    learner = tutor.learner("local:sam", display_name="sam")
    lines = iter(["lossy.backward()", "EOF", "loss.backward()", "EOF", "q"])
    out = io.StringIO()
    Console(engine_of(tutor), learner, "mini", out=out, read=lambda prompt: next(lines),
            topic="loop").run()
    text = out.getvalue()
    retry = text.split("Running your code in the sandbox...")[1]
    assert "Not judged: your code stopped before it trained." in retry
    assert "- line 1: `NameError: name 'lossy' is not defined`" in retry
    assert "That run used no attempt: fix it and send your code again (2 more such runs" in (
        retry.replace("\n  ", " "))
    assert "A working solution" not in retry
    assert "Correct!" in text.split("Running your code in the sandbox...")[2]
    (log,) = store.reviews.on_day(learner.id, clock.now.date())
    assert (log.correct, log.attempts, log.chosen[0]["retries"]) == (True, 1, 1)
