"""Losses not computed on one micro-batch (issue 24): judged by the update they make.

Written here after two patterns of public training code, in this project's own words:
- open_clip's `accum_freq`: each micro-batch's model outputs are first cached under
  no_grad; at the window's end, the forward pass of each micro-batch j is run again with
  gradient, its rows put back among the cached ones, and the loss is taken over the whole
  window (a contrastive loss needs every row), then backpropagated. Only j's rows carry
  gradient, so the window's backward() calls add up to the large-batch gradient, without
  dividing by accumulation_steps.
- a batch split into chunks (`for chunk in batch.split(size)`), each chunk's loss weighted
  by its share of the batch, one step per batch: here the batch is the window's
  micro-batches put together, and the chunks do not fall on micro-batch boundaries.
A loop whose updates are the large-batch ones passes; each buggy variant fails with the
mistake that explains it.
"""

from __future__ import annotations

import pytest

pytest.importorskip("torch")

from content.checkers import amp_clip_loop, train_loop  # noqa: E402
from content.checkers._observe import observe  # noqa: E402
from content.checkers._trace import Malformed  # noqa: E402

FEATURE_CACHE = """\
import torch
for epoch in range(num_epochs):
    cached_inputs, cached_targets, cached_outputs = [], [], []
    for i, (inputs, targets) in enumerate(dataloader):
        with torch.no_grad():
            cached_outputs.append(model(inputs))  # first pass: no graph kept
        cached_inputs.append(inputs)
        cached_targets.append(targets)
        if (i + 1) % accumulation_steps > 0:
            continue
        optimizer.zero_grad()
        window_targets = torch.cat(cached_targets)
        for j in range(accumulation_steps):
            outputs = model(cached_inputs[j])  # j's forward again, with gradient
            window = torch.cat(cached_outputs[:j] + [outputs] + cached_outputs[j + 1:])
            loss = criterion(window, window_targets)
            {backward}
        {step}
        cached_inputs, cached_targets, cached_outputs = [], [], []
"""
PLAIN = {"backward": "loss.backward()", "step": "optimizer.step()"}
AMP = {"backward": "scaler.scale(loss).backward()",
       "step": "scaler.unscale_(optimizer)\n"
               "        torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)\n"
               "        scaler.step(optimizer)\n"
               "        scaler.update()"}

CHUNKED = """\
import torch
chunk = 2  # samples per forward pass: what fits in memory, not a micro-batch
for epoch in range(num_epochs):
    xs, ys = [], []
    for i, (inputs, targets) in enumerate(dataloader):
        xs.append(inputs)
        ys.append(targets)
        if len(xs) < accumulation_steps and i + 1 < len(dataloader):
            continue
        batch_x, batch_y = torch.cat(xs), torch.cat(ys)
        xs, ys = [], []
        optimizer.zero_grad()
        for x, y in zip(batch_x.split(chunk), batch_y.split(chunk)):
            loss = criterion(model(x), y) * len(y) / len(batch_y)
            loss.backward()
        optimizer.step()
"""


def feature_cache(**parts: str) -> str:
    return FEATURE_CACHE.format(**{**PLAIN, **parts})


def edit(code: str, old: str, new: str) -> str:
    assert old in code, old
    return code.replace(old, new)


CORRECT = {
    "feature_cache": (train_loop, feature_cache()),
    "feature_cache_amp": (amp_clip_loop, feature_cache(**AMP)),
    "chunked_window": (train_loop, CHUNKED),
    "chunked_micro_batches": (train_loop, """\
import torch
for epoch in range(num_epochs):
    optimizer.zero_grad()
    for i, (inputs, targets) in enumerate(dataloader):
        for x, y in zip(inputs.chunk(2), targets.chunk(2)):
            share = len(y) / len(targets)
            (criterion(model(x), y) * share / accumulation_steps).backward()
        if (i + 1) % accumulation_steps == 0 or i + 1 == len(dataloader):
            optimizer.step()
            optimizer.zero_grad()
"""),
}

BUGGY = {
    # The window's loss is already a mean over its rows: dividing again shrinks it k times.
    "feature_cache_divided_again": (
        train_loop, feature_cache(backward="(loss / accumulation_steps).backward()"),
        ["mismatched_scaling"], "divided by 16 where it should be divided by accumulation_"),
    "feature_cache_backward_of_the_last_only": (
        train_loop, edit(feature_cache(), "            loss.backward()\n",
                         "        loss.backward()\n"),
        ["missing_backward"], "the loss of batches 1-3, 5-7, 9-11 was computed but"),
    "feature_cache_never_cleared": (
        train_loop, edit(feature_cache(), "        optimizer.zero_grad()\n", ""),
        ["missing_zero_grad"], "applied batches 1-4 again"),
    "feature_cache_amp_optimizer_step": (
        amp_clip_loop, edit(feature_cache(**AMP), "scaler.step(optimizer)", "optimizer.step()"),
        ["optimizer_step_instead_of_scaler_step"], "optimizer.step() was called directly"),
    # Each chunk's mean divided by k: the chunks are not micro-batches.
    "chunk_divided_by_accumulation_steps": (
        train_loop, edit(CHUNKED, "* len(y) / len(batch_y)", "/ accumulation_steps"),
        ["mismatched_scaling"], "multiplied by 0.375 where it should be divided by"),
    "chunk_not_weighted": (
        train_loop, edit(CHUNKED, " * len(y) / len(batch_y)", ""),
        ["mismatched_scaling"], "the gradients were 6x too large"),
}
UNEXPLAINED = {
    "last_chunk_dropped": (
        edit(CHUNKED, "zip(batch_x.split(chunk), batch_y.split(chunk))",
             "list(zip(batch_x.split(chunk), batch_y.split(chunk)))[:-1]"),
        "got batch 4 (epoch 1) in pieces, and samples 2, 3 of its 3 never went through"),
    "a_chunk_twice": (
        edit(CHUNKED, "            loss.backward()\n",
             "            loss.backward()\n            if len(y) == 1:\n"
             "                (criterion(model(x), y) * len(y) / len(batch_y)).backward()\n"),
        "went through backward() twice"),
}


@pytest.mark.parametrize("name", CORRECT)
def test_a_loop_making_the_large_batch_updates_passes(name):
    checker, code = CORRECT[name]
    assert checker.check(code) == {"status": "ok", "passed": True, "mistakes": [],
                                   "feedback": [], "error": None}


@pytest.mark.parametrize("name", BUGGY)
def test_a_buggy_variant_fails_with_its_mistake(name):
    checker, code, mistakes, fragment = BUGGY[name]
    result = checker.check(code)
    assert (result["passed"], result["mistakes"]) == (False, mistakes), result["feedback"]
    assert fragment in result["feedback"][0]


@pytest.mark.parametrize("name", UNEXPLAINED)
def test_samples_missing_or_repeated_in_pieces_fail_with_what_happened(name):
    code, fragment = UNEXPLAINED[name]
    result = train_loop.check(code)
    assert not result["passed"] and result["mistakes"] == []
    assert fragment in result["feedback"][0]


def test_only_the_rerun_micro_batchs_rows_are_live():
    """The observer marks which rows carry gradient: in the feature cache, each loss is
    over the window's 12 rows and only the rerun micro-batch's 3 reach the weights."""
    events = observe(feature_cache(), train_loop.plan())["scenarios"][0]["events"]
    rows = [e for e in events if e[0] == "P"]
    assert len(rows) == 2 * 12  # 4 per window, 3 windows, 2 epochs
    assert all(len(e[1]) == 12 and len(e[2]) == 3 for e in rows)
    assert [sorted({j for j, _ in e[2]}) for e in rows[:4]] == [[0], [1], [2], [3]]


@pytest.mark.parametrize("forged", [
    ["P", [], [[0, 0]], None], ["P", [[0, 0]], [], None], ["P", [[0, 99]], [[0, 0]], None],
    ["P", [[0, 0]] * 1001, [[0, 0]], None], ["P", [[0, 0, 0]], [[0, 0]], None],
    ["P", "rows", [[0, 0]], None]])
def test_forged_rows_are_refused(forged):
    observed = observe(CHUNKED, train_loop.plan())
    events = observed["scenarios"][0]["events"]
    at = next(i for i, e in enumerate(events) if e[0] == "P")
    forged[3] = events[at][3]
    events[at] = forged
    with pytest.raises(Malformed):
        train_loop.judge(observed)


def test_the_judges_work_on_rows_is_bounded():
    """A record of losses over more rows than any loop of these scenarios makes is refused
    (each row costs the judge a gradient), and the observer stops noting them before."""
    from content.checkers._bounds import MAX_ROWS_TOTAL

    observed = observe(feature_cache(), train_loop.plan())
    events = observed["scenarios"][0]["events"]
    at = next(i for i, e in enumerate(events) if e[0] == "P")
    big = ["P", [[0, 0]] * 1000, [[0, 0]] * 1000, events[at][3]]
    events[at:at] = [list(big) for _ in range(MAX_ROWS_TOTAL // 2000 + 1)]
    with pytest.raises(Malformed, match="rows of losses"):
        train_loop.judge(observed)
