"""A big server's history in one statement per table, on SQLite or PostgreSQL: learners
(`discord:1` .. `discord:N`), review logs spread over the year before `now` on the cards of
`cards`, their guild membership and card states. Used by the leaderboard and web benches."""

from __future__ import annotations

import json
from datetime import datetime

import sqlalchemy as sa

YEAR_S = 365 * 86_400

# What differs between the dialects: a sequence i = 1..:count, a time :now minus `s`
# seconds, its date, a JSON text.
_DIALECT = {
    "sqlite": {
        "seq": "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < :count)",
        "ago": "strftime('%Y-%m-%d %H:%M:%f', :now, '-' || ({}) || ' seconds')",
        "day": "date({})",
        "json": "{}",
    },
    "postgresql": {
        "seq": "WITH n(i) AS (SELECT generate_series(CAST(1 AS bigint), :count))",
        "ago": "CAST(:now AS timestamp) - ({}) * interval '1 second'",
        "day": "CAST({} AS date)",
        "json": "CAST({} AS json)",
    },
}


def fill(engine: sa.Engine, guild_id: int, now: datetime, *, learners: int, logs: int,
         cards: list[tuple[str, str, int, str]], heavy_every: int = 0) -> None:
    """`cards`: (deck id, card id, rev, a mistake of its deck) the logs cycle through; a
    wrong answer records that mistake. `heavy_every`: every so many logs are learner 1's
    (a learner with many reviews), 0: none more than the others."""
    d = _DIALECT[engine.dialect.name]
    at = d["ago"].format("(i * 104729) % :year")
    empty = d["json"].format("'[]'")
    mistakes = d["json"].format("CASE WHEN i % 4 = 0 THEN c.mistakes ELSE '[]' END")
    learner = "1 + (i * 7919) % :learners"
    if heavy_every:
        learner = f"CASE WHEN i % {heavy_every} = 0 THEN 1 ELSE {learner} END"
    with engine.begin() as conn:
        conn.exec_driver_sql(
            "CREATE TEMP TABLE bench_card (k INTEGER PRIMARY KEY, deck_id VARCHAR(40),"
            " card_id VARCHAR(80), card_rev INTEGER, mistakes VARCHAR(60))")
        conn.execute(sa.text("INSERT INTO bench_card VALUES (:k, :deck, :card, :rev, :m)"),
                     [{"k": k, "deck": deck, "card": card, "rev": rev, "m": json.dumps([mistake])}
                      for k, (deck, card, rev, mistake) in enumerate(cards)])
        conn.execute(sa.text(
            d["seq"] + " INSERT INTO learner (external_id, display_name, timezone, rollover_hour,"
            " new_per_day, reminders_enabled, reminder_hour, leaderboard_visible, created_at,"
            " reminder_min_due, reminders_ignored, unreachable, daily_minimum, day_reviews,"
            " streak, longest_streak)"
            " SELECT 'discord:' || i, 'learner' || i, 'UTC', 4, 10, i % 3 = 0, 18, i % 50 <> 0,"
            " :created, 1, 0, 1 = 0, 1, 0, i % 30, i % 60 FROM n"),
            {"count": learners, "created": datetime(2025, 1, 1)})
        conn.execute(sa.text(
            d["seq"] + " INSERT INTO review_log (answer_id, learner_id, card_id, deck_id,"
            " card_rev, guild_id, kind, reviewed_at, study_day, quality, correct, attempts,"
            " hint_used, latency_ms, chosen, mistake_ids, ef100_after, interval_after,"
            " due_day_after, scheduler, restart, fsrs_version)"
            f" SELECT 'a' || i, {learner}, c.card_id,"
            " c.deck_id, c.card_rev, :guild,"
            " CASE WHEN i % 5 = 0 THEN 'new' WHEN i % 7 = 0 THEN 'drill' ELSE 'review' END,"
            f" at, {d['day'].format('at')}, CASE WHEN i % 4 = 0 THEN 2 ELSE 5 END, i % 4 <> 0,"
            " 1 + CASE WHEN i % 3 = 0 THEN 1 ELSE 0 END, i % 9 = 0, 4000,"
            f" {empty}, {mistakes},"
            f" 250, 1, {d['day'].format('at')}, 'sm2', 1 = 0, 0"
            f" FROM (SELECT i, {at} AS at FROM n) AS s"
            " JOIN bench_card AS c ON c.k = i % :cards"),
            {"count": logs, "learners": learners, "guild": guild_id, "cards": len(cards),
             "now": now.strftime("%Y-%m-%d %H:%M:%S"), "year": YEAR_S})
        conn.execute(sa.text(
            "INSERT INTO guild_member (guild_id, learner_id, first_seen_at, last_seen_at)"
            " SELECT :guild, id, created_at, created_at FROM learner"), {"guild": guild_id})
        conn.execute(sa.text(
            "INSERT INTO card_state (learner_id, card_id, deck_id, card_rev, ef100,"
            " repetitions, interval, due_day, lapses, review_count, drill_pending,"
            " last_review_day, last_reviewed_at)"
            " SELECT learner_id, card_id, min(deck_id), max(card_rev), 250, count(*), 1,"
            " max(study_day), 0, count(*), 1 = 0, max(study_day), max(reviewed_at)"
            " FROM review_log GROUP BY learner_id, card_id"))
        conn.exec_driver_sql("DROP TABLE bench_card")
