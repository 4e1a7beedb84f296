"""A behaviour exercise tried before its deck is stored (issue 27): through a real sandbox
service, its author's run on two seeds and its reference once more in another process."""

from __future__ import annotations

import pytest

from bot.bench.softmax_exercise import CASES, REFERENCE, VERSIONS, softmax_block
from bot.engine.code_judge import VET_STOPPED, vet_problems
from bot.sandbox.protocol import OK, REFUSED, TIMEOUT

pytestmark = pytest.mark.asyncio(loop_scope="module")


async def vet(sandbox, **changes):
    block = softmax_block(**changes)
    return await sandbox.run(block["reference"], mode="vet", checker="behaviour",
                             behaviour=block)


async def problems(sandbox, **changes) -> list[str]:
    return vet_problems(await vet(sandbox, **changes))


async def test_a_sound_exercise_passes(sandbox):
    result = await vet(sandbox)
    assert result.status == OK and result.report.passed, result
    assert vet_problems(result) == []


async def test_two_versions_that_do_the_same_cannot_be_told_apart(sandbox):
    twin = VERSIONS["softmax_overflow"].replace("e = x.exp()", "e = torch.exp(x)")
    found = await problems(sandbox, versions={**VERSIONS, "softmax_twin": twin})
    assert found == ["versions softmax_overflow and softmax_twin cannot be told apart on "
                     "these cases"]


async def test_a_version_that_is_right_cannot_be_told_from_the_reference(sandbox):
    found = await problems(sandbox, versions={**VERSIONS, "not_wrong": REFERENCE})
    assert found == ["version not_wrong cannot be told apart from the reference on these cases"]


async def test_versions_alike_on_cases_too_easy_to_tell_them(sandbox):
    # Small logits: the overflowing softmax is right on them, so it looks like the reference.
    small = CASES.replace("(1.0, 30.0, 1000.0)", "(1.0, 2.0)")
    found = await problems(sandbox, cases=small)
    assert found == ["version softmax_overflow cannot be told apart from the reference on "
                     "these cases"]


async def test_a_version_that_fails_before_the_entry_is_called(sandbox):
    found = await problems(sandbox, versions={**VERSIONS, "softmax_overflow": "def softmax(x)"})
    assert len(found) == 1 and found[0].startswith("version softmax_overflow fails before "
                                                   "softmax is called"), found
    assert "SyntaxError" in found[0]


async def test_a_version_that_raises_on_every_case_is_refused_by_name(sandbox):
    # Any answer that crashes with a TypeError would be named this mistake (issue 40.2).
    crashing = "def softmax(x):\n    return x.softmax()\n"  # no dim: TypeError on each case
    found = await problems(sandbox, versions={**VERSIONS, "softmax_overflow": crashing})
    assert found == ["version softmax_overflow raises on every case where the reference "
                     "returns (`line 2: TypeError`): any answer that merely crashes the same "
                     "way would be told it made this mistake; make the version's softmax "
                     "return the wrong result the mistake gives"]


async def test_a_version_that_raises_on_some_cases_only_is_told_apart(sandbox):
    # Raising on the largest logits only: its values on the others still tell it apart.
    partly = VERSIONS["softmax_overflow"].replace(
        "    e = x.exp()\n", "    if x.abs().max() > 500:\n        raise OverflowError\n"
                            "    e = x.exp()\n")
    assert await problems(sandbox, versions={**VERSIONS, "softmax_overflow": partly}) == []


async def test_a_reference_that_is_not_deterministic_for_a_seed(sandbox):
    # (torch's generator is seeded with the seed: torch.rand would be deterministic.)
    noisy = "import os\n" + REFERENCE.replace("return e", "return os.urandom(1)[0] + e")
    found = await problems(sandbox, reference=noisy)
    assert found == ["the reference gave other outputs in another run with the same seed "
                     "(case 1): softmax must depend on its arguments alone"]


async def test_cases_that_do_not_depend_on_the_rng_alone(sandbox):
    urandom = CASES.replace("rng.randrange(2**31)",
                            'int.from_bytes(__import__("os").urandom(4), "big")')
    found = await problems(sandbox, cases=urandom)
    assert found == ["cases(rng) made other cases in another run with the same seed: they "
                     "must depend on rng alone"]


async def test_a_reference_that_raises(sandbox):
    found = await problems(sandbox, reference="def softmax(x):\n    return x.nope()\n")
    assert len(found) == 1 and found[0].startswith("the reference raised on case 1: line 2: "
                                                   "AttributeError"), found


@pytest.mark.parametrize("cases", [
    "def cases(rng):\n    while True:\n        pass\n",  # never returns
    "def cases(rng):\n    return [(list(range(10**8)),)]\n",  # 10^8 elements
], ids=["never-returns", "huge"])
async def test_hostile_cases_are_stopped_and_said(sandbox, cases):
    result = await vet(sandbox, cases=cases)
    found = vet_problems(result)
    assert len(found) == 1, found
    if result.status in VET_STOPPED:
        assert found[0].startswith("the exercise's own code (its cases, reference or a "
                                   "version)"), found
        assert result.status != TIMEOUT or "time limit" in found[0]
    else:  # refused as data: too many values for a case
        assert found[0].startswith("cases(rng) failed") or "cases' data" in found[0], found


async def test_a_vet_of_another_checker_is_refused(sandbox):
    result = await sandbox.run(REFERENCE, mode="vet", checker="train_loop",
                               behaviour=softmax_block())
    assert result.status == REFUSED


PRYING_CASES = """\
import os, socket
def cases(rng):
    seen = {"env": dict(os.environ)}
    try:
        socket.create_connection(("127.0.0.1", 6379), timeout=1)
        seen["net"] = "connected"
    except OSError as exc:
        seen["net"] = type(exc).__name__
    try:
        open("/etc/shadow").read()
        seen["shadow"] = "read"
    except OSError as exc:
        seen["shadow"] = type(exc).__name__
    raise RuntimeError(repr(seen))
"""


async def test_an_authors_code_runs_in_the_learners_jail(monkeypatch):
    """An uploader's cases see what a learner's code sees: no token, no network, nobody."""
    from bot.sandbox.client.client import SandboxClient
    from tests.helpers.sandbox import TEST_LIMITS

    monkeypatch.setenv("DISCORD_TOKEN", "token-of-the-bot")
    client = SandboxClient(limits=TEST_LIMITS, parallel=1, runs_per_minute=10_000)
    await client.start()
    try:
        [found] = await problems(client, cases=PRYING_CASES)
        after = await vet(client)
    finally:
        await client.stop()
    assert found.startswith("cases(rng) failed: line 14: RuntimeError: "), found
    assert "token-of-the-bot" not in found and "'HOME': '/code'" in found
    assert "'net': 'connected'" not in found and "'shadow': 'read'" not in found
    assert after.report.passed  # and the service goes on
