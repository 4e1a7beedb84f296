"""Records a judge cannot compute with, written by hostile learner code, and what a jailed
child can reach of the judge (issue 37.5).

A forged number (a 400-digit int in a behaviour report, -1e308 in an AMP gradient) raised
in a checker process, which died and was replaced, and the learner read that the checker
"used more memory than allowed". Now each is refused where the child's report is read, or
answered as a malformed record for that run only, saying what was wrong with it: the
checker processes stay, and another learner's correct answer right after is judged correct.
The judge's own modules (its replay would tell a forger when a record passes) are neither
loaded in the child nor importable there.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bot.bench.softmax_exercise import REFERENCE as SOFTMAX
from bot.bench.softmax_exercise import softmax_block
from bot.sandbox.protocol import ERROR, OK
from tests.helpers.amp_loops import REFERENCE as AMP_LOOP

pytestmark = pytest.mark.asyncio(loop_scope="module")

# A behaviour report forged by the learner's entry: the cases' digest and the report channel
# are in the frames above it; `forged(output)` writes each case's output as it likes.
FORGER = """
import json, os, sys

def softmax(x):
    f, fd, report, cases = sys._getframe(), None, None, None
    while f is not None:
        seen = f.f_locals
        fd = seen.get("result_w", fd)
        if isinstance(seen.get("report"), dict) and "digest" in seen["report"]:
            report, cases = seen["report"], seen["cases"]
        f = f.f_back
    outcomes = [{"value": forged(args[0].softmax(-1))} for args in cases]
    body = json.dumps({"device": "cpu", "observations": {
        "digest": report["digest"], "programs": [{"outcomes": outcomes}], "error": None}})
    os.write(fd, len(body.encode()).to_bytes(4, "big") + body.encode())
    os._exit(0)

def tensor(out, first):
    values = out.reshape(-1).tolist()
    values[0] = first
    return {"tensor": {"dtype": "float32", "shape": list(out.shape), "values": values}}
"""
FORGED = {
    # Refused where the report is read: no float holds it (the judge compares in floats).
    "a 400-digit int": ("def forged(out):\n    return tensor(out, 10 ** 400)\n",
                        "the report held a number outside a float's range"),
    # A float can hold it, a tensor cannot: the judge refuses it before comparing.
    "an int beyond int64": ("def forged(out):\n    return tensor(out, 10 ** 30)\n",
                            "an output holds an integer outside the range of int64 and uint64"),
    "an output nested 300 deep": (
        "def forged(out):\n    value = tensor(out, 0.5)\n    for _ in range(300):\n"
        "        value = {'list': [value]}\n    return value\n",
        "an output is larger or deeper than a run may report"),
}
# Deeper than any JSON reader goes: written as bytes (json.dumps would refuse it).
TOO_DEEP = """
import os, sys
f = sys._getframe()
while "result_w" not in f.f_locals:
    f = f.f_back
body = b'{"device": "cpu", "observations": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
os.write(f.f_locals["result_w"], len(body).to_bytes(4, "big") + body)
os._exit(0)
"""
# Gradients as large as a float64 holds: the judge's clip norm squares them.
HUGE_GRADIENT = """
model.double()
for p in model.parameters():
    p.grad = torch.full_like(p, -1e308)
torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
"""
# The judge's modules, and its replay: what a forger would run to find a passing record.
JUDGE = ("_trace", "_events", "_values", "_scenario", "_verdict", "_hooks", "_ledger",
         "train_loop", "amp_clip_loop", "behaviour")
REACH = f"JUDGE = {JUDGE!r}\n" + """
import gc, importlib, json, os, sys, types
import content.checkers as package
found = {"loaded": sorted(m for m in sys.modules if m.startswith("content")),
         "imported": [], "read": []}
for name in JUDGE:
    try:
        importlib.import_module("content.checkers." + name)
        found["imported"].append(name)
    except ImportError:
        pass
    for folder in package.__path__:
        try:
            with open(os.path.join(folder, name + ".py")) as source:
                found["read"].append(source.read(100))
        except OSError:
            pass
found["functions"] = sorted({  # the judge's code, however it was reached
    f"{o.__module__}.{o.__qualname__}" for o in gc.get_objects()
    if isinstance(o, types.FunctionType) and (
        str(o.__module__).removeprefix("content.checkers.") in JUDGE
        or any(o.__code__.co_filename.endswith(f"/checkers/{n}.py") for n in JUDGE))})
print(json.dumps(found))
"""


def checker_processes(service_pid: int) -> set[int]:
    """The service's checker processes, by pid: a replaced one has a new pid."""
    found = set()
    for entry in Path("/proc").iterdir():
        try:
            status = (entry / "status").read_text()
            command = (entry / "cmdline").read_bytes()
        except (OSError, NotADirectoryError):
            continue
        if (f"\nPPid:\t{service_pid}\n" in status
                and b"bot.sandbox.service.checker_process" in command):
            found.add(int(entry.name))
    return found


async def behaviour(sandbox, code: str, learner: str):
    return await sandbox.run(code, learner=learner, mode="check", checker="behaviour",
                             behaviour=softmax_block())


async def refused_for_its_run_only(sandbox, attack, says: str, correct) -> None:
    """`attack()` gets `says` and no verdict; the checker processes stay; another learner's
    `correct()` answer right after passes."""
    checkers = checker_processes(sandbox.service_pid)
    assert len(checkers) == 2, checkers
    result = await attack()
    assert result.status == ERROR and result.report is None, result
    assert says in result.error and "memory" not in result.error, result.error
    assert checker_processes(sandbox.service_pid) == checkers  # none died, none replaced
    theirs = await correct()
    assert theirs.status == OK and theirs.report.passed, theirs
    assert checker_processes(sandbox.service_pid) == checkers


@pytest.mark.parametrize("form", FORGED)
async def test_a_forged_number_or_nesting_in_a_behaviour_report_costs_its_run_only(
        roomy_sandbox, form):
    forged, says = FORGED[form]
    await refused_for_its_run_only(
        roomy_sandbox, lambda: behaviour(roomy_sandbox, FORGER + forged, "mallory"), says,
        lambda: behaviour(roomy_sandbox, SOFTMAX, "alice"))


async def test_a_report_nested_past_any_reader_costs_its_run_only(roomy_sandbox):
    await refused_for_its_run_only(
        roomy_sandbox, lambda: behaviour(roomy_sandbox, TOO_DEEP, "mallory"),
        "the report was nested too deeply to read",
        lambda: behaviour(roomy_sandbox, SOFTMAX, "alice"))


async def test_a_gradient_too_large_to_square_costs_its_run_only(roomy_sandbox):
    def amp(code: str, learner: str):
        return roomy_sandbox.run(code, learner=learner, mode="check", checker="amp_clip_loop")

    await refused_for_its_run_only(
        roomy_sandbox, lambda: amp(HUGE_GRADIENT, "mallory"),
        "a number in it is beyond what the checker can compute with: OverflowError",
        lambda: amp(AMP_LOOP, "alice"))


async def test_the_judge_is_neither_loaded_nor_importable_in_a_jailed_child(roomy_sandbox):
    result = await roomy_sandbox.run(REACH)
    assert result.status == OK, result
    found = json.loads(result.stdout)
    assert found == {
        "loaded": ["content", "content.checkers", "content.checkers._behave",
                   "content.checkers._bounds", "content.checkers._observe",
                   "content.checkers._tags"],
        "imported": [], "read": [], "functions": []}, found
