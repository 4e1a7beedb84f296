"""FSRS beside SM-2, remediation, misconceptions

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-03

Existing cards get their FSRS state by replaying their review log: the derivation of
scheduler/replay.py as it stood when this migration was written, frozen below (issue 38.6)
so that a later change to the rules cannot silently change what this migration does. It
imports nothing of scheduler's rules; tests/engine/test_schedulers.py holds that, and holds the
frozen copy to scheduler.replay while the two still agree.

It does use the `fsrs` package (py-fsrs), pinned in pyproject.toml (fsrs==6.3.2), through the
same Scheduler methods scheduler/fsrs_review.py calls: a version that renames or changes them
changes (or breaks) this backfill too. It is imported only when there are cards to derive.
"""

from datetime import date, timedelta
from itertools import groupby

import sqlalchemy as sa
import sqlmodel
from alembic import op

revision = '0007'
down_revision = '0006'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('learner', schema=None) as batch_op:
        batch_op.add_column(sa.Column('scheduler', sqlmodel.sql.sqltypes.AutoString(length=8),
                                      nullable=True))
    with op.batch_alter_table('guild_settings', schema=None) as batch_op:
        batch_op.add_column(sa.Column('scheduler', sqlmodel.sql.sqltypes.AutoString(length=8),
                                      nullable=True))
        batch_op.add_column(sa.Column('remediation', sa.Boolean(), nullable=True))
    with op.batch_alter_table('card_state', schema=None) as batch_op:
        batch_op.add_column(sa.Column('fsrs_stability', sa.Float(), nullable=True))
        batch_op.add_column(sa.Column('fsrs_difficulty', sa.Float(), nullable=True))
        batch_op.add_column(sa.Column('fsrs_due_day', sa.Date(), nullable=True))
        batch_op.add_column(sa.Column('remedy_day', sa.Date(), nullable=True))
    with op.batch_alter_table('review_log', schema=None) as batch_op:
        batch_op.add_column(sa.Column('scheduler', sqlmodel.sql.sqltypes.AutoString(length=8),
                                      server_default='sm2', nullable=False))
        batch_op.add_column(sa.Column('restart', sa.Boolean(), server_default=sa.false(),
                                      nullable=False))
    op.create_table('misconception',
    sa.Column('learner_id', sa.Integer(), nullable=False),
    sa.Column('deck_id', sqlmodel.sql.sqltypes.AutoString(length=40), nullable=False),
    sa.Column('mistake_id', sqlmodel.sql.sqltypes.AutoString(length=40), nullable=False),
    sa.Column('open', sa.Boolean(), nullable=False),
    sa.Column('times_shown', sa.Integer(), nullable=False),
    sa.Column('first_shown_at', sa.DateTime(), nullable=False),
    sa.Column('last_shown_at', sa.DateTime(), nullable=False),
    sa.Column('last_corrected_at', sa.DateTime(), nullable=True),
    sa.ForeignKeyConstraint(['learner_id'], ['learner.id'], ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('learner_id', 'deck_id', 'mistake_id')
    )
    _backfill_fsrs(op.get_bind())


def downgrade() -> None:
    op.drop_table('misconception')
    with op.batch_alter_table('review_log', schema=None) as batch_op:
        batch_op.drop_column('restart')
        batch_op.drop_column('scheduler')
    with op.batch_alter_table('card_state', schema=None) as batch_op:
        batch_op.drop_column('remedy_day')
        batch_op.drop_column('fsrs_due_day')
        batch_op.drop_column('fsrs_difficulty')
        batch_op.drop_column('fsrs_stability')
    with op.batch_alter_table('guild_settings', schema=None) as batch_op:
        batch_op.drop_column('remediation')
        batch_op.drop_column('scheduler')
    with op.batch_alter_table('learner', schema=None) as batch_op:
        batch_op.drop_column('scheduler')


# ---- The FSRS backfill, frozen: scheduler/replay.py, scheduler/fsrs_review.py and
# scheduler/studyday.py's due_day as of this revision, cut to what the backfill reads (the
# SM-2 side of the replay is not written here). Do not edit to follow the rules.

_SCHEDULING = ("new", "review")
_DESIRED_RETENTION = 0.9


def _fsrs_scheduler():
    from fsrs import Scheduler
    return Scheduler(desired_retention=_DESIRED_RETENTION, learning_steps=(),
                     relearning_steps=(), enable_fuzzing=False)


def _rating_for(quality: int):
    from fsrs import Rating
    if isinstance(quality, bool) or not isinstance(quality, int) or not 0 <= quality <= 5:
        raise ValueError(f"quality must be an int 0..5, got {quality!r}")
    if quality < 3:
        return Rating.Again
    return Rating.Hard if quality == 3 else Rating.Good


def _review_fsrs(scheduler, state, quality: int, day: date):
    """(stability, difficulty, last day) after one graded review on ``day`` (``state`` None:
    the card's first), and the interval in days."""
    rating = _rating_for(quality)
    if state is None:
        stability = scheduler._initial_stability(rating=rating)
        difficulty = scheduler._initial_difficulty(rating=rating, clamp=True)
    else:
        old_stability, old_difficulty, last_day = state
        if day < last_day:
            day = last_day
        elapsed = (day - last_day).days
        if elapsed < 1:
            stability = scheduler._short_term_stability(stability=old_stability, rating=rating)
        else:
            recall = (1 + scheduler._FACTOR * elapsed / old_stability) ** scheduler._DECAY
            stability = scheduler._next_stability(
                difficulty=old_difficulty, stability=old_stability,
                retrievability=recall, rating=rating)
        difficulty = scheduler._next_difficulty(difficulty=old_difficulty, rating=rating)
    return (stability, difficulty, day), scheduler._next_interval(stability=stability)


def _due_day(review_day: date, interval: int) -> date:
    if isinstance(interval, bool) or not isinstance(interval, int) or interval < 0:
        raise ValueError(f"interval must be an int >= 0, got {interval!r}")
    return review_day + timedelta(days=interval)


def _replay_fsrs(scheduler, reviews):
    """The FSRS state and due day a card's (kind, quality, study day, restart) reviews, in
    the order they were recorded, leave behind; (None, None) for none."""
    fsrs, fsrs_due = None, None
    for kind, quality, day, restart in reviews:
        if kind not in _SCHEDULING:
            continue
        if restart:
            fsrs = None
        fsrs, interval = _review_fsrs(scheduler, fsrs, quality, day)
        fsrs_due = _due_day(day, interval)
    return fsrs, fsrs_due


def _as_date(value) -> date:
    # A bare sa.table() carries no column types: SQLite hands back text.
    return value if isinstance(value, date) else date.fromisoformat(value)


def _backfill_fsrs(conn: sa.Connection) -> int:
    """Give every card state without an FSRS state the one its log replays to; how many."""
    state_t = sa.table("card_state", *(sa.column(n) for n in (
        "learner_id", "card_id", "fsrs_stability", "fsrs_difficulty", "fsrs_due_day")))
    missing = {(r.learner_id, r.card_id) for r in conn.execute(
        sa.select(state_t.c.learner_id, state_t.c.card_id)
        .where(state_t.c.fsrs_due_day.is_(None)))}
    if not missing:
        return 0
    log_t = sa.table("review_log", *(sa.column(n) for n in (
        "id", "learner_id", "card_id", "kind", "quality", "study_day", "restart")))
    c = log_t.c
    log = conn.execute(
        sa.select(c.learner_id, c.card_id, c.kind, c.quality, c.study_day, c.restart)
        .where(c.kind.in_(_SCHEDULING)).order_by(c.learner_id, c.card_id, c.id))
    scheduler = _fsrs_scheduler()
    rows = []
    for key, group in groupby(log, key=lambda r: (r.learner_id, r.card_id)):
        fsrs, fsrs_due = _replay_fsrs(scheduler, (
            (r.kind, r.quality, _as_date(r.study_day), bool(r.restart)) for r in group))
        if key in missing and fsrs is not None:
            rows.append({"k_learner": key[0], "k_card": key[1], "fsrs_stability": fsrs[0],
                         "fsrs_difficulty": fsrs[1], "fsrs_due_day": fsrs_due})
    if rows:
        conn.execute(state_t.update().where(
            state_t.c.learner_id == sa.bindparam("k_learner"),
            state_t.c.card_id == sa.bindparam("k_card")), rows)
    return len(rows)
