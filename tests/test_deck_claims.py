"""Every claim the gradient-accumulation deck makes about optimizer and autograd behaviour,
checked against real torch.

The deck (content/decks/gradient-accumulation.yaml) explains mistakes with statements such
as "the update is accumulation_steps times too large" or "dividing the learning rate only
matches plain SGD". Each test below runs a tiny model on the CPU and checks one such
statement; the test name states the claim. Everything is seeded and runs in float64, so
"equal" means equal up to float64 rounding of a different summation order (or exactly equal
where the test says torch.equal).

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

import math
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import pytest
import torch
from torch import nn
from torch.nn.utils import clip_grad_norm_, parameters_to_vector

DT = torch.float64
Batch = tuple[torch.Tensor, torch.Tensor]


# --------------------------------------------------------------------------- helpers


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


def _step_lr(opt):
    return torch.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5)


def _warmup(opt):
    return torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / 10))


K = 4
B = 3
ONE_WINDOW = make_batches([B] * K)
FIVE_WINDOWS = make_batches([B] * (5 * K), seed=2)


# --------------------------------------------- 1. unscaled SGD: k times the correct step


@pytest.mark.parametrize("momentum", [0.0, 0.9])
def test_unscaled_sgd_accumulation_update_is_k_times_the_scaled_update(momentum):
    kw = {"momentum": momentum}
    unscaled = train(ONE_WINDOW, k=K, loss_scale=1.0, opt_kwargs=kw)
    scaled = train(ONE_WINDOW, k=K, opt_kwargs=kw)
    assert_close(unscaled.update, K * scaled.update)
    assert_differ(unscaled.update, scaled.update)


@pytest.mark.parametrize("momentum", [0.0, 0.9])
def test_scaled_sgd_accumulation_equals_one_step_on_the_full_batch(momentum):
    kw = {"momentum": momentum}
    scaled = train(ONE_WINDOW, k=K, opt_kwargs=kw)
    full = train(concat(ONE_WINDOW), k=1, opt_kwargs=kw)
    assert_close(scaled.update, full.update)
    assert_close(scaled.step_grads[0], full.step_grads[0])


def test_summed_unscaled_gradient_is_k_times_the_full_batch_mean_gradient():
    unscaled = train(ONE_WINDOW, k=K, loss_scale=1.0, model=mlp())
    full = train(concat(ONE_WINDOW), k=1, model=mlp())
    assert_close(unscaled.step_grads[0], K * full.step_grads[0])


# ------------------------------------------------ 2. Adam hides the missing scaling ...


@pytest.mark.parametrize("opt", ["adam", "adamw"])
def test_adam_hides_the_missing_loss_scaling_but_sgd_does_not(opt):
    lr = 1e-2
    unscaled = train(FIVE_WINDOWS, k=K, opt=opt, lr=lr, loss_scale=1.0, model=mlp())
    scaled = train(FIVE_WINDOWS, k=K, opt=opt, lr=lr, model=mlp())
    assert len(scaled.step_grads) == 5
    assert_differ(scaled.w, scaled.w0, at_least=1e-2)  # it did move
    assert rel_gap(unscaled, scaled) < 1e-4  # measured 3.4e-6 (the eps term)

    sgd_unscaled = train(FIVE_WINDOWS, k=K, lr=lr, loss_scale=1.0, model=mlp())
    sgd_scaled = train(FIVE_WINDOWS, k=K, lr=lr, model=mlp())
    assert rel_gap(sgd_unscaled, sgd_scaled) > 1  # measured 2.6


def test_adams_eps_is_the_only_place_the_missing_loss_scaling_shows():
    def gap(eps: float) -> float:
        kw = {"eps": eps}
        a = train(FIVE_WINDOWS, k=K, opt="adam", lr=1e-2, loss_scale=1.0, opt_kwargs=kw,
                  model=mlp())
        b = train(FIVE_WINDOWS, k=K, opt="adam", lr=1e-2, opt_kwargs=kw, model=mlp())
        return rel_gap(a, b)

    assert gap(0.0) < 1e-12  # scale invariant but for float rounding (measured 0.0)
    assert gap(1e-8) < 1e-4  # the default eps: barely visible (measured 3.4e-6)
    assert gap(1e-1) > 0.1  # a large eps: the scaling shows (measured 0.48)


def _grad_norms(batches, k, loss_scale=None):
    """The norm of each window's accumulated gradient at the initial weights (lr = 0)."""
    res = train(batches, k=k, loss_scale=loss_scale, lr=0.0, model=mlp())
    return [g.norm().item() for g in res.step_grads]


@pytest.mark.parametrize("opt", ["adam", "adamw"])
def test_adam_does_not_hide_the_missing_scaling_when_the_clip_threshold_is_active_for_one(opt):
    scaled_norms = _grad_norms(FIVE_WINDOWS, K)
    unscaled_norms = _grad_norms(FIVE_WINDOWS, K, loss_scale=1.0)
    # Between the two: the unscaled gradients are clipped, the scaled ones are not.
    max_norm = (max(scaled_norms) + min(unscaled_norms)) / 2
    kw = {"opt": opt, "lr": 1e-2, "clip": max_norm}
    unscaled = train(FIVE_WINDOWS, k=K, loss_scale=1.0, model=mlp(), **kw)
    scaled = train(FIVE_WINDOWS, k=K, model=mlp(), **kw)
    # step_grads are recorded after clipping: every unscaled step was clipped, no scaled one.
    assert [g.norm().item() for g in unscaled.step_grads] == pytest.approx([max_norm] * 5, rel=1e-4)
    assert all(g.norm().item() < 0.9 * max_norm for g in scaled.step_grads)
    assert rel_gap(unscaled, scaled) > 1e-2  # measured 0.032 (vs 3.4e-6 without clipping)


@pytest.mark.parametrize(("opt", "lr"), [("adam", 1e-2), ("sgd", 0.1)])
def test_missing_scaling_is_hidden_when_every_step_of_both_runs_is_clipped(opt, lr):
    """Nuance: a threshold below every gradient norm clips both runs to the same norm,
    max_norm, so the optimizer sees the same gradients (only clip_grad_norm_'s 1e-6 and
    Adam's eps differ). This hides the missing scaling even for SGD."""
    max_norm = min(_grad_norms(FIVE_WINDOWS, K)) / 10
    kw = {"opt": opt, "lr": lr, "clip": max_norm}
    unscaled = train(FIVE_WINDOWS, k=K, loss_scale=1.0, model=mlp(), **kw)
    scaled = train(FIVE_WINDOWS, k=K, model=mlp(), **kw)
    for run in (unscaled, scaled):  # recorded after clipping: all at the threshold
        assert [g.norm().item() for g in run.step_grads] == pytest.approx([max_norm] * 5, rel=1e-4)
    assert rel_gap(unscaled, scaled) < 1e-5  # measured 2e-8 (Adam), 6e-7 (SGD)


def test_adam_coupled_weight_decay_does_not_hide_the_missing_scaling_but_adamw_does():
    kw = {"weight_decay": 0.1}
    adam_unscaled = train(FIVE_WINDOWS, k=K, opt="adam", lr=1e-2, loss_scale=1.0,
                          opt_kwargs=kw, model=mlp())
    adam_scaled = train(FIVE_WINDOWS, k=K, opt="adam", lr=1e-2, opt_kwargs=kw, model=mlp())
    assert rel_gap(adam_unscaled, adam_scaled) > 0.1  # measured 0.45

    # AdamW's decay is decoupled (applied to the weights, not added to the gradient).
    adamw_unscaled = train(FIVE_WINDOWS, k=K, opt="adamw", lr=1e-2, loss_scale=1.0,
                           opt_kwargs=kw, model=mlp())
    adamw_scaled = train(FIVE_WINDOWS, k=K, opt="adamw", lr=1e-2, opt_kwargs=kw, model=mlp())
    assert rel_gap(adamw_unscaled, adamw_scaled) < 1e-4  # measured 3.4e-6


# ------------------------------------------------ 3. dividing the learning rate by k


@pytest.mark.parametrize("momentum", [0.0, 0.9])
def test_lr_divided_by_k_with_unscaled_loss_matches_scaled_loss_for_sgd(momentum):
    kw = {"opt_kwargs": {"momentum": momentum}}
    lr_fix = train(FIVE_WINDOWS, k=K, lr=0.1 / K, loss_scale=1.0, **kw)
    scaled = train(FIVE_WINDOWS, k=K, lr=0.1, **kw)
    assert_close(lr_fix.w, scaled.w)


@pytest.mark.parametrize("opt", ["adam", "adamw"])
def test_lr_divided_by_k_makes_adam_steps_about_k_times_too_small(opt):
    # One update: Adam's first step is lr * g / (|g| + eps), so exactly 1 / k up to eps.
    lr_fix = train(ONE_WINDOW, k=K, opt=opt, lr=1e-2 / K, loss_scale=1.0)
    scaled = train(ONE_WINDOW, k=K, opt=opt, lr=1e-2)
    assert_close(lr_fix.update * K, scaled.update, tol=1e-8)
    # Several updates: the total displacement is still about k times too small.
    lr_fix = train(FIVE_WINDOWS, k=K, opt=opt, lr=1e-2 / K, loss_scale=1.0, model=mlp())
    scaled = train(FIVE_WINDOWS, k=K, opt=opt, lr=1e-2, model=mlp())
    ratio = scaled.update.norm() / lr_fix.update.norm()
    assert 0.8 * K < ratio < 1.2 * K, ratio  # measured 3.92 for K = 4


def test_lr_divided_by_k_does_not_match_scaled_loss_with_sgd_weight_decay():
    kw = {"opt_kwargs": {"weight_decay": 0.1}}
    lr_fix = train(FIVE_WINDOWS, k=K, lr=0.1 / K, loss_scale=1.0, **kw)
    scaled = train(FIVE_WINDOWS, k=K, lr=0.1, **kw)
    assert rel_gap(lr_fix, scaled) > 1e-2  # measured 0.054: decay is K times too weak


def test_lr_divided_by_k_does_not_match_scaled_loss_with_gradient_clipping():
    max_norm = min(_grad_norms(FIVE_WINDOWS, K)) / 2  # active in both runs
    lr_fix = train(FIVE_WINDOWS, k=K, lr=0.1 / K, loss_scale=1.0, clip=max_norm, model=mlp())
    scaled = train(FIVE_WINDOWS, k=K, lr=0.1, clip=max_norm, model=mlp())
    assert rel_gap(lr_fix, scaled) > 0.1  # measured 0.74: clipped steps K times too small


def test_lr_divided_by_k_still_matches_sgd_under_a_proportional_schedule():
    """Nuance for the deck's "or a schedule": StepLR, LambdaLR, cosine with eta_min=0 scale
    the base lr, so lr / k stays lr / k all along and plain/momentum SGD still matches."""
    for make in (_step_lr, _warmup,
                 lambda o: torch.optim.lr_scheduler.CosineAnnealingLR(o, T_max=5)):
        kw = {"opt_kwargs": {"momentum": 0.9}, "scheduler": make}
        lr_fix = train(FIVE_WINDOWS, k=K, lr=0.1 / K, loss_scale=1.0, **kw)
        scaled = train(FIVE_WINDOWS, k=K, lr=0.1, **kw)
        assert_close(lr_fix.w, scaled.w)


def test_lr_divided_by_k_does_not_match_under_a_schedule_with_an_absolute_lr():
    """A schedule with an absolute value (here cosine's eta_min floor) is not divided by k."""
    def cosine(o):
        return torch.optim.lr_scheduler.CosineAnnealingLR(o, T_max=2, eta_min=0.05)

    lr_fix = train(FIVE_WINDOWS, k=K, lr=0.1 / K, loss_scale=1.0, scheduler=cosine)
    scaled = train(FIVE_WINDOWS, k=K, lr=0.1, scheduler=cosine)
    assert rel_gap(lr_fix, scaled) > 0.1  # measured 0.90


# ------------------------------------------------ 4. multiplying the loss by k


@pytest.mark.parametrize("momentum", [0.0, 0.9])
def test_multiplying_the_loss_by_k_makes_the_sgd_update_k_squared_times_too_large(momentum):
    kw = {"opt_kwargs": {"momentum": momentum}}
    inverted = train(ONE_WINDOW, k=K, loss_scale=float(K), **kw)
    scaled = train(ONE_WINDOW, k=K, **kw)
    assert_close(inverted.update, K * K * scaled.update)


# ------------------------------------------------ 5. .grad None: the parameter is skipped


def test_zero_grad_sets_grads_to_none_by_default():
    res = train(ONE_WINDOW, k=K)
    assert all(p.grad is None for p in res.model.parameters())
    res.optimizer.zero_grad(set_to_none=False)
    assert all(p.grad is None for p in res.model.parameters())  # None stays None
    train_one = train(ONE_WINDOW[:1], k=2, flush_last=False)  # no step, no clearing
    train_one.optimizer.zero_grad(set_to_none=False)
    assert all(torch.count_nonzero(p.grad) == 0 for p in train_one.model.parameters())


@pytest.mark.parametrize(
    ("opt", "kw"),
    [("sgd", {"momentum": 0.9, "weight_decay": 0.1}), ("adamw", {"weight_decay": 0.1})],
)
def test_optimizer_step_skips_a_parameter_whose_grad_is_none(opt, kw):
    torch.manual_seed(0)
    used = nn.Parameter(torch.randn(3, dtype=DT))
    unused = nn.Parameter(torch.randn(3, dtype=DT))
    optimizer = make_optimizer(opt, [used, unused], lr=0.1, **kw)
    before = unused.detach().clone()
    for _ in range(3):
        optimizer.zero_grad()  # set_to_none=True: both .grad are None again
        assert used.grad is None and unused.grad is None
        (used**2).sum().backward()
        assert unused.grad is None
        optimizer.step()
    assert torch.equal(unused.detach(), before)  # no decay, no momentum: untouched
    assert unused not in optimizer.state or not optimizer.state[unused]

    # Even with a momentum buffer from an earlier step, a None grad means no movement.
    (unused.sum() + used.sum()).backward()
    optimizer.step()
    moved = unused.detach().clone()
    assert not torch.equal(moved, before)
    optimizer.zero_grad()
    (used**2).sum().backward()
    optimizer.step()
    assert torch.equal(unused.detach(), moved)


@pytest.mark.parametrize(
    ("opt", "kw"),
    [("sgd", {"momentum": 0.9, "weight_decay": 0.1}), ("adamw", {"weight_decay": 0.1})],
)
def test_a_zero_grad_tensor_is_not_skipped_and_weight_decay_moves_the_parameter(opt, kw):
    torch.manual_seed(0)
    p = nn.Parameter(torch.randn(3, dtype=DT))
    optimizer = make_optimizer(opt, [p], lr=0.1, **kw)
    before = p.detach().clone()
    p.grad = torch.zeros_like(p)  # what zero_grad(set_to_none=False) leaves
    optimizer.step()
    assert_differ(p.detach(), before, at_least=1e-3)


# ------------------------------------------------ 6. the off-by-one window condition


def test_i_mod_k_steps_after_micro_batch_1_then_k_plus_1_each_window_one_batch_late():
    n, k = 13, 4
    res = train(probe_batches(n), k=k, model=probe_model(n), loss_fn=probe_loss,
                condition="off_by_one", flush_last=False)
    assert res.step_after == [1, 5, 9, 13]  # 1, k+1, 2k+1, 3k+1 (1-based)
    windows = [window_members(g, 1 / k) for g in res.step_grads]
    assert windows == [[1], [2, 3, 4, 5], [6, 7, 8, 9], [10, 11, 12, 13]]
    intended_ends = [k, 2 * k, 3 * k]
    assert [w[-1] - end for w, end in zip(windows[1:], intended_ends, strict=True)] == [1, 1, 1]


def test_i_plus_1_mod_k_steps_after_k_2k_3k_with_k_micro_batches_each():
    n, k = 12, 4
    res = train(probe_batches(n), k=k, model=probe_model(n), loss_fn=probe_loss,
                flush_last=False)
    assert res.step_after == [4, 8, 12]
    windows = [window_members(g, 1 / k) for g in res.step_grads]
    assert windows == [[1, 2, 3, 4], [5, 6, 7, 8], [9, 10, 11, 12]]


# ------------------------------------------------ 7. loss.detach()


def test_detach_returns_a_new_tensor_sharing_storage_without_grad_and_backward_raises():
    model = linear_model()
    (x, y), = ONE_WINDOW[:1]
    loss = nn.functional.mse_loss(model(x), y)
    detached = loss.detach()
    assert detached is not loss
    assert detached.data_ptr() == loss.data_ptr()
    assert detached.untyped_storage().data_ptr() == loss.untyped_storage().data_ptr()
    assert detached.requires_grad is False
    assert detached.grad_fn is None
    assert loss.grad_fn is not None  # the original keeps its graph
    with pytest.raises(RuntimeError, match="does not require grad"):
        detached.backward()
    assert all(p.grad is None for p in model.parameters())
    # Shared storage, not a copy: an in-place change shows through the original.
    with torch.no_grad():
        detached.add_(1.0)
    assert loss.item() == detached.item()


# ------------------------------------------------ 8. dividing the loss is differentiable


def test_dividing_the_loss_by_k_gives_exactly_one_kth_of_the_gradients():
    (x, y), = ONE_WINDOW[:1]
    for k in (2, 4, 8):  # powers of two: bitwise exact
        plain, divided = mlp(), mlp()
        nn.functional.mse_loss(plain(x), y).backward()
        (nn.functional.mse_loss(divided(x), y) / k).backward()
        for p, q in zip(plain.parameters(), divided.parameters(), strict=True):
            assert torch.equal(q.grad, p.grad / k)
    plain, divided = mlp(), mlp()
    nn.functional.mse_loss(plain(x), y).backward()
    (nn.functional.mse_loss(divided(x), y) / 3).backward()
    for p, q in zip(plain.parameters(), divided.parameters(), strict=True):
        assert_close(q.grad, p.grad / 3, tol=1e-15)


# ------------------------------------------------ 9. zero_grad() before every backward()


def test_zero_grad_before_every_backward_leaves_only_the_last_micro_batchs_scaled_gradient():
    n, k = 8, 4
    res = train(probe_batches(n), k=k, model=probe_model(n), loss_fn=probe_loss,
                zero_grad_at="micro")
    assert [window_members(g, 1 / k) for g in res.step_grads] == [[4], [8]]

    # On a real model: the weights equal two steps on the last micro-batch of each window.
    batches = make_batches([B] * 8)
    wiped = train(batches, k=k, zero_grad_at="micro", model=mlp())
    last_only = train([batches[3], batches[7]], k=1, loss_scale=1 / k, model=mlp())
    assert_close(wiped.w, last_only.w)


# ------------------------------------------------ 10. step() every micro-batch


def test_step_every_micro_batch_with_zero_grad_per_window_applies_early_micro_batches_repeatedly():
    n, k, lr = 8, 4, 1.0
    res = train(probe_batches(n), k=k, model=probe_model(n), loss_fn=probe_loss, lr=lr,
                step_at="micro")
    # Each weight moved by -lr / k per step that saw micro-batch i in .grad.
    times_applied = (-res.update * k / lr).round().to(torch.int64).tolist()
    assert times_applied == [4, 3, 2, 1, 4, 3, 2, 1]  # k, k-1, ..., 1 in every window

    accumulation = train(probe_batches(n), k=k, model=probe_model(n), loss_fn=probe_loss,
                         lr=lr)
    assert (-accumulation.update * k / lr).round().tolist() == [1.0] * n


def test_step_every_micro_batch_without_per_batch_zero_grad_differs_from_accumulation_and_sgd():
    batches = make_batches([B] * 8)
    partial_sums = train(batches, k=K, step_at="micro", model=mlp())
    accumulation = train(batches, k=K, model=mlp())
    small_batch = train(batches, k=1, model=mlp())  # zero_grad and step every batch
    small_batch_scaled = train(batches, k=1, loss_scale=1 / K, model=mlp())
    assert len(partial_sums.step_grads) == 8
    for other in (accumulation, small_batch, small_batch_scaled):
        assert_differ(partial_sums.w, other.w, at_least=1e-3)


# ------------------------------------------------ more deck mistakes: missing_zero_grad,
# step_before_backward, missing_backward


def test_never_clearing_gradients_makes_every_update_carry_all_earlier_windows():
    n, k = 12, 4
    res = train(probe_batches(n), k=k, model=probe_model(n), loss_fn=probe_loss,
                zero_grad_at="never")
    windows = [window_members(g, 1 / k) for g in res.step_grads]
    assert windows == [list(range(1, 5)), list(range(1, 9)), list(range(1, 13))]
    assert [g.norm().item() ** 2 * k * k for g in res.step_grads] == pytest.approx([4, 8, 12])


def test_stepping_before_backward_misses_the_last_micro_batch_which_lands_in_the_next_window():
    n, k = 8, 4
    res = train(probe_batches(n), k=k, model=probe_model(n), loss_fn=probe_loss,
                backward_at="after_step")
    windows = [window_members(g, 1 / k) for g in res.step_grads]
    assert windows == [[1, 2, 3], [4, 5, 6, 7]]
    # ... and the last micro-batch's gradient is left over in .grad at the end.
    assert window_members(res.model.weight.grad.flatten(), 1 / k) == [8]


def test_backward_only_on_the_last_micro_batch_makes_each_update_use_that_micro_batch():
    n, k = 8, 4
    res = train(probe_batches(n), k=k, model=probe_model(n), loss_fn=probe_loss,
                backward_at="window_end")
    assert [window_members(g, 1 / k) for g in res.step_grads] == [[4], [8]]


@pytest.mark.parametrize(("opt", "kw"), [("sgd", {"momentum": 0.9, "weight_decay": 0.1}),
                                         ("adamw", {"weight_decay": 0.1})])
def test_without_any_backward_grads_stay_none_and_step_moves_nothing(opt, kw):
    res = train(FIVE_WINDOWS, k=K, opt=opt, opt_kwargs=kw, backward_at="never", model=mlp())
    assert res.step_grads == [None] * 5  # step() ran five times, on None grads
    assert all(p.grad is None for p in res.model.parameters())
    assert torch.equal(res.w, res.w0)


# ------------------------------------------------ 11. LR scheduler placement


def test_scheduler_stepped_every_micro_batch_advances_k_times_per_optimizer_update():
    with warnings.catch_warnings():
        # The first scheduler.step() comes before the first optimizer.step(); torch warns.
        warnings.simplefilter("ignore", UserWarning)
        res = train(ONE_WINDOW, k=K, lr=1.0, scheduler=_step_lr, scheduler_at="micro")
        warm = train(ONE_WINDOW, k=K, lr=1.0, scheduler=_warmup, scheduler_at="micro")
    assert len(res.step_grads) == 1
    assert res.lrs[-1] == 0.5**K  # as if K updates had been made
    assert res.scheduler.last_epoch == K
    assert warm.lrs[-1] == pytest.approx((K + 1) / 10)  # warm-up K times too fast


def test_scheduler_stepped_every_micro_batch_triggers_torchs_order_warning():
    with pytest.warns(UserWarning, match=r"lr_scheduler.step\(\)` before `optimizer.step\(\)"):
        train(ONE_WINDOW, k=K, scheduler=_step_lr, scheduler_at="micro")


def test_scheduler_stepped_once_per_update_tracks_updates():
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # and no order warning
        res = train(FIVE_WINDOWS, k=K, lr=1.0, scheduler=_step_lr)
        warm = train(FIVE_WINDOWS, k=K, lr=1.0, scheduler=_warmup)
    assert res.lrs[K - 1] == 0.5  # one update made, one decay
    assert res.lrs[-1] == 0.5**5
    assert res.scheduler.last_epoch == len(res.step_grads) == 5
    assert warm.lrs[-1] == pytest.approx(6 / 10)


@pytest.mark.parametrize(("n", "k"), [(10, 4), (12, 4), (7, 3), (5, 8)])
def test_scheduler_steps_per_epoch_are_ceil_len_over_k_when_the_partial_window_is_flushed(n, k):
    res = train(make_batches([2] * n), k=k, scheduler=_step_lr)
    assert res.scheduler.last_epoch == len(res.step_grads) == math.ceil(n / k)


def test_scheduler_stepped_before_optimizer_step_skips_the_first_lr_and_warns():
    with pytest.warns(UserWarning, match=r"lr_scheduler.step\(\)` before `optimizer.step\(\)"):
        wrong = train(FIVE_WINDOWS, k=K, lr=1.0, scheduler=_step_lr, scheduler_at="before_step")
    right = train(FIVE_WINDOWS, k=K, lr=1.0, scheduler=_step_lr)
    assert right.step_lrs == [1.0, 0.5, 0.25, 0.125, 0.0625]
    assert wrong.step_lrs == right.step_lrs[1:] + [0.03125]  # each update uses the next rate


def test_onecycle_sized_with_the_floor_of_updates_raises_when_the_partial_window_steps():
    n, k = 10, 4  # ceil(10 / 4) = 3 updates per epoch, floor = 2
    def onecycle(total):
        return lambda o: torch.optim.lr_scheduler.OneCycleLR(o, max_lr=0.1, total_steps=total)

    res = train(make_batches([2] * n), k=k, scheduler=onecycle(math.ceil(n / k)))
    assert res.scheduler.last_epoch == 3
    with pytest.raises(ValueError, match="Tried to step"):
        train(make_batches([2] * n), k=k, scheduler=onecycle(n // k))


# ------------------------------------------------ 12. clipping placement


def test_clipping_every_micro_batch_differs_from_clipping_once_per_window():
    max_norm = min(_grad_norms(FIVE_WINDOWS, K)) / 4  # active
    per_micro = train(FIVE_WINDOWS, k=K, clip=max_norm, clip_at="micro", model=mlp())
    per_window = train(FIVE_WINDOWS, k=K, clip=max_norm, model=mlp())
    assert rel_gap(per_micro, per_window) > 0.05  # measured 0.17


def test_clipping_once_per_window_equals_clipping_the_full_batch_gradient():
    full_norm = _grad_norms(concat(ONE_WINDOW), 1)[0]
    max_norm = full_norm / 3  # active
    per_window = train(ONE_WINDOW, k=K, clip=max_norm, model=mlp())
    full = train(concat(ONE_WINDOW), k=1, clip=max_norm, model=mlp())
    assert_close(per_window.update, full.update)
    assert per_window.update.norm() < train(ONE_WINDOW, k=K, model=mlp()).update.norm()


def test_clipping_placement_does_not_matter_when_the_threshold_is_never_reached():
    max_norm = 1e6
    per_micro = train(FIVE_WINDOWS, k=K, clip=max_norm, clip_at="micro", model=mlp())
    per_window = train(FIVE_WINDOWS, k=K, clip=max_norm, model=mlp())
    assert_close(per_micro.w, per_window.w)


def test_clipping_after_step_leaves_the_update_unclipped():
    max_norm = min(_grad_norms(FIVE_WINDOWS, K)) / 4  # would be active
    after = train(FIVE_WINDOWS, k=K, clip=max_norm, clip_at="after_step", model=mlp())
    unclipped = train(FIVE_WINDOWS, k=K, model=mlp())
    assert torch.equal(after.w, unclipped.w)


def test_clamping_the_loss_is_not_clipping_its_gradient_is_zero_where_the_clamp_is_active():
    model = mlp()
    (x, y), = ONE_WINDOW[:1]
    loss = nn.functional.mse_loss(model(x), y)
    assert loss.item() > 0.1
    loss.clamp(max=0.1).backward()
    assert all(torch.count_nonzero(p.grad) == 0 for p in model.parameters())


# ------------------------------------------------ 13. BatchNorm


def test_batchnorm_accumulation_does_not_reproduce_the_full_batch_gradient():
    acc = train(ONE_WINDOW, k=K, lr=0.0, model=bn_mlp())
    full = train(concat(ONE_WINDOW), k=1, lr=0.0, model=bn_mlp())
    assert_differ(acc.step_grads[0], full.step_grads[0], at_least=1e-3)

    # Control: the same network with BatchNorm in eval mode (fixed statistics) matches.
    acc_model, full_model = bn_mlp(), bn_mlp()
    acc_model.eval()
    full_model.eval()
    acc = train(ONE_WINDOW, k=K, lr=0.0, model=acc_model)
    full = train(concat(ONE_WINDOW), k=1, lr=0.0, model=full_model)
    assert_close(acc.step_grads[0], full.step_grads[0])


@pytest.mark.parametrize("norm", ["layer", "group"])
def test_layernorm_and_groupnorm_accumulation_reproduces_the_full_batch_gradient(norm):
    def make():
        torch.manual_seed(0)
        layer = nn.LayerNorm(8) if norm == "layer" else nn.GroupNorm(2, 8)
        return nn.Sequential(nn.Linear(4, 8), layer, nn.Tanh(), nn.Linear(8, 2)).to(DT)

    acc = train(ONE_WINDOW, k=K, lr=0.0, model=make())
    full = train(concat(ONE_WINDOW), k=1, lr=0.0, model=make())
    assert_close(acc.step_grads[0], full.step_grads[0])


def test_batchnorm_running_stats_update_once_per_micro_batch_k_times_per_update():
    model = bn_mlp()
    bn = model[1]
    seen: list[torch.Tensor] = []
    bn.register_forward_pre_hook(lambda mod, args: seen.append(args[0].detach().clone()))
    res = train(ONE_WINDOW, k=K, model=model)
    assert len(res.step_grads) == 1
    assert bn.num_batches_tracked.item() == K
    mean, var = torch.zeros(8, dtype=DT), torch.ones(8, dtype=DT)
    for h in seen:  # running = (1 - momentum) * running + momentum * batch statistic
        mean = 0.9 * mean + 0.1 * h.mean(0)
        var = 0.9 * var + 0.1 * h.var(0, unbiased=True)
    assert_close(bn.running_mean, mean)
    assert_close(bn.running_var, var)

    full_model = bn_mlp()
    train(concat(ONE_WINDOW), k=1, model=full_model)
    assert full_model[1].num_batches_tracked.item() == 1
    assert_differ(bn.running_mean, full_model[1].running_mean, at_least=1e-3)


# ------------------------------------------------ 14. unequal micro-batch sizes


def test_unequal_micro_batches_dividing_mean_losses_by_k_is_not_the_mean_over_samples():
    batches = make_batches([4, 4, 1])  # a short last batch
    full = train(concat(batches), k=1, lr=0.0, model=mlp())
    divided = train(batches, k=3, lr=0.0, model=mlp())
    assert_differ(divided.step_grads[0], full.step_grads[0], at_least=1e-3)


def test_unequal_micro_batches_weighting_by_sample_share_gives_the_mean_over_samples():
    batches = make_batches([4, 4, 1])
    full = train(concat(batches), k=1, lr=0.0, model=mlp())
    weighted = train(batches, k=3, lr=0.0, weight_by_samples=True, model=mlp())
    assert_close(weighted.step_grads[0], full.step_grads[0])
    # Also for a short last window of an epoch: 5 micro-batches, k = 2, last window of one.
    batches = make_batches([3, 3, 3, 3, 2], seed=5)
    weighted = train(batches, k=2, lr=0.0, weight_by_samples=True, model=mlp())
    expected = [train(concat(batches[s : s + 2]), k=1, lr=0.0, model=mlp()).step_grads[0]
                for s in (0, 2, 4)]
    for got, want in zip(weighted.step_grads, expected, strict=True):
        assert_close(got, want)


def test_dividing_mean_reduced_losses_by_the_window_sample_count_shrinks_by_the_batch_size():
    """The deck's double_normalisation: mean loss / window samples instead of / k."""
    correct = train(ONE_WINDOW, k=K, lr=0.0, model=mlp())
    twice = train(ONE_WINDOW, k=K, lr=0.0, loss_scale=1 / (K * B), model=mlp())
    assert_close(twice.step_grads[0], correct.step_grads[0] / B)


# ------------------------------------------------ 15. the partial last window leaks


def test_unflushed_partial_last_window_leaks_into_the_first_window_of_the_next_epoch():
    n, k = 5, 2
    leak = train(probe_batches(n), k=k, model=probe_model(n), loss_fn=probe_loss,
                 flush_last=False, zero_grad_each_epoch=False, epochs=2)
    windows = [window_members(g, 1 / k) for g in leak.step_grads]
    # Epoch 1: [1, 2], [3, 4]; micro-batch 5 stays in .grad and joins epoch 2's first window.
    assert windows == [[1, 2], [3, 4], [1, 2, 5], [3, 4]]

    flushed = train(probe_batches(n), k=k, model=probe_model(n), loss_fn=probe_loss,
                    zero_grad_each_epoch=False, epochs=2)
    assert [window_members(g, 1 / k) for g in flushed.step_grads] == [
        [1, 2], [3, 4], [5], [1, 2], [3, 4], [5]]
    cleared = train(probe_batches(n), k=k, model=probe_model(n), loss_fn=probe_loss,
                    flush_last=False, epochs=2)  # zero_grad() at the start of every epoch
    assert [window_members(g, 1 / k) for g in cleared.step_grads] == [
        [1, 2], [3, 4], [1, 2], [3, 4]]


def test_flushed_partial_window_with_loss_over_k_gets_r_over_k_of_its_mean_gradient():
    """Nuance for the deck's reference loop: it flushes the partial last window but still
    divides by accumulation_steps, so a last window of r < k micro-batches steps with r / k
    times its mean gradient (a smaller last update), not the window's mean gradient."""
    batches = make_batches([3] * 5, seed=6)  # k = 4: windows of 4 and 1 micro-batches
    res = train(batches, k=4, lr=0.0, model=mlp())
    last_mean = train(batches[4:], k=1, lr=0.0, model=mlp()).step_grads[0]
    assert_close(res.step_grads[1], last_mean / 4)


# ------------------------------------------------ 16. AMP (GradScaler) with accumulation
#
# torch 2.13 supports torch.amp.GradScaler("cpu") with enabled=True: it really multiplies
# the loss by its scale (65536 by default), unscale_() divides the float64 grads back, and
# step() skips the update on inf/nan. The scale is a power of two, so scaling and
# unscaling are exact and the scaler adds no rounding of its own.


def _scaler(init_scale: float = 2.0**16) -> torch.amp.GradScaler:
    scaler = torch.amp.GradScaler("cpu", init_scale=init_scale)
    assert scaler.is_enabled() and scaler.get_scale() == init_scale
    return scaler


def test_amp_accumulation_with_unscale_then_clip_matches_the_fp32_loop_that_clips_per_window():
    max_norm = min(_grad_norms(FIVE_WINDOWS, K)) / 4  # active
    amp = train(FIVE_WINDOWS, k=K, clip=max_norm, scaler=_scaler(), model=mlp())
    fp32 = train(FIVE_WINDOWS, k=K, clip=max_norm, model=mlp())
    assert len(amp.step_grads) == 5  # no step skipped
    assert_close(amp.w, fp32.w)
    assert_close(torch.stack(amp.step_grads), torch.stack(fp32.step_grads))


def test_amp_clipping_before_unscale_clips_the_scaled_gradients_and_gives_a_different_result():
    scale = 2.0**16
    max_norm = min(_grad_norms(FIVE_WINDOWS, K)) * 4  # inactive on true gradients
    wrong = train(FIVE_WINDOWS, k=K, clip=max_norm, scaler=_scaler(scale),
                  unscale_before_clip=False, model=mlp())
    right = train(FIVE_WINDOWS, k=K, clip=max_norm, scaler=_scaler(scale), model=mlp())
    assert all(g.norm().item() < max_norm / 2 for g in right.step_grads)  # never clipped
    assert len(wrong.step_grads) == len(right.step_grads) == 5  # no step skipped
    assert_differ(wrong.w, right.w, at_least=1e-3)
    # Clipping the scaled gradient at max_norm = clipping the true gradient at
    # max_norm / scale: the threshold is effectively DIVIDED by the scale (the norm it
    # sees is multiplied by the scale), so it clips almost everything almost to zero.
    fp32_equivalent = train(FIVE_WINDOWS, k=K, clip=max_norm / scale, model=mlp())
    assert_close(wrong.w, fp32_equivalent.w, tol=1e-9)
    assert (wrong.w - wrong.w0).norm() < 1e-3 * (right.w - right.w0).norm()


def test_amp_with_cpu_bf16_autocast_the_grad_scaler_changes_nothing_when_unscaled_before_clip():
    """Autocast leaves float64 alone, so this one runs a float32 model: autocast computes the
    linear layers in bfloat16, with or without the scaler; the scaler adds nothing."""
    max_norm = min(_grad_norms(FIVE_WINDOWS, K)) / 4
    batches = [(x.float(), y) for x, y in FIVE_WINDOWS]
    kw = {"k": K, "clip": max_norm, "autocast": True}
    amp = train(batches, scaler=_scaler(), model=mlp().float(), **kw)
    no_scaler = train(batches, model=mlp().float(), **kw)
    assert len(amp.step_grads) == 5
    assert torch.equal(amp.w, no_scaler.w)
    # autocast really ran in bfloat16: both differ from the same loop without autocast.
    fp32 = train(batches, k=K, clip=max_norm, model=mlp().float())
    assert rel_gap(amp, fp32) > 1e-4


def test_amp_unscale_twice_before_update_raises_runtime_error():
    model = mlp()
    optimizer = make_optimizer("sgd", model.parameters(), lr=0.1)
    scaler = _scaler()
    for x, y in ONE_WINDOW[:2]:
        scaler.scale(nn.functional.mse_loss(model(x), y) / 2).backward()
    scaler.unscale_(optimizer)
    with pytest.raises(RuntimeError, match=r"unscale_\(\) has already been called"):
        scaler.unscale_(optimizer)
    scaler.step(optimizer)
    scaler.update()
    optimizer.zero_grad()
    scaler.scale(nn.functional.mse_loss(model(x), y)).backward()
    scaler.unscale_(optimizer)  # allowed again after update()


# ------------------------------------------------ 17. accumulation is not faster per epoch


def _count_passes(model: nn.Module, batches, k: int) -> dict[str, int]:
    counts = {"forward": 0, "samples": 0, "backward": 0, "steps": 0}

    def on_backward(grad):
        counts["backward"] += 1

    def on_forward(mod, args, out):
        counts["forward"] += 1
        counts["samples"] += len(args[0])
        out.register_hook(on_backward)  # runs when a backward pass reaches this output

    model.register_forward_hook(on_forward)
    res = train(batches, k=k, model=model)
    counts["steps"] = len(res.step_grads)
    return counts


def test_accumulation_runs_the_same_number_of_forward_and_backward_passes_per_epoch():
    batches = make_batches([2] * 12)
    plain = _count_passes(mlp(), batches, k=1)
    accumulated = _count_passes(mlp(), batches, k=4)
    assert plain == {"forward": 12, "samples": 24, "backward": 12, "steps": 12}
    assert accumulated == {"forward": 12, "samples": 24, "backward": 12, "steps": 3}
