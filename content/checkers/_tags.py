"""Inside the jailed child: the marks `_observe` puts on the learner's losses and model
outputs, so that the judge knows which data each backward() came from. Observation only."""

from __future__ import annotations

import math

import torch
from torch import nn


class Tap(torch.autograd.Function):
    """Identity on the loss; its backward reports the factor applied after criterion()."""

    @staticmethod
    def forward(ctx, loss, recorder, loss_id):
        ctx.recorder, ctx.loss_id = recorder, loss_id
        return loss.clone()

    @staticmethod
    def backward(ctx, grad):
        ctx.recorder.on_backward(ctx.loss_id, float(grad))
        return grad, None, None


class Rows(torch.autograd.Function):
    """Identity on a model output: marks, in the graph, which (batch, row) inputs it has."""

    @staticmethod
    def forward(ctx, output, rows):
        ctx.rows = rows
        return output.clone()

    @staticmethod
    def backward(ctx, grad):
        return grad, None


class Overflow(torch.autograd.Function):
    """Identity on the loss of the micro-batch an AMP scenario overflows: the loss stays
    finite, its gradient becomes inf or NaN, as a float16 gradient multiplied by too large
    a loss scale does. The judge predicts it (`_trace`), so a record cannot claim it."""

    @staticmethod
    def forward(ctx, loss):
        return loss.clone()

    @staticmethod
    def backward(ctx, grad):
        return torch.where(grad != 0, grad * math.inf, grad)  # a zero factor stays zero


MAX_NODES = 10_000  # graph nodes searched for the marks of one loss


def live_rows(tensor) -> list | None:
    """The rows of marked model outputs whose gradient reaches `tensor` (None: unknown)."""
    rows, seen, todo = [], set(), [getattr(tensor, "grad_fn", None)]
    while todo:
        node = todo.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        if len(seen) > MAX_NODES:
            return None
        if isinstance(node, Rows._backward_cls):
            rows.extend(node.rows)
            continue
        todo.extend(fn for fn, _ in node.next_functions)
    return rows


class Criterion(nn.MSELoss):
    def __init__(self, recorder):
        super().__init__()
        self._recorder = recorder

    def forward(self, input, target):
        loss = super().forward(input, target)
        if not loss.requires_grad:
            return loss
        recorder = self._recorder
        batch = recorder.identify(target, input)
        live = live_rows(input)
        if batch is not None and live is not None and (
                not live or sorted(live) == [[batch, r] for r in range(recorder.bs)]):
            return Tap.apply(overflowed(loss, [batch], recorder), recorder,
                             recorder.on_loss(batch))
        rows = recorder.rows_of(target)
        if rows and live and {tuple(r) for r in live} <= {tuple(r) for r in rows}:
            loss_id = recorder.on_rows(rows, live)
            return loss if loss_id is None else Tap.apply(
                overflowed(loss, [j for j, _ in live], recorder), recorder, loss_id)
        if batch is None:  # the judge cannot tell which data this loss came from
            return loss
        return Tap.apply(overflowed(loss, [batch], recorder), recorder,
                         recorder.on_loss(batch))


def overflowed(loss, batches: list[int], recorder):
    """The loss, whose gradient overflows if it reaches the scenario's overflowing batch."""
    return Overflow.apply(loss) if recorder.overflow in batches else loss
