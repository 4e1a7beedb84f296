"""Faults of ours, as the sandbox's clients report them, for tests of what a learner sees.

`FaultyClient` stands where a `SandboxClient` or `FleetClient` stands, behind the engine's
real `SandboxJudge` on a real loop thread: each run meets one fault, reported the way the
real client reports it (a result with an `unjudged` cause, a refusal, an exception, or no
answer at all), until the test `heal()`s it; then it passes every run.
"""

from __future__ import annotations

import asyncio
import threading

from bot.engine.code_judge import SandboxJudge
from bot.sandbox.client.client import SandboxBusy
from bot.sandbox.protocol import OK, UNJUDGED, CheckReport, RunResult, failed

# The refusals before a run that are ours, by the reason the clients give.
REFUSALS = {"unreachable": "The code runner cannot be reached right now; try again in a "
                           "minute.",
            "no_host": "No code runner is up right now; try again in a minute.",
            "full": "The code runner is busy right now; try again in a minute."}
# Everything a client can do wrong: each cause of an unjudged result, each refusal of
# ours, a client that raises, and one that never answers.
FAULTS = [*UNJUDGED, *(f"refused:{reason}" for reason in REFUSALS), "raises", "silent"]
# The cause a fault is counted and told under.
CAUSE = {**{cause: cause for cause in UNJUDGED}, "refused:unreachable": "unreachable",
         "refused:no_host": "no_host", "refused:full": "busy", "raises": "crash",
         "silent": "timeout"}


class FaultyClient:
    def __init__(self, fault: str):
        self.fault, self.runs = fault, 0

    def heal(self) -> None:
        self.fault = None

    async def run(self, code: str, **options) -> RunResult:
        self.runs += 1
        fault = self.fault
        if fault is None:
            return RunResult(OK, report=CheckReport(OK, passed=True))
        if fault.startswith("refused:"):
            reason = fault.split(":", 1)[1]
            raise SandboxBusy(REFUSALS[reason], reason=reason)
        if fault == "raises":
            raise RuntimeError("the sandbox service is not running")
        if fault == "silent":
            await asyncio.sleep(3600)
        return RunResult.from_wire(failed(f"(what the client says of {fault})", fault))


class FaultyJudge(SandboxJudge):
    """The real judge on a FaultyClient and a loop thread of its own; `close()` it."""

    def __init__(self, fault: str):
        loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=loop.run_forever, daemon=True)
        self._thread.start()
        super().__init__(FaultyClient(fault), loop, timeout_s=0.5 if fault == "silent" else 30)

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(5)
