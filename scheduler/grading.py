"""Map an auto-graded attempt to an SM-2 quality (docs/architecture.md, "SM-2 and grading").

With 4 options and 3 attempts a guesser is right by attempt 3 three times in four, so only a
first-try answer shows recall:

    first try, no hint, latency <= fast_ms   -> 5
    first try, no hint, latency <= slow_ms   -> 4
    first try, no hint, slower               -> 3
    first try after a hint                   -> 2
    second attempt (hint or not)             -> 1
    third attempt, or never correct          -> 0

Callers store the raw attempt as well, so this mapping can change later.
"""

from __future__ import annotations

from dataclasses import dataclass

from scheduler.sm2 import check_quality

__all__ = ["MAX_ATTEMPTS", "GradePolicy", "needs_drill", "passed", "quality_for"]

MAX_ATTEMPTS = 3


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


@dataclass(frozen=True)
class GradePolicy:
    """Latency thresholds (inclusive) for a first-try correct answer without a hint."""

    fast_ms: int = 20_000
    slow_ms: int = 60_000

    def __post_init__(self) -> None:
        if not (_is_int(self.fast_ms) and _is_int(self.slow_ms)):
            raise ValueError("fast_ms and slow_ms must be ints")
        if not 0 <= self.fast_ms <= self.slow_ms:
            raise ValueError(f"need 0 <= fast_ms <= slow_ms, got {self.fast_ms}, {self.slow_ms}")


DEFAULT_POLICY = GradePolicy()


def quality_for(
    correct: bool,
    attempts: int,
    hint_used: bool,
    latency_ms: int,
    policy: GradePolicy = DEFAULT_POLICY,
) -> int:
    """SM-2 quality (0..5) for one card's auto-graded attempt.

    ``attempts`` is how many attempts were used (1..MAX_ATTEMPTS); ``latency_ms`` is the time
    to the first answer.
    """
    if not isinstance(correct, bool) or not isinstance(hint_used, bool):
        raise ValueError("correct and hint_used must be bools")
    if not _is_int(attempts) or not 1 <= attempts <= MAX_ATTEMPTS:
        raise ValueError(f"attempts must be an int in 1..{MAX_ATTEMPTS}, got {attempts!r}")
    if not _is_int(latency_ms) or latency_ms < 0:
        raise ValueError(f"latency_ms must be an int >= 0, got {latency_ms!r}")
    if not isinstance(policy, GradePolicy):
        raise ValueError("policy must be a GradePolicy")
    if not correct or attempts >= 3:
        return 0
    if attempts == 2:
        return 1
    if hint_used:
        return 2
    if latency_ms <= policy.fast_ms:
        return 5
    if latency_ms <= policy.slow_ms:
        return 4
    return 3


def passed(quality: int) -> bool:
    """SM-2 counts q >= 3 as a pass (q < 3 restarts the repetitions)."""
    return check_quality(quality) >= 3


def needs_drill(quality: int) -> bool:
    """Rule 7: after the day's session, repeat items scored below 4 (drills change no state)."""
    return check_quality(quality) < 4
