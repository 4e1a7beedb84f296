"""What a jailed child can reach of the judge (issue 37.5): the judge's own modules (its
replay would tell a forger when a record passes) are neither loaded in the child nor
importable there.
"""

from __future__ import annotations

import json

import pytest

from bot.sandbox.protocol import OK

pytestmark = pytest.mark.asyncio(loop_scope="module")

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


async def test_the_judge_is_neither_loaded_nor_importable_in_a_jailed_child(roomy_sandbox):
    result = await roomy_sandbox.run(REACH)
    assert result.status == OK, result
    found = json.loads(result.stdout)
    assert found == {
        "loaded": ["content", "content.checkers", "content.checkers._behave",
                   "content.checkers._bounds", "content.checkers._observe",
                   "content.checkers._tags"],
        "imported": [], "read": [], "functions": []}, found
