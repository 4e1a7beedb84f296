"""Every request gets exactly one reply, through the bot's client, and the same learner can
submit again: the causes that once left a request unanswered (a learner was told "your
previous code is still running" until a restart) each have a test here."""

from __future__ import annotations

import asyncio
import textwrap

import pytest

from bot.sandbox.client.client import SandboxBusy, SandboxClient
from bot.sandbox.protocol import ERROR, OK, TIMEOUT, Limits, RunResult

pytestmark = pytest.mark.asyncio(loop_scope="module")


async def answered_then_free(sandbox, learner: str, code: str) -> RunResult:
    """Run `code` for `learner`; then the same learner must be admitted and served again."""
    result = await asyncio.wait_for(sandbox.run(textwrap.dedent(code), learner=learner), 60)
    again = await sandbox.run("print('again')", learner=learner)
    assert (again.status, again.stdout) == (OK, "again\n")
    return result


async def test_fork_without_exec_gives_one_reply(sandbox):
    result = await answered_then_free(sandbox, "fork", """
        import os
        pid = os.fork()
        os.write(1, b"parent\\n" if pid else b"child\\n")  # one write each: lines never mix
        if pid:
            os.waitpid(pid, 0)
    """)
    assert result.status == OK
    assert sorted(result.stdout.split()) == ["child", "parent"]


async def test_fork_whose_children_raise_and_exit_gives_one_reply(sandbox):
    result = await answered_then_free(sandbox, "forks", """
        import os
        for _ in range(4):
            if os.fork() == 0:
                raise ValueError("from a forked child")  # runs the harness's error path
        raise SystemExit(0)
    """)
    assert result.status == OK


async def test_fork_bomb_gives_one_reply(sandbox):
    result = await answered_then_free(sandbox, "bomb", """
        import os
        while True:
            try:
                os.fork()
            except OSError:
                pass
    """)
    assert result.status in (TIMEOUT, ERROR, OK)


async def test_garbage_on_the_report_channel_gives_one_reply(sandbox):
    result = await answered_then_free(sandbox, "garbage", """
        import os
        for fd in range(3, 64):
            try:
                os.write(fd, b"\\x00\\x00\\x00\\x05{not json at all")
            except OSError:
                pass
    """)
    assert result.status == ERROR and "report channel" in result.error


async def test_a_huge_exception_message_gives_one_reply(sandbox):
    result = await answered_then_free(sandbox, "huge", "raise ValueError('x' * 200_000)")
    assert result.status == ERROR and result.exit_code == 1
    assert result.error.startswith("ValueError: xxx") and len(result.error) < 5000


async def test_a_huge_exception_in_a_code_check_gives_one_reply(sandbox):
    result = await asyncio.wait_for(sandbox.run(
        "raise ValueError('y' * 300_000)", learner="huge-check", mode="check",
        checker="train_loop"), 60)
    assert result.status == ERROR and not result.report.passed
    assert result.report.feedback[0].startswith("line 1: `ValueError: yyy")
    assert (await sandbox.run("print(1)", learner="huge-check")).status == OK


async def test_flooding_the_report_channel_is_stopped_and_answered(sandbox):
    result = await answered_then_free(sandbox, "flood", """
        import os
        chunk = b"z" * 65536
        for fd in range(3, 64):
            try:
                os.fstat(fd)
            except OSError:
                continue
            try:
                while True:
                    os.write(fd, chunk)
            except OSError:
                pass
    """)
    assert result.status in (ERROR, TIMEOUT)


async def _silent_service(path: str) -> asyncio.Server:
    """Accepts requests and never answers: a wedged service."""

    async def swallow(reader, writer):
        while await reader.readline():
            pass

    return await asyncio.start_unix_server(swallow, path)


async def test_a_service_that_never_answers_frees_the_learner_by_the_deadline(tmp_path):
    socket_path = str(tmp_path / "silent.sock")
    server = await _silent_service(socket_path)
    limits = Limits(wall_s=0.2, reply_margin_s=0.1)
    client = SandboxClient(address=f"unix:{socket_path}", limits=limits, max_queue=1,
                           runs_per_minute=100)
    # Connected without the info handshake, which this service would never answer.
    client._writer = (await client._connect_when_up())[1]  # noqa: SLF001
    try:
        first = await asyncio.wait_for(client.run("print(1)", learner="ann"), 30)
        assert first.status == ERROR and "did not answer" in first.stderr
        # The learner's slot and the queue place are free again.
        assert not client._pending and "ann" not in client._in_flight  # noqa: SLF001
        second = await asyncio.wait_for(client.run("print(2)", learner="ann"), 30)
        assert second.status == ERROR
    finally:
        client._writer.close()  # noqa: SLF001
        server.close()


async def test_many_wedged_learners_do_not_lock_out_the_rest(tmp_path):
    socket_path = str(tmp_path / "silent.sock")
    server = await _silent_service(socket_path)
    client = SandboxClient(address=f"unix:{socket_path}", max_queue=4, runs_per_minute=100,
                           limits=Limits(wall_s=0.2, reply_margin_s=0.1))
    client._writer = (await client._connect_when_up())[1]  # noqa: SLF001
    try:
        results = await asyncio.gather(*(client.run("pass", learner=f"l{i}")
                                         for i in range(4)))
        assert all(r.status == ERROR for r in results)
        with pytest.raises(SandboxBusy):  # while full, the queue says so ...
            client._pending.update({i: ({}, None) for i in range(4)})  # noqa: SLF001
            client._admit("late")  # noqa: SLF001
        client._pending.clear()  # noqa: SLF001
        client._admit("late")  # ... and once answered, it admits again  # noqa: SLF001
    finally:
        client._writer.close()  # noqa: SLF001
        server.close()

