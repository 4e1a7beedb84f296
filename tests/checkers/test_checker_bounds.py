"""What bounds a checker's judge. Its input comes from a process that ran learner code, so
every record is hostile until replayed:
- the judge's work: a scenario with more than MAX_EVENTS events is refused, and any record
  within the cap is judged in memory that does not grow with what .grad held (the records
  below made the old replay copy its gradient ledger at every step: gigabytes, minutes);
- what a record can claim: `truncated` must be a bool (it decides whether the final weights
  are checked), and the data differ per submission (the salt), so a saved record of a
  correct run does not pass for another submission.

The hostile records are built here as observation dicts, as a forging child would write
them; memory is measured with tracemalloc, never wall-clock (CI boxes are busy).
"""

from __future__ import annotations

import random
import tracemalloc

import pytest

from content.checkers import amp_clip_loop, train_loop
from content.checkers._bounds import MAX_EVENTS
from content.checkers._scenario import axpy, batch_grad
from content.checkers._trace import Malformed, Step, replay

PEAK_BYTES = 50 * 2**20  # generous: the old replay needed gigabytes for these records


# -- records --------------------------------------------------------------------------------
def _record(events: list, final: list, truncated=False) -> dict:
    return {"events": events, "final": final, "truncated": truncated, "error": None}


def correct_record(plan: dict) -> dict:
    """What the observer writes for a correct loop of the plain card (one window per
    accumulation_steps micro-batches, the partial one stepped, cleared after each step)."""
    scn = plan["scenario"]
    a, n, lr = scn["accumulation_steps"], scn["n_batches"], scn["learning_rate"]
    w, grad, events, loss_id = list(plan["w0"]), None, [], 0
    for _ in range(scn["num_epochs"]):
        for j in range(n):
            events += [["F", j], ["L", j, list(w)], ["B", loss_id, 1 / a, grad], ["A"]]
            g = batch_grad(w, plan["x"][j], plan["y"][j])
            grad, loss_id = axpy(1 / a, g, grad or [0.0] * 4), loss_id + 1
            if (j + 1) % a == 0 or j + 1 == n:
                events.append(["S", [lr], grad, 0, list(w)])
                w, grad = axpy(-lr, grad, w), None
    return _record(events, w)


def ledger_bomb(plan: dict, backwards: int, steps: int) -> dict:
    """Backward() contributions with a zero factor (the gradients stay zero, so nothing
    contradicts them), then many steps of the zero gradients: each step held them all."""
    w0 = plan["w0"]
    events = [["F", 0], ["L", 0, w0], ["B", 0, 0.0, [0, 0, 0, 0]]]
    events += [["B", 0, 0.0, None]] * (backwards - 1) + [["A"]]
    events += [["S", [0.1], [0, 0, 0, 0], 0, w0]] * steps
    return _record(events, w0)


def many_steps(plan: dict, backwards: int, steps: int) -> dict:
    """Honest-looking: each micro-batch fetched and backpropagated, then optimizer.step()
    again and again on the same .grad (the weights follow every step)."""
    scn = plan["scenario"]
    w, grad, events = list(plan["w0"]), [0.0] * 4, []
    for i in range(backwards):
        j = i % scn["n_batches"]
        events += [["F", j], ["L", j, list(w)], ["B", i, 1.0, list(grad)], ["A"]]
        grad = axpy(1.0, batch_grad(w, plan["x"][j], plan["y"][j]), grad)
    for _ in range(steps):
        events.append(["S", [scn["learning_rate"]], list(grad), 0, list(w)])
        w = axpy(-scn["learning_rate"], grad, w)
    return _record(events, w)


def many_fetches(plan: dict, fetches: int) -> dict:
    """Micro-batch 0 fetched over and over (each fetch of it starts an epoch), then one
    real update."""
    w, lr = plan["w0"], plan["scenario"]["learning_rate"]
    g = batch_grad(w, plan["x"][0], plan["y"][0])
    events = [["F", 0]] * fetches + [["L", 0, w], ["B", 0, 1.0, None], ["A"],
                                     ["S", [lr], g, 0, w]]
    return _record(events, axpy(-lr, g, w))


def many_rescales(plan: dict, backwards: int) -> dict:
    """One real gradient, then backward() contributions each of which finds .grad rescaled
    (by 2, then by 1/2, ...): every rescale reaches everything .grad holds."""
    w = plan["w0"]
    g = batch_grad(w, plan["x"][0], plan["y"][0])
    events = [["F", 0], ["L", 0, w], ["B", 0, 1.0, None], ["A"]]
    for i in range(backwards - 1):
        g = [v * (2.0 if i % 2 == 0 else 0.5) for v in g]
        events += [["B", 0, 0.0, g], ["A"]]
    return _record(events, w)


def many_clips(plan: dict, backwards: int, clips: int) -> dict:
    """Many contributions, then clip_grad_norm_ calls that leave .grad as it is."""
    w = plan["w0"]
    g = batch_grad(w, plan["x"][0], plan["y"][0])
    events = [["F", 0], ["L", 0, w], ["B", 0, 1.0, None]]
    events += [["B", 0, 0.0, None]] * (backwards - 1) + [["A"]]
    events += [["C", "norm", [True, True], 0.0, g, g]] * clips
    return _record(events, w)


HALF = (MAX_EVENTS - 8) // 2
AT_THE_CAP = {  # each scenario-0 record has at most MAX_EVENTS events
    "ledger_bomb": lambda p: ledger_bomb(p, HALF, HALF),
    "many_steps": lambda p: many_steps(p, HALF // 4, HALF),
    "many_fetches": lambda p: many_fetches(p, MAX_EVENTS - 4),
    "many_rescales": lambda p: many_rescales(p, HALF),
    "many_clips": lambda p: many_clips(p, HALF, HALF),
}
# Far beyond it: the records of the security review, under the sandbox's 4 MB report cap.
BEYOND_THE_CAP = {
    "ledger_bomb": lambda p: ledger_bomb(p, 130_000, 60_000),
    "many_steps": lambda p: many_steps(p, 3_000, 6_000),
    "many_fetches": lambda p: many_fetches(p, 480_000),
    "just_over": lambda p: many_fetches(p, MAX_EVENTS - 3),
}


def observations(checker, first, salt: int = 0, error=None) -> dict:
    """Scenario 0 as `first` makes it; the others empty (nothing trained there)."""
    plans = checker.plan(salt)
    rest = [_record([], p["w0"]) for p in plans[1:]]
    return {"scenarios": [first(plans[0]), *rest], "error": error}


def peak_while(call) -> tuple[object, int]:
    """What `call()` returns or raises, and the peak memory it traced."""
    tracemalloc.start()
    try:
        try:
            out = call()
        except Malformed as exc:
            out = exc
        return out, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


# -- the judge's work -----------------------------------------------------------------------
def test_the_pure_python_correct_record_passes():
    """Control for the builders: a record written by hand, as the observer would, passes."""
    for checker in (train_loop,):
        observed = {"scenarios": [correct_record(p) for p in checker.plan()], "error": None}
        assert checker.judge(observed)["passed"]


@pytest.mark.parametrize("checker", [train_loop, amp_clip_loop])
@pytest.mark.parametrize("name", AT_THE_CAP)
def test_a_hostile_record_at_the_cap_is_judged_in_bounded_memory(checker, name):
    observed = observations(checker, AT_THE_CAP[name])
    assert len(observed["scenarios"][0]["events"]) <= MAX_EVENTS
    result, peak = peak_while(lambda: checker.judge(observed))
    assert peak < PEAK_BYTES, f"{name}: {peak / 2**20:.1f} MiB"
    assert isinstance(result, Malformed) or not result["passed"]


@pytest.mark.parametrize("name", AT_THE_CAP)
def test_a_raising_run_is_explained_in_bounded_memory(name):
    # The AMP judge replays the scenario a run raised in, to explain the error.
    error = {"type": "RuntimeError", "message": "step() has already been called since the "
                                                "last update().", "line": 3}
    observed = observations(amp_clip_loop, AT_THE_CAP[name], error=error)
    observed["scenarios"] = observed["scenarios"][:1]
    result, peak = peak_while(lambda: amp_clip_loop.judge(observed))
    assert peak < PEAK_BYTES and result["status"] == "error"


@pytest.mark.parametrize("checker", [train_loop, amp_clip_loop])
@pytest.mark.parametrize("name", BEYOND_THE_CAP)
def test_a_record_beyond_the_cap_is_refused_before_any_work(checker, name):
    observed = observations(checker, BEYOND_THE_CAP[name])
    assert len(observed["scenarios"][0]["events"]) > MAX_EVENTS
    result, peak = peak_while(lambda: checker.judge(observed))
    assert isinstance(result, Malformed) and peak < 2**20


@pytest.mark.parametrize("name", ["ledger_bomb", "many_steps", "many_rescales"])
def test_steps_share_what_grad_holds_instead_of_copying_it(name):
    """Work, counted: a step keeps one range for what .grad held, and a factor only for
    the contributions it applied first, so the factors kept over all steps are at most one
    per backward() (the old replay kept every held one at every step)."""
    scn, plan = train_loop.SCENARIOS[0], train_loop.plan()[0]
    trace = replay(scn, plan, AT_THE_CAP[name](plan))
    steps = [e for e in trace.events if isinstance(e, Step)]
    assert all(isinstance(s.held, range) for s in steps)
    assert sum(len(s.fresh) for s in steps) <= len(trace.contribs)
    if name != "many_rescales":
        assert len(steps) == HALF and max(len(s.held) for s in steps) >= HALF // 4


def test_the_replay_stops_at_the_first_anomaly_but_counts_on():
    plan = train_loop.plan()[0]
    record = correct_record(plan)
    moved = [["L", 1, [9.0, 9.0, 9.0, 9.0]]]  # weights nobody's step made
    record["events"] = moved + record["events"]
    trace = replay(train_loop.SCENARIOS[0], plan, record)
    assert trace.anomaly and trace.events == [] and trace.contribs == []
    assert trace.losses == len(moved) + 24 and trace.backwards == 24
    result = train_loop.judge({"scenarios": [record, correct_record(train_loop.plan()[1])],
                               "error": None})
    assert not result["passed"] and "outside optimizer.step()" in result["feedback"][0]


# -- what a record can claim ----------------------------------------------------------------
@pytest.mark.parametrize("truncated", [1, 0, "yes", None, 1.0, [True]])
def test_truncated_must_be_a_bool(truncated):
    observed = {"scenarios": [correct_record(p) for p in train_loop.plan()], "error": None}
    observed["scenarios"][0]["truncated"] = truncated
    with pytest.raises(Malformed):
        train_loop.judge(observed)
    del observed["scenarios"][0]["truncated"]
    with pytest.raises(Malformed):
        train_loop.judge(observed)


def test_a_truncated_record_fails_and_says_why():
    observed = {"scenarios": [correct_record(p) for p in train_loop.plan()], "error": None}
    observed["scenarios"][1]["truncated"] = True
    result = train_loop.judge(observed)
    assert not result["passed"] and "far more work" in result["feedback"][0]


def test_salt_zero_keeps_the_scenarios_own_seeds():
    for checker in (train_loop, amp_clip_loop):
        assert [p["scenario"]["seed"] for p in checker.plan()] == [
            s.seed for s in checker.SCENARIOS]
        assert checker.plan(0) == checker.plan()


def test_each_salt_draws_other_data_the_same_way_each_time():
    for checker in (train_loop, amp_clip_loop):
        a, b = checker.plan(12345), checker.plan(67890)
        for pa, pb, p0 in zip(a, b, checker.plan(), strict=True):
            for key in ("x", "y", "w0"):
                assert pa[key] != pb[key] and pa[key] != p0[key]
            assert {k: v for k, v in pa["scenario"].items() if k != "seed"} == {
                k: v for k, v in p0["scenario"].items() if k != "seed"}
        checker.plan.cache_clear()
        assert checker.plan(12345) == a
        assert checker.plan.cache_info().maxsize is not None  # a bounded cache


@pytest.mark.parametrize("salt", [True, "1", 1.5, None])
def test_a_salt_is_an_int(salt):
    with pytest.raises(TypeError):
        train_loop.plan(salt)


def test_a_record_for_one_salt_does_not_pass_under_another_pure_python():
    observed = {"scenarios": [correct_record(p) for p in train_loop.plan(7)], "error": None}
    assert train_loop.judge(observed, 7)["passed"]
    assert not train_loop.judge(observed, 8)["passed"]
    assert not train_loop.judge(observed)["passed"]


def _reference(card: str) -> str:
    from content.loader import DeckLibrary

    return DeckLibrary.load().card(f"gradient-accumulation/{card}").reference


@pytest.mark.parametrize("checker, card", [(train_loop, "train-loop"),
                                           (amp_clip_loop, "amp-clip-loop")])
def test_a_saved_correct_record_fails_under_another_salt(checker, card):
    pytest.importorskip("torch")
    from content.checkers._observe import observe

    observed = observe(_reference(card), checker.plan(1001))
    assert checker.judge(observed, 1001)["passed"]
    for other in (1002, 0):
        result = checker.judge(observed, other)
        assert result["status"] == "ok" and not result["passed"], other


@pytest.mark.parametrize("checker, card", [(train_loop, "train-loop"),
                                           (amp_clip_loop, "amp-clip-loop")])
def test_a_correct_loop_passes_under_any_salt(checker, card):
    # Fixed draws, so that a failure names a salt to rerun; 2,820 other draws over the
    # test suites' correct and buggy loops gave the same verdicts as salt 0.
    pytest.importorskip("torch")
    code = _reference(card)
    rng = random.Random(2024)
    for salt in [rng.randrange(1, 2**31) for _ in range(20)] + [-1, 2**70]:
        result = checker.check(code, salt=salt)
        assert result["passed"] and result["mistakes"] == [], (salt, result["feedback"])


def test_the_observer_stops_recording_at_the_judges_cap():
    pytest.importorskip("torch")
    from content.checkers import _observe

    assert _observe.MAX_EVENTS == MAX_EVENTS
    endless = ("for epoch in range(50 * num_epochs):\n"
               "    for inputs, labels in dataloader:\n"
               "        criterion(model(inputs), labels).backward()\n"
               "        optimizer.step()\n"
               "        optimizer.zero_grad()\n")
    observed = _observe.observe(endless, train_loop.plan())
    assert all(s["truncated"] is True and len(s["events"]) == MAX_EVENTS
               for s in observed["scenarios"])
    result = train_loop.judge(observed)
    assert not result["passed"] and "far more work" in result["feedback"][0]
