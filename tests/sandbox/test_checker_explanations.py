"""Feedback true of the learner's code, on loops as real projects write them (issue 40.8).

Each loop goes through the real sandbox (the roomy one: an AMP check runs two scenarios of
a real GradScaler, which takes seconds on a busy machine), and what is checked is what the
learner reads: the checker's lines, then the deck's explanation of each id.
"""

from __future__ import annotations

import pytest

from bot.engine.code_judge import report_from
from content.loader import DeckLibrary

pytestmark = pytest.mark.asyncio(loop_scope="module")

CARDS = {"train_loop": "gradient-accumulation/train-loop",
         "amp_clip_loop": "gradient-accumulation/amp-clip-loop"}


async def shown(sandbox, code: str, checker: str = "train_loop"):
    """The report, and all the text the learner reads, in one string."""
    report = report_from(await sandbox.run(code, mode="check", checker=checker))
    library = DeckLibrary.load()
    deck = [library.mistake(CARDS[checker], m).explanation for m in report.mistakes]
    return report, " ".join([*report.feedback, *deck])


# -- a new iterator for every update ------------------------------------------------------
ISLICE_PER_UPDATE = """\
from itertools import islice
for epoch in range(num_epochs):
    for update in range(len(dataloader) // accumulation_steps):
        optimizer.zero_grad()
        for inputs, labels in islice(dataloader, accumulation_steps):
            loss = criterion(model(inputs), labels) / accumulation_steps
            loss.backward()
        optimizer.step()
"""


async def test_a_dataloader_restarted_for_every_update_is_its_own_mistake(roomy_sandbox):
    report, text = await shown(roomy_sandbox, ISLICE_PER_UPDATE)
    assert report.mistakes == ("restarted_iterator",) and not report.passed
    (line,) = report.feedback
    assert "started over from its first batch 6 times in 2 epochs" in line
    assert "every update trained on batches 1-4 again, and batches 5-12 never" in line
    # nothing tells it to fix a window condition: its windows close where they should
    assert "condition" not in line and "went over dataloader" not in text
    assert "never used" in text  # the deck's explanation of the mistake


# -- stepping every batch but each k-th, with `continue` ----------------------------------
CONTINUE_ON_WINDOW_END = """\
for epoch in range(num_epochs):
    optimizer.zero_grad()
    for i, (x, y) in enumerate(dataloader):
        loss = criterion(model(x), y) / accumulation_steps
        loss.backward()
        if (i + 1) % accumulation_steps == 0:
            continue
        optimizer.step()
        optimizer.zero_grad()
"""


async def test_a_step_skipped_with_continue_is_told_without_a_line_it_never_wrote(roomy_sandbox):
    report, text = await shown(roomy_sandbox, CONTINUE_ON_WINDOW_END)
    assert report.mistakes == ("wrong_update_frequency",)
    (line,) = report.feedback
    assert "after every micro-batch except batches 4, 8, 12" in line
    assert "the opposite of the window ends" in line
    assert "`" not in line and "if i % accumulation_steps" not in line


# -- undivided losses: the factor that happened -------------------------------------------
UNDIVIDED = """\
for epoch in range(num_epochs):
    optimizer.zero_grad()
    for i, (x, y) in enumerate(dataloader):
        {clear}loss = criterion(model(x), y)
        loss.backward()
        if {condition}:
            optimizer.step()
            optimizer.zero_grad()
"""
WINDOW_END = "(i + 1) % accumulation_steps == 0 or i + 1 == len(dataloader)"


@pytest.mark.parametrize("clear, condition, other", [
    ("optimizer.zero_grad()\n        ", WINDOW_END, "zero_grad_every_batch"),
    ("", "True", "step_every_batch"),
])
async def test_an_update_of_one_undivided_micro_batch_is_not_told_4x(roomy_sandbox, clear,
                                                                     condition, other):
    code = UNDIVIDED.format(clear=clear, condition=condition)
    report, _ = await shown(roomy_sandbox, code)
    assert report.mistakes == ("no_loss_scaling", other)
    scaling = report.feedback[0]
    assert "each update held one micro-batch" in scaling and "undivided (1x)" in scaling
    assert "too large" not in scaling


async def test_updates_of_whole_windows_undivided_are_told_4x(roomy_sandbox):
    report, _ = await shown(roomy_sandbox, UNDIVIDED.format(clear="", condition=WINDOW_END))
    assert report.mistakes == ("no_loss_scaling",)
    assert report.feedback == ("the loss was not divided by accumulation_steps (4), so every "
                               "update used gradients 4x too large",)


# -- AMP: the overflow is in the scaled gradient, not the loss ----------------------------
AMP_LOOP = """\
import math
import sys
import torch
for epoch in range(num_epochs):
    optimizer.zero_grad()
    for i, (x, y) in enumerate(dataloader):
        loss = criterion(model(x), y)
        {guard}
        scaler.scale(loss / accumulation_steps).backward()
{per_micro_batch}        if (i + 1) % accumulation_steps == 0 or i + 1 == len(dataloader):
{per_window}            optimizer.zero_grad()
"""
UPDATE = ["scaler.unscale_(optimizer)",
          "torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)",
          "scaler.step(optimizer)", "scaler.update()"]


def amp_loop(guard: str, every_micro_batch: bool) -> str:
    lines = "".join(f"{' ' * (8 if every_micro_batch else 12)}{u}\n" for u in UPDATE)
    return AMP_LOOP.format(guard=guard, per_micro_batch=lines if every_micro_batch else "",
                           per_window="" if every_micro_batch else lines)


async def test_a_correct_amp_loop_guarding_its_loss_passes(roomy_sandbox):
    """ConvNeXt's guard: the overflowing micro-batch's loss is finite, as in float16."""
    code = amp_loop("assert math.isfinite(loss.item()), 'Loss is not finite'", False)
    report, _ = await shown(roomy_sandbox, code, "amp_clip_loop")
    assert report.passed and report.mistakes == () and report.status == "ok", report.feedback


async def test_a_loss_guard_that_exits_does_not_hide_the_loops_mistake(roomy_sandbox):
    code = amp_loop("if not math.isfinite(loss.item()):\n            sys.exit(1)", True)
    report, text = await shown(roomy_sandbox, code, "amp_clip_loop")
    assert report.status == "ok" and not report.passed
    assert report.mistakes == ("unscale_and_step_every_micro_batch",)
    assert "SystemExit" not in text


NORM_GUARD = """\
import math
for epoch in range(num_epochs):
    optimizer.zero_grad()
    for i, (x, y) in enumerate(dataloader):
        scaler.scale(criterion(model(x), y)).backward()
        if (i + 1) % accumulation_steps == 0 or i + 1 == len(dataloader):
            scaler.unscale_(optimizer)
            norm = torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
            if not math.isfinite(norm):
                raise SystemExit(1)
            scaler.step(optimizer)
            scaler.update()
            optimizer.zero_grad()
"""


async def test_a_guard_that_stops_at_the_overflow_is_told_in_words(roomy_sandbox):
    report, _ = await shown(roomy_sandbox, NORM_GUARD, "amp_clip_loop")
    assert report.status == "error" and not report.passed
    stop, needless, other = report.feedback
    assert stop.startswith("line 10: in the scenario where batch 5's gradient overflows")
    assert "its loss stays finite), the code stopped itself (`SystemExit: 1`)" in stop
    assert "scaler.step(optimizer) skips an update whose gradients hold inf or NaN" in needless
    # what the scenario that ran to its end found: the loss was never divided
    assert report.mistakes == ("no_loss_scaling",)
    assert other.startswith("in the scenario before it, which has no overflow and ran to its "
                            "end: the loss was not divided by accumulation_steps (4)")
