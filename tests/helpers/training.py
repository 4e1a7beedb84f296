"""The training loop and models behind tests/deck_claims/: each test there runs torch to
check one claim the gradient-accumulation deck (content/decks/gradient-accumulation.yaml)
makes about optimizer and autograd behaviour.

Everything is seeded and runs in float64 on the CPU, so "equal" means equal up to float64
rounding of a different summation order (or exactly equal where a test says torch.equal).

One shared helper, `train`, runs a training loop over a list of micro-batches with the
knobs the deck talks about (loss scale, window condition, when to step / zero_grad / clip /
step the scheduler, flushing the partial last window, GradScaler) and records what the
optimizer saw at every step.

A "probe" model (`probe_model`) makes windows visible: micro-batch i is the one-hot vector
e_i and the loss is the model's output, so the gradient of micro-batch i is exactly
loss_scale * e_i whatever the weights are. The gradient present at a step then reads as the
list of micro-batches in that window.
"""


from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import torch
from torch import nn
from torch.nn.utils import clip_grad_norm_, parameters_to_vector
from torch.utils.data import DataLoader, TensorDataset

DT = torch.float64
Batch = tuple[torch.Tensor, torch.Tensor]




def linear_model(seed: int = 0) -> nn.Module:
    torch.manual_seed(seed)
    return nn.Linear(4, 2).to(DT)


def mlp(seed: int = 0) -> nn.Module:
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 2)).to(DT)


def bn_mlp(seed: int = 0) -> nn.Module:
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.Tanh(), nn.Linear(8, 2)).to(DT)


def probe_model(n: int) -> nn.Module:
    """Linear(n, 1) without bias, weights zero: with one-hot inputs and loss = output, the
    gradient of micro-batch i is e_i (times the loss scale), independent of the weights."""
    model = nn.Linear(n, 1, bias=False).to(DT)
    nn.init.zeros_(model.weight)
    return model


def probe_batches(n: int) -> list[Batch]:
    eye = torch.eye(n, dtype=DT)
    return [(eye[i : i + 1], torch.zeros(1, 1, dtype=DT)) for i in range(n)]


def probe_loss(out: torch.Tensor, _target: torch.Tensor) -> torch.Tensor:
    return out.sum()


def make_batches(sizes: Sequence[int], seed: int = 1) -> list[Batch]:
    """Regression micro-batches with the given numbers of samples (4 features, 2 targets)."""
    g = torch.Generator().manual_seed(seed)
    return [
        (torch.randn(b, 4, generator=g, dtype=DT), torch.randn(b, 2, generator=g, dtype=DT))
        for b in sizes
    ]


def concat(batches: Sequence[Batch]) -> list[Batch]:
    """The same samples as one big batch."""
    return [(torch.cat([x for x, _ in batches]), torch.cat([y for _, y in batches]))]


def make_optimizer(name: str, params, lr: float, **kwargs) -> torch.optim.Optimizer:
    cls = {"sgd": torch.optim.SGD, "adam": torch.optim.Adam, "adamw": torch.optim.AdamW}[name]
    return cls(params, lr=lr, **kwargs)


def flat(model: nn.Module) -> torch.Tensor:
    return parameters_to_vector(model.parameters()).detach().clone()


def flat_grad(model: nn.Module) -> torch.Tensor:
    return torch.cat([p.grad.reshape(-1) for p in model.parameters()]).detach().clone()


@dataclass
class Result:
    model: nn.Module
    optimizer: torch.optim.Optimizer
    w0: torch.Tensor
    w: torch.Tensor
    # .grad seen by each step() (None when a parameter's .grad is None)
    step_grads: list[torch.Tensor | None] = field(default_factory=list)
    step_after: list[int] = field(default_factory=list)  # 1-based micro-batch of each step
    lrs: list[float] = field(default_factory=list)  # lr after each micro-batch
    step_lrs: list[float] = field(default_factory=list)  # lr used by each step()
    scheduler: object | None = None

    @property
    def update(self) -> torch.Tensor:
        return self.w - self.w0


def train(
    batches: Sequence[Batch],
    *,
    k: int,
    model: nn.Module | None = None,
    opt: str = "sgd",
    lr: float = 0.1,
    opt_kwargs: dict | None = None,
    loss_fn: Callable = nn.functional.mse_loss,
    loss_scale: float | None = None,  # None: 1 / k (the correct scaling)
    weight_by_samples: bool = False,  # sum-reduced loss / samples in the window
    condition: str = "correct",  # "correct": (i + 1) % k == 0, "off_by_one": i % k == 0
    flush_last: bool = True,  # also step on the last micro-batch of an epoch
    # backward(): "micro" (every micro-batch), "window_end" (only on the window's last one),
    # "after_step" (after the window's step()/zero_grad()) or "never"
    backward_at: str = "micro",
    step_at: str = "window",  # "window" or "micro" (step after every micro-batch)
    # zero_grad(): "window" (after step), "micro" (before every backward) or "never"
    zero_grad_at: str = "window",
    zero_grad_each_epoch: bool = True,
    clip: float | None = None,
    # clip: "window" (once, before step), "micro" (after every backward), "after_step"
    clip_at: str = "window",
    scheduler: Callable | None = None,  # optimizer -> LRScheduler
    # scheduler.step(): "window" (after optimizer.step()), "before_step" or "micro"
    scheduler_at: str = "window",
    scaler: torch.amp.GradScaler | None = None,
    unscale_before_clip: bool = True,
    autocast: bool = False,  # CPU autocast to bfloat16 around the forward pass
    epochs: int = 1,
) -> Result:
    """Run a gradient-accumulation loop over `batches` and report what happened."""
    model = model if model is not None else linear_model()
    optimizer = make_optimizer(opt, model.parameters(), lr, **(opt_kwargs or {}))
    sched = scheduler(optimizer) if scheduler else None
    scale = 1.0 / k if loss_scale is None else loss_scale
    res = Result(model, optimizer, w0=flat(model), w=flat(model), scheduler=sched)
    counter = {"micro": 0}

    def record(optim, args, kwargs):
        none = any(p.grad is None for p in model.parameters())
        res.step_grads.append(None if none else flat_grad(model))
        res.step_after.append(counter["micro"])
        res.step_lrs.append(optim.param_groups[0]["lr"])

    optimizer.register_step_pre_hook(record)
    n = len(batches)

    def window_end(i: int) -> bool:
        hit = (i + 1) % k == 0 if condition == "correct" else i % k == 0
        return hit or (flush_last and i + 1 == n)

    def clip_now():
        if scaler is not None and unscale_before_clip:
            scaler.unscale_(optimizer)
        clip_grad_norm_(model.parameters(), clip)

    def do_step():
        if scaler is None:
            optimizer.step()
        else:
            scaler.step(optimizer)
            scaler.update()

    for _ in range(epochs):
        if zero_grad_each_epoch:
            optimizer.zero_grad()
        for i, (x, y) in enumerate(batches):
            counter["micro"] += 1
            if zero_grad_at == "micro":
                optimizer.zero_grad()
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
                out = model(x)
            if weight_by_samples:
                # Weight by the micro-batch's share of the window's samples: sum-reduced
                # loss over the number of loss terms (samples x outputs) in the window.
                start = i - (i % k)
                window_samples = sum(len(b[0]) for b in batches[start : min(start + k, n)])
                loss = loss_fn(out.to(DT), y, reduction="sum") / (window_samples * y.shape[1])
            else:
                loss = loss_fn(out.to(DT), y) * scale
            end = window_end(i)
            if backward_at == "micro" or (backward_at == "window_end" and end):
                (scaler.scale(loss) if scaler is not None else loss).backward()
                if clip is not None and clip_at == "micro":
                    clip_grad_norm_(model.parameters(), clip)
            if step_at == "micro":
                do_step()
            if end:
                if clip is not None and clip_at == "window":
                    clip_now()
                if step_at == "window":
                    if sched is not None and scheduler_at == "before_step":
                        sched.step()
                    do_step()
                    if sched is not None and scheduler_at == "window":
                        sched.step()
                if clip is not None and clip_at == "after_step":
                    clip_grad_norm_(model.parameters(), clip)
                if zero_grad_at == "window":
                    optimizer.zero_grad()
            if backward_at == "after_step":
                loss.backward()
            if sched is not None and scheduler_at == "micro":
                sched.step()
            res.lrs.append(optimizer.param_groups[0]["lr"])
    res.w = flat(model)
    return res


def window_members(grad: torch.Tensor, scale: float) -> list[int]:
    """Read a probe gradient as the 1-based micro-batches it holds (each once)."""
    assert torch.all((grad == 0) | (grad == scale)), grad
    return [i + 1 for i in torch.nonzero(grad).flatten().tolist()]


def assert_close(a: torch.Tensor, b: torch.Tensor, tol: float = 1e-12) -> None:
    torch.testing.assert_close(a, b, rtol=tol, atol=tol)


def rel_gap(a: Result, b: Result) -> float:
    """How far apart two runs end, relative to how far the second one moved."""
    return ((a.w - b.w).norm() / b.update.norm()).item()


def assert_differ(a: torch.Tensor, b: torch.Tensor, at_least: float = 1e-4) -> None:
    gap = (a - b).abs().max().item()
    assert gap > at_least, f"expected a visible difference, max |a - b| = {gap:.3g}"


def step_lr(opt):
    return torch.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5)


def warmup(opt):
    return torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / 10))


def grad_norms(batches, k, loss_scale=None):
    """The norm of each window's accumulated gradient at the initial weights (lr = 0)."""
    res = train(batches, k=k, loss_scale=loss_scale, lr=0.0, model=mlp())
    return [g.norm().item() for g in res.step_grads]


K = 4
B = 3
ONE_WINDOW = make_batches([B] * K)
FIVE_WINDOWS = make_batches([B] * (5 * K), seed=2)


def samples_per_update(window: float, micro_batch: int = 16, n: int = 4096) -> set[int]:
    """Run the step-frequency card's condition, `(batch_idx + 1) % window == 0`, over a real
    DataLoader and count the samples each update sums."""
    data = TensorDataset(torch.zeros(n, 1))
    counts, seen = [], 0
    for batch_idx, (inputs,) in enumerate(DataLoader(data, batch_size=micro_batch)):
        seen += len(inputs)
        if (batch_idx + 1) % window == 0:
            counts.append(seen)
            seen = 0
    return set(counts)
