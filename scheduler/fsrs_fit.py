"""Fit FSRS-6's 21 parameters to a review log (scheduler/evaluation.py's "FSRS-6 fitted").

The procedure is py-fsrs's `fsrs.Optimizer.compute_optimal_parameters` (6.3.2), which is
srs-benchmark's for FSRS-6 (models/fsrs_v6.py) without its pretraining of the first four:
start from the default parameters; Adam, learning rate 0.04 on a cosine schedule; mini-batches
of about 512 scored reviews; 5 epochs; after every step the parameters are clamped to
py-fsrs's bounds; the epoch whose parameters give the lowest loss on the whole training set
wins; too few reviews to fill one batch (512) and the defaults are returned. From
srs-benchmark's FSRS-6 comes the penalty that keeps parameters near the defaults (gamma 1,
each parameter's spread across its 10,000 users as the scale), which matters on small logs.

Three differences, each for speed or for the product's calendar:

- the memory states are computed for a whole mini-batch of cards at once (tensors over
  cards, a step per review), where py-fsrs steps one review at a time: the same formulas
  (tests hold `predict` to py-fsrs's, through scheduler/fsrs_review.py, on the public log):
  a fit on the public log's first ~4,400 scored reviews takes ~3 s on two cores;
- the cards are sorted by length into batches and the batches shuffled each epoch (py-fsrs
  shuffles cards), so a batch pads little;
- time is whole days as scheduler/fsrs_review.py counts it: a review less than a day after
  the last one moves short-term stability, as py-fsrs's scheduler without learning steps
  does. Only the first 64 reviews of a card are trained on (py-fsrs's max_seq_len).

torch is imported when a fit or a prediction runs, never with this module.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from random import Random

from fsrs.scheduler import (
    DEFAULT_PARAMETERS,
    LOWER_BOUNDS_PARAMETERS,
    STABILITY_MIN,
    UPPER_BOUNDS_PARAMETERS,
)

__all__ = ["EPOCHS", "FitSequence", "fit", "predict"]

EPOCHS = 5
BATCH_SIZE = 512
LEARNING_RATE = 4e-2
MAX_LEN = 64
GAMMA = 1.0
# srs-benchmark models/fsrs_v6.py `default_params_stddev_tensor`: how far each parameter
# strays from its default across the benchmark's users (the penalty's scale).
STDDEV = (6.43, 9.66, 17.58, 27.85, 0.57, 0.28, 0.6, 0.12, 0.39, 0.18, 0.33, 0.3, 0.09,
          0.16, 0.57, 0.25, 1.03, 0.31, 0.32, 0.14, 0.27)


@dataclass(frozen=True, slots=True)
class FitSequence:
    """One card's reviews in order: days since the card's previous review (the first: 0),
    FSRS ratings 1..4, recalled or not, and whether each review's prediction is scored (a
    review on a later day than the previous one, in the training part)."""

    elapsed: tuple[int, ...]
    ratings: tuple[int, ...]
    recalled: tuple[bool, ...]
    scored: tuple[bool, ...]


def _tensors(batch: Sequence[FitSequence], length: int):
    import torch

    rows = len(batch)
    elapsed = torch.ones((rows, length), dtype=torch.float64)
    ratings = torch.full((rows, length), 3, dtype=torch.long)
    valid = torch.zeros((rows, length), dtype=torch.bool)
    labels = torch.zeros((rows, length), dtype=torch.float64)
    scored = torch.zeros((rows, length), dtype=torch.bool)
    for row, seq in enumerate(batch):
        n = min(length, len(seq.ratings))
        elapsed[row, :n] = torch.tensor(seq.elapsed[:n], dtype=torch.float64)
        ratings[row, :n] = torch.tensor(seq.ratings[:n])
        valid[row, :n] = True
        labels[row, :n] = torch.tensor(seq.recalled[:n], dtype=torch.float64)
        scored[row, :n] = torch.tensor(seq.scored[:n])
    scored[:, 0] = False
    return elapsed, ratings, valid, labels, scored


def _forward(w, elapsed, ratings, valid):
    """The predicted recall before every review ([cards, length]; column 0, the first
    review, is 0): py-fsrs 6.3.2's formulas (Scheduler._initial_stability ... _next_difficulty)
    on tensors, step by step. What depends on the ratings alone is computed for every step
    at once, before the loop."""
    import torch

    decay = -w[20]
    factor = 0.9 ** (1 / decay) - 1
    first = ratings[:, 0]
    s = w[first - 1].clamp(min=STABILITY_MIN)
    d = (w[4] - torch.exp(w[5] * (first - 1)) + 1).clamp(1, 10)
    easy_d0 = w[7] * (w[4] - torch.exp(w[5] * 3) + 1)
    # per review: short-term growth's rating part, Hard's penalty and Easy's bonus, the
    # difficulty step, which branch
    short_gain = torch.exp(w[17] * (ratings - 3 + w[18]))
    bonus = torch.where(ratings == 2, w[15], 1.0) * torch.where(ratings == 4, w[16], 1.0)
    d_step = -w[6] * (ratings - 3) / 9
    at_least_hard = ratings >= 2
    short_term, recalled = elapsed < 1, ratings > 1
    growth, forget_cap = torch.exp(w[8]), torch.exp(w[17] * w[18])
    predictions = [torch.zeros_like(s)]
    for t in range(1, ratings.shape[1]):
        r = (1 + factor * elapsed[:, t] / s) ** decay
        predictions.append(r)
        sinc = short_gain[:, t] * s ** -w[19]
        short = s * torch.where(at_least_hard[:, t], sinc.clamp(min=1.0), sinc)
        recall = s * (1 + growth * (11 - d) * s ** -w[9] * (torch.exp((1 - r) * w[10]) - 1)
                      * bonus[:, t])
        forget = torch.minimum(
            w[11] * d ** -w[12] * ((s + 1) ** w[13] - 1) * torch.exp((1 - r) * w[14]),
            s / forget_cap)
        new_s = torch.where(short_term[:, t], short, torch.where(recalled[:, t], recall, forget))
        new_d = easy_d0 + (1 - w[7]) * (d + (10 - d) * d_step[:, t])
        v = valid[:, t]
        s = torch.where(v, new_s.clamp(min=STABILITY_MIN), s)
        d = torch.where(v, new_d.clamp(1, 10), d)
    return torch.stack(predictions, dim=1)


def predict(sequences: Sequence[FitSequence],
            parameters: Sequence[float] = DEFAULT_PARAMETERS) -> list[list[float]]:
    """Every review's predicted recall (the first of each card: 0), through the tensor code
    `fit` trains: tests hold it to scheduler/fsrs_review.py."""
    import torch

    if not sequences:
        return []
    length = max(len(s.ratings) for s in sequences)
    elapsed, ratings, valid, _, _ = _tensors(sequences, length)
    with torch.no_grad():
        p = _forward(torch.tensor(parameters, dtype=torch.float64), elapsed, ratings, valid)
    return [p[i, :len(s.ratings)].tolist() for i, s in enumerate(sequences)]


def _batches(sequences: Sequence[FitSequence], batch_size: int) -> list[list[FitSequence]]:
    """Cards sorted by length, cut where a batch has ``batch_size`` scored reviews."""
    batches, batch, count = [], [], 0
    for seq in sorted(sequences, key=lambda s: len(s.ratings)):
        batch.append(seq)
        count += sum(seq.scored[1:MAX_LEN])
        if count >= batch_size:
            batches.append(batch)
            batch, count = [], 0
    if batch:
        batches.append(batch)
    return batches


def fit(sequences: Sequence[FitSequence], *, epochs: int = EPOCHS,
        batch_size: int = BATCH_SIZE, seed: int = 42) -> tuple[float, ...]:
    """FSRS-6 parameters fitted to ``sequences``' scored reviews (see the module's
    docstring); the defaults when fewer than ``batch_size`` reviews are scored."""
    import torch

    sequences = [s for s in sequences if any(s.scored[1:MAX_LEN])]
    total = sum(sum(s.scored[1:MAX_LEN]) for s in sequences)
    if total < batch_size:
        return tuple(DEFAULT_PARAMETERS)
    prepared = []
    for batch in _batches(sequences, batch_size):
        length = min(MAX_LEN, max(len(s.ratings) for s in batch))
        elapsed, ratings, valid, labels, scored = _tensors(batch, length)
        prepared.append((elapsed, ratings, valid, labels, scored, int(scored.sum())))
    start = torch.tensor(DEFAULT_PARAMETERS, dtype=torch.float64)
    lower = torch.tensor(LOWER_BOUNDS_PARAMETERS, dtype=torch.float64)
    upper = torch.tensor(UPPER_BOUNDS_PARAMETERS, dtype=torch.float64)
    scale = torch.tensor(STDDEV, dtype=torch.float64) ** 2
    w = start.clone().requires_grad_(True)
    adam = torch.optim.Adam([w], lr=LEARNING_RATE)
    cosine = torch.optim.lr_scheduler.CosineAnnealingLR(adam, T_max=len(prepared) * epochs)
    bce = torch.nn.functional.binary_cross_entropy

    def loss_of(params, batch) -> torch.Tensor:
        elapsed, ratings, valid, labels, scored, count = batch
        p = _forward(params, elapsed, ratings, valid)[scored]
        penalty = GAMMA * torch.sum((params - start) ** 2 / scale) * count / total
        return (bce(p, labels[scored], reduction="sum") + penalty) / count

    rng = Random(seed)
    best, best_loss = tuple(DEFAULT_PARAMETERS), math.inf
    for _ in range(epochs):
        order = list(range(len(prepared)))
        rng.shuffle(order)
        for index in order:
            adam.zero_grad()
            loss_of(w, prepared[index]).backward()
            adam.step()
            cosine.step()
            with torch.no_grad():
                w.clamp_(min=lower, max=upper)
        with torch.no_grad():
            params = w.detach().clone()
            epoch_loss = sum(float(loss_of(params, b)) * b[5] for b in prepared) / total
        if epoch_loss < best_loss:
            best, best_loss = tuple(params.tolist()), epoch_loss
    return best
