"""What reached the optimizer at each update, and whether those windows are a correct loop's.

An update is one optimizer.step(): the micro-batches whose gradients were in .grad at that
moment, each with the factor it carried there (the loss scale times any rescaling of .grad
since), and the learning rate. A correct loop's updates follow one of a few window plans
(`PLANS`); which one is the learner's choice, and none of them is a mistake:
- windows counted per epoch, the partial last window of each epoch stepped, dropped at the
  next epoch start, or leaked into the next epoch's first update (a warning);
- windows counted by a global micro-batch counter, straddling epoch boundaries (nanoGPT,
  lit-llama, Ignite), the last partial window of training stepped or dropped;
- global windows cut at each epoch boundary, the cut part cleared at the next epoch start
  (YOLOv5's `ni - last_opt_step >= accumulate`) or flushed at the epoch end.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from itertools import islice, zip_longest

from content.checkers._scenario import Scenario
from content.checkers._trace import Backward, Step, Trace

Key = tuple[int, int]  # (epoch, 0-based batch)
Window = tuple[Key, ...]


@dataclass(frozen=True)
class Update:
    step: Step
    new: tuple[Backward, ...]  # contributions applied for the first time

    @property
    def coefs(self) -> dict[int, float]:
        """Contribution -> its factor in .grad at this update, for the new ones."""
        return self.step.fresh

    @property
    def again(self) -> range:
        """The ids of the contributions an earlier update applied already (the new ones
        arrived after them: the top of what .grad held)."""
        held = self.step.held
        return range(held.start, held.stop - len(self.step.fresh))

    @property
    def new_ids(self) -> range:
        held = self.step.held
        return range(held.stop - len(self.step.fresh), held.stop)

    @property
    def window(self) -> Window:
        """The micro-batches applied; one whose loss came in pieces of rows counts once
        (whether the pieces make it whole is `_scaling.coverage`'s to judge)."""
        whole = [(c.epoch, c.batch) for c in self.new if c.rows is None]
        return tuple(sorted(whole + list({(c.epoch, c.batch) for c in self.new if c.rows})))


def updates(trace: Trace) -> list[Update]:
    """One Update per step; each contribution is new in one update at most, so this is
    linear in the trace however much .grad held."""
    return [Update(ev, tuple(trace.contribs[c] for c in ev.fresh))
            for ev in trace.events if isinstance(ev, Step)]


# The plans are generators, compared window by window with what was seen: the epochs a
# record claims are the learner's, so no plan is built further than the updates go.
def _epoch_plan(scn: Scenario, epochs: int, tail_policy: str) -> Iterator[Window]:
    a, n, r = scn.accumulation_steps, scn.n_batches, scn.partial
    carry: Window = ()
    for e in range(1, epochs + 1):
        windows = [tuple((e, b) for b in range(k * a, (k + 1) * a)) for k in range(n // a)]
        tail = tuple((e, b) for b in range(n - r, n))
        if carry:
            if windows:
                windows[0] = carry + windows[0]
            else:
                tail = carry + tail
            carry = ()
        yield from windows
        if tail and tail_policy == "step":
            yield tail
        elif tail and tail_policy == "leak":
            carry = tail


def _global_plan(scn: Scenario, epochs: int, cut: str | None, last: str) -> Iterator[Window]:
    a, n = scn.accumulation_steps, scn.n_batches
    every = ((e, b) for e in range(1, epochs + 1) for b in range(n))
    while chunk := tuple(islice(every, a)):
        parts = [chunk] if cut is None else [
            tuple(k for k in chunk if k[0] == e) for e in sorted({k[0] for k in chunk})]
        for i, part in enumerate(parts):
            final = i == len(parts) - 1
            if (final and len(chunk) == a) or (cut == "step" if not final else last == "step"):
                yield part


def _plans(scn: Scenario, epochs: int) -> Iterator[tuple[str, Iterator[Window]]]:
    for tail in ("step", "drop", "leak"):
        yield f"epoch/{tail}", _epoch_plan(scn, epochs, tail)
    for last in ("step", "drop"):
        yield f"global/{last}", _global_plan(scn, epochs, None, last)
        yield f"global-cut/{last}", _global_plan(scn, epochs, last, last)


def matching_plan(ups: list[Update], scn: Scenario, epochs: int,
                  bad: frozenset[Key] = frozenset()) -> str | None:
    """The name of the correct plan the updates follow exactly, if any ("epoch/leak": the
    partial windows leak into the next epoch). A window holding a micro-batch in `bad` (an
    overflowed gradient) applies nothing in a correct loop, however it was skipped: by
    scaler.step(), or cleared by hand; the others must be applied as planned."""
    if any(u.again for u in ups):
        return None
    seen = [u.window for u in ups if u.step.held and not u.step.skipped]
    for name, plan in _plans(scn, max(epochs, 1)):
        if all(a == b for a, b in zip_longest(seen, (w for w in plan if bad.isdisjoint(w)))):
            return name
    return None


def restarted(trace: Trace, scn: Scenario) -> tuple[str, str] | None:
    """A new iterator over dataloader for each update or micro-batch: every pass over it
    starts at its first batch, so passes cut short again and again train on the same first
    micro-batches, and the rest of the data is never used. (A single cut pass, a peek at
    the first batch, is not this.)"""
    n = scn.n_batches
    trained = {c.epoch for c in trace.contribs}
    cut = [k for k, reached in enumerate(trace.reach, 1) if reached < n and k in trained]
    if trace.passes <= scn.num_epochs or len(cut) < 2:
        return None
    used = sorted({c.batch + 1 for c in trace.contribs})
    never = [b for b in range(1, n + 1) if b not in used]
    return ("restarted_iterator",
            f"dataloader was started over from its first batch {trace.passes} times in "
            f"{scn.num_epochs} epochs, "
            f"{'each time' if len(cut) == trace.passes else count(len(cut), 'time')} after "
            f"at most {max(trace.reach[k - 1] for k in cut)} of its {n} micro-batches: "
            f"every update trained on {span(used)} again"
            + (f", and {span(never)} never reached backward()" if never else "")
            + ". A new iterator over dataloader begins at its first batch: make one "
              "iterator per epoch and take each window's micro-batches from it in turn")


# -- text --------------------------------------------------------------------------------------
def runs(numbers: list[int]) -> str:
    """'1-3, 5, 7-9' for [1, 2, 3, 5, 7, 8, 9]: every number shows, runs compressed."""
    out: list[str] = []
    for k in sorted(set(numbers)):
        if out and out[-1][1] == k - 1:
            out[-1] = (out[-1][0], k)
        else:
            out.append((k, k))
    return ", ".join(f"{lo}" if lo == hi else f"{lo}-{hi}" for lo, hi in out)


def span(batches: list[int]) -> str:
    """1-based batch numbers as text: 'batch 9', 'batches 9-10', 'batches 1, 3, 5-7'."""
    distinct = sorted(set(batches))
    return ("batch " if len(distinct) == 1 else "batches ") + runs(distinct)


def count(k: int, noun: str) -> str:
    return f"{k} {noun}" + ("" if k == 1 else "es" if noun.endswith("h") else "s")
