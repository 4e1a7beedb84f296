"""In the judge: which backward() contributions .grad holds, and each one's factor, followed
at a cost per event that does not grow with what .grad holds.

The events are untrusted, so nothing here copies or rewrites the ledger per event. It can
be kept as a range: contributions reach .grad in the order backward() made them (an "A"
event brings in all those in flight) and leave it all at once (a clear), so .grad always
holds the ids from the last clear up to the last arrival. A step needs the factor only of
the contributions no earlier step applied, which are those that arrived since the last step
(or clear); the in-place rescales of .grad since then are kept in a list, and each such
contribution's factor, its loss scale times the rescales after its arrival, is computed
once, at the step. The largest factor held (for a step made on scaled gradients) follows
the rescales by one multiplication, as every rescale factor is positive.
"""

from __future__ import annotations

from collections.abc import Sequence


class Ledger:
    def __init__(self, scales: Sequence):
        self.scales = scales  # the trace's contributions: each one's loss scale
        self.start = 0  # the first contribution .grad holds (the last clear)
        self.stop = 0  # the contributions that reached .grad: those below
        self.fresh = 0  # the first one no step applied yet
        self.rescales: list[float] = []  # factors of .grad since fresh ones could arrive
        self.arrivals: list[tuple[int, int]] = []  # (first id, rescales before it) since then
        self.largest: float | None = None

    @property
    def held(self) -> range:
        return range(self.start, self.stop)

    def arrive(self, stop: int) -> None:
        """Every contribution up to `stop` has reached .grad, at its loss scale."""
        if stop <= self.stop:
            return
        self.arrivals.append((self.stop, len(self.rescales)))
        for cid in range(self.stop, stop):
            scale = self.scales[cid].scale
            if self.largest is None or scale > self.largest:
                self.largest = scale
        self.stop = stop

    def rescale(self, factor: float) -> None:
        """.grad multiplied in place by `factor` (> 0)."""
        self.rescales.append(factor)
        if self.largest is not None:
            self.largest *= factor

    def clear(self) -> range:
        """.grad emptied: the contributions it dropped."""
        dropped = self.held
        self.start = self.fresh = self.stop
        self.rescales, self.arrivals, self.largest = [], [], None
        return dropped

    def settle(self) -> dict[int, float]:
        """At a step: the factor of each contribution it applies for the first time (the
        top of `held`, from `fresh`); they count as applied from now on."""
        after = [1.0] * (len(self.rescales) + 1)  # after[k]: product of the rescales from k
        for k in range(len(self.rescales) - 1, -1, -1):
            after[k] = self.rescales[k] * after[k + 1]
        ends = [first for first, _ in self.arrivals[1:]] + [self.stop]
        factors = {cid: self.scales[cid].scale * after[k]
                   for (first, k), end in zip(self.arrivals, ends, strict=False)
                   for cid in range(first, end)}
        self.fresh = self.stop
        self.rescales, self.arrivals = [], []
        return factors
