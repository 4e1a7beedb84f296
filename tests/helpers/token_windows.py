"""Padded language-model windows for the token-loss claims in tests/deck_claims/: a tiny
float64 model, micro-batches of sequences padded with -100 labels, the accumulated
gradient of a per-micro-batch loss and the gradient of the window's per-token mean."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

VOCAB, LENGTH, SEQS, K, PAD = 11, 12, 4, 4, -100
# Non-padding tokens of each sequence: four micro-batches of 4 sequences each, padded to 12.
LENGTHS = [[12, 12, 11, 12], [3, 2, 4, 3], [12, 10, 9, 12], [5, 6, 2, 4]]


def lm() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Embedding(VOCAB, 8), nn.Linear(8, VOCAB)).double()


def padded_window(lengths=LENGTHS, seed: int = 3) -> list[tuple[torch.Tensor, torch.Tensor]]:
    g = torch.Generator().manual_seed(seed)
    window = []
    for row_lengths in lengths:
        x = torch.randint(0, VOCAB, (len(row_lengths), LENGTH), generator=g)
        y = torch.randint(0, VOCAB, (len(row_lengths), LENGTH), generator=g)
        for row, n in enumerate(row_lengths):
            y[row, n:] = PAD
        window.append((x, y))
    return window


def token_loss(model, x, y, reduction: str) -> torch.Tensor:
    return F.cross_entropy(model(x).transpose(1, 2), y, ignore_index=PAD, reduction=reduction)


def tokens(y: torch.Tensor) -> int:
    return int((y != PAD).sum())


def accumulated(window, loss_of) -> torch.Tensor:
    """The .grad after one backward() per micro-batch of `loss_of(model, x, y)`."""
    model = lm()
    for x, y in window:
        loss_of(model, x, y).backward()
    return torch.cat([p.grad.flatten() for p in model.parameters()])


def window_mean_grad(window) -> torch.Tensor:
    """The gradient of the mean cross-entropy over every non-padding token of the window."""
    model = lm()
    x = torch.cat([x for x, _ in window])
    y = torch.cat([y for _, y in window])
    token_loss(model, x, y, "mean").backward()
    return torch.cat([p.grad.flatten() for p in model.parameters()])
