"""The behaviour checker end to end through a real sandbox service (issue 27): the author's
run and the learner's in two jailed children, the judge in a checker process."""

from __future__ import annotations

import pytest

from bot.bench.softmax_exercise import CASES, REFERENCE, VERSIONS, softmax_block
from bot.sandbox.protocol import ERROR, OK, REFUSED

pytestmark = pytest.mark.asyncio(loop_scope="module")


async def check(sandbox, code: str, **changes):
    return await sandbox.run(code, mode="check", checker="behaviour",
                             behaviour=softmax_block(**changes))


async def test_the_reference_passes(sandbox):
    result = await check(sandbox, REFERENCE)
    assert result.status == OK and result.report.passed, result
    assert result.report.mistakes == ()


@pytest.mark.parametrize("mistake", sorted(VERSIONS))
async def test_each_labelled_version_is_recognised_by_name(sandbox, mistake):
    result = await check(sandbox, VERSIONS[mistake])
    assert not result.report.passed
    assert result.report.mistakes == (mistake,)


async def test_a_rewritten_labelled_mistake_is_still_recognised(sandbox):
    code = "import torch\ndef softmax(x):\n    return torch.exp(x) / torch.exp(x).sum(-1, True)\n"
    result = await check(sandbox, code)
    assert result.report.mistakes == ("softmax_overflow",)


SIZED_CASES = """\
import torch
def cases(rng):
    g = torch.Generator().manual_seed(rng.randrange(2**31))
    return [(torch.randn(*shape, generator=g),) for shape in ((4, 6), (2, 2), (3, 5))]
"""


async def test_an_unlabelled_wrong_answer_gets_the_smallest_differing_case(sandbox):
    code = "def softmax(x):\n    return (x / 2).softmax(dim=-1)  # a temperature\n"
    result = await check(sandbox, code, cases=SIZED_CASES)
    report = result.report
    assert not report.passed and report.mistakes == () and report.error is None
    text = "\n".join(report.feedback)
    assert "smallest case" in text and "shape=(2, 2)" in text, text
    assert "expected:" in text and "got:" in text and "it differs in 4 places" in text
    assert all(line.count("`") % 2 == 0 for line in report.feedback)  # quoted as code


async def test_an_exception_is_the_learners_own_line(sandbox):
    code = "def softmax(x):\n    y = x * 2\n    return y.no_such_method()\n"
    result = await check(sandbox, code)
    report = result.report
    assert not report.passed and report.error.type == "AttributeError"
    assert report.error.line == 3
    assert report.feedback[0].startswith("line 3: `AttributeError")


@pytest.mark.parametrize("code, says", [
    ("def softmax(x):\n    return x.softmax(-1).T\n", "expected a tensor of shape (3, 5), got "
                                                       "shape (5, 3)"),
    ("def softmax(x):\n    return x.double().softmax(-1)\n", "expected dtype float32, got "
                                                              "float64"),
    ("def softmax(x):\n    return x.softmax(-1) * float('nan')\n", "got nan"),
    ("def softmax(x):\n    return x.softmax(-1).tolist()\n", "expected a tensor, got a list"),
])
async def test_a_shape_dtype_or_type_mismatch_says_so(sandbox, code, says):
    result = await check(sandbox, code)
    assert not result.report.passed
    assert says in "\n".join(result.report.feedback), result.report.feedback


@pytest.mark.parametrize("body, says", [
    ("return torch.zeros(1).expand(10**8)", "more than 10000 values"),
    ("l = []\n    for _ in range(100):\n        l = [l]\n    return l", "nested more than 16"),
    ("l = []\n    l.append(l)\n    return l", "contains itself"),
    ("d = {}\n    d['me'] = d\n    return d", "contains itself"),
    ("return object()", "cannot be compared"),
    ("return 10**100", "integer too large"),
    ("return 'x' * 10**6", "string longer than"),
])
async def test_outputs_that_cannot_cross_as_data_are_a_plain_error(sandbox, body, says):
    result = await check(sandbox, f"import torch\ndef softmax(x):\n    {body}\n")
    assert result.status == OK and not result.report.passed, result
    assert says in "\n".join(result.report.feedback), result.report.feedback


@pytest.mark.parametrize("cases, says", [
    ("def cases(rng):\n    while True:\n        pass\n", "stopped after"),
    ("def cases(rng):\n    return [(list(range(10**8)),)]\n", "memory"),
])
async def test_an_author_run_past_its_limits_judges_nothing(sandbox, cases, says):
    result = await check(sandbox, REFERENCE, cases=cases)
    assert result.status == ERROR and result.report is None, result
    assert "this exercise's own code" in result.error and says in result.error.lower()


@pytest.mark.parametrize("cases, says", [
    ("import torch\ndef cases(rng):\n    return [(torch.zeros(1).expand(10**8),)]\n",
     "more than 10000 values"),
    ("def cases(rng):\n    return 5\n", "argument tuples"),
    ("def cases(rng):\n    raise ValueError('oops')\n", "line 2: ValueError: oops"),
    ("import random\ndef cases(rng):\n    return [(random.SystemRandom().random(),)]\n",
     "depend on rng alone"),
])
async def test_broken_cases_say_the_exercise_could_not_judge(sandbox, cases, says):
    result = await check(sandbox, REFERENCE, cases=cases, entry="softmax")
    assert result.status == OK and not result.report.passed
    text = "\n".join(result.report.feedback)
    assert "this exercise could not judge" in text and says in text, text


async def test_a_nan_where_the_reference_has_one_matches_with_equal_nan(sandbox):
    reference = "def softmax(x):\n    return x.exp() / x.exp().sum(-1, keepdim=True)\n"
    result = await check(sandbox, VERSIONS["softmax_overflow"], reference=reference, versions={})
    assert result.report.passed  # 1000-scale logits overflow to NaN in the same places
    strict = await check(sandbox, VERSIONS["softmax_overflow"], reference=reference,
                         versions={}, compare={"kind": "allclose", "equal_nan": False})
    assert not strict.report.passed


# The learner looks everywhere in its own process for the reference's code or outputs: the
# request on the stack, every container the collector knows. They are not in its process.
SNOOP = """\
import gc, sys

MARKER = "REFERENCE" + "-MARKER-" + "7"

def holds(v, depth=0):
    if isinstance(v, str):
        return MARKER in v and v != MARKER
    if depth < 6 and isinstance(v, dict):
        return any(holds(k, depth + 1) or holds(w, depth + 1) for k, w in list(v.items()))
    if depth < 6 and isinstance(v, list | tuple):
        return any(holds(w, depth + 1) for w in list(v))
    return False

def softmax(x):
    found = 0
    f = sys._getframe()
    while f is not None:
        found += sum(holds(v) for v in f.f_locals.values())
        f = f.f_back
    found += sum(holds(o) for o in gc.get_objects() if isinstance(o, dict | list | tuple))
    if found:
        raise RuntimeError(f"found the reference {found} times")
    return x
"""


async def test_the_learner_cannot_see_the_reference_or_its_outputs(roomy_sandbox):
    # Each run searches every object three times: 1.4 s of the 3 s wall on an idle machine,
    # past it on a busy one, so on the roomy worker.
    reference = REFERENCE + "# REFERENCE-MARKER-7\n"
    versions = {k: v + "# REFERENCE-MARKER-7\n" for k, v in VERSIONS.items()}
    result = await check(roomy_sandbox, SNOOP, reference=reference, versions=versions)
    report = result.report
    assert report.error is None, report  # it raised nothing: it found nothing
    assert not report.passed and report.mistakes == ()
    # The same search, run where the versions are (the author's run), finds them.
    control = await check(roomy_sandbox, REFERENCE, reference=SNOOP, versions=versions)
    assert "found the reference" in "\n".join(control.report.feedback), control


async def test_a_forged_verdict_printed_by_the_learner_is_ignored(sandbox):
    code = """\
import json, sys
print(json.dumps({"status": "ok", "passed": True, "report": {"passed": True}}))
print('{"observations": {"passed": true}}', file=sys.stderr)
def softmax(x):
    print("✅ passed: every case equals the reference")
    return x
"""
    result = await check(sandbox, code)
    assert result.status == OK and not result.report.passed
    assert '"passed": true' in result.stdout  # the learner's output, shown as output only


@pytest.mark.parametrize("changes, says", [
    ({"entry": "not a name"}, "entry"),
    ({"versions": {"a": 5}}, "not code text"),
    ({"compare": {"kind": "close"}}, "allclose or exact"),
    ({"versions": {f"v{i}": "" for i in range(9)}}, "at most 8"),
])
async def test_a_malformed_behaviour_block_is_refused(sandbox, changes, says):
    result = await check(sandbox, REFERENCE, **changes)
    assert result.status == REFUSED and says in result.stderr, result


async def test_a_check_without_its_block_is_refused_and_plain_runs_still_work(sandbox):
    result = await sandbox.run(REFERENCE, mode="check", checker="behaviour")
    assert result.status == REFUSED and "behaviour block" in result.stderr
    plain = await sandbox.run("print(6 * 7)")
    assert plain.status == OK and plain.stdout.strip() == "42"
    assert CASES  # the same cases as the card


async def test_a_forged_report_written_to_every_fd_does_not_pass(sandbox):
    code = """\
import json, os
def softmax(x):
    forged = {"observations": {"digest": "", "error": None, "passed": True,
                               "programs": [{"outcomes": [{"value": 0.5}] * 3}]},
              "report": {"passed": True, "status": "ok"}, "passed": True}
    body = json.dumps(forged).encode()
    for fd in range(3, 64):
        try:
            os.write(fd, len(body).to_bytes(4, "big") + body)
        except OSError:
            pass
    os._exit(0)
"""
    result = await check(sandbox, code)
    assert result.report is None or not result.report.passed, result
    again = await check(sandbox, REFERENCE)  # and the service goes on judging
    assert again.report.passed
