"""The reminder sweep (bot/engine/reminders.py), with an injected clock and a fake Discord:
once a day, never lost across a crash or a restart, closed DMs, two bot processes. When a
reminder is due is tests/scheduler/test_reminder_times.py."""

from __future__ import annotations

import json
import time
from datetime import UTC, date, datetime, timedelta

import pytest
import sqlalchemy as sa

from bot.discord_ui.reminders import reminder_text
from bot.engine.reminders import LEASE, DMClosed, RateLimiter, Reminder, ReminderSweep
from scheduler.reminders import next_reminder
from scheduler.storage.models import CardState, Learner
from tests.helpers.records import record

pytestmark = pytest.mark.postgres

UTC0 = datetime(2026, 3, 1, tzinfo=UTC)


# -- the sweep -------------------------------------------------------------------------------

class FakeDiscord:
    """DMs with nonce deduplication, closed DMs on demand, and a per-second limit it
    checks against the (virtual) time of each send."""

    def __init__(self, clock=None, per_second: float | None = None):
        self.dms: list[Reminder] = []
        self.channel_posts: list[tuple[int, Reminder]] = []
        self.nonces: set[str] = set()
        self.closed: set[str] = set()
        self.broken: set[str] = set()
        self.clock, self.per_second, self.times = clock, per_second, []

    async def send_dm(self, reminder: Reminder) -> None:
        if reminder.external_id in self.broken:
            raise RuntimeError("Discord 500")
        if reminder.external_id in self.closed:
            raise DMClosed()
        if self.clock:
            self.times.append(self.clock())
        if reminder.nonce not in self.nonces:
            self.nonces.add(reminder.nonce)
            self.dms.append(reminder)

    async def send_channel(self, channel_id: int, reminder: Reminder) -> None:
        self.channel_posts.append((channel_id, reminder))


class Virtual:
    """Monotonic time that moves only when the rate limiter sleeps."""

    def __init__(self):
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.now += seconds


def opt_in(store, external_id: str, now: datetime, *, due_cards: int = 1, **settings):
    person = store.learners.get_or_create(external_id, display_name=external_id, now=now)
    values = {"reminders_enabled": True, "reminder_hour": 18, **settings}
    store.learners.update(person.id, **values)
    person = store.learners.get(person.id)
    store.learners.update(person.id, next_reminder_at=next_reminder(person, now))
    for i in range(due_cards):
        store.record(record(person.id, f"{external_id}-{i}", card_id=f"d/c{i}",
                            due_day=date(2026, 1, 1)))
    return store.learners.get(person.id)


def sweep(store, sender, clock, per_second=1000.0):
    virtual = Virtual()
    limiter = RateLimiter(per_second, clock=virtual, sleep=virtual.sleep)
    return ReminderSweep(store, sender, clock=clock, limiter=limiter)


async def test_a_due_reminder_is_sent_once_then_again_the_next_day(store, clock):
    clock.now = datetime(2026, 3, 2, 12, tzinfo=UTC)
    person = opt_in(store, "discord:7", clock.now, due_cards=3)
    discord = FakeDiscord()
    assert (await sweep(store, discord, clock).run()).sent == 0  # not 18:00 yet
    clock.now = person.next_reminder_at + timedelta(seconds=30)
    report = await sweep(store, discord, clock).run()
    assert report.sent == 1 and discord.dms[0].due == 3
    assert "3 cards are due" in reminder_text(discord.dms[0])
    assert (await sweep(store, discord, clock).run()).sent == 0  # a minute later: nothing
    clock.now += timedelta(days=1)
    assert (await sweep(store, discord, clock).run()).sent == 1
    assert len(discord.dms) == 2 and discord.dms[0].nonce != discord.dms[1].nonce


async def test_nothing_due_sends_nothing(store, clock):
    clock.now = datetime(2026, 3, 2, 12, tzinfo=UTC)
    person = opt_in(store, "discord:8", clock.now, due_cards=0)
    clock.now = person.next_reminder_at
    report = await sweep(store, FakeDiscord(), clock).run()
    assert (report.sent, report.nothing_due) == (0, 1)
    assert store.learners.get(person.id).next_reminder_at > clock.now


@pytest.mark.parametrize("down, sent", [(timedelta(minutes=50), 1),
                                        (timedelta(hours=25), 1),
                                        (timedelta(hours=3), 0)])
async def test_after_an_outage_a_late_reminder_is_sent_once_or_waits(store, clock, down, sent):
    clock.now = datetime(2026, 3, 2, 12, tzinfo=UTC)
    person = opt_in(store, "discord:9", clock.now)
    clock.now = person.next_reminder_at + down
    discord = FakeDiscord()
    report = await sweep(store, discord, clock).run()
    assert report.sent == sent and len(discord.dms) == sent
    again = await sweep(store, discord, clock).run()
    assert again.sent == 0
    following = store.learners.get(person.id).next_reminder_at
    assert clock.now < following <= clock.now + timedelta(days=1)


async def test_a_crash_between_send_and_commit_resends_the_same_nonce(store, clock):
    clock.now = datetime(2026, 3, 2, 18, 0, 30, tzinfo=UTC)
    person = opt_in(store, "discord:10", clock.now - timedelta(hours=1))
    discord = FakeDiscord()

    class Crash(BaseException):
        pass

    def crash(*args, **kwargs):
        raise Crash  # the process dies after the DM left, before the advance

    original = store.reminders.advance
    store.reminders.advance = crash
    with pytest.raises(Crash):
        await sweep(store, discord, clock).run()
    store.reminders.advance = original
    assert len(discord.dms) == 1
    assert (await sweep(store, discord, clock).run()).sent == 0  # claimed, lease running
    clock.now += LEASE + timedelta(seconds=1)
    report = await sweep(store, discord, clock).run()
    assert report.sent == 1 and len(discord.dms) == 1  # resent, dropped by its nonce
    assert store.learners.get(person.id).next_reminder_at > clock.now


async def test_ten_thousand_due_in_one_minute_all_go_in_order_within_the_limit(store, clock):
    clock.now = datetime(2026, 3, 2, 12, tzinfo=UTC)
    slot = datetime(2026, 3, 2, 18, tzinfo=UTC)
    people = [Learner(external_id=f"discord:{i}", created_at=UTC0, reminders_enabled=True,
                      next_reminder_at=slot).model_dump(exclude={"id"})
              for i in range(1, 10_001)]
    with store.engine.begin() as conn:
        conn.execute(Learner.__table__.insert(), people)
        ids = conn.execute(sa.select(Learner.__table__.c.id)).scalars().all()
        conn.execute(CardState.__table__.insert(), [
            {"learner_id": i, "card_id": "d/c", "deck_id": "d", "card_rev": 1, "ef100": 250,
             "repetitions": 1, "interval": 1, "due_day": date(2026, 3, 1), "lapses": 0,
             "review_count": 1, "drill_pending": False} for i in ids])
    virtual = Virtual()
    discord = FakeDiscord(clock=virtual)
    clock.now = slot + timedelta(seconds=20)
    limiter = RateLimiter(50.0, clock=virtual, sleep=virtual.sleep)
    report = await ReminderSweep(store, discord, clock=clock, limiter=limiter).run()
    assert report.sent == 10_000 and len(discord.dms) == 10_000
    assert [r.learner_id for r in discord.dms] == sorted(r.learner_id for r in discord.dms)
    for i in range(len(discord.times) - 50):  # never 51 sends inside one second
        assert discord.times[i + 50] - discord.times[i] >= 1.0 - 1e-9


async def test_closed_dms_fall_back_to_the_server_channel_or_mark_unreachable(store, clock):
    clock.now = datetime(2026, 3, 2, 12, tzinfo=UTC)
    with_channel = opt_in(store, "discord:11", clock.now)
    without = opt_in(store, "discord:12", clock.now)
    store.servers.note_visit(500, with_channel.id, clock.now)
    store.servers.update_settings(500, reminder_channel_id=777)
    discord = FakeDiscord()
    discord.closed = {"discord:11", "discord:12"}
    clock.now = with_channel.next_reminder_at + timedelta(minutes=1)
    report = await sweep(store, discord, clock).run()
    assert (report.via_channel, report.unreachable) == (1, 1)
    assert discord.channel_posts[0][0] == 777
    assert store.learners.get(without.id).unreachable
    clock.now += timedelta(days=1)
    later = await sweep(store, discord, clock).run()
    assert later.claimed == 1  # the unreachable learner is left alone...
    store.record(record(without.id, "back", card_id="d/back"))  # ...until they review again
    assert not store.learners.get(without.id).unreachable


async def test_one_failing_learner_does_not_block_the_others(store, clock):
    clock.now = datetime(2026, 3, 2, 12, tzinfo=UTC)
    people = [opt_in(store, f"discord:{20 + i}", clock.now) for i in range(3)]
    discord = FakeDiscord()
    discord.broken = {"discord:21"}
    clock.now = people[0].next_reminder_at
    report = await sweep(store, discord, clock).run()
    assert (report.sent, report.failed) == (2, 1)
    discord.broken = set()
    clock.now += LEASE + timedelta(seconds=1)
    assert (await sweep(store, discord, clock).run()).sent == 1  # retried, not lost


async def test_backing_off_says_how_to_get_daily_reminders_back(store, clock):
    clock.now = datetime(2026, 3, 2, 12, tzinfo=UTC)
    person = opt_in(store, "discord:30", clock.now)
    discord = FakeDiscord()
    for _ in range(3):
        clock.now = store.learners.get(person.id).next_reminder_at
        await sweep(store, discord, clock).run()
    assert "less often" in reminder_text(discord.dms[-1])
    assert store.learners.get(person.id).next_reminder_at - clock.now == timedelta(days=2)
    store.record(record(person.id, "reviewed", card_id="d/x"))
    assert store.learners.get(person.id).reminders_ignored == 0


SWEEP_PROCESS = """
import asyncio, json, os, signal, sys
from datetime import datetime
from pathlib import Path
from scheduler.storage.db import make_engine
from bot.engine.reminders import ReminderSweep
from scheduler.storage.store import Store

url, now, outbox, crash = sys.argv[1], datetime.fromisoformat(sys.argv[2]), Path(sys.argv[3]), \\
    sys.argv[4] == "crash"


class FileDiscord:
    # Discord as seen across processes: delivered messages, deduplicated by nonce.
    async def send_dm(self, reminder):
        sent = json.loads(outbox.read_text()) if outbox.exists() else []
        if reminder.nonce not in {m["nonce"] for m in sent}:
            sent.append({"nonce": reminder.nonce, "to": reminder.external_id})
            outbox.write_text(json.dumps(sent))
        if crash:
            os.kill(os.getpid(), signal.SIGKILL)  # sent, not yet committed

    async def send_channel(self, channel_id, reminder):
        raise AssertionError("no channel fallback here")


report = asyncio.run(ReminderSweep(Store(make_engine(url)), FileDiscord(),
                                   clock=lambda: now).run())
print(report.sent)
"""


def test_kill_9_between_send_and_commit_neither_duplicates_nor_loses(tmp_path, store, clock,
                                                                    db_url):
    import subprocess
    import sys

    from tests.helpers.paths import REPO

    clock.now = datetime(2026, 3, 2, 12, tzinfo=UTC)
    person = opt_in(store, "discord:99", clock.now)
    outbox = tmp_path / "discord.json"

    def sweep_process(now: datetime, mode: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-c", SWEEP_PROCESS, db_url, now.isoformat(),
                               str(outbox), mode], cwd=REPO, capture_output=True, text=True,
                              timeout=60)

    due = person.next_reminder_at + timedelta(seconds=10)
    crashed = sweep_process(due, "crash")
    assert crashed.returncode == -9
    assert len(json.loads(outbox.read_text())) == 1
    assert store.learners.get(person.id).next_reminder_at == person.next_reminder_at  # no commit
    restarted = sweep_process(due + LEASE + timedelta(seconds=30), "normal")
    assert restarted.returncode == 0 and restarted.stdout.strip() == "1"
    assert len(json.loads(outbox.read_text())) == 1  # the resend carried the same nonce
    assert store.learners.get(person.id).next_reminder_at > due + LEASE


TWO_SWEEPERS = """
import asyncio, json, sys, time
from datetime import datetime
from pathlib import Path
from scheduler.storage.db import make_engine
from bot.engine.reminders import RateLimiter, ReminderSweep
from scheduler.storage.store import Store

url, now, outbox = sys.argv[1], datetime.fromisoformat(sys.argv[2]), Path(sys.argv[3])
ready, go = Path(sys.argv[4]), Path(sys.argv[5])
sent = []


class SlowDiscord:
    async def send_dm(self, reminder):
        await asyncio.sleep(0.01)  # let the other process interleave
        sent.append(reminder.learner_id)

    async def send_channel(self, channel_id, reminder):
        raise AssertionError("unused")


store = Store(make_engine(url))
ready.touch()  # imported and connected: both sweeps start together, whatever the load
while not go.exists():
    time.sleep(0.005)
asyncio.run(ReminderSweep(store, SlowDiscord(), clock=lambda: now,
                          limiter=RateLimiter(10_000), batch=25).run())
outbox.write_text(json.dumps(sent))
"""


def test_two_bot_processes_send_each_due_reminder_exactly_once(tmp_path, store, clock,
                                                               db_url):
    import subprocess
    import sys

    from tests.helpers.paths import REPO

    clock.now = datetime(2026, 3, 2, 12, tzinfo=UTC)
    people = [opt_in(store, f"discord:{500 + i}", clock.now) for i in range(200)]
    due = max(p.next_reminder_at for p in people) + timedelta(seconds=5)
    outboxes = [tmp_path / f"sent{i}.json" for i in range(2)]
    ready, go = [tmp_path / f"ready{i}" for i in range(2)], tmp_path / "go"
    sweepers = [subprocess.Popen([sys.executable, "-c", TWO_SWEEPERS, db_url, due.isoformat(),
                                  str(outbox), str(mark), str(go)], cwd=REPO)
                for outbox, mark in zip(outboxes, ready, strict=True)]
    deadline = time.monotonic() + 120  # a bound for a hung start only
    while not all(mark.exists() for mark in ready):  # a slow start must not leave the
        assert time.monotonic() < deadline and all(p.poll() is None for p in sweepers)
        time.sleep(0.01)  # other process every reminder
    go.touch()
    assert [p.wait(timeout=120) for p in sweepers] == [0, 0]
    sent = [learner for outbox in outboxes for learner in json.loads(outbox.read_text())]
    assert sorted(sent) == sorted(p.id for p in people)  # all of them, none twice
    assert all(json.loads(outbox.read_text()) for outbox in outboxes)  # both took a share


async def test_reminders_count_what_is_due_under_the_learners_scheduler(store, clock):
    clock.now = datetime(2026, 3, 2, 12, tzinfo=UTC)
    later = date(2027, 1, 1)  # FSRS spaces these cards further out than SM-2 does
    people = []
    for name, scheduler in (("discord:20", None), ("discord:21", "fsrs"), ("discord:22", None)):
        person = opt_in(store, name, clock.now, due_cards=0, scheduler=scheduler)
        for i in range(2):
            store.record(record(person.id, f"{name}-{i}", card_id=f"d/c{i}",
                                due_day=date(2026, 1, 1), fsrs_due_day=later))
        people.append(person)
    # discord:22 follows the server they used last, which chose FSRS.
    store.servers.update_settings(77, scheduler="fsrs")
    store.servers.note_visit(77, people[2].id, clock.now)
    clock.now = people[0].next_reminder_at + timedelta(seconds=30)
    discord = FakeDiscord()
    report = await sweep(store, discord, clock).run()
    assert (report.sent, report.nothing_due) == (1, 2)
    assert [(dm.external_id, dm.due) for dm in discord.dms] == [("discord:20", 2)]
