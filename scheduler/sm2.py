"""SM-2 as published: P. A. Wozniak (1990), "Optimization of learning", section 3.2.

Pure and integer-only: no clock, no floats. The E-Factor is kept in hundredths (``ef100``,
250 = 2.5) because float EF makes "round the interval up" a day off (grades 2,0,1,5,5,5 give
interval 9 here; float code gives 10, since 1.3 + 0.1 + 0.1 == 1.5000000000000002).

Where the paper leaves room, we follow SuperMemo's later code and the ``supermemo2`` package:

- the new interval uses the EF from *before* this review's update;
- the EF is updated on every grade, failures included, then floored at 1.30 (no cap);
- I(1) = 1, I(2) = 6, I(n) = ceil(I(n-1) * EF), computed exactly as ``(a*b + 99) // 100``;
- a grade below 3 restarts the repetitions: repetitions 0, interval 1 (the EF is kept).

Rule 7 (same-day drill of grades below 4) is the caller's business: drills change no state.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["EF_FLOOR", "EF_START", "NEW", "SM2State", "check_quality", "review"]

EF_START = 250
EF_FLOOR = 130
# EF' = EF + (0.1 - (5-q)(0.08 + 0.02(5-q))), in hundredths, indexed by q.
_EF_DELTA = (-80, -54, -32, -14, 0, 10)


@dataclass(frozen=True, slots=True)
class SM2State:
    """One card's SM-2 state. ``ef100`` is the E-Factor in hundredths; ``interval`` in days."""

    ef100: int
    repetitions: int
    interval: int

    @classmethod
    def new(cls) -> SM2State:
        return cls(EF_START, 0, 0)


NEW = SM2State.new()


def _is_int(value: object) -> bool:
    # bool is an int subclass; True as a grade is a bug, not a 1.
    return isinstance(value, int) and not isinstance(value, bool)


def check_quality(quality: object) -> int:
    """Return ``quality`` if it is an int in 0..5, else raise ValueError."""
    if not _is_int(quality):
        raise ValueError(f"quality must be an int 0..5, got {type(quality).__name__} {quality!r}")
    if not 0 <= quality <= 5:  # type: ignore[operator]
        raise ValueError(f"quality must be in 0..5, got {quality}")
    return quality  # type: ignore[return-value]


def _check_state(state: object) -> SM2State:
    if not isinstance(state, SM2State):
        raise ValueError(f"state must be an SM2State, got {type(state).__name__}")
    for name in ("ef100", "repetitions", "interval"):
        if not _is_int(getattr(state, name)):
            raise ValueError(f"SM2State.{name} must be an int, got {getattr(state, name)!r}")
    if state.ef100 < EF_FLOOR:
        raise ValueError(f"SM2State.ef100 must be >= {EF_FLOOR}, got {state.ef100}")
    if state.repetitions < 0:
        raise ValueError(f"SM2State.repetitions must be >= 0, got {state.repetitions}")
    if state.interval < 0:
        raise ValueError(f"SM2State.interval must be >= 0, got {state.interval}")
    return state


def review(state: SM2State, quality: int) -> SM2State:
    """Apply one graded review to ``state`` and return the new state."""
    _check_state(state)
    q = check_quality(quality)
    ef = max(EF_FLOOR, state.ef100 + _EF_DELTA[q])
    if q < 3:
        return SM2State(ef, 0, 1)
    if state.repetitions == 0:
        interval = 1
    elif state.repetitions == 1:
        interval = 6
    else:
        # Old EF (before this review), rounded up, exactly; never 0 (a hand-made state
        # with interval 0 would otherwise stay due forever).
        interval = max(1, (state.interval * state.ef100 + 99) // 100)
    return SM2State(ef, state.repetitions + 1, interval)
