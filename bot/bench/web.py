"""Every page of the web companion for a big server (issue 42: p95 under 100 ms for a
server of 10,000 learners and 1,000,000 reviews), on SQLite and, with TEST_POSTGRES_URL set
(a server's admin URL), on a fresh PostgreSQL database too, dropped afterwards.

The pages are the app's own GET routes whose paths name only {guild} and/or {deck}, found
in its router (a new page is measured without an edit here), each fetched by a visitor who
is a member and a manager of the server, as learner `discord:1`, the one with the most
reviews; the leaderboard also for its two periods and, public, by an anonymous visitor."""

from __future__ import annotations

import asyncio
import functools
import os
import re
import statistics
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import aiohttp
import sqlalchemy as sa
import yaml
from aiohttp.test_utils import TestClient, TestServer

from bot.app import build
from bot.bench.big_server import fill
from bot.web import boards
from bot.web.app import make_app
from bot.web.oauth import OAuthApp
from bot.web.sessions import COOKIE, Sessions
from bot.web.site import Site
from scheduler.storage.db import sqlite_url, throwaway_database

GUILD = 1234567890123456789
LEARNERS = 10_000
LOGS = 1_000_000
HEAVY_EVERY = 100  # every 100th review is learner 1's: 10,000 of them over the year
NOW = datetime(2026, 12, 2, 18, tzinfo=UTC)
TARGET_P95_MS = 100.0
VISITOR = 1  # the learner discord:1
SKIPPED = ("/static", "/healthz", "/login", "/oauth/callback")
PLACEHOLDER = re.compile(r"\{(\w+)(?::[^}]*)?\}")


def _deck(n: int) -> dict:
    """A small community deck the server uploaded (no exercises: no sandbox needed)."""
    deck_id = f"bench-deck-{n}"
    return {
        "id": deck_id, "title": f"Bench deck {n}", "description": "Devices and shapes.",
        "version": 1,
        "mistakes": [{"id": "in_place", "title": "Thinking to() works in place",
                      "explanation": "to() returns a new tensor."}],
        "cards": [{"id": f"{deck_id}/move-{k}", "type": "multiple_choice", "rev": 1,
                   "difficulty": "easy", "topics": ["devices"],
                   "prompt": f'What does x.to("cuda") return? ({k})',
                   "options": [
                       {"id": "copy", "text": "A new GPU tensor", "correct": True},
                       {"id": "none", "text": "Nothing at all", "mistake": "in_place",
                        "says": "It returns a tensor."},
                       {"id": "same", "text": "The very same x object, moved",
                        "mistake": "in_place", "says": "x is left as it was."}],
                   "hint": "Does the call change x itself?",
                   "solution": [{"title": "Read the docs", "detail": "to() returns a tensor."},
                                {"title": "Answer", "detail": "x stays where it was."}],
                   "takeaway": "Keep the result of to()."} for k in range(3)]}


def _cards(library) -> list[tuple[str, str, int, str]]:
    out = []
    for deck in library.decks.values():
        mistakes = [m if isinstance(m, str) else m.id for m in deck.mistakes]
        out += [(deck.id, card.id, card.rev, mistakes[k % len(mistakes)])
                for k, card in enumerate(deck.cards)]
    return out


def _populate(app, learners: int, logs: int) -> str | None:
    """The server's history, its settings (a public board) and two uploaded decks; the
    id of a deck it owns."""
    engine = app.engine
    fill(app.store.engine, GUILD, NOW, learners=learners, logs=logs,
         cards=_cards(app.tutor.library), heavy_every=HEAVY_EVERY)
    engine.servers.set_board_public(GUILD, True)
    deck_id = None
    for n in (1, 2):
        deck = _deck(n)
        engine.decks.upload(GUILD, f"{deck['id']}.yaml", yaml.safe_dump(deck).encode(),
                            f"discord:{VISITOR}")
        deck_id = deck_id or deck["id"]
    misconceptions = [(d.id, m if isinstance(m, str) else m.id)
                      for d in app.tutor.library.decks.values() for m in d.mistakes]
    with app.store.engine.begin() as conn:
        conn.execute(sa.text(
            "INSERT INTO misconception (learner_id, deck_id, mistake_id, open, times_shown,"
            " first_shown_at, last_shown_at) VALUES (:learner, :deck, :mistake, :open, 3,"
            " :first, :last)"),
            [{"learner": VISITOR, "deck": deck, "mistake": mistake, "open": k % 2 == 0,
              "first": datetime(2026, 6, 1), "last": datetime(2026, 11, 30)}
             for k, (deck, mistake) in enumerate(misconceptions)])
        if conn.dialect.name == "postgresql":  # autovacuum's statistics, as a live server has
            conn.exec_driver_sql("ANALYZE")
    return deck_id


def pages_of(app, deck_id: str | None) -> list[tuple[str, bool]]:
    """(path with query, anonymous) for every page to measure, from the app's router."""
    pages = []
    for resource in app.router.resources():
        info = resource.get_info()
        template = info.get("formatter") or info.get("path")
        if template is None or template.startswith(SKIPPED) or \
                not any(route.method == "GET" for route in resource):
            continue
        names = set(PLACEHOLDER.findall(template))
        if not names <= {"guild", "deck"} or ("deck" in names and deck_id is None):
            continue
        path = PLACEHOLDER.sub(lambda m: str(GUILD) if m[1] == "guild" else deck_id, template)
        pages.append((path, False))
        if any(route.method == "GET" and route.handler is boards.leaderboard
               for route in resource):
            pages += [(f"{path}?period={p}", anonymous) for anonymous in (False, True)
                      for p in boards.PERIODS]
    return pages


async def _measure_pages(site: Site, deck_id: str | None, n: int) -> dict:
    client = TestClient(TestServer(make_app(site)))
    await client.start_server()
    anonymous = aiohttp.ClientSession()  # no cookies: nobody logged in
    try:
        client.session.cookie_jar.update_cookies({COOKIE: site.sessions.encode({
            "csrf": "bench", "user": {"id": str(VISITOR), "name": "Ada",
                                      # Two servers: /me lists them (one: a redirect).
                                      "guilds": {str(GUILD): ["Big server", True],
                                                 "1": ["Small server", False]}}})})
        results = {}
        for path, alone in pages_of(client.server.app, deck_id):
            get = functools.partial(anonymous.get, client.make_url(path)) if alone \
                else functools.partial(client.get, path)
            timings, statuses = [], set()
            for _ in range(n + 1):  # the first: the warm-up
                start = time.perf_counter()
                async with get(allow_redirects=False) as response:
                    await response.read()
                timings.append((time.perf_counter() - start) * 1000)
                statuses.add(response.status)
            first, timings = timings[0], sorted(timings[1:])
            results[("anonymous " if alone else "") + path] = {
                "first_ms": round(first, 2),  # the warm-up: cold caches, not in the p95
                "median_ms": round(statistics.median(timings), 2),
                "p95_ms": round(timings[max(0, -(-len(timings) * 95 // 100) - 1)], 2),
                "statuses": sorted(statuses)}
        return results
    finally:
        await anonymous.close()
        await client.close()


def _measure(database_url: str, n: int, learners: int, logs: int) -> dict:
    started = time.perf_counter()
    with build(database_url=database_url, clock=lambda: NOW, sandbox=False) as app:
        deck_id = _populate(app, learners, logs)
        filled_s = time.perf_counter() - started
        oauth = OAuthApp("bench", "bench-secret", "http://127.0.0.1/oauth/callback",
                         "http://127.0.0.1:1/oauth2/authorize", "http://127.0.0.1:1/api/v10")
        site = Site(app.engine, Sessions(os.urandom(32), secure=False), oauth)
        pages = asyncio.run(_measure_pages(site, deck_id, n))
    return {"fill_s": round(filled_s, 1), "deck": deck_id, "pages": pages,
            "all_200": all(p["statuses"] == [200] for p in pages.values()),
            "ok": all(p["statuses"] == [200] and p["p95_ms"] < TARGET_P95_MS
                      for p in pages.values())}


def bench_web(args, learners: int = LEARNERS, logs: int = LOGS) -> dict:
    n = args.n or 50
    databases = {}
    with tempfile.TemporaryDirectory() as tmp:
        databases["sqlite"] = _measure(sqlite_url(Path(tmp) / "web.db"), n, learners, logs)
    if admin_url := os.environ.get("TEST_POSTGRES_URL"):
        with throwaway_database(admin_url, "tutor_bench") as url:
            databases["postgresql"] = _measure(url, n, learners, logs)
    return {"benchmark": "web", "learners": learners, "review_logs": logs, "requests": n,
            "databases": databases, "target_p95_ms": TARGET_P95_MS,
            "ok": all(db["ok"] for db in databases.values())}
