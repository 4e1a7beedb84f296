"""Gradient clipping written by hand is judged by the update, like torch's (issue 24).

fairseq >= 0.10 normalises the summed gradients in place (multiply_grads) and clips with its
own function: the total norm of every .grad, then each .grad multiplied in place by
min(1, max_norm / (norm + eps)). That is a correct loop; a hand-written clip that is not a
clip to one max_norm of the window's gradient fails.
"""

from __future__ import annotations

import pytest

pytest.importorskip("torch")

from content.checkers.train_loop import check  # noqa: E402

FAIRSEQ = """\
import torch
def clip_grad_norm_(params, max_norm, eps=1e-6):
    grads = [p.grad for p in params if p.grad is not None]
    total = torch.norm(torch.stack([torch.norm(g, 2) for g in grads]), 2)
    coef = (max_norm / (total + eps)).clamp(max=1)
    for g in grads:
        g.mul_(coef)
    return total
for epoch in range(num_epochs):
    optimizer.zero_grad()
    sample_size = 0
    for i, (x, y) in enumerate(dataloader):
        loss = criterion(model(x), y)
        loss.backward()
        sample_size += 1
        if (i + 1) % accumulation_steps == 0 or i + 1 == len(dataloader):
            for p in model.parameters():
                p.grad.mul_(1 / sample_size)
            clip_grad_norm_(list(model.parameters()), {max_norm})
            optimizer.step()
            optimizer.zero_grad()
            sample_size = 0
"""


# 0.3 clips every update, 1.6 some of them, 100 none (the window gradients' norms are 1-4.5)
@pytest.mark.parametrize("max_norm", ["0.3", "1.6", "100"])
def test_fairseqs_own_clip_after_normalising_passes(max_norm):
    result = check(FAIRSEQ.format(max_norm=max_norm))
    assert (result["passed"], result["mistakes"]) == (True, []), result["feedback"]


def test_the_same_clip_with_a_threshold_that_changes_per_update_fails():
    result = check(FAIRSEQ.format(max_norm="0.3 * (1 + i)"))
    assert not result["passed"] and result["mistakes"] == ["mismatched_scaling"]


def test_a_clip_by_hand_that_also_enlarges_small_gradients_fails():
    code = FAIRSEQ.format(max_norm="2.0").replace(".clamp(max=1)", "")
    result = check(code)
    assert not result["passed"] and result["mistakes"] == ["mismatched_scaling"]


def test_a_clip_by_hand_after_every_backward_fails():
    code = FAIRSEQ.format(max_norm="0.3").replace(
        "        sample_size += 1\n",
        "        sample_size += 1\n        clip_grad_norm_(list(model.parameters()), 0.3)\n")
    result = check(code)
    assert not result["passed"] and "mismatched_scaling" in result["mistakes"]
