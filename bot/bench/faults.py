"""`tutor bench faults`: each fault of the fleet made for real, as a learner and an operator
meet it, and how long the fleet takes to mend (README's fault table comes from this).

A learner sends a correct answer (the card's reference loop) through the engine as Discord
does, while the fault holds; the row says what they were told and after how long, and
whether a review was recorded (it must not be, for a fault of ours). The operator's side is
/healthz's status and reasons, the counters that moved and the first log line of the bot
or the host. Recovery is the time from the repair (a host started, Redis started, a password
fixed) until the same card's answer is judged. Default: the product's timings (a 10 s wall
limit, heartbeats every 5 s, takeover after 50 s: minutes); `--fast`: the tests' timings.
`--only a,b` runs some faults. Needs redis-server (`apt-get install redis-server`).
"""

from __future__ import annotations

import asyncio
import time

from bot import observability
from bot.bench.fault_bed import Bed

NOT_JUDGED = "Your code was not judged"
NAP_S = 1.0  # a run sleeps this long first, so that a fault can come while it runs


async def no_host(bed: Bed) -> dict:
    playing = bed.serve()
    row = await bed.submit(playing, bed.code())
    row["operator_sees"] = await _seen(bed, "no sandbox host in pool cpu", r"not judged")
    return {**row, **await bed.recovered("a host started (torch import, first heartbeat)",
                                         bed.host, playing)}


async def host_dies_mid_run(bed: Bed) -> dict:
    await bed.hosts_up(2)
    before = bed.counters()
    row = await _killed_mid_run(bed)
    await bed.until(lambda: bed.moved(before, bed.counters()), "the takeover counted", 30)
    row["operator_sees"]["counters"] = bed.moved(before, bed.counters())
    row["recovery"] = "none needed: another host took the run over and ran it"
    row["recovery_s"] = 0.0
    return row


async def last_host_dies_mid_run(bed: Bed) -> dict:
    await bed.hosts_up(1)
    row = await _killed_mid_run(bed)
    return {**row, **await bed.recovered("a host started", bed.host)}


async def _killed_mid_run(bed: Bed) -> dict:
    playing, since = bed.serve(), time.monotonic()
    answer = asyncio.ensure_future(bed.submit(playing, bed.code(sleep_s=NAP_S)))
    (await asyncio.wait_for(bed.run_in_hand(), 60)).kill()
    row = await answer
    row["operator_sees"] = {**bed.health(),
                            "log": bed.tap.first(since, r"left pool|took over|not judged")}
    return row


async def redis_down(bed: Bed) -> dict:
    await bed.hosts_up(1)
    playing = bed.serve()  # the learner writes their loop, meanwhile Redis goes
    since = time.monotonic()
    bed.redis.stop(kill=True)
    row = await bed.submit(playing, bed.code())
    row["operator_sees"] = await _seen(bed, "redis: ", r"cannot reach Redis", since)
    return {**row, **await bed.recovered("Redis started again (its append-only data kept)",
                                         bed.redis.start, playing)}


async def redis_loses_its_data(bed: Bed) -> dict:
    await bed.hosts_up(1)
    playing, since = bed.serve(), time.monotonic()
    answer = asyncio.ensure_future(bed.submit(playing, bed.code(sleep_s=NAP_S)))
    await asyncio.wait_for(bed.run_in_hand(), 60)
    await asyncio.to_thread(bed.redis.restart)  # a crash with nothing kept
    row = await answer
    row["operator_sees"] = {**bed.health(),
                            "log": bed.tap.first(since, r"lost its queue")}
    row["recovery"] = "none needed: the bot sent its waiting run again"
    row["recovery_s"] = 0.0
    return row


async def redis_restarts_with_its_log(bed: Bed) -> dict:
    await bed.hosts_up(1)
    runs = bed.runs_on_hosts() + 5
    for _ in range(5):  # answered runs, whose jobs the log keeps answered
        await bed.submit(bed.serve(), bed.code())
    await bed.until(lambda: bed.runs_on_hosts() >= runs, "the host's report of the runs")
    before = bed.counters()
    started = time.monotonic()
    await asyncio.to_thread(bed.redis.restart, keep_data=True)
    await bed.live(1)
    back = round(time.monotonic() - started, 1)
    await asyncio.sleep(bed.timing.claim_idle_s + 4 * bed.timing.claim_every_s)
    moved = bed.moved(before, bed.counters())
    rerun = bed.runs_on_hosts() - runs
    return {"learner_sees": "nothing (no run was in flight)", "learner_waited_s": 0.0,
            "recorded": False,
            "operator_sees": {**bed.health(), "counters": moved,
                              "runs_again_after_takeover_time": rerun},
            "recovery": "Redis restarted gracefully, its append-only log replayed",
            "recovery_s": back, "ok": rerun == 0 and not moved}


async def bot_starts_while_redis_is_away(bed: Bed) -> dict:
    tutor = bed.app.tutor
    bed.sandbox.stop()
    bed.redis.stop(kill=True)
    since = time.monotonic()
    bed.sandbox = bed.bot_side()
    off = not any(card.type == "code" for card in tutor.servable())
    row = {"learner_sees": "no code cards (the others are served)" if off else
           "code cards served", "learner_waited_s": 0.0, "recorded": False,
           "operator_sees": await _seen(bed, "redis: ", r"code cards are off|cannot reach",
                                        since)}

    async def back() -> None:
        bed.redis.start()
        await bed.until(lambda: tutor.code_judge.available, "code cards back", 120)

    row.update(await bed.recovered("Redis started: code cards come on by themselves", back))
    return {**row, "ok": off}


async def host_with_a_wrong_password(bed: Bed) -> dict:
    for host in bed.hosts:
        host.kill()
    await bed.live(0)
    host = bed.host(password="not-the-password")
    await bed.until(lambda: "Redis refused" in host.log(), "the host's line", 120)
    playing = bed.serve()
    row = await bed.submit(playing, bed.code())
    refused = next(line for line in host.log().splitlines() if "Redis refused" in line)
    row["operator_sees"] = {**bed.health(), "log": refused.split(": ", 1)[-1][:300]}

    async def fix() -> None:
        await bed.admin("ACL", "SETUSER", "tutor-sandbox", ">not-the-password")

    return {**row, **await bed.recovered(
        "the password fixed in Redis's ACL (the host retries with backoff)", fix, playing)}


FAULTS = {f.__name__: f for f in (
    no_host, host_dies_mid_run, last_host_dies_mid_run, redis_down, redis_loses_its_data,
    redis_restarts_with_its_log, bot_starts_while_redis_is_away, host_with_a_wrong_password)}


async def _seen(bed: Bed, reason: str, log: str, since: float = 0.0) -> dict:
    """/healthz once it says `reason` (the poll's next look), and the first such log line."""
    await bed.until(lambda: any(reason in r for r in bed.health()["reasons"]),
                    f"health saying {reason!r}", 60)
    return {**bed.health(), "log": bed.tap.first(since, log)}


def _ok(row: dict) -> bool:
    """A fault of ours costs nothing: not judged and nothing recorded, or judged anyway."""
    if "ok" in row:
        return row["ok"]
    said = row["learner_sees"]
    return not row["recorded"] if said.startswith(NOT_JUDGED) else said == "judged: correct"


async def _measure(fast: bool, names: list[str]) -> dict:
    bed = Bed(fast)
    if fast:
        observability.FLEET_POLL_S = 0.5
    rows = []
    try:
        await bed.open()
        for name in names:
            row = {"fault": name, **await FAULTS[name](bed)}
            row["ok"] = _ok(row)
            rows.append(row)
    finally:
        bed.close()
    timing = bed.timing
    return {"benchmark": "faults", "timing": {
        "wall_s": bed.limits.wall_s, "heartbeat_s": timing.heartbeat_s,
        "host_gone_after_s": 3 * timing.heartbeat_s, "takeover_after_s": timing.claim_idle_s,
        "patience_s": timing.patience_s}, "faults": rows, "ok": all(r["ok"] for r in rows)}


def bench_faults(args) -> dict:
    names = args.only.split(",") if getattr(args, "only", None) else list(FAULTS)
    unknown = [n for n in names if n not in FAULTS]
    if unknown:
        raise SystemExit(f"unknown fault(s) {', '.join(unknown)}; known: {', '.join(FAULTS)}")
    return asyncio.run(_measure(getattr(args, "fast", False), names))
