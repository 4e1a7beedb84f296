"""Inside the jailed child: run learner code against a plan and write down what it did.

This side only observes; it never judges. It records raw events, and the judge
(`_trace` and the checker, in the sandbox service) rebuilds and judges them against data
it made itself. Nothing here knows the correct answer, so a learner who forges the events
has to produce what a correct loop would produce, which is writing a correct loop.

Nothing depends on the learner's variable names or loop style:
- the dataloader notes each fetch ("F", batch);
- the criterion tags each loss it can attribute to a micro-batch ("L", batch, weights now)
  with an identity autograd node whose backward reports the factor the learner applied
  after criterion() ("B", loss id, factor, .grad just before);
- a loss over other rows than one whole micro-batch (a window's features, a chunk of a
  batch) is tagged with its rows instead ("P", target rows, rows whose model output carries
  gradient, weights now): each grad-enabled model output is marked with its input rows, and
  the loss's graph is searched for those marks (open_clip's cached features: only the
  re-run micro-batch's rows get gradient);
- an AMP scenario's overflowing micro-batch keeps a finite loss, and its backward turns inf
  (`_tags.Overflow`), as a float16 gradient multiplied by too large a loss scale does;
- "A" marks that a backward pass reached the parameters' .grad;
- a hook the learner registers on a parameter (`p.register_hook`) notes what it got and
  gave back, each backward ("H", parameter, gradient before, after);
- a global optimizer hook sees every step(), whichever optimizer makes it
  ("S", learning rates, .grad at that moment, flags, weights before the step);
- torch's gradient clipping functions note each call ("C", "norm" or "value", which of the
  model's parameters it got, the clip value, .grad before, .grad after);
- every LR scheduler notes each step() after the one its constructor makes ("R", which
  scheduler: 0 for the first one seen, 1 for the next, ...);
- GradScaler's scale, unscale_, step and update note each outermost call, before it runs
  ("G", method, the scaler's scale at that moment); what unscale_ does to .grad is seen
  like any other change of .grad.
Autocast (mixed precision) is turned off: the judge predicts gradients in full precision, and
what it judges is the accumulation, not the rounding. These patches last only while the
learner's code runs.
"""

from __future__ import annotations

import builtins
import functools
from contextlib import ExitStack
from types import CodeType

import torch
from torch import nn
from torch.amp.autocast_mode import autocast
from torch.amp.grad_scaler import GradScaler
from torch.nn.utils import clip_grad
from torch.optim import lr_scheduler
from torch.optim.optimizer import register_optimizer_step_pre_hook

from content.checkers._bounds import (  # not the judge's modules: see _bounds
    FOREIGN_OPTIMIZER,
    IN_BACKWARD,
    MAX_EVENTS,
    MAX_ROWS,
    MAX_ROWS_TOTAL,
)
from content.checkers._tags import Criterion, Rows

LEARNER_FILE = "<your code>"
N_FEATURES = 3
SCALER_METHODS = ("scale", "unscale_", "step", "update")
CLIPPING = {"clip_grad_norm_": "norm", "clip_grad_norm": "norm",
            "clip_grads_with_norm_": "norm", "clip_grad_value_": "value"}


class _Loader:
    """A list-like dataloader of (inputs, targets) micro-batches."""

    def __init__(self, batches: list, recorder: _Recorder):
        self._batches, self._recorder = batches, recorder

    def __len__(self) -> int:
        return len(self._batches)

    def __getitem__(self, index):
        j = range(len(self._batches))[index]  # negative indices and IndexError as a list
        self._recorder.add("F", j)
        return self._batches[j]

    def __iter__(self):
        for j in range(len(self._batches)):
            self._recorder.add("F", j)
            yield self._batches[j]


class _Recorder:
    def __init__(self, model: nn.Module, y: torch.Tensor):
        self.params = list(model.parameters())
        self.y = y  # float64 targets [n, bs]
        self.events: list[list] = []
        self.truncated = False
        self.losses = 0
        self.backward_open = False  # a backward() reported a loss but has not reached .grad
        self.target_ids: dict[int, int] = {}
        self.bs = y.shape[1]
        self.target_rows = {v: [j, r] for j, row in enumerate(y.float().tolist())
                            for r, v in enumerate(row)}
        self.input_rows: dict[tuple, list] = {}  # set by _build: a row of x -> [batch, row]
        self.rows_total = 0
        self.depth = {"C": 0, "R": 0, "G": 0}  # calls in progress: a nested one is the same call
        self.schedulers: dict[int, int] = {}  # id(scheduler) -> its number
        self.overflow: int | None = None  # the batch whose gradient overflows (set by _build)

    def add(self, *event) -> None:
        if len(self.events) < MAX_EVENTS:  # the judge refuses more (a bound on its work)
            self.events.append(list(event))
        else:
            self.truncated = True

    def weights(self) -> list[float]:
        return torch.cat([p.detach().reshape(-1) for p in self.params]).double().tolist()

    def grads(self) -> list[float] | None:
        if all(p.grad is None for p in self.params):
            return None
        return torch.cat([(p.grad if p.grad is not None else torch.zeros_like(p)).reshape(-1)
                          for p in self.params]).double().tolist()

    def identify(self, *tensors) -> int | None:
        """Which micro-batch's targets a criterion() call got (by identity, else by value)."""
        for t in tensors:
            if not isinstance(t, torch.Tensor):
                continue
            if id(t) in self.target_ids:
                return self.target_ids[id(t)]
            flat = t.detach().reshape(-1).to("cpu", torch.float64)
            for j, target in enumerate(self.y):
                if flat.numel() == target.numel() and torch.allclose(flat, target, atol=1e-6):
                    return j
        return None

    def on_loss(self, batch: int) -> int:
        self.add("L", batch, self.weights())
        self.losses += 1
        return self.losses - 1

    def on_rows(self, rows: list, live: list) -> int | None:
        """A loss over rows, noted while the judge's bound on all of them allows."""
        self.rows_total += len(rows) + len(live)
        if self.rows_total > MAX_ROWS_TOTAL:
            return None
        self.add("P", rows, live, self.weights())
        self.losses += 1
        return self.losses - 1

    def rows_of(self, target) -> list | None:
        """Each value of `target` as the [batch, row] it is (None: not all of them are)."""
        if not isinstance(target, torch.Tensor) or target.numel() > MAX_ROWS:
            return None
        rows = [self.target_rows.get(v) for v in target.detach().float().reshape(-1).tolist()]
        return None if None in rows else rows

    def on_forward(self, _model, args, output):
        """Mark a grad-carrying model output with the rows of its input."""
        if not (torch.is_grad_enabled() and isinstance(output, torch.Tensor)
                and output.requires_grad and args and isinstance(args[0], torch.Tensor)
                and args[0].dim() == 2 and args[0].shape[0] <= MAX_ROWS):
            return None
        keys = [tuple(r) for r in args[0].detach().float().tolist()]
        rows = [self.input_rows.get(k) for k in keys]
        return None if None in rows else Rows.apply(output, rows)

    def on_backward(self, loss_id: int, scale: float) -> None:
        self.add("B", loss_id, scale, None if self.backward_open else self.grads())
        self.backward_open = True

    def on_accumulated(self, _param) -> None:
        if self.backward_open:
            self.add("A")
            self.backward_open = False

    def on_step(self, optimizer, _args, _kwargs) -> None:
        held = {id(p) for g in optimizer.param_groups for p in g["params"]}
        flags = (IN_BACKWARD if self.backward_open else 0) | (
            0 if held == {id(p) for p in self.params} else FOREIGN_OPTIMIZER)
        lrs = [float(g["lr"]) for g in optimizer.param_groups]
        self.add("S", lrs, self.grads(), flags, self.weights())

    def clipping(self, original, kind: str):
        """`original` (a torch clipping function), noting each outermost call."""
        @functools.wraps(original)
        def clip(parameters, *args, **kwargs):
            if self.depth["C"]:
                return original(parameters, *args, **kwargs)
            params = [parameters] if isinstance(parameters, torch.Tensor) else list(parameters)
            before = self.grads()
            self.depth["C"] += 1
            try:
                result = original(params, *args, **kwargs)
            finally:
                self.depth["C"] -= 1
            mask = [any(p is q for q in params) for p in self.params]
            value = args[0] if args else kwargs.get("clip_value", 0.0)
            if any(mask):
                self.add("C", kind, mask, _number(value) if kind == "value" else 0.0, before,
                         self.grads())
            return result
        return clip

    def hooking(self, original):
        """`Tensor.register_hook`: a hook on one of the model's parameters is wrapped so that
        each call notes the gradient it got and the one it gave back ("H", which parameter,
        before, after; after None: it returned None, so the gradient went on unchanged)."""
        recorder = self

        @functools.wraps(original)
        def register_hook(tensor, hook):
            index = next((k for k, p in enumerate(recorder.params) if p is tensor), None)
            if index is None or not callable(hook):
                return original(tensor, hook)

            @functools.wraps(hook)
            def noted(grad):
                out = hook(grad)
                recorder.add("H", index, _flat(grad),
                             _flat(out) if isinstance(out, torch.Tensor) else None)
                return out
            return original(tensor, noted)
        return register_hook

    def scheduling(self, original):
        """`original` (an LR scheduler's step), noting each outermost call but the one
        every scheduler's constructor makes."""
        @functools.wraps(original)
        def step(scheduler, *args, **kwargs):
            outer = not self.depth["R"] and getattr(scheduler, "_step_count", 1) != 0
            self.depth["R"] += 1
            try:
                return original(scheduler, *args, **kwargs)
            finally:
                self.depth["R"] -= 1
                if outer:
                    self.add("R", self.schedulers.setdefault(id(scheduler),
                                                             len(self.schedulers)))
        return step


    def scaler_call(self, original, method: str):
        """`original` (a GradScaler method), noting each outermost call before it runs."""
        @functools.wraps(original)
        def call(scaler, *args, **kwargs):
            outer = not self.depth["G"]
            if outer:
                self.add("G", method, _number(_scale_of(scaler)))
            self.depth["G"] += 1
            try:
                return original(scaler, *args, **kwargs)
            finally:
                self.depth["G"] -= 1
        return call


def _scale_of(scaler) -> float | None:
    try:
        return scaler.get_scale()
    except Exception:  # noqa: BLE001 - a scaler the learner broke: the judge says so
        return None


def _flat(tensor: torch.Tensor) -> list[float]:
    return tensor.detach().reshape(-1).double().tolist()


def _number(value) -> float | None:
    try:
        return float(value)
    except (TypeError, ValueError, RuntimeError):
        return None  # the judge then cannot explain the clip, and says so


def _patched(stack: ExitStack, owner, name: str, replacement) -> None:
    original = owner.__dict__[name] if isinstance(owner, type) else getattr(owner, name)
    setattr(owner, name, replacement)
    stack.callback(setattr, owner, name, original)


def _full_precision(init):
    @functools.wraps(init)
    def __init__(self, *args, **kwargs):
        init(self, *args, **kwargs)
        self._enabled = False
    return __init__


def _watch(stack: ExitStack, recorder: _Recorder) -> None:
    """Note gradient clipping, scheduler steps and GradScaler calls, and keep autocast off,
    until `stack` closes."""
    _patched(stack, autocast, "__init__", _full_precision(autocast.__init__))
    _patched(stack, torch.Tensor, "register_hook",
             recorder.hooking(torch.Tensor.__dict__["register_hook"]))
    for module in (torch.nn.utils, clip_grad):
        for name, kind in CLIPPING.items():
            if callable(getattr(module, name, None)):
                _patched(stack, module, name, recorder.clipping(getattr(module, name), kind))
    for cls in vars(lr_scheduler).values():
        if (isinstance(cls, type) and issubclass(cls, lr_scheduler.LRScheduler)
                and "step" in cls.__dict__):
            _patched(stack, cls, "step", recorder.scheduling(cls.__dict__["step"]))
    for method in SCALER_METHODS:
        _patched(stack, GradScaler, method,
                 recorder.scaler_call(GradScaler.__dict__[method], method))


def _build(plan: dict, device: str):
    """The names the learner's code gets, and the recorder watching them."""
    scn = plan["scenario"]
    x = torch.tensor(plan["x"], dtype=torch.float64)
    y = torch.tensor(plan["y"], dtype=torch.float64).unsqueeze(-1)  # [n, bs, 1]
    w0 = torch.tensor(plan["w0"], dtype=torch.float64)
    model = nn.Linear(N_FEATURES, 1)
    with torch.no_grad():
        model.weight.copy_(w0[:N_FEATURES].reshape(1, N_FEATURES))
        model.bias.copy_(w0[N_FEATURES:])
    model.to(device)
    recorder = _Recorder(model, y.reshape(y.shape[0], -1))
    batches = [(x[j].to(device, torch.float32), y[j].to(device, torch.float32))
               for j in range(len(x))]
    recorder.target_ids = {id(t): j for j, (_, t) in enumerate(batches)}
    recorder.overflow = scn.get("overflow_batch")
    recorder.input_rows = {tuple(row): [j, r] for j, (xb, _) in enumerate(batches)
                           for r, row in enumerate(xb.cpu().tolist())}
    names = {
        "model": model,
        "optimizer": torch.optim.SGD(model.parameters(), lr=scn["learning_rate"]),
        "criterion": Criterion(recorder),
        "dataloader": _Loader(batches, recorder),
        "accumulation_steps": scn["accumulation_steps"],
        "batch_size": scn["batch_size"],
        "learning_rate": scn["learning_rate"],
        "num_epochs": scn["num_epochs"],
        "device": device,
    }
    if "init_scale" in scn:  # the AMP card: a scaler that really scales, a clip norm, torch
        names["scaler"] = GradScaler(device, init_scale=scn["init_scale"],
                                     growth_interval=scn["growth_interval"])
        names["max_norm"] = scn["max_norm"]
        names["torch"] = torch
    return names, recorder


def _run(compiled: CodeType, plan: dict, device: str) -> dict:
    """One scenario. The code is the whole training; if it went over the dataloader exactly
    once, it is taken as one epoch's loop and run again until num_epochs epochs have run
    (as if wrapped in `for epoch in range(num_epochs):`)."""
    names, recorder = _build(plan, device)
    namespace = {"__name__": "__main__", "__builtins__": builtins, **names}
    observed = {"events": recorder.events, "error": None}
    try:
        with ExitStack() as stack, torch.random.fork_rng(devices=[]):
            stack.callback(register_optimizer_step_pre_hook(recorder.on_step).remove)
            stack.callback(names["model"].register_forward_hook(recorder.on_forward).remove)
            for p in recorder.params:
                stack.callback(p.register_post_accumulate_grad_hook(recorder.on_accumulated)
                               .remove)
            _watch(stack, recorder)
            torch.manual_seed(plan["scenario"]["seed"])  # whatever randomness the learner uses
            exec(compiled, namespace)
            if sum(1 for e in recorder.events if e[:2] == ["F", 0]) == 1:
                for _ in range(plan["scenario"]["num_epochs"] - 1):
                    exec(compiled, namespace)
    except MemoryError:
        raise  # limits are the sandbox's to report
    except (Exception, SystemExit) as exc:  # noqa: BLE001 - whatever the learner raised
        observed["error"] = error_detail(exc)
    observed.update(final=recorder.weights(), truncated=recorder.truncated)
    return observed


def observe(code: str, plans: list[dict], device: str = "cpu") -> dict:
    """Run the code in each planned scenario, stopping at the first that raises."""
    try:
        compiled = compile(code, LEARNER_FILE, "exec", dont_inherit=True)
    except (SyntaxError, ValueError) as exc:  # ValueError: NUL bytes in the source
        return {"scenarios": [], "error": error_detail(exc)}
    scenarios = []
    for plan in plans:
        scenarios.append(_run(compiled, plan, device))
        if scenarios[-1]["error"]:
            return {"scenarios": scenarios, "error": scenarios[-1]["error"]}
    return {"scenarios": scenarios, "error": None}


def error_detail(exc: BaseException, filename: str = LEARNER_FILE) -> dict:
    """The exception as the learner should see it: type, message and their own line (the
    innermost in `filename`: the learner's code, or an author's)."""
    line = None
    if isinstance(exc, SyntaxError) and exc.filename == filename:
        line = exc.lineno
    tb = exc.__traceback__
    while tb is not None:  # the innermost frame of the learner's own code
        if tb.tb_frame.f_code.co_filename == filename:
            line = tb.tb_lineno
        tb = tb.tb_next
    message = exc.msg if isinstance(exc, SyntaxError) else str(exc)
    return {"type": type(exc).__name__, "message": message, "line": line}
