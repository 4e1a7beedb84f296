"""The values the judge's replay (`_trace`) rebuilds from a child's raw events, and the
checks every raw value goes through. Pure Python: the judge never imports torch."""

from __future__ import annotations

from dataclasses import dataclass, field

from content.checkers._hooks import Hooked
from content.checkers._scenario import N_WEIGHTS, Vector


class Malformed(ValueError):
    """The child's observations are not what the observer writes."""


@dataclass(frozen=True)
class Backward:
    epoch: int
    batch: int  # 0-based
    scale: float  # the factor the loss was multiplied by after criterion()
    cid: int  # contribution id
    # None: the micro-batch's mean loss. Else the rows (0-based, sorted) of a loss over other
    # rows ("P"), and `scale` is what a loss of the whole micro-batch would carry to give
    # each of these rows the same weight (its per-row weight times the batch size).
    rows: tuple[int, ...] | None = None
    # Its factor is not the loss's alone: a loss over other rows ("P"), or a hook's factor.
    pooled: bool = False


@dataclass(frozen=True)
class Step:
    epoch: int
    pos: int  # 1-based number of the batch whose loss came last (0: none yet this epoch)
    lrs: tuple[float, ...]
    held: range  # the contributions in .grad at step()
    fresh: dict[int, float]  # those no earlier step applied (the top of held): their factor
    largest: float  # the largest factor in .grad (0.0 when empty)
    pending: int | None  # a loss computed but not yet backpropagated at step() time
    rescaled: float  # .grad multiplied by this since the last backward (unscaling, say)
    skipped: bool = False  # scaler.step() found inf or NaN and did not call optimizer.step()
    norm: float = 0.0  # the 2-norm of .grad at step() (a clip by hand is judged by it)


@dataclass(frozen=True)
class Clear:
    epoch: int  # the epoch in which the clear was noticed
    dropped: range  # contributions that were in .grad


@dataclass(frozen=True)
class Rescale:
    """.grad multiplied in place by one factor (gradient-side scaling, GradScaler)."""
    epoch: int
    factor: float
    held: range


@dataclass(frozen=True)
class Clip:
    """A call of torch's gradient clipping (its effect checked against the ledger)."""
    epoch: int
    kind: str  # "norm" or "value"
    held: range
    norms: tuple[float, float] = (0.0, 0.0)  # 2-norm of what it clipped, before and after
    whole: bool = True  # it got all of the model's parameters


@dataclass(frozen=True)
class ScalerCall:
    """A call of GradScaler's scale, unscale_, step or update, as it began."""
    epoch: int
    method: str
    scale: float | None  # the scaler's scale at that moment (None: it could not tell)


@dataclass(frozen=True)
class SchedulerStep:
    epoch: int
    scheduler: int  # which one: loops may step several (warm-up and decay, say)


@dataclass
class Trace:
    """What the replay rebuilt, up to the first anomaly; `losses` and `backwards` count
    every loss and backward() event, past an anomaly too."""
    events: list = field(default_factory=list)
    contribs: list[Backward] = field(default_factory=list)
    loss_batches: list[tuple[int, int]] = field(default_factory=list)  # (epoch, batch) per loss
    loss_at: list[int] = field(default_factory=list)  # per loss: len(events) when computed
    backpropagated: set[int] = field(default_factory=set)  # loss ids
    passes: int = 0
    reach: list[int] = field(default_factory=list)  # per pass: batches it went through
    anomaly: str | None = None
    truncated: bool = False
    final: Vector = field(default_factory=list)
    nonfinite: Step | None = None  # a step that applied inf or NaN: the replay stopped there
    losses: int = 0
    backwards: int = 0
    # Losses whose gradient the judge makes overflow (an AMP scenario's; the loss is finite):
    # ((epoch, batch), how many events the trace held when the loss was computed).
    overflows: list[tuple[tuple[int, int], int]] = field(default_factory=list)
    hooked: Hooked | None = None  # a hook changed a gradient other than by one factor


def _number(value) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise Malformed(f"expected a number, got {type(value).__name__}")
    try:
        return float(value)
    except OverflowError:  # an int too large for a float: no observer writes one
        raise Malformed("a number out of range") from None


def _index(value, size: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < size:
        raise Malformed(f"index {value!r} out of range")
    return value


def _floats(value, size: int, optional: bool = False) -> Vector | None:
    if value is None and optional:
        return None
    if not isinstance(value, list) or len(value) != size:
        raise Malformed("expected a gradient")
    return [_number(v) for v in value]


def _vector(value, optional: bool = False) -> Vector | None:
    if value is None and optional:
        return None
    if not isinstance(value, list) or len(value) != N_WEIGHTS:
        raise Malformed("expected a weight vector")
    return [_number(v) for v in value]
