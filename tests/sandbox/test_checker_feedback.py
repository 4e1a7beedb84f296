"""What the train-loop card tells a learner is true of that learner's code (issue 24).

Each bug has a mirror image that gets the same mistake id; the feedback must say what the
loop did, from the judge's numbers, and the deck's general text must not contradict it.
Every loop goes through the real sandbox, and the text checked is what `tutor check` shows:
the checker's lines, then the deck's explanation of each id.
"""

from __future__ import annotations

import pytest

from bot.engine.code_judge import report_from
from content.loader import DeckLibrary

pytestmark = pytest.mark.asyncio(loop_scope="module")

CARD = "gradient-accumulation/train-loop"

LOOP = """\
import torch
{setup}
for epoch in range(num_epochs):
    optimizer.zero_grad()
    for i, (x, y) in enumerate(dataloader{start}):
        {clear}loss = criterion(model(x), y) / accumulation_steps
        loss.backward()
        {per_micro_batch}
        if {condition}:
            optimizer.step()
            optimizer.zero_grad()
"""


def loop(setup="", start="", clear="", per_micro_batch="pass",
         condition="(i + 1) % accumulation_steps == 0 or i + 1 == len(dataloader)") -> str:
    return LOOP.format(setup=setup, start=start, clear=clear, per_micro_batch=per_micro_batch,
                       condition=condition)


def stepping_every_batch(clear_every_batch: bool) -> str:
    """optimizer.step() after every backward(); .grad cleared per window, or every time."""
    clear = "" if clear_every_batch else "if (i + 1) % accumulation_steps == 0:\n            "
    return f"""\
for epoch in range(num_epochs):
    optimizer.zero_grad()
    for i, (x, y) in enumerate(dataloader):
        loss = criterion(model(x), y) / accumulation_steps
        loss.backward()
        optimizer.step()
        {clear}optimizer.zero_grad()
"""


def schedule(size: str) -> str:
    return (f"total = num_epochs * {size}\n"
            "scheduler = torch.optim.lr_scheduler.LinearLR(optimizer, 1.0, 0.1, "
            "total_iters=total)")


IN_UPDATES = "-(-len(dataloader) // accumulation_steps)"


async def shown(sandbox, code: str) -> tuple[list[str], str]:
    """The ids, and all the text the learner reads, in one lower-case string."""
    report = report_from(await sandbox.run(code, mode="check", checker="train_loop"))
    library = DeckLibrary.load()
    deck = [library.mistake(CARD, m).explanation for m in report.mistakes]
    return list(report.mistakes), " ".join([*report.feedback, *deck]).lower()


def words(text: str) -> str:
    return " ".join(text.lower().split())


@pytest.mark.parametrize("start, condition, says", [
    # the commonest form: a counter from 0 tested without + 1; the fix is (i + 1)
    ("", "i % accumulation_steps == 0 or i + 1 == len(dataloader)",
     ["after batches 1, 5, 9, 12 instead of 4, 8, 12", "first update came after 1 micro-batch"]),
    # its mirror: a counter from 1 tested with + 1, which already has the usual fix
    (", start=1", "(i + 1) % accumulation_steps == 0 or i == len(dataloader)",
     ["after batches 3, 7, 11-12 instead of 4, 8, 12", "one micro-batch early, after 3"]),
])
async def test_an_off_by_one_window_is_told_which_way_it_is_off(sandbox, start, condition,
                                                                says):
    ids, text = await shown(sandbox, loop(start=start, condition=condition))
    assert ids == ["off_by_one_modulo"]
    assert all(s in text for s in says), text
    if start:  # it already writes (i + 1): the feedback must not tell it to
        assert "(i + 1) % accumulation_steps == 0 is first true" not in words(text)
        assert "with enumerate(dataloader, start=1)" in words(text)


async def test_stepping_every_batch_with_a_clear_per_window_applies_partial_sums(sandbox):
    ids, text = await shown(sandbox, stepping_every_batch(clear_every_batch=False))
    assert ids == ["step_every_batch"]
    assert "partial sum" in text
    assert "batch 1's gradient 4 times, batch 2's gradient 3 times" in text


async def test_stepping_and_clearing_every_batch_is_told_it_is_small_batch_training(sandbox):
    ids, text = await shown(sandbox, stepping_every_batch(clear_every_batch=True))
    assert ids == ["step_every_batch"]
    checker = text.split("an update should apply")[0]  # the checker's lines, not the deck's
    assert "only the micro-batch just added (divided by 4)" in checker
    assert "small-batch training" in checker
    assert "partial sum" not in checker and "4 times" not in checker
    # the deck's general text tells both cases apart instead of asserting the other one
    assert "if zero_grad() runs after every step" in words(text)


async def test_a_schedule_sized_in_updates_stepped_per_micro_batch_ran_out_early(sandbox):
    code = loop(setup=schedule(IN_UPDATES), per_micro_batch="scheduler.step()")
    ids, text = await shown(sandbox, code)
    assert ids == ["scheduler_every_micro_batch"]
    assert "24 scheduler steps for 6 updates" in text
    assert "stopped changing at update 2 of 6" in text and "4x too early" in text


async def test_a_schedule_sized_in_micro_batches_stepped_per_micro_batch_ends_on_time(sandbox):
    code = loop(setup=schedule("len(dataloader)"), per_micro_batch="scheduler.step()")
    ids, text = await shown(sandbox, code)
    assert ids == ["scheduler_every_micro_batch"]
    assert "24 scheduler steps for 6 updates" in text
    assert "still changing at the last update" in text and "did not run out early" in text
    assert "too fast" not in text and "too early" not in text.split("a learning-rate")[0]
