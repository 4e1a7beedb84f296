"""Run learner code in one scenario and record what its training loop did.

Nothing here depends on the learner's variable names or loop style:
- the dataloader notes which micro-batch is fetched (a fetch of batch 0 starts an epoch);
- the criterion tags each loss with an identity autograd node, whose backward reports the
  factor the learner applied to that loss (d final / d loss: 1/accumulation_steps if scaled);
- global optimizer hooks see every step(), whichever optimizer object makes it;
- clears of .grad (optimizer.zero_grad, model.zero_grad, set_to_none, p.grad = None) are
  inferred by comparing .grad with a ledger of the backward passes seen since the last clear.
"""

from __future__ import annotations

import builtins
from dataclasses import dataclass, field

import torch
from torch import nn
from torch.optim.optimizer import register_optimizer_step_pre_hook

LEARNER_FILE = "<your code>"
N_FEATURES = 3
ATOL = 1e-4  # float32 learner tensors against float64 predictions


@dataclass(frozen=True)
class Scenario:
    accumulation_steps: int
    batch_size: int
    num_epochs: int
    learning_rate: float
    n_batches: int
    seed: int

    @property
    def partial(self) -> int:
        """Micro-batches in the last, partial window (0 when n_batches divides evenly)."""
        return self.n_batches % self.accumulation_steps

    @property
    def window_ends(self) -> list[int]:
        """1-based batch numbers after which a correct loop steps."""
        a, n = self.accumulation_steps, self.n_batches
        return list(range(a, n + 1, a)) + ([n] if n % a else [])

    def describe(self) -> str:
        return (f"accumulation_steps = {self.accumulation_steps}, "
                f"{self.n_batches} micro-batches per epoch")


@dataclass(frozen=True)
class Backward:
    epoch: int
    batch: int  # 0-based
    scale: float
    cid: int  # contribution id


@dataclass(frozen=True)
class Step:
    epoch: int
    pos: int  # 1-based number of the batch whose loss came last (0: none yet this epoch)
    lrs: tuple[float, ...]
    applied: tuple[int, ...]  # contributions in .grad when step() ran
    pending: int | None  # a loss computed but not yet backpropagated at step() time


@dataclass(frozen=True)
class Clear:
    epoch: int  # the epoch in which the clear was noticed
    dropped: tuple[int, ...]  # contributions that were in .grad


@dataclass
class Trace:
    events: list = field(default_factory=list)
    contribs: list[Backward] = field(default_factory=list)
    backpropagated: set[int] = field(default_factory=set)  # loss ids
    losses: int = 0
    passes: int = 0
    anomaly: str | None = None
    init: torch.Tensor | None = None
    final: torch.Tensor | None = None


def make_data(scn: Scenario) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Seeded float64 inputs (n, bs, 3), targets (n, bs, 1) and initial weights [W, b]."""
    gen = torch.Generator().manual_seed(scn.seed)
    x = torch.randn(scn.n_batches, scn.batch_size, N_FEATURES, generator=gen, dtype=torch.float64)
    y = torch.randn(scn.n_batches, scn.batch_size, 1, generator=gen, dtype=torch.float64)
    w0 = torch.randn(N_FEATURES + 1, generator=gen, dtype=torch.float64) * 0.5
    return x, y, w0


def batch_grad(w: torch.Tensor, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Gradient of MSELoss(mean) of Linear(3, 1) at flat weights [W, b], in closed form."""
    out = x @ w[:N_FEATURES].unsqueeze(1) + w[N_FEATURES]
    dout = 2.0 * (out - y) / out.numel()
    return torch.cat([(dout * x).sum(0), dout.sum(0)])


class _Tap(torch.autograd.Function):
    """Identity on the loss; its backward reports the factor applied after criterion()."""

    @staticmethod
    def forward(ctx, loss, recorder, loss_id):
        ctx.recorder, ctx.loss_id = recorder, loss_id
        return loss.clone()

    @staticmethod
    def backward(ctx, grad):
        ctx.recorder.on_backward(ctx.loss_id, float(grad))
        return grad, None, None


class _Criterion(nn.MSELoss):
    def __init__(self, recorder: _Recorder):
        super().__init__()
        self._recorder = recorder

    def forward(self, input, target):
        loss = super().forward(input, target)
        batch = self._recorder.identify(target, input)
        if batch is None or not loss.requires_grad:
            return loss
        return _Tap.apply(loss, self._recorder, self._recorder.on_loss(batch))


class _Loader:
    """A list-like dataloader of (inputs, targets) micro-batches."""

    def __init__(self, batches: list, recorder: _Recorder):
        self._batches, self._recorder = batches, recorder

    def __len__(self) -> int:
        return len(self._batches)

    def __getitem__(self, index):
        j = range(len(self._batches))[index]  # negative indices and IndexError as a list
        self._recorder.on_fetch(j)
        return self._batches[j]

    def __iter__(self):
        for j in range(len(self._batches)):
            self._recorder.on_fetch(j)
            yield self._batches[j]


class _Recorder:
    def __init__(self, scn: Scenario, model: nn.Module, x, y):
        self.scn, self.model, self.x, self.y = scn, model, x, y
        self.params = list(model.parameters())
        self.trace = Trace()
        self.fetch_epoch: dict[int, int] = {}
        self.loss_info: list[tuple[int, int, torch.Tensor]] = []  # (epoch, batch, grad)
        self.last_loss: int | None = None
        self.ledger: list[int] = []
        self.predicted = torch.zeros(N_FEATURES + 1, dtype=torch.float64)
        self.inflight: list[int] = []
        self.target_ids: dict[int, int] = {}

    # -- what the learner touches ---------------------------------------------------------
    def weights(self) -> torch.Tensor:
        return torch.cat([p.detach().reshape(-1) for p in self.params]).to("cpu", torch.float64)

    def grads(self) -> torch.Tensor | None:
        if all(p.grad is None for p in self.params):
            return None
        return torch.cat([
            (p.grad if p.grad is not None else torch.zeros_like(p)).reshape(-1)
            for p in self.params
        ]).to("cpu", torch.float64)

    def on_fetch(self, j: int) -> None:
        if j == 0:
            self.trace.passes += 1
        self.fetch_epoch[j] = self.trace.passes

    def identify(self, *tensors) -> int | None:
        """Which micro-batch's targets a criterion() call got (by identity, else by value)."""
        for t in tensors:
            if not isinstance(t, torch.Tensor):
                continue
            if id(t) in self.target_ids:
                return self.target_ids[id(t)]
            flat = t.detach().reshape(-1).to("cpu", torch.float64)
            for j in range(self.scn.n_batches):
                if flat.numel() == self.y[j].numel() and torch.allclose(
                        flat, self.y[j].reshape(-1), atol=1e-6):
                    return j
        return None

    def on_loss(self, batch: int) -> int:
        grad = batch_grad(self.weights(), self.x[batch], self.y[batch])
        self.loss_info.append((self.fetch_epoch.get(batch, self.trace.passes), batch, grad))
        self.last_loss = len(self.loss_info) - 1
        self.trace.losses += 1
        return self.last_loss

    def on_backward(self, loss_id: int, scale: float) -> None:
        if not self.inflight:  # .grad still holds what earlier backward() calls left
            self.observe(self.loss_info[loss_id][0])
        epoch, batch, grad = self.loss_info[loss_id]
        bwd = Backward(epoch, batch, scale, len(self.trace.contribs))
        self.trace.contribs.append(bwd)
        self.trace.backpropagated.add(loss_id)
        self.trace.events.append(bwd)
        self.inflight.append(bwd.cid)
        self.predicted += scale * grad

    def on_accumulated(self, _param) -> None:
        self.ledger += self.inflight
        self.inflight = []

    def on_step(self, optimizer, _args, _kwargs) -> None:
        if self.inflight:  # step() inside a backward hook: nothing sensible to follow
            self.flag("optimizer.step() ran in the middle of a backward pass")
        held = {id(p) for g in optimizer.param_groups for p in g["params"]}
        if held != {id(p) for p in self.params}:
            self.flag("optimizer.step() was called on an optimizer that does not hold "
                      "exactly the model's parameters")
        if self.last_loss is None:
            epoch, pos = self.trace.passes, 0
        else:
            epoch, batch, _ = self.loss_info[self.last_loss]
            pos = batch + 1
        self.observe(epoch)
        pending = self.last_loss if self.last_loss not in self.trace.backpropagated else None
        lrs = tuple(float(g["lr"]) for g in optimizer.param_groups)
        self.trace.events.append(Step(epoch, pos, lrs, tuple(self.ledger), pending))

    # -- bookkeeping ----------------------------------------------------------------------
    def flag(self, message: str) -> None:
        self.trace.anomaly = self.trace.anomaly or message

    def observe(self, epoch: int) -> None:
        """Compare .grad with the ledger; an all-empty .grad means it was cleared."""
        actual = self.grads()
        if actual is not None and torch.allclose(actual, self.predicted, atol=ATOL, rtol=ATOL):
            return
        if actual is None or not actual.any():
            if self.ledger:
                self.trace.events.append(Clear(epoch, tuple(self.ledger)))
            self.ledger, self.predicted = [], torch.zeros_like(self.predicted)
            return
        self.flag(".grad held values that the backward() calls seen so far do not explain "
                  "(was the loss computed without criterion, or .grad changed by hand?)")
        self.predicted = actual


def build(scn: Scenario, device: str):
    """The names the learner's code gets, and the recorder watching them."""
    x, y, w0 = make_data(scn)
    model = nn.Linear(N_FEATURES, 1)
    with torch.no_grad():
        model.weight.copy_(w0[:N_FEATURES].reshape(1, N_FEATURES))
        model.bias.copy_(w0[N_FEATURES:])
    model.to(device)
    recorder = _Recorder(scn, model, x, y)
    recorder.trace.init = recorder.weights()
    batches = [(x[j].to(device, torch.float32), y[j].to(device, torch.float32))
               for j in range(scn.n_batches)]
    recorder.target_ids = {id(t): j for j, (_, t) in enumerate(batches)}
    names = {
        "model": model,
        "optimizer": torch.optim.SGD(model.parameters(), lr=scn.learning_rate),
        "criterion": _Criterion(recorder),
        "dataloader": _Loader(batches, recorder),
        "accumulation_steps": scn.accumulation_steps,
        "batch_size": scn.batch_size,
        "learning_rate": scn.learning_rate,
        "num_epochs": scn.num_epochs,
        "device": device,
    }
    return names, recorder


def run(compiled, scn: Scenario, device: str = "cpu") -> Trace:
    """Execute the learner's code; exceptions it raises propagate to the caller.

    The code is the whole training. If it went over the dataloader exactly once, it is taken
    to be one epoch's loop and run again until num_epochs epochs have run (as if wrapped in
    `for epoch in range(num_epochs):`), so loops with and without the epoch loop both work.
    """
    names, recorder = build(scn, device)
    namespace = {"__name__": "__main__", "__builtins__": builtins, **names}
    handles = [register_optimizer_step_pre_hook(recorder.on_step)]
    handles += [p.register_post_accumulate_grad_hook(recorder.on_accumulated)
                for p in recorder.params]
    try:
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(scn.seed)  # whatever randomness the learner uses
            exec(compiled, namespace)
            if recorder.trace.passes == 1:
                for _ in range(scn.num_epochs - 1):
                    exec(compiled, namespace)
    finally:
        for handle in handles:
            handle.remove()
    recorder.trace.final = recorder.weights()
    return recorder.trace
