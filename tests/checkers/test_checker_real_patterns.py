"""The train-loop checker on the patterns real training code uses (issue 12).

Each loop is written here, in this project's words, after a pattern found in public code:
clipping, LR schedules, gradient-side scaling, GradScaler, global step counters, nested
micro-step loops. A correct loop must pass however it is written; a buggy one must fail with
exactly the mistake that causes it.
"""

from __future__ import annotations

import pytest

pytest.importorskip("torch")

from content.checkers._observe import observe  # noqa: E402
from content.checkers.train_loop import check, judge, plan  # noqa: E402

EPOCH_LOOP = """\
import torch
{setup}
for epoch in range(num_epochs):
    optimizer.zero_grad()
    for i, (x, y) in enumerate(dataloader):
        loss = criterion(model(x), y){scale}
        loss.backward()
        {per_micro_batch}
        if (i + 1) % accumulation_steps == 0 or i + 1 == len(dataloader):
            {before_step}
            optimizer.step()
            {after_step}
            optimizer.zero_grad()
    {per_epoch}
"""


def loop(setup="", scale=" / accumulation_steps", per_micro_batch="pass",
         before_step="pass", after_step="pass", per_epoch="pass") -> str:
    return EPOCH_LOOP.format(setup=setup, scale=scale, per_micro_batch=per_micro_batch,
                             before_step=before_step, after_step=after_step,
                             per_epoch=per_epoch)


WARMUP = ("updates = num_epochs * -(-len(dataloader) // accumulation_steps)\n"
          "scheduler = torch.optim.lr_scheduler.LambdaLR(\n"
          "    optimizer, lambda u: min(1.0, (u + 1) / 3) * (1 - u / updates))")
CLIP_NORM = "torch.nn.utils.clip_grad_norm_(model.parameters(), 0.05)"

# Micro-batches drawn from num_epochs passes, as iteration-based trainers draw them.
STREAM = """\
import torch
def micro_batches():
    for _ in range(num_epochs):
        yield from dataloader
stream = micro_batches()
total = num_epochs * len(dataloader)
"""

CORRECT = {
    "clip_norm_once_per_window": loop(before_step=CLIP_NORM),
    "clip_value_once_per_window": loop(
        before_step="torch.nn.utils.clip_grad_value_(model.parameters(), 0.02)"),
    "clip_imported_by_name": loop(
        setup="from torch.nn.utils import clip_grad_norm_",
        before_step="clip_grad_norm_(model.parameters(), max_norm=0.05)"),
    "warmup_and_decay_per_update": loop(setup=WARMUP, after_step="scheduler.step()"),
    "cosine_schedule_per_update": loop(
        setup="scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, 20)",
        after_step="scheduler.step()"),
    "warmup_then_decay_two_schedulers_per_update": loop(
        setup="warm = torch.optim.lr_scheduler.LinearLR(optimizer, 0.5, total_iters=2)\n"
              "decay = torch.optim.lr_scheduler.ExponentialLR(optimizer, 0.9)",
        after_step="warm.step()\n            decay.step()"),
    "step_lr_per_epoch": loop(
        setup="scheduler = torch.optim.lr_scheduler.StepLR(optimizer, 1, gamma=0.5)",
        per_epoch="scheduler.step()"),
    "hand_written_schedule": loop(
        setup="updates = 0",
        before_step="for g in optimizer.param_groups:\n"
                    "                g['lr'] = learning_rate * 0.9 ** updates\n"
                    "            updates += 1"),
    "grad_scaler_on_the_cpu_unscale_then_clip": loop(
        setup="scaler = torch.amp.GradScaler('cpu')",
        per_micro_batch="pass  # backward above is replaced",
        before_step=f"scaler.unscale_(optimizer)\n            {CLIP_NORM}",
    ).replace("loss.backward()", "scaler.scale(loss).backward()").replace(
        "optimizer.step()", "scaler.step(optimizer)\n            scaler.update()"),
    "grad_scaler_on_the_cpu_steps_unscaled": loop(
        setup="scaler = torch.amp.GradScaler('cpu')",
    ).replace("loss.backward()", "scaler.scale(loss).backward()").replace(
        "optimizer.step()", "scaler.step(optimizer)\n            scaler.update()"),
    "autocast_bfloat16_on_the_cpu": loop().replace(
        "        loss = criterion(model(x), y) / accumulation_steps",
        "        with torch.autocast('cpu', dtype=torch.bfloat16):\n"
        "            loss = criterion(model(x), y) / accumulation_steps"),
    "gradients_scaled_instead_of_the_loss": loop(
        scale="", before_step="for p in model.parameters():\n"
                              "                p.grad /= len(window)",
        per_micro_batch="window.append(i)", after_step="window = []",
        setup="window = []"),
    "token_weighted_mean": """\
import torch
optimizer.zero_grad()
tokens = 0
for epoch in range(num_epochs):
    for i, (x, y) in enumerate(dataloader):
        (criterion(model(x), y) * y.numel()).backward()
        tokens += y.numel()
        if (i + 1) % accumulation_steps == 0 or i + 1 == len(dataloader):
            for p in model.parameters():
                p.grad.mul_(1 / tokens)
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
            tokens = 0
""",
    "nested_micro_steps_over_a_stream": STREAM + """\
for update in range(total // accumulation_steps):
    for micro in range(accumulation_steps):
        x, y = next(stream)
        loss = criterion(model(x), y) / accumulation_steps
        loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
""",
    "while_loop_with_a_global_counter": STREAM + """\
iteration = 0
while True:
    batch = next(stream, None)
    if batch is None:
        break
    iteration += 1
    x, y = batch
    (criterion(model(x), y) / accumulation_steps).backward()
    if iteration % accumulation_steps == 0:
        optimizer.step()
        model.zero_grad()
""",
    "global_counter_cleared_each_epoch": """\
last_update = -1
for epoch in range(num_epochs):
    optimizer.zero_grad()
    for i, (x, y) in enumerate(dataloader):
        seen = i + epoch * len(dataloader)
        (criterion(model(x), y) / accumulation_steps).backward()
        if seen - last_update >= accumulation_steps:
            optimizer.step()
            optimizer.zero_grad()
            last_update = seen
""",
    "global_counter_flushed_each_epoch": """\
seen = 0
for epoch in range(num_epochs):
    for i, (x, y) in enumerate(dataloader):
        seen += 1
        (criterion(model(x), y) / accumulation_steps).backward()
        if seen % accumulation_steps == 0 or i + 1 == len(dataloader):
            optimizer.step()
            optimizer.zero_grad()
""",
}

BUGGY = {
    "clip_every_micro_batch": (loop(per_micro_batch=CLIP_NORM), ["clip_every_micro_batch"]),
    "scheduler_every_micro_batch": (loop(setup=WARMUP, per_micro_batch="scheduler.step()"),
                                    ["scheduler_every_micro_batch"]),
    "clipping_and_zero_grad_every_batch": (
        loop(before_step=CLIP_NORM).replace(
            "        loss.backward()", "        optimizer.zero_grad()\n        loss.backward()"),
        ["zero_grad_every_batch"]),
    "clipping_and_no_loss_scaling": (loop(scale="", before_step=CLIP_NORM),
                                     ["no_loss_scaling"]),
    "clipping_and_step_every_batch": ("""\
import torch
for epoch in range(num_epochs):
    for i, (x, y) in enumerate(dataloader):
        (criterion(model(x), y) / accumulation_steps).backward()
        if (i + 1) % accumulation_steps == 0:
            torch.nn.utils.clip_grad_norm_(model.parameters(), 0.05)
        optimizer.step()
        optimizer.zero_grad()
""", ["step_every_batch"]),
    "schedule_and_no_loss_scaling": (loop(scale="", setup=WARMUP, after_step="scheduler.step()"),
                                     ["no_loss_scaling"]),
    "backward_only_on_the_windows_last_loss": (
        loop().replace("        loss.backward()\n", "").replace(
            "            pass\n            optimizer.step()",
            "            loss.backward()\n            optimizer.step()"),
        ["missing_backward"]),
    "global_counter_cleared_each_epoch_unscaled": (
        CORRECT["global_counter_cleared_each_epoch"].replace(" / accumulation_steps", ""),
        ["no_loss_scaling"]),
    "inverted_global_condition": ("""\
for epoch in range(num_epochs):
    for i, (x, y) in enumerate(dataloader):
        seen = epoch * len(dataloader) + i
        criterion(model(x), y).backward()
        if seen % accumulation_steps:
            optimizer.step()
            optimizer.zero_grad()
""", ["no_loss_scaling", "wrong_update_frequency"]),
    "global_counter_off_by_one": (
        CORRECT["while_loop_with_a_global_counter"].replace(
            "    iteration += 1\n", "").replace(
            "        model.zero_grad()\n", "        model.zero_grad()\n    iteration += 1\n"),
        ["off_by_one_modulo"]),
    "gradients_divided_by_batch_size": (
        loop(scale="", before_step="for p in model.parameters():\n"
                                   "                p.grad /= batch_size"),
        ["mismatched_scaling"]),
    "grad_scaler_without_loss_scaling": (
        CORRECT["grad_scaler_on_the_cpu_steps_unscaled"].replace(" / accumulation_steps", ""),
        ["no_loss_scaling"]),
}


@pytest.mark.parametrize("name", CORRECT)
def test_correct_real_world_patterns_pass(name):
    result = check(CORRECT[name])
    assert result["status"] == "ok", result
    assert (result["passed"], result["mistakes"], result["feedback"]) == (True, [], [])


@pytest.mark.parametrize("name", BUGGY)
def test_buggy_real_world_patterns_report_exactly_their_cause(name):
    code, expected = BUGGY[name]
    result = check(code)
    assert result["status"] == "ok" and not result["passed"], result
    assert result["mistakes"] == expected, result["feedback"]
    assert len(result["feedback"]) == len(expected)


def test_a_token_weighted_loop_that_leaks_its_partial_window_passes_with_the_warning():
    leaky = CORRECT["token_weighted_mean"].replace(" or i + 1 == len(dataloader)", "")
    result = check(leaky)
    assert result["passed"] and result["mistakes"] == ["leftover_gradients"]
    assert "held 4 micro-batches instead of 3" in result["feedback"][0]


def test_an_inverted_condition_names_the_skipped_batches():
    feedback = " ".join(check(BUGGY["inverted_global_condition"][0])["feedback"])
    assert "after every micro-batch except batches 1, 5, 9" in feedback
    assert "inverted" in feedback and "batch_size" not in feedback


def test_clipping_every_micro_batch_says_what_was_clipped():
    feedback = check(BUGGY["clip_every_micro_batch"][0])["feedback"][0]
    assert "held only batch 1 of epoch 1" in feedback and "batch 2's backward()" in feedback


def test_a_scheduler_stepped_per_micro_batch_says_how_often():
    feedback = check(BUGGY["scheduler_every_micro_batch"][0])["feedback"][0]
    assert "stepped 4 times before the update after batch 4" in feedback


def test_backward_on_the_last_loss_only_names_the_skipped_batches():
    feedback = check(BUGGY["backward_only_on_the_windows_last_loss"][0])["feedback"][0]
    assert "batches 1-3, 5-7, 9-11" in feedback and "used only batches 4, 8, 12" in feedback


def test_gradients_rescaled_by_hand_at_the_step_are_reported_without_an_id():
    code = loop(before_step="for p in model.parameters():\n"
                            "                p.grad *= 0.5")
    result = check(code)
    assert not result["passed"] and result["mistakes"] == []
    assert "multiplied by 0.5" in result["feedback"][0]


def test_a_fixed_learning_rate_other_than_the_given_one_is_reported_without_an_id():
    code = loop(setup="for g in optimizer.param_groups:\n    g['lr'] = 0.01")
    result = check(code)
    assert not result["passed"] and result["mistakes"] == []
    assert "learning rate 0.01" in result["feedback"][0]


def test_the_watch_on_torch_ends_with_the_check():
    import torch

    originals = (torch.nn.utils.clip_grad_norm_, torch.optim.lr_scheduler.LRScheduler.step,
                 torch.amp.autocast_mode.autocast.__init__)
    check(BUGGY["scheduler_every_micro_batch"][0])
    check("raise ValueError('stop')")
    assert originals == (torch.nn.utils.clip_grad_norm_,
                         torch.optim.lr_scheduler.LRScheduler.step,
                         torch.amp.autocast_mode.autocast.__init__)


def test_clipping_and_scheduler_ids_are_covered():
    assert {m for _, ids in BUGGY.values() for m in ids} >= {
        "clip_every_micro_batch", "scheduler_every_micro_batch"}


def test_a_global_counter_straddling_epochs_gets_no_leftover_warning():
    result = check(CORRECT["while_loop_with_a_global_counter"])
    assert result["passed"] and result["mistakes"] == []


# -- the judge does not take the child's word for a clip -------------------------------------
def _with_clip_before_each_step(observed: dict, transform) -> dict:
    for scenario in observed["scenarios"]:
        events = []
        for ev in scenario["events"]:
            if ev[0] == "S" and ev[2] is not None:
                after = transform(ev[2])
                events.append(["C", "norm", [True, True], 0.0, ev[2], after])
                ev = [ev[0], ev[1], after, ev[3], ev[4]]
            events.append(ev)
        scenario["events"] = events
    return observed


def test_a_claimed_clip_that_enlarges_the_gradients_is_not_explained():
    observed = observe(CORRECT["clip_norm_once_per_window"], plan())
    result = judge(_with_clip_before_each_step(observed, lambda g: [2 * v for v in g]))
    assert not result["passed"] and result["mistakes"] == []
    assert "clip_grad_norm_ does not" in result["feedback"][0]


def test_clipping_does_not_count_as_loss_scaling():
    # A clip that happens to shrink every update by accumulation_steps is still a clip:
    # with clipping off (or another max_norm) the loop is unscaled.
    shrink = ("torch.nn.utils.clip_grads_with_norm_(model.parameters(), 1.0, "
              "torch.tensor(float(accumulation_steps)))")
    result = check(loop(scale="", before_step=shrink))
    assert result["mistakes"] == ["no_loss_scaling"]


@pytest.mark.parametrize("event", [
    ["C", "norm", [True], 0.0, None, None],
    ["C", "sideways", [True, True], 0.0, None, None],
    ["C", "norm", [1, 0], 0.0, None, None],
    ["C", "value", [True, True], "big", None, None],
    ["R"],
    ["R", -1],
    ["R", "0"],
])
def test_malformed_clip_and_scheduler_events_are_refused(event):
    from content.checkers._trace import Malformed

    observed = observe(CORRECT["clip_norm_once_per_window"], plan())
    observed["scenarios"][0]["events"].insert(0, event)
    with pytest.raises(Malformed):
        judge(observed)
