"""Issue 40 through a real sandbox service: what a behaviour check reports on a typo (no
case returned: not judged by the engine), on an int where a float came back under `exact`,
and on a case whose inputs are a padded batch (its structure and padding in view)."""

from __future__ import annotations

import pytest

from bot.bench.softmax_exercise import REFERENCE, VERSIONS, softmax_block
from bot.engine.code_judge import report_from
from bot.sandbox.protocol import OK

pytestmark = pytest.mark.asyncio(loop_scope="module")


async def check(sandbox, code: str, **changes):
    return await sandbox.run(code, mode="check", checker="behaviour",
                             behaviour=softmax_block(**changes))


@pytest.mark.parametrize("code, error", [
    ("def softmax(x)\n    return x\n", "SyntaxError"),  # nothing ran
    ("def softmax(x):\n    return torhc.softmax(x, -1)\n", "NameError"),  # on every call
    ("def softmx(x):\n    return x.softmax(-1)\n", "NameError"),  # no entry to call
    ("import torch.nn.functionl as F\ndef softmax(x):\n    return x\n", "ModuleNotFoundError"),
])
async def test_a_typo_before_any_case_returned_is_not_judged(sandbox, code, error):
    result = await check(sandbox, code)
    assert result.status == OK and result.report.trained is False, result
    report = report_from(result)
    assert report.ran_no_training and not report.passed  # the engine's rule: not judged
    assert error in report.feedback[0]


async def test_code_that_returned_before_it_raised_or_whose_error_is_a_mistake_is_judged(
        sandbox):
    # Returns on the 1-scale case, raises on the larger ones: a case returned.
    code = ("def softmax(x):\n    if x.abs().max() > 10:\n        raise ValueError('big')\n"
            "    return x.softmax(-1)\n")
    partly = report_from(await check(sandbox, code))
    assert not partly.passed and not partly.ran_no_training
    # A labelled version that raises on every case, and a learner who raises alike.
    raises = "def softmax(x):\n    return x.no_such_method()\n"
    versions = {**VERSIONS, "softmax_raises": raises}
    named = report_from(await check(sandbox, "def softmax(x):\n    return x.nope()\n",
                                    versions=versions))
    assert named.mistakes == ("softmax_raises",) and not named.ran_no_training


COUNTS = """\
import torch
def cases(rng):
    return [(n,) for n in (3, 8, 13)]
"""


async def test_exact_refuses_a_float_where_the_reference_returns_an_int(sandbox):
    changes = {"cases": COUNTS, "entry": "total_steps", "compare": {"kind": "exact"},
               "versions": {}, "reference": "def total_steps(n):\n    return n * 63\n"}
    floats = await check(sandbox, "def total_steps(n):\n    return n * 63.0\n", **changes)
    assert floats.status == OK and not floats.report.passed, floats
    assert "`expected 189 (an int), got 189.0 (a float)`" in floats.report.feedback[-1]
    ints = await check(sandbox, "def total_steps(n):\n    return 63 * n\n", **changes)
    assert ints.report.passed


PADDED = """\
import torch
def cases(rng):
    g = torch.Generator().manual_seed(rng.randrange(2**31))
    made = []
    for lengths in ((4, 2, 3), (8, 5, 3, 6)):
        steps = max(lengths)
        mask = torch.arange(steps)[None, :] < torch.tensor(lengths)[:, None]
        made.append((torch.randn(len(lengths), steps, 16, generator=g), mask))
    return made
"""
MASKED_MEAN = """\
def masked_mean(x, mask):
    kept = mask[..., None].float()
    return (x * kept).sum(1) / kept.sum(1)
"""


async def test_a_padded_case_shows_its_mask_shapes_and_where_the_output_differs(sandbox):
    changes = {"cases": PADDED, "entry": "masked_mean", "reference": MASKED_MEAN,
               "versions": {}}
    result = await check(sandbox, "def masked_mean(x, mask):\n    return x.mean(1)\n",
                         **changes)
    assert result.status == OK and not result.report.passed, result
    case, expected, got, places = result.report.feedback
    assert "(all 2 cases differ)" in case and "shape=(3, 4, 16), dtype=float32)" in case
    # The mask whole: the padded positions that explain the difference are in view.
    assert ("tensor([[True, True, True, True], [True, True, False, False], [True, True, True, "
            "False]], shape=(3, 4), dtype=bool))`") in case
    assert "shape=(3, 16), dtype=float32)" in expected and "shape=(3, 16)" in got
    # Row 0 has no padding (it matches); rows 1 and 2 differ in every column.
    assert places.startswith("it differs in 32 places: `at [1, 0]: expected ")
    assert places.endswith("; and 28 more")
    assert sum(map(len, result.report.feedback)) < 1_900


async def test_a_0d_output_is_shown_as_a_number(sandbox):
    reference = "def softmax(x):\n    return x.softmax(-1).max()\n"
    result = await check(sandbox, "def softmax(x):\n    return x.softmax(-1).min()\n",
                         reference=reference, versions={})
    text = "\n".join(result.report.feedback)
    assert "expected: `tensor(" in text and ", dtype=float32)`" in text, text
    assert "it differs: `expected " in text
    assert "shape=()" not in text and "[]" not in text


async def test_the_reference_passes_and_counts_as_having_run(sandbox):
    result = await check(sandbox, REFERENCE)
    assert result.status == OK and result.report.passed and result.report.trained
