"""When a learner's daily reminder is due (scheduler/reminders.py): their timezone across
DST and the date line, their hour, quiet hours, and backing off when reminders go ignored."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from scheduler.reminders import every_days, next_reminder, reminder_hour, reschedule
from scheduler.storage.models import Learner

UTC0 = datetime(2026, 3, 1, tzinfo=UTC)


def learner(**values) -> Learner:
    base = dict(external_id="discord:1", created_at=UTC0, timezone="UTC", reminder_hour=18)
    return Learner(**{**base, **values})


def local(dt: datetime, zone: str) -> datetime:
    return dt.astimezone(ZoneInfo(zone))


@pytest.mark.parametrize("zone", ["America/New_York", "Europe/Berlin"])
def test_one_reminder_per_local_day_across_both_dst_changes(zone):
    person = learner(timezone=zone, reminder_hour=2)  # 02:00 falls in the spring gap
    slot, days = datetime(2026, 3, 1, tzinfo=UTC), []
    for _ in range(280):  # March to December: both transitions
        slot = next_reminder(person, slot)
        days.append(local(slot, zone).date())
    assert days == [days[0] + timedelta(days=i) for i in range(280)]  # no skip, no double
    spring = {"America/New_York": date(2026, 3, 8), "Europe/Berlin": date(2026, 3, 29)}[zone]
    on_spring = next_reminder(person, datetime.combine(spring, datetime.min.time(), UTC)
                              - timedelta(hours=12))
    assert local(on_spring, zone).hour == 3  # 02:00 does not exist: the moment clocks jump


def test_fall_back_day_reminds_at_the_first_of_the_two_hours():
    person = learner(timezone="America/New_York", reminder_hour=1)
    before = datetime(2026, 11, 1, 0, 0, tzinfo=UTC)  # Oct 31, 20:00 in New York
    first = next_reminder(person, before)
    second = next_reminder(person, first)
    assert local(first, "America/New_York").fold == 0 and first.hour == 5  # 01:00 EDT
    assert local(second, "America/New_York").date() == date(2026, 11, 2)


def test_a_learner_crossing_the_date_line_is_neither_skipped_nor_doubled():
    auckland = learner(timezone="Pacific/Auckland", reminder_hour=9)
    sent = next_reminder(auckland, datetime(2026, 6, 1, tzinfo=UTC))  # Jun 1, 09:00 NZST
    moved = auckland.model_copy(update={"timezone": "Pacific/Honolulu"})
    following = next_reminder(moved, sent)
    assert following - sent >= timedelta(hours=12)  # not again the same morning
    assert local(following, "Pacific/Honolulu").hour == 9
    assert following - sent <= timedelta(hours=48)  # and not a day lost either


def test_quiet_hours_move_the_reminder_to_their_end():
    assert reminder_hour(learner(reminder_hour=23, quiet_start=22, quiet_end=7)) == 7
    assert reminder_hour(learner(reminder_hour=3, quiet_start=22, quiet_end=7)) == 7
    assert reminder_hour(learner(reminder_hour=12, quiet_start=22, quiet_end=7)) == 12
    assert reminder_hour(learner(reminder_hour=13, quiet_start=12, quiet_end=14)) == 14


def test_ignored_reminders_come_less_often():
    assert [every_days(n) for n in range(7)] == [1, 1, 1, 2, 4, 7, 7]
    slot = next_reminder(learner(reminders_ignored=4), UTC0)
    assert slot - UTC0 == timedelta(days=3, hours=18)


def test_moving_the_hour_after_todays_reminder_waits_for_tomorrow():
    sent = datetime(2026, 3, 2, 18, tzinfo=UTC)
    person = learner(reminders_enabled=True, reminder_hour=20, last_reminder_at=sent)
    assert reschedule(person, sent + timedelta(minutes=30)) == datetime(2026, 3, 3, 20,
                                                                        tzinfo=UTC)
    fresh = learner(reminders_enabled=True, reminder_hour=20)
    assert reschedule(fresh, sent) == datetime(2026, 3, 2, 20, tzinfo=UTC)
    assert reschedule(learner(reminders_enabled=False), sent) is None
    # Moving east across the date line after today's reminder: still one a day.
    tokyo = learner(reminders_enabled=True, timezone="Asia/Tokyo", reminder_hour=9,
                    last_reminder_at=sent)  # 03:00 on Mar 3 in Tokyo
    assert local(reschedule(tokyo, sent + timedelta(hours=1)), "Asia/Tokyo").date() == date(
        2026, 3, 4)
