"""Code answers judged by a card's checker inside the sandbox, for the tutor engine.

The engine is synchronous and runs code answers off the event loop (a worker thread);
the sandbox client is asyncio, on a loop thread of its own (bot.sandbox.client.background).
`SandboxJudge` bridges the two, and `report_from` turns the sandbox's result into the
engine's CodeReport.

A verdict we could not reach (no code runner, Redis away, a crash of ours, no answer in
time, the checker failing) is never a verdict on the code: it raises NotJudged, so the
answer uses no attempt and records nothing, and the operator hears of it at once (an
error in the log, `tutor_sandbox_unjudged_total{cause}`).
"""

from __future__ import annotations

import asyncio
import logging
import time

from bot.engine.errors import NotJudged, TryAgain
from bot.engine.outcomes import CodeReport
from bot.observability import record_refusal, record_sandbox, record_unjudged
from bot.sandbox.client.client import SandboxBusy, SandboxClient
from bot.sandbox.protocol import MEMORY, OUTPUT_LIMIT, REFUSED, TIMEOUT, UNJUDGED, RunResult
from content.safe_text import code_span, plain
from content.schema import CodeCard

log = logging.getLogger(__name__)

STOPPED = {
    TIMEOUT: "Your code ran too long and was stopped: is there a loop that never ends?",
    MEMORY: "Your code used more memory than allowed and was stopped.",
    OUTPUT_LIMIT: "Your code printed too much and was stopped.",
}

VET_STOPPED = {TIMEOUT: "ran past the time limit (does cases(rng) return?)",
               MEMORY: "used more memory than allowed", OUTPUT_LIMIT: "printed too much"}

# Refusals before a run that are ours (the learner's own, one run in flight or the rate,
# are TryAgain with their message): the cause each is counted under.
OUR_REFUSALS = {"unreachable": "unreachable", "no_host": "no_host", "full": "busy",
                "busy": "busy"}


def not_judged(cause: str) -> NotJudged:
    """What the learner reads when our part failed: plainly not judged, and what to do."""
    return NotJudged(f"Your code was not judged: {UNJUDGED[cause]}. That is our fault, not "
                     "your code's: no attempt was used and nothing was recorded. The card "
                     "stays open: send your code again in a minute.", cause, UNJUDGED[cause])


def report_from(result: RunResult) -> CodeReport:
    """A sandbox result (run in `check` mode) as the engine's CodeReport. A result's
    `error` and `stderr` are text the learner's code can write (the jailed child reports
    its own error): the feedback quotes them as code. The report's lines (the checker's
    and the service's, which quote the learner already) and stdout lose only what no
    front end may show. Without a checker's report, only a refusal is known not to have
    trained: a crash may have come mid-training."""
    status, stdout = result.status, plain(result.stdout)
    if result.report is not None:  # the checker ran to the end (the code may have raised)
        report = result.report
        return CodeReport(report.status, report.passed, report.mistakes,
                          tuple(plain(text) for text in report.feedback), stdout,
                          report.trained)
    if status in STOPPED:
        return CodeReport(status, False, (), (STOPPED[status],), stdout)
    detail = result.error or result.stderr
    said = code_span(detail) if detail else "it could not run"
    if status == REFUSED:  # nothing ran
        return CodeReport(status, False, (), (f"Your code was not run: {said}",), stdout,
                          trained=False)
    where = f"line {result.line}: " if result.line else ""
    return CodeReport(status, False, (), (f"{where}{said}",), stdout)


class SandboxJudge:
    """The engine's `code_judge`, called from a worker thread."""

    def __init__(self, client: SandboxClient, loop: asyncio.AbstractEventLoop, *,
                 device: str = "cpu", timeout_s: float = 120.0):
        self.client, self.loop = client, loop
        self.device, self.timeout_s = device, timeout_s

    @property
    def available(self) -> bool:
        """Whether code can be judged now (a fleet's Redis answers): code cards are served
        only then, and come back by themselves when it does again."""
        return getattr(self.client, "available", True)

    def __call__(self, card: CodeCard, code: str, learner: object = None) -> CodeReport:
        return report_from(self._result(
            code, learner=None if learner is None else str(learner), mode="check",
            checker=card.checker, device=self.device, behaviour=card.behaviour_request()))

    def vet(self, card: CodeCard, server: int) -> tuple[list[str], bool]:
        """What is wrong with a behaviour card's exercise (its cases, reference and
        versions, tried in the sandbox before `server`'s deck is stored; [] when nothing
        is), and whether a limit stopped it. The trial's runs are the server's: one at a
        time across the fleet (`trial:{server}`, never a learner's key)."""
        result = self._result(card.reference, learner=f"trial:{server}", mode="vet",
                              checker=card.checker, behaviour=card.behaviour_request())
        return vet_problems(result), result.status in VET_STOPPED

    def _result(self, code: str, **run) -> RunResult:
        """The sandbox's result on the code; TryAgain (NotJudged when the fault is ours)
        when there is none to judge it by."""
        started = time.perf_counter()
        future = asyncio.run_coroutine_threadsafe(self.client.run(code, **run), self.loop)
        try:
            result = future.result(self.timeout_s)
        except SandboxBusy as exc:
            record_refusal(exc.reason)
            if exc.reason in OUR_REFUSALS:
                raise self._unjudged(OUR_REFUSALS[exc.reason], str(exc)) from None
            raise TryAgain(f"{exc} Your code was not judged; no attempt was used.") from None
        except TimeoutError:
            future.cancel()
            raise self._unjudged("timeout", f"no result within {self.timeout_s:.0f} s") \
                from None
        except Exception as exc:  # noqa: BLE001 - a fault of ours never grades the code
            log.exception("the sandbox client failed")
            raise self._unjudged("crash", f"the sandbox client failed: {exc!r}") from None
        if result.unjudged is not None:
            raise self._unjudged(result.unjudged, result.error or result.stderr)
        record_sandbox(result.status, time.perf_counter() - started)
        return result

    @staticmethod
    def _unjudged(cause: str, detail: str) -> NotJudged:
        record_unjudged(cause)
        log.error("a code answer was not judged (%s): %s", cause, plain(detail)[:500])
        return not_judged(cause)


def vet_problems(result: RunResult) -> list[str]:
    """A tried exercise's problems, each a sentence for its author."""
    if result.report is not None:
        return [] if result.report.passed else [plain(text) for text in result.report.feedback]
    if result.status in VET_STOPPED:
        return [f"the exercise's own code (its cases, reference or a version) "
                f"{VET_STOPPED[result.status]} and was stopped"]
    detail = result.error or result.stderr
    return [f"the exercise's own code could not be run: {code_span(detail or result.status)}"]

