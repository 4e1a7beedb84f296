"""The sandbox service's judges: a few `checker_process` processes and a bounded queue.

Judging never runs in the service's own process or threads: a record crafted to be slow or
large to judge would stall or kill the service, and every run in flight with it. Each
verdict gets a process from the pool, a deadline and the process's address-space limit; a
process that misses the deadline or dies is killed and replaced, and only that verdict is
lost (answered `JudgeFailed` with a plain reason). Waiting verdicts queue in arrival order,
at most `queue_max` of them; nothing else in the service waits on this queue.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import sys
from dataclasses import dataclass

from bot.sandbox.process import PROJECT_ROOT, service_environment
from bot.sandbox.service.verdict import signal_name

log = logging.getLogger("sandbox.checkers")
START_TIMEOUT_S = 60.0
ENDING_WAIT_S = 1.0  # a process whose pipe closed is gone or going: how it ended


class JudgeFailed(Exception):
    """The record was not judged; the message says why, in words for the learner."""


@dataclass(frozen=True)
class PoolLimits:
    size: int = 2
    timeout_s: float = 5.0
    memory_mb: int = 512
    queue_max: int = 64
    queue_wait_s: float = 20.0  # a pool that lost every process still answers


class CheckerPool:
    def __init__(self, limits: PoolLimits | None = None):
        self.limits = limits or PoolLimits()
        self._idle: asyncio.Queue[asyncio.subprocess.Process] = asyncio.Queue()
        self._all: set[asyncio.subprocess.Process] = set()
        self._waiting = 0
        self._replacing: set[asyncio.Task] = set()
        self._closed = False
        self.replaced = 0  # processes killed or lost, to be started again (tests, logs)

    async def start(self) -> None:
        for _ in range(self.limits.size):
            self._idle.put_nowait(await self._spawn())

    async def close(self) -> None:
        self._closed = True
        for task in list(self._replacing):
            task.cancel()
        await asyncio.gather(*self._replacing, return_exceptions=True)
        for process in list(self._all):
            await self._kill(process)

    async def _spawn(self) -> asyncio.subprocess.Process:
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "bot.sandbox.service.checker_process",
            "--memory-mb", str(self.limits.memory_mb), cwd=PROJECT_ROOT,
            env=service_environment(), stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE)
        self._all.add(process)
        try:
            ready = await asyncio.wait_for(process.stdout.readexactly(4), START_TIMEOUT_S)
        except (TimeoutError, asyncio.IncompleteReadError):
            ready = None
        if ready != b"\0\0\0\0":
            await self._kill(process)
            raise JudgeFailed("the checker could not be started")
        return process

    async def _kill(self, process: asyncio.subprocess.Process) -> None:
        self._all.discard(process)
        with contextlib.suppress(ProcessLookupError):
            process.kill()
        await process.wait()

    async def judge(self, checker: str, salt: int, observations) -> dict:
        """The checker's report for `observations`; raises JudgeFailed."""
        try:
            body = json.dumps({"checker": checker, "salt": salt, "observations": observations},
                              separators=(",", ":")).encode()
        except RecursionError:
            raise JudgeFailed("the checker could not read what the run reported (it is "
                              "nested too deeply to read)") from None
        except (ValueError, TypeError):
            raise JudgeFailed("the checker could not read what the run reported") from None
        if self._waiting >= self.limits.queue_max:
            raise JudgeFailed("the checker is busy right now; try again in a minute")
        self._waiting += 1
        try:
            process = await asyncio.wait_for(self._idle.get(), self.limits.queue_wait_s)
        except TimeoutError:
            raise JudgeFailed("the checker is busy right now; try again in a minute") from None
        finally:
            self._waiting -= 1
        healthy = False
        try:
            reply = await asyncio.wait_for(self._ask(process, body), self.limits.timeout_s)
            healthy = "failed" not in reply
        except TimeoutError:
            raise JudgeFailed(f"the checker gave up: what the run reported took longer than "
                              f"{self.limits.timeout_s:g} s to judge") from None
        except (asyncio.IncompleteReadError, ConnectionError):
            # Not "memory": a process that hits its limit says so (below). This one ended.
            raise JudgeFailed(f"the checker stopped while judging what the run reported "
                              f"({await _ending(process)})") from None
        except ValueError:
            raise JudgeFailed("the checker's answer could not be read") from None
        finally:
            # Whatever happened (a cancelled verdict too), the pool keeps its size.
            if healthy:
                self._idle.put_nowait(process)
            else:
                self.replaced += 1
                task = asyncio.ensure_future(self._replace(process))
                self._replacing.add(task)
                task.add_done_callback(self._replacing.discard)
        if "report" in reply and isinstance(reply["report"], dict):
            return reply["report"]
        if "failed" in reply:  # it caught its MemoryError: the only reply that means memory
            raise JudgeFailed(f"the checker ran out of memory judging what the run reported "
                              f"(its limit is {self.limits.memory_mb} MB)")
        raise JudgeFailed(f"the checker could not read what the run reported "
                          f"({reply.get('malformed')})")

    async def _ask(self, process: asyncio.subprocess.Process, body: bytes) -> dict:
        process.stdin.write(len(body).to_bytes(4, "big") + body)
        await process.stdin.drain()
        size = int.from_bytes(await process.stdout.readexactly(4), "big")
        reply = json.loads(await process.stdout.readexactly(size))
        if not isinstance(reply, dict):
            raise ValueError("not a reply")
        return reply

    async def _replace(self, process: asyncio.subprocess.Process) -> None:
        await self._kill(process)
        for attempt in range(3):
            if self._closed:
                return
            try:
                self._idle.put_nowait(await self._spawn())
                return
            except Exception:  # noqa: BLE001 - logged; the pool runs one smaller meanwhile
                log.exception("could not restart a checker process (attempt %d)", attempt + 1)
                await asyncio.sleep(1)


async def _ending(process: asyncio.subprocess.Process) -> str:
    """How a checker process that stopped answering ended, in words."""
    try:
        code = await asyncio.wait_for(process.wait(), ENDING_WAIT_S)
    except TimeoutError:
        return "it closed its pipe"
    if code < 0:
        return f"it was killed by {signal_name(-code)}"
    return f"it exited with status {code}"
