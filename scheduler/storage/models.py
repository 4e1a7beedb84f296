"""The tables: learners, their per-card SM-2 state, the review log, guild membership.

Times are stored as UTC; review days are *study days* (dates in the learner's own
calendar, see scheduler.studyday), so a timezone change neither skips nor doubles a review.
Review logs keep ids (cards, options, mistakes), never text, so editing a deck never
orphans history.
"""

from __future__ import annotations

from datetime import UTC, date, datetime

import sqlalchemy as sa
from sqlalchemy.types import TypeDecorator
from sqlmodel import JSON, Column, Field, SQLModel


class UTCDateTime(TypeDecorator):
    """Aware datetimes in, aware UTC datetimes out, on every backend."""

    impl = sa.DateTime
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect):
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError("naive datetime: pass an aware (UTC) datetime")
        return value.astimezone(UTC).replace(tzinfo=None)

    def process_result_value(self, value: datetime | None, dialect):
        return None if value is None else value.replace(tzinfo=UTC)


def _utc_column(nullable: bool = False, index: bool = False) -> Column:
    return Column(UTCDateTime(), nullable=nullable, index=index)


class Learner(SQLModel, table=True):
    __tablename__ = "learner"

    id: int | None = Field(default=None, primary_key=True)
    # "discord:<user id>" or "local:<name>": one learner per person per front end.
    external_id: str = Field(max_length=100, unique=True)
    display_name: str = Field(default="", max_length=100)
    timezone: str = Field(default="UTC", max_length=64)
    rollover_hour: int = Field(default=4)
    new_per_day: int = Field(default=10)
    reminders_enabled: bool = Field(default=False)
    reminder_hour: int = Field(default=18)
    next_reminder_at: datetime | None = Field(default=None, sa_column=_utc_column(True, True))
    leaderboard_visible: bool = Field(default=True)
    created_at: datetime = Field(sa_column=_utc_column())
    # Reminders: sent only with at least `reminder_min_due` cards due, never inside the
    # local quiet hours [quiet_start, quiet_end), and less often after ignored ones.
    reminder_min_due: int = Field(default=1)
    quiet_start: int | None = None
    quiet_end: int | None = None
    reminders_ignored: int = Field(default=0)
    last_reminder_at: datetime | None = Field(default=None, sa_column=_utc_column(True))
    # A sweep claims a due reminder before sending; a claim older than its lease is void.
    reminder_claim: str | None = Field(default=None, max_length=32)
    reminder_claimed_at: datetime | None = Field(default=None, sa_column=_utc_column(True))
    # DMs closed and no server channel to fall back on: wait until they use the bot again.
    unreachable: bool = Field(default=False)
    # Streaks: a study day counts once `daily_minimum` reviews were done in it. Kept up to
    # date by each review (never recomputed from the log).
    daily_minimum: int = Field(default=1)
    day_reviews: int = Field(default=0)
    day_reviews_day: date | None = None
    streak: int = Field(default=0)
    longest_streak: int = Field(default=0)
    streak_day: date | None = None
    # A SchedulerName's string; None: the server's choice (scheduler/choice.py). Both schedulers'
    # states are kept for every card, so a switch changes only which due day counts.
    scheduler: str | None = Field(default=None, max_length=8)


class CardState(SQLModel, table=True):
    __tablename__ = "card_state"
    __table_args__ = (sa.Index("ix_card_state_due", "learner_id", "due_day"),)

    learner_id: int = Field(foreign_key="learner.id", primary_key=True, ondelete="CASCADE")
    card_id: str = Field(primary_key=True, max_length=80)
    deck_id: str = Field(max_length=40)
    card_rev: int
    ef100: int = Field(default=250)
    repetitions: int = Field(default=0)
    interval: int = Field(default=0)
    due_day: date
    lapses: int = Field(default=0)
    # Bumped on every graded review: an answer served against an older value is stale.
    review_count: int = Field(default=0)
    # Rule 7: scored below 4 today, so it is drilled again before the day ends.
    drill_pending: bool = Field(default=False)
    last_review_day: date | None = None
    last_reviewed_at: datetime | None = Field(default=None, sa_column=_utc_column(True))
    # FSRS beside SM-2 (scheduler/fsrs_review.py), moved by the same reviews; None until
    # the card's first review under a version that kept it (then replayed from the log).
    fsrs_stability: float | None = None
    fsrs_difficulty: float | None = None
    fsrs_due_day: date | None = None
    # Remediation (scheduler/remediation.py): a remedy is due on this study day.
    remedy_day: date | None = None


class ReviewLog(SQLModel, table=True):
    __tablename__ = "review_log"
    __table_args__ = (
        # Covers a server's leaderboard: the rows of a week, without table lookups.
        sa.Index("ix_review_log_guild_board", "guild_id", "reviewed_at", "learner_id", "kind",
                 "correct", "attempts", "hint_used"),
        # Covers a learner's totals, days and weeks, everywhere or in one server (their
        # progress page, /stats).
        sa.Index("ix_review_log_learner_time", "learner_id", "reviewed_at", "kind", "correct",
                 "attempts", "hint_used", "study_day", "guild_id"),
    )

    id: int | None = Field(default=None, primary_key=True)
    # One served card is recorded once, however often its answer arrives.
    answer_id: str = Field(max_length=64, unique=True)
    learner_id: int = Field(foreign_key="learner.id", ondelete="CASCADE")
    card_id: str = Field(max_length=80)
    deck_id: str = Field(max_length=40)
    card_rev: int
    guild_id: int | None = Field(default=None, sa_type=sa.BigInteger)
    kind: str = Field(max_length=10)  # new | review | drill | cram
    reviewed_at: datetime = Field(sa_column=_utc_column())
    study_day: date
    quality: int
    correct: bool
    attempts: int
    hint_used: bool
    latency_ms: int
    chosen: list = Field(default_factory=list, sa_column=Column(JSON, nullable=False))
    mistake_ids: list = Field(default_factory=list, sa_column=Column(JSON, nullable=False))
    # SM-2's E-Factor after the review; the interval and due day the learner was told, by
    # the scheduler they were on (`scheduler`).
    ef100_after: int
    interval_after: int
    due_day_after: date
    scheduler: str = Field(default="sm2", max_length=8,
                           sa_column_kwargs={"server_default": "sm2"})
    # The card's content changed, so its schedule started over with this review: replaying
    # the log (scheduler/replay.py) starts over here too.
    restart: bool = Field(default=False, sa_column_kwargs={"server_default": sa.false()})
    # The FSRS parameters in force for this review (`FSRSParameters.version`; 0: py-fsrs's
    # defaults, as for every review before per-server fits) and the card's FSRS state before
    # it (None: a first review, a restart, or a row from before migration 0010): replaying
    # the log with each review's own parameters gives every state exactly.
    fsrs_version: int = Field(default=0, sa_column_kwargs={"server_default": "0"})
    fsrs_stability_before: float | None = None
    fsrs_difficulty_before: float | None = None
    fsrs_last_day_before: date | None = None


class GuildMember(SQLModel, table=True):
    """Who used the bot in which server (no privileged members intent needed)."""

    __tablename__ = "guild_member"

    guild_id: int = Field(sa_type=sa.BigInteger, primary_key=True)
    learner_id: int = Field(foreign_key="learner.id", primary_key=True, ondelete="CASCADE")
    first_seen_at: datetime = Field(sa_column=_utc_column())
    last_seen_at: datetime = Field(sa_column=_utc_column())


class ServedCard(SQLModel, table=True):
    """A card shown in Discord and its attempts so far: a click after a restart, from
    another process, or twice at once, finds the same state here."""

    __tablename__ = "served_card"
    __table_args__ = (sa.Index("ix_served_card_learner", "learner_id", "served_at"),)

    serve_id: str = Field(primary_key=True, max_length=32)
    learner_id: int = Field(foreign_key="learner.id", ondelete="CASCADE")
    # Everything the engine's `Served` value holds, as JSON: the engine owns its shape.
    served: dict = Field(sa_column=Column(JSON, nullable=False))
    attempts: int = Field(default=0)  # attempts + free code retries: the CAS guard
    # Chips picked in select menus and not yet submitted, by blank id.
    draft: dict = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))
    finished: bool = Field(default=False)
    served_at: datetime = Field(sa_column=_utc_column())


class GuildSettings(SQLModel, table=True):
    """Per-server choices made by its admins."""

    __tablename__ = "guild_settings"

    guild_id: int = Field(sa_type=sa.BigInteger, primary_key=True)
    public_play: bool = Field(default=False)
    # The leaderboard's week starts at local midnight of `week_start` (0 = Monday).
    timezone: str = Field(default="UTC", max_length=64)
    week_start: int = Field(default=0)
    reminder_channel_id: int | None = Field(default=None, sa_type=sa.BigInteger)
    # A new season restarts the all-time board; the history itself is never deleted.
    season: int = Field(default=1)
    season_started_at: datetime | None = Field(default=None, sa_column=_utc_column(True))
    # False: the server plays the default decks (every bundled deck), as a new server does;
    # True: it plays the decks of its GuildDeck rows (its admins chose them).
    decks_chosen: bool = Field(default=False, sa_column_kwargs={"server_default": sa.false()})
    # The scheduler for learners who did not choose one, and whether wrong answers bring
    # cards on the same mistake forward; None: the product default (scheduler/choice.py).
    scheduler: str | None = Field(default=None, max_length=8)
    remediation: bool | None = None
    # FSRS's parameters for reviews here (`FSRSParameters.version`); None: the defaults.
    fsrs_version: int | None = None
    # A fit of this server's parameters is running since then (one process at a time; a
    # claim older than its lease is void).
    fit_started_at: datetime | None = Field(default=None, sa_column=_utc_column(True))
    # Its leaderboards on a public web page (`tutor web`), where its admins chose so.
    board_public: bool = Field(default=False, sa_column_kwargs={"server_default": sa.false()})


class GuildDeck(SQLModel, table=True):
    """A deck a server plays, one row each (read only while `decks_chosen`): every change
    is a row's insert or delete under the server's settings row lock, so concurrent
    uploads, enables and disables all count."""

    __tablename__ = "guild_deck"

    guild_id: int = Field(sa_type=sa.BigInteger, primary_key=True)
    deck_id: str = Field(primary_key=True, max_length=40, index=True)


class Misconception(SQLModel, table=True):
    """A mistake a learner's answer showed: open until they pass its lure on a first try."""

    __tablename__ = "misconception"

    learner_id: int = Field(foreign_key="learner.id", primary_key=True, ondelete="CASCADE")
    deck_id: str = Field(primary_key=True, max_length=40)
    mistake_id: str = Field(primary_key=True, max_length=40)
    open: bool = Field(default=True)
    times_shown: int = Field(default=1)
    first_shown_at: datetime = Field(sa_column=_utc_column())
    last_shown_at: datetime = Field(sa_column=_utc_column())
    last_corrected_at: datetime | None = Field(default=None, sa_column=_utc_column(True))


class CommunityDeck(SQLModel, table=True):
    """A deck a server uploaded (issue 15): its current version. Rows are never deleted;
    `removed` stops serving and keeps the id owned. `changes` grows with every write, so
    the sum over all rows tells another process its library is out of date."""

    __tablename__ = "community_deck"

    deck_id: str = Field(primary_key=True, max_length=40)
    owner_guild_id: int = Field(sa_type=sa.BigInteger, index=True)
    public: bool = Field(default=False)
    version: int = Field(default=1)
    title: str = Field(max_length=256)
    cards: int = Field(default=0)
    removed: bool = Field(default=False)
    changes: int = Field(default=1)
    created_at: datetime = Field(sa_column=_utc_column())
    updated_at: datetime = Field(sa_column=_utc_column())


class CommunityDeckVersion(SQLModel, table=True):
    """Every version ever uploaded, as sent (history is never rewritten)."""

    __tablename__ = "community_deck_version"

    deck_id: str = Field(foreign_key="community_deck.deck_id", primary_key=True,
                         max_length=40)
    version: int = Field(primary_key=True)
    yaml: str = Field(sa_column=Column(sa.Text, nullable=False))
    uploaded_by: str = Field(max_length=100)
    uploaded_at: datetime = Field(sa_column=_utc_column())


class FSRSParameters(SQLModel, table=True):
    """A fit of a server's FSRS parameters (scheduler/server_fit.py), kept whether or not it
    passed, never changed but for when it was applied and reverted: its `version` is what
    review rows and the server's settings name, so a version's parameters never change."""

    __tablename__ = "fsrs_parameters"

    version: int | None = Field(default=None, primary_key=True)
    guild_id: int = Field(sa_type=sa.BigInteger, index=True)
    parameters: list = Field(sa_column=Column(JSON, nullable=False))
    reviews: int  # the server's scheduling reviews when it was fitted
    passed: bool  # beat the parameters in force and the defaults on held-out reviews
    # The held-out comparison and what it changes (ServerFit.as_dict, intervals, workload).
    report: dict = Field(sa_column=Column(JSON, nullable=False))
    fitted_by: str = Field(max_length=100)  # "job", "command", "discord:<user id>"
    created_at: datetime = Field(sa_column=_utc_column())
    applied_at: datetime | None = Field(default=None, sa_column=_utc_column(True))
    # What was in force when it was applied (None: the defaults): a revert goes back to it.
    previous_version: int | None = None
    reverted_at: datetime | None = Field(default=None, sa_column=_utc_column(True))


class InsightDay(SQLModel, table=True):
    """A server's closed UTC day of graded reviews, counted per card (`reviews`, `missed`:
    not right on the first try) and per mistake (`missed`: times made), so its insights
    read a month of counts instead of a month of the log (scheduler/storage/insights.py)."""

    __tablename__ = "insight_day"

    guild_id: int = Field(sa_type=sa.BigInteger, primary_key=True)
    day: date = Field(primary_key=True)
    kind: str = Field(max_length=7, primary_key=True)  # card | mistake
    deck_id: str = Field(max_length=40, primary_key=True)
    item_id: str = Field(max_length=80, primary_key=True)  # the card's or the mistake's id
    reviews: int
    missed: int


class InsightDayCounted(SQLModel, table=True):
    """The days of a server counted into `insight_day` (a day without reviews has no rows
    there); dropped with them when a learner who played there is forgotten."""

    __tablename__ = "insight_day_counted"

    guild_id: int = Field(sa_type=sa.BigInteger, primary_key=True)
    day: date = Field(primary_key=True)
