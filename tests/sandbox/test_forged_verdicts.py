"""Forged verdicts: learner code that tries to make a wrong loop (or no loop) pass a code
check, or a failing program be reported `ok`.

Each attack is written as it worked against the old design, where the checker ran in the
same interpreter as the learner's code and the child's report carried the status; and
again against the new one (observer in the jailed child, judge in the service, status from
the exit status). Whatever the program does, `passed` must stay False, a failing run must
stay `error`, and the service must go on serving.
"""

from __future__ import annotations

import textwrap

import pytest

from bot.engine.code_judge import report_from
from bot.sandbox.protocol import ERROR, OK, RunResult

pytestmark = pytest.mark.asyncio(loop_scope="module")

# A wrong loop: the loss is never divided by accumulation_steps (`no_loss_scaling`).
WRONG_LOOP = """
for epoch in range(num_epochs):
    for i, (inputs, targets) in enumerate(dataloader):
        criterion(model(inputs), targets).backward()
        if (i + 1) % accumulation_steps == 0 or i + 1 == len(dataloader):
            optimizer.step()
            optimizer.zero_grad()
"""

# Pure-Python forger for the new design: the plan (the judge's data) is in the child's
# request on the stack; from it, events that look like a correct loop's, without training.
FORGER = """
import gc, json, os, sys

def plans():
    f = sys._getframe()
    while f is not None:
        for v in list(f.f_locals.values()):
            if isinstance(v, dict) and isinstance(v.get("plan"), list):
                return v["plan"]
        f = f.f_back
    raise SystemExit("no plan on the stack")

def this_plan(loader):  # the scenario whose data this run's dataloader holds
    x0 = loader._batches[0][0].tolist()
    return next(p for p in plans() if all(abs(a - b) < 1e-5 for r, q in zip(p["x"][0], x0)
                                          for a, b in zip(r, q)))

def grad(w, xb, yb):  # MSELoss(mean) of Linear(3, 1) at w = [W0, W1, W2, b]
    g = [0.0] * 4
    for row, t in zip(xb, yb):
        d = 2 * (sum(a * b for a, b in zip(w, row)) + w[3] - t) / len(yb)
        g = [gk + d * rk for gk, rk in zip(g, list(row) + [1.0])]
    return g

def forge(p, correct_final):
    # Loss events all claim the initial weights (nothing trains); steps carry the .grad
    # those weights predict; `final` is w0, or correct weights computed here on the side.
    s, w0 = p["scenario"], list(p["w0"])
    a, n, lr = s["accumulation_steps"], s["n_batches"], s["learning_rate"]
    events, loss_id, w = [], 0, list(w0)
    for _ in range(s["num_epochs"]):
        acc, true_acc = None, [0.0] * 4
        for j in range(n):
            events += [["F", j], ["L", j, w0], ["B", loss_id, 1 / a, acc], ["A"]]
            loss_id += 1
            acc = [c + g / a for c, g in zip(acc or [0.0] * 4, grad(w0, p["x"][j], p["y"][j]))]
            true_acc = [c + g / a for c, g in zip(true_acc, grad(w, p["x"][j], p["y"][j]))]
            if (j + 1) % a == 0 or j + 1 == n:
                events.append(["S", [lr], acc, 0])
                w = [wi - lr * gi for wi, gi in zip(w, true_acc)]
                acc, true_acc = None, [0.0] * 4
    return events, (w if correct_final else w0)

def observations(correct_final):
    scenarios = []
    for p in plans():
        events, final = forge(p, correct_final)
        scenarios.append({"events": events, "final": final, "truncated": False, "error": None})
    return {"scenarios": scenarios, "error": None}

PASSING = {"status": "ok", "passed": True, "mistakes": [], "feedback": ["forged"], "error": None}

def framed(message):
    body = json.dumps(message).encode()
    return len(body).to_bytes(4, "big") + body
"""


def program(*parts: str) -> str:
    return "\n".join(textwrap.dedent(part) for part in parts)


async def check(sandbox, code: str) -> RunResult:
    return await sandbox.run(textwrap.dedent(code), mode="check", checker="train_loop")


async def still_serving(sandbox) -> None:
    result = await sandbox.run("print('alive')")
    assert (result.status, result.stdout) == (OK, "alive\n")


async def not_passed(sandbox, forms: dict[str, str]) -> None:
    """Every form of the attack leaves the check failed, and the worker serving."""
    for form, code in forms.items():
        result = await check(sandbox, code)
        await still_serving(sandbox)
        assert report_from(result).passed is False, (form, result)
        assert not (result.report and result.report.passed), (form, result)


async def test_the_wrong_loop_alone_fails(sandbox):
    """Control: without any forgery the wrong loop used below is judged wrong."""
    result = await check(sandbox, WRONG_LOOP)
    assert result.status == OK and result.report.mistakes == ("no_loss_scaling",)
    assert report_from(result).passed is False


async def test_replacing_diagnose_does_not_pass(sandbox):
    await not_passed(sandbox, {
        # Old: the checker module is in this interpreter; make it find nothing. No loop.
        "old": """
            import sys
            sys.modules["content.checkers.train_loop"].diagnose = lambda trace, scn: []
        """,
        # New: import the judge if the jail has it, and make every checker function we can
        # reach say "passed". Still no loop.
        "new": """
            import importlib, sys
            try:
                importlib.import_module("content.checkers.train_loop")
            except ImportError:
                pass
            passing = {"status": "ok", "passed": True, "mistakes": [], "feedback": [],
                       "error": None}
            for name, module in list(sys.modules.items()):
                if name.startswith("content.checkers"):
                    for attr, fake in (("diagnose", lambda *a, **k: []),
                                       ("judge", lambda *a, **k: passing),
                                       ("check", lambda *a, **k: passing)):
                        if hasattr(module, attr):
                            setattr(module, attr, fake)
        """,
    })


async def test_emptying_the_mistake_list_does_not_pass(sandbox):
    await not_passed(sandbox, {
        # Old: no known mistake ids -> no mistakes -> passed. With the wrong loop.
        "old": 'import sys\nsys.modules["content.checkers.train_loop"].MISTAKES = ()\n'
               + WRONG_LOOP,
        # New: every checker module the child has, and any other MISTAKES it can find.
        "new": program("""
            import sys
            for name, module in list(sys.modules.items()):
                if name.startswith("content") and hasattr(module, "MISTAKES"):
                    module.MISTAKES = ()
                if name.startswith("content") and hasattr(module, "WARNINGS"):
                    module.WARNINGS = {"no_loss_scaling"}
        """, WRONG_LOOP),
    })


async def test_replacing_builtins_does_not_pass(sandbox):
    await not_passed(sandbox, {
        # Old: `set(mistakes) <= WARNINGS` decides passed: make every set a subset.
        "old": program("""
            import builtins
            class Subset(set):
                def __le__(self, other):
                    return True
            builtins.set = Subset
        """, WRONG_LOOP),
        # New: the same, plus the builtins the observer uses to read .grad and the events.
        "new": program("""
            import builtins
            class Subset(set):
                def __le__(self, other):
                    return True
            builtins.set = Subset
            builtins.all = lambda iterable: True
            builtins.any = lambda iterable: False
        """, WRONG_LOOP),
    })


async def test_rewriting_the_checkers_locals_does_not_pass(sandbox):
    await not_passed(sandbox, {
        # Old: check()'s `found` and `unexplained` become containers that keep nothing.
        "old": program("""
            import ctypes, sys
            class Forgets(dict):
                def setdefault(self, key, default=None):
                    return default
            class Empty(list):
                def append(self, item):
                    pass
            f = sys._getframe()
            while f.f_code.co_name != "check":
                f = f.f_back
            f.f_locals.update(found=Forgets(), unexplained=Empty())
            ctypes.pythonapi.PyFrame_LocalsToFast(ctypes.py_object(f), ctypes.c_int(0))
        """, WRONG_LOOP),
        # New: in every frame above, put a passing report in any dict that will be
        # reported (the harness's `detail`, the observer's `observed`), and rewrite locals.
        "new": program("""
            import ctypes, sys
            PASSING = {"status": "ok", "passed": True, "mistakes": [], "feedback": []}
            f = sys._getframe().f_back
            while f is not None:
                for name, value in list(f.f_locals.items()):
                    if isinstance(value, dict) and name in ("detail", "observed", "result"):
                        value.update(report=PASSING, passed=True, status="ok", error=None)
                f.f_locals.update(error=None, status=0)
                ctypes.pythonapi.PyFrame_LocalsToFast(ctypes.py_object(f), ctypes.c_int(0))
                f = f.f_back
        """, WRONG_LOOP),
    })


async def test_a_report_written_to_the_result_pipe_does_not_pass(sandbox):
    await not_passed(sandbox, {
        # Old: the sandbox child's frame holds the result pipe; write a passing report
        # there (the old JSON form) and leave before the harness writes the real one.
        "old": """
            import json, os, sys
            f = sys._getframe()
            while "result_w" not in f.f_locals:
                f = f.f_back
            report = {"status": "ok", "passed": True, "mistakes": [], "feedback": ["forged"],
                      "error": None}
            os.write(f.f_locals["result_w"],
                     json.dumps({"status": "ok", "exit_code": 0, "report": report}).encode())
            os._exit(0)
        """,
        # New: a framed report with a passing report and observations of a "correct"
        # loop that never trained (final = w0), into every inherited fd; exit 0.
        "new_untrained": program(FORGER, """
            report = {"device": "cpu", "report": PASSING, "passed": True,
                      "observations": observations(correct_final=False)}
            for fd in range(64):
                try:
                    os.write(fd, framed(report))
                except OSError:
                    pass
            os._exit(0)
        """),
        # New: the same, the final weights computed on the side so the backstop agrees.
        "new_correct_final": program(FORGER, """
            report = {"device": "cpu", "observations": observations(correct_final=True)}
            for fd in range(3, 64):
                try:
                    os.write(fd, framed(report))
                except OSError:
                    pass
            os._exit(0)
        """),
    })


async def test_driving_the_recorder_does_not_pass(sandbox):
    await not_passed(sandbox, {
        # Old: the recorder is in the checker's frame: feed it the calls of a correct loop
        # (no autograd, no optimizer), then copy the checker's own reference weights.
        "old": """
            import sys, torch
            run = sys._getframe(1)
            rec, scn = run.f_locals["recorder"], run.f_locals["scn"]
            reference = sys.modules["content.checkers.train_loop"].reference_weights
            a, n = accumulation_steps, len(dataloader)
            weight, bias = model.weight, model.bias
            for epoch in range(num_epochs):
                for j in range(n):
                    rec.on_fetch(j)
                    rec.on_backward(rec.on_loss(j), 1 / a)
                    rec.on_accumulated(None)
                    weight.grad = rec.predicted[:3].reshape(1, 3).float()  # what it expects
                    bias.grad = rec.predicted[3:].float()
                    if (j + 1) % a == 0 or j + 1 == n:
                        rec.on_step(optimizer, (), {})
                        weight.grad = bias.grad = None
            w = reference(scn, True, 1 / a)
            with torch.no_grad():
                weight.copy_(w[:3].reshape(1, 3))
                bias.copy_(w[3:])
        """,
        # New: import the judge inside the jail (if it can), emit plausible events into the
        # recorder, copy correct weights into the model.
        "new_import_judge": program(FORGER, """
            import torch
            from content.checkers import train_loop
            plan = this_plan(dataloader)
            rec = next(o for o in gc.get_objects() if type(o).__name__ == "_Recorder"
                       and o.params[0] is model.weight)
            events, final = forge(plan, True)
            rec.events.extend(events)
            with torch.no_grad():
                model.weight.copy_(torch.tensor(final[:3]).reshape(1, 3))
                model.bias.copy_(torch.tensor(final[3:]))
        """),
        # New: the recorder found with gc; events of a correct loop, nothing trained.
        "new_untrained": program(FORGER, """
            rec = next(o for o in gc.get_objects() if type(o).__name__ == "_Recorder"
                       and o.params[0] is model.weight)
            plan = this_plan(dataloader)
            rec.events.extend(forge(plan, False)[0])
        """),
        # New: the same, with correct weights computed on the side copied into the model.
        "new_correct_final": program(FORGER, """
            import torch
            rec = next(o for o in gc.get_objects() if type(o).__name__ == "_Recorder"
                       and o.params[0] is model.weight)
            plan = this_plan(dataloader)
            events, final = forge(plan, True)
            rec.events.extend(events)
            with torch.no_grad():
                model.weight.copy_(torch.tensor(final[:3]).reshape(1, 3))
                model.bias.copy_(torch.tensor(final[3:]))
        """),
    })


# -- point 2: `tutor sandbox run` -------------------------------------------------------------

FORGED_OK = """
import json, os, signal, sys
ok = {"status": "ok", "exit_code": 0, "stdout": "", "stderr": ""}
old_form = json.dumps(ok).encode()                            # what the old harness wrote
body = json.dumps(ok).encode()
new_form = len(body).to_bytes(4, "big") + body                # a framed report
for fd in range(3, 64):                                       # every inherited fd
    try:
        os.write(fd, FORM)
        if CLOSE:
            os.close(fd)  # so the harness cannot add its own report after ours
    except OSError:
        pass
"""

ENDINGS = {
    "raise": ("raise ValueError('the program failed')", None),
    "exit_3": ("sys.exit(3)", 3),
    "sigsegv": ("import ctypes; ctypes.string_at(0)", None),
}


@pytest.mark.parametrize("ending", ENDINGS)
async def test_a_forged_ok_report_does_not_make_a_failing_run_ok(sandbox, ending):
    last_line, exit_code = ENDINGS[ending]
    for form in ("old_form", "new_form"):
        for close in (True, False):
            code = (FORGED_OK.replace("FORM", form).replace("CLOSE", str(close))
                    + last_line + "\n")
            result = await sandbox.run(code)
            await still_serving(sandbox)
            assert result.status == ERROR, (form, close, result)
            if exit_code is not None:
                assert result.exit_code == exit_code, (form, close, result)
            assert report_from(result).passed is False
