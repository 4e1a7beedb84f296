"""When things happened: backward, step, clear, clipping and scheduler steps, against the
windows of a correct loop. Each function returns findings: (mistake id or None, feedback)."""

from __future__ import annotations

import math
from bisect import bisect_left, bisect_right
from collections import Counter

from content.checkers._scaling import factor_text
from content.checkers._scenario import Scenario
from content.checkers._trace import Backward, Clear, Clip, SchedulerStep, Step, Trace
from content.checkers._windows import Update, count, matching_plan, runs, span

Finding = tuple[str | None, str]


def timing(trace: Trace, scn: Scenario, ups: list[Update]) -> list[Finding]:
    missing = _unbackpropagated(trace, ups)
    if missing:
        return [missing]
    bad = frozenset(key for key, _ in trace.overflows)
    # A window whose inf a hook clamped away (`clip_in_grad_hook`) was applied as any other.
    plan = matching_plan(ups, scn, trace.passes, bad) or (
        matching_plan(ups, scn, trace.passes) if bad else None)
    if plan is None:
        return _mistimed(trace, scn, ups)
    if plan == "epoch/leak" and scn.partial and trace.passes > 1:
        return [_leftover(scn, 1)]
    return []


def _dropped_with_an_overflow(trace: Trace) -> set[tuple[int, int]]:
    """Losses left out of backward() in a window that an overflowed gradient made the loop
    drop (no step applied it): the rest of a skipped window need not be backpropagated."""
    ends = [i for i, e in enumerate(trace.events) if isinstance(e, Step | Clear)]
    bad = sorted(at for _, at in trace.overflows)
    dropped = set()
    for key, at in zip(trace.loss_batches, trace.loss_at, strict=True):
        k = bisect_left(ends, at)  # ends[k]: the first step or clear after the loss
        if k == len(ends) or not bad:
            continue
        ev, start = trace.events[ends[k]], ends[k - 1] if k else -1
        first_bad = bisect_right(bad, start)
        if (isinstance(ev, Clear) or (isinstance(ev, Step) and ev.skipped)) and (
                first_bad < len(bad) and bad[first_bad] <= ends[k]):
            dropped.add(key)
    return dropped


def _unbackpropagated(trace: Trace, ups: list[Update]) -> Finding | None:
    """Micro-batches whose loss was computed but never went through backward(), in windows
    that were stepped (a dropped tail window may skip backward(), as it may be cleared, and
    so may the rest of a window dropped for its overflow)."""
    done = {(c.epoch, c.batch) for c in trace.contribs} | _dropped_with_an_overflow(trace)
    last_step = {}
    for u in ups:
        last_step[u.step.epoch] = max(last_step.get(u.step.epoch, 0), u.step.pos)
    missing = sorted({key for key in trace.loss_batches
                      if key not in done and key[1] < last_step.get(key[0], 0)})
    if not missing:
        return None
    epoch = missing[0][0]
    used = [c.batch + 1 for u in ups if u.step.epoch == epoch for c in u.new]
    return ("missing_backward",
            f"in epoch {epoch} the loss of {span([b + 1 for e, b in missing if e == epoch])} "
            f"was computed but backward() never ran on it, so those micro-batches never "
            f"reached .grad and the updates used only {span(used) if used else 'nothing'}")


def _leftover(scn: Scenario, epoch: int) -> Finding:
    a, n, r = scn.accumulation_steps, scn.n_batches, scn.partial
    return ("leftover_gradients",
            f"warning: with {scn.describe()}, the gradients of "
            f"{span(list(range(n - r + 1, n + 1)))} at the end of epoch {epoch} never reached "
            f"optimizer.step() and were not cleared, so they were added to the first update "
            f"of epoch {epoch + 1}, which then held {r + a} micro-batches instead of {a}")


def classify(positions: list[int], scn: Scenario) -> Finding | None:
    """Judge one epoch's step positions (1-based batch numbers) against the windows."""
    a, n = scn.accumulation_steps, scn.n_batches
    positions = sorted(set(positions))  # a second step at one place is a clearing matter
    ends = scn.window_ends
    if positions in (ends, list(range(a, n + 1, a))):
        return None
    at = f"With {scn.describe()}: optimizer.step() ran"
    want = f"after batches {runs(ends)}"
    if not positions:
        return ("wrong_update_frequency", f"With {scn.describe()}: optimizer.step() never "
                                          f"ran; it should run {want}")
    if positions == list(range(1, n + 1)):
        return ("step_every_batch", f"{at} after every micro-batch (batches "
                                    f"{runs(positions)}) instead of only {want}")
    periods = [positions[0]] + ([positions[1] - positions[0]] if len(positions) > 1 else [])
    for d in periods:
        run_ = list(range(positions[0], n + 1, d)) if d > 0 else []
        if d > 1 and positions in (run_, run_ + [n]):
            if d == a:
                return ("off_by_one_modulo", f"{at} after batches {runs(positions)} "
                                             f"instead of {runs(ends)}: "
                                             f"{_offset(positions[0], a)}")
            return ("wrong_update_frequency",
                    f"{at} every {d} micro-batches (after batches {runs(positions)}) instead "
                    f"of every accumulation_steps = {a} ({want})")
    skipped = [p for p in range(1, n + 1) if p not in positions]
    if skipped and len(skipped) < len(positions):
        inverted = skipped == list(range(skipped[0], n + 1, a))
        return ("wrong_update_frequency",
                f"{at} after every micro-batch except {span(skipped)}, instead of only {want}"
                + (": the opposite of the window ends, as if the window condition were "
                   "inverted" if inverted else ""))
    return ("wrong_update_frequency", f"{at} after batches {runs(positions)} instead of {want}")


def _offset(first: int, a: int) -> str:
    """What a window condition off by a constant did, from its first step's position."""
    if first == a - 1:
        return (f"each window closed one micro-batch early, after {a - 1}: the condition "
                f"counted one micro-batch more than backward() had added (with a count of "
                f"completed micro-batches, step when that count % accumulation_steps == 0)")
    if first < a:
        return (f"the first update came after {count(first, 'micro-batch')} and each later "
                f"window closed {count(first, 'micro-batch')} past a multiple of "
                f"accumulation_steps: the condition counted {first} behind the micro-batches "
                f"done (with a count of completed micro-batches, step when that count % "
                f"accumulation_steps == 0)")
    return f"the windows were shifted by {first - a} micro-batches"


def _step_each(trace: Trace, scn: Scenario, ups: list[Update], text: str) -> str:
    """What stepping after every micro-batch applied, from the first window's updates."""
    a = scn.accumulation_steps
    first = [c for c in trace.contribs if c.epoch == 1 and c.batch < a]
    steps = [u.step for u in ups if u.step.epoch == 1 and u.step.pos <= a]
    times = [sum(c.cid in s.held for s in steps) for c in first]
    if len(first) < a or not times or not any(times):
        return text
    if all(k == 1 for k in times):
        factors = sorted({round(u.coefs[c.cid], 6) for u in ups[:a] for c in u.new})
        scale = factor_text(factors[0]) if len(factors) == 1 else "scaled by varying factors"
        return (f"{text}. Each update applied only the micro-batch just added ({scale}): "
                f".grad was cleared after every step, so this is small-batch training, one "
                f"micro-batch per update, and the effective batch never grows")
    applied = ", ".join(f"batch {c.batch + 1}'s gradient {_times(k)}"
                        for c, k in zip(first, times, strict=True))
    return (f"{text}. .grad was not cleared between these steps, so each update applied the "
            f"window's partial sum so far: within {span([c.batch + 1 for c in first])}, "
            f"{applied}")


def _times(k: int) -> str:
    return "once" if k == 1 else "twice" if k == 2 else f"{k} times"


def _mistimed(trace: Trace, scn: Scenario, ups: list[Update]) -> list[Finding]:
    """The updates follow no correct plan: find the mistake that explains it."""
    a = scn.accumulation_steps
    steps = [u.step for u in ups]
    early = [s for s in steps if s.pending is not None and s.pending in trace.backpropagated]
    if early:
        return [("step_before_backward",
                 f"With {scn.describe()}: optimizer.step() ran after batch {early[0].pos}'s "
                 f"loss was computed but before its backward(), so each update missed that "
                 f"micro-batch, whose gradient went into the next window")]
    by_epoch: dict[int, list[int]] = {}
    for s in steps:
        by_epoch.setdefault(s.epoch, []).append(s.pos)
    window = classify(by_epoch.get(1, []), scn)
    if window and window[0] == "step_every_batch":
        window = (window[0], _step_each(trace, scn, ups, window[1]))
    findings = [window] if window else []
    if not steps:  # nothing was applied: how .grad was cleared does not matter
        return findings
    findings += _clearing(trace, scn, ups, window)
    if findings:
        return findings
    leaked = [c.epoch for u in ups for c in u.new if c.epoch < u.step.epoch]
    if leaked and scn.partial:
        return [_leftover(scn, min(leaked))]
    for epoch in range(2, trace.passes + 1):
        other = classify(by_epoch.get(epoch, []), scn)
        if other:
            return [(other[0], f"in epoch {epoch}: {other[1]}")]
    twice = Counter((c.epoch, c.batch) for c in trace.contribs)
    (epoch, batch), k = twice.most_common(1)[0]
    if k > 1:
        return [(None, f"batch {batch + 1}'s loss (epoch {epoch}) went through backward() "
                       f"{k} times, so its gradient counted {k} times in its window")]
    return [(None, f"With {scn.describe()}: the updates used "
                   f"{'; '.join(_update_text(u) for u in ups[:6] if u.new)}"
                   f"{'; ...' if len(ups) > 6 else ''} instead of windows of "
                   f"accumulation_steps = {a} micro-batches")]


def _update_text(u: Update) -> str:
    """What one update applied: its micro-batches, their factors, its learning rate."""
    epochs = sorted({c.epoch for c in u.new})
    where = " + ".join(f"epoch {e} {span([c.batch + 1 for c in u.new if c.epoch == e])}"
                       for e in epochs)
    factors = sorted({round(u.coefs[c.cid], 4) for c in u.new})
    scale = f"{factors[0]:g}" if len(factors) == 1 else f"{factors[0]:g} to {factors[-1]:g}"
    return f"{where} (each scaled by {scale}, lr {u.step.lrs[0]:g})"


def _clearing(trace: Trace, scn: Scenario, ups: list[Update],
              window: Finding | None) -> list[Finding]:
    """Gradients cleared too early (thrown away), too late (applied twice), or right
    before a step (which then applies nothing)."""
    a = scn.accumulation_steps
    contrib = trace.contribs
    update_of = {id(u.step): u for u in ups}
    applied: set[int] = set()  # contributions an update applied so far
    reuse = drop = None
    seen_after_drop = 0  # micro-batches the first update after a dropping clear applied
    empty_step = clears_in_epoch = False
    twice: Step | None = None  # a step right after a step, on the same gradients
    since_step = False  # a backward() ran since the last step()
    for ev in trace.events:
        if isinstance(ev, Backward):
            since_step = True
        elif isinstance(ev, Clear):
            clears_in_epoch |= any(contrib[c].epoch == ev.epoch for c in ev.dropped)
            lost = [c for c in ev.dropped if c not in applied]
            if drop is None and any(contrib[c].epoch == ev.epoch for c in lost):
                drop = lost
        elif isinstance(ev, Step):
            u = update_of[id(ev)]
            empty_step |= since_step and not u.new
            if drop is not None and not seen_after_drop:
                seen_after_drop = len(u.new)
            if u.again and not since_step and not u.new:
                twice = twice or ev
            elif reuse is None and u.again:
                reuse = (ev, u.again)
            applied.update(u.coefs)
            since_step = False
    findings: list[Finding] = []
    if twice is not None:
        findings.append((None, f"optimizer.step() ran twice in a row after batch {twice.pos} "
                               f"(epoch {twice.epoch}), applying the same gradients again: "
                               f"step once per window"))
    if empty_step:
        findings.append((None, "optimizer.step() ran right after the gradients were cleared, "
                               "so it applied nothing: clear them after step(), not before"))
    elif drop is not None:
        findings.append(("zero_grad_every_batch",
                         f"the gradients were cleared in the middle of a window, throwing away "
                         f"those of {span([contrib[c].batch + 1 for c in drop])} before any "
                         f"step used them: the next update saw only "
                         f"{count(seen_after_drop, 'micro-batch')} instead of {a}"))
    if reuse is not None and (window is None or window[0] != "step_every_batch"
                              or not clears_in_epoch):
        ev, again = reuse
        findings.append(("missing_zero_grad",
                         f"the gradients were not cleared after optimizer.step(): the update "
                         f"after batch {ev.pos} (epoch {ev.epoch}) applied "
                         f"{span([contrib[c].batch + 1 for c in again])} again, "
                         f"already used by an earlier update"))
    return findings


def transforms(trace: Trace) -> list[Finding]:
    """Clipping and scheduler steps belong once per update; per micro-batch they are bugs."""
    findings: list[Finding] = []
    clipped: Clip | None = None  # a clip of a window that more backward() calls then joined
    schedules: Counter[int] = Counter()  # per scheduler, since the last optimizer.step()
    backwards = 0
    clip_partial = schedule_fast = None
    for ev in trace.events:
        if isinstance(ev, Clip) and ev.held:
            clipped = ev
        elif isinstance(ev, Backward):
            backwards += 1
            if clipped is not None and clip_partial is None:
                clip_partial = (clipped, ev)
        elif isinstance(ev, SchedulerStep):
            schedules[ev.scheduler] += 1
        elif isinstance(ev, (Step, Clear)):
            clipped = None
        if isinstance(ev, Step):
            most = max(schedules.values(), default=0)
            if most >= 2 and backwards >= 2 and schedule_fast is None:
                schedule_fast = (most, ev)
            schedules, backwards = Counter(), 0
    if clip_partial is not None:
        clip, bwd = clip_partial
        held = [trace.contribs[c] for c in clip.held]
        findings.append(("clip_every_micro_batch",
                         f"clip_grad_{clip.kind}_ ran when .grad held only "
                         f"{span([c.batch + 1 for c in held])} of epoch {held[0].epoch}, and "
                         f"batch {bwd.batch + 1}'s backward() was added after it: it clipped a "
                         f"partial sum of the window. Clip once per window, after its last "
                         f"backward() and right before optimizer.step()"))
    if schedule_fast is not None:
        k, step = schedule_fast
        findings.append(("scheduler_every_micro_batch",
                         f"the learning-rate scheduler stepped {k} times before the update "
                         f"after batch {step.pos} (epoch {step.epoch}), once per micro-batch: "
                         f"{_schedule_ran(trace)}. Call scheduler.step() once per update, "
                         f"right after optimizer.step()"))
    return findings


def _schedule_ran(trace: Trace) -> str:
    """How the rate a per-micro-batch schedule gave the updates went: whether it ran out
    early, judged from the rates themselves (its intended length is the learner's)."""
    rates, before = [], []  # each update's rate, and the scheduler steps before it
    counts: Counter[int] = Counter()
    for ev in trace.events:
        if isinstance(ev, SchedulerStep):
            counts[ev.scheduler] += 1
        elif isinstance(ev, Step) and ev.held:
            rates.append(ev.lrs[0])
            before.append(max(counts.values(), default=0))
    steps, n = max(counts.values(), default=0), len(rates)
    per = steps / max(n, 1)
    pace = f"{per:g}" if per == int(per) else f"about {per:.2g}"
    told = (f"{steps} scheduler steps for {count(n, 'update')}, so each update moved the "
            f"schedule {pace} steps on")
    changes = [u for u in range(1, n) if not math.isclose(rates[u], rates[u - 1])]
    if not changes:
        return f"{told}; its rate did not change during training"
    last = changes[-1]  # the update (0-based) from which the rate stayed the same
    if last == n - 1:
        return (f"{told}. Its rate was still changing at the last update, so the schedule "
                f"did not run out early, but its lengths (warm-up, decay) count "
                f"micro-batches, not updates")
    ran_out = (f"{told}. Its rate stopped changing at update {last + 1} of {n}, after "
               f"{before[last]} scheduler steps")
    if before[last] <= n + per:  # about as many steps as training has updates
        return (f"{ran_out}, about as many as the {count(n, 'update')} of training: the "
                f"schedule is sized in updates, so stepping it per micro-batch made it run "
                f"out {pace}x too early")
    return ran_out
