"""My progress (/me, /me/{guild}): a learner's own numbers, charts, mistakes and scheduler
in one server, cards played through the engine; nobody else's, and nothing unescaped."""

from __future__ import annotations

import re

import sqlalchemy as sa

from tests.helpers.decks import deck_yaml
from tests.helpers.records import RIGHT
from tests.helpers.web import log_in

GUILD, OTHER = 4242, 5151
HOSTILE = "<script>alert(1)</script>"
SVG = re.compile(r'<svg class="chart"[^>]*aria-label="([^"]*)"')


def played(app, external_id: str, guild_id: int | None, card_id: str, *answers):
    """One card served and answered through the engine, as Discord's buttons do."""
    learner = app.tutor.learner(external_id, external_id.split(":")[1])
    playing = app.engine.cards.serve(learner, mode="learn", guild_id=guild_id, card_id=card_id)
    for attempt, response in enumerate(answers):
        app.engine.cards.answer(playing.served.serve_id, attempt, learner, response)
    return learner


def charts(page: str) -> list[str]:
    return SVG.findall(page)


async def test_the_page_shows_the_visitor_s_numbers_charts_and_mistakes(web, app):
    played(app, "discord:1", GUILD, "mini/clear", RIGHT["mini/clear"])
    played(app, "discord:1", GUILD, "mini/why", "speed", "memory", "average")
    log_in(web, 1, guilds={GUILD: ("Club", False)})
    response = await web.get(f"/me/{GUILD}")
    page = await response.text()
    assert response.status == 200 and "My progress" in page and "Club" in page
    assert re.search(r"<dt>Reviews</dt><dd>2</dd>", page)
    assert re.search(r"<dt>First try</dt><dd>50%</dd>", page)
    assert re.search(r"<dt>Cards seen</dt><dd>2 <small[^>]*>of 3</small>", page)
    assert re.search(r"<dt>Due now</dt><dd>0</dd>", page)
    assert re.search(r"<dt>Streak</dt><dd>1 day", page)
    labels = charts(page)
    assert len(labels) == 2  # the calendar and the forecast; no due review yet
    assert any("2 reviews on 1 day" in label for label in labels)
    assert any("Cards due in the next 14 days: 2 in all" in label for label in labels)
    assert "retention shows once cards come back" in page
    assert "<title>2 reviews on Wed 2 Dec 2026</title>" in page
    assert "No scaling" in page and "Unscaled losses add up to gradients N times" in page
    assert "Scheduler: <strong>SM-2</strong> (this server&#39;s choice)" in page
    assert "remediation of mistakes <strong>off</strong>" in page


async def test_each_server_s_page_counts_the_reviews_made_there(web, app):
    played(app, "discord:1", GUILD, "mini/clear", RIGHT["mini/clear"])
    played(app, "discord:1", OTHER, "mini/why", "speed", "memory", "average")
    log_in(web, 1, guilds={GUILD: ("Club", False), OTHER: ("Other", False)})
    for guild_id, first_try in ((GUILD, "100%"), (OTHER, "0%")):
        page = await (await web.get(f"/me/{guild_id}")).text()
        assert re.search(r"<dt>Reviews</dt><dd>1</dd>", page)
        assert re.search(rf"<dt>First try</dt><dd>{first_try}</dd>", page)
        assert any("1 review on 1 day" in label for label in charts(page))


async def test_retention_shows_once_cards_come_back(web, app, clock):
    learner = played(app, "discord:1", GUILD, "mini/clear", RIGHT["mini/clear"])
    clock.advance(days=3)
    playing = app.engine.cards.serve(learner, mode="review", guild_id=GUILD)
    assert playing.served.kind == "review"
    app.engine.cards.answer(playing.served.serve_id, 0, learner, RIGHT[playing.card.id])
    log_in(web, 1, guilds={GUILD: ("Club", False)})
    page = await (await web.get(f"/me/{GUILD}")).text()
    assert any(label.startswith("Retention per week over 1 week: latest 100%")
               for label in charts(page))
    assert "100% right on the first try (1 review)</title>" in page


async def test_the_scheduler_line_says_fsrs_and_the_server_s_own_parameters(web, app):
    learner = played(app, "discord:1", GUILD, "mini/clear", RIGHT["mini/clear"])
    app.engine.learners.update_settings(learner, {"scheduler": "fsrs"})
    log_in(web, 1, guilds={GUILD: ("Club", False)})
    page = await (await web.get(f"/me/{GUILD}")).text()
    assert "Scheduler: <strong>FSRS</strong> (your choice), with its default parameters" in page
    app.engine.servers.set_board_public(GUILD, False)  # the server's settings row
    with app.database.begin() as conn:  # as applying a fit of its reviews leaves it
        conn.execute(sa.text("UPDATE guild_settings SET fsrs_version = 3"))
    page = await (await web.get(f"/me/{GUILD}")).text()
    assert "with this server's own fitted parameters (version 3)" in page


async def test_a_visitor_sees_only_their_own_progress(web, app):
    played(app, "discord:1", GUILD, "mini/clear", RIGHT["mini/clear"])
    for card_id in ("mini/clear", "mini/scale"):
        played(app, "discord:2", GUILD, card_id, RIGHT[card_id])
    played(app, "discord:2", GUILD, "mini/why", "speed", "memory", "average")
    log_in(web, 1, guilds={GUILD: ("Club", False)})
    page = await (await web.get(f"/me/{GUILD}")).text()
    assert re.search(r"<dt>Reviews</dt><dd>1</dd>", page)
    assert re.search(r"<dt>Cards seen</dt><dd>1 <small", page)
    assert "No scaling" not in page and "None so far" in page
    assert (await web.get(f"/me/{OTHER}")).status == 404  # not their server
    assert (await web.get("/me/not-a-server")).status == 404


async def test_a_member_who_never_played_is_told_how_to_start(web, app):
    log_in(web, 7, guilds={GUILD: ("Club", False)})
    response = await web.get(f"/me/{GUILD}")
    page = await response.text()
    assert response.status == 200 and "You have not practised here yet" in page
    assert "/learn" in page and not charts(page)
    assert app.tutor.known_learner("discord:7") is None  # looking created nobody


async def test_no_data_no_chart(web, app):
    app.tutor.learner("discord:1", "ana")  # known, never played
    log_in(web, 1, guilds={GUILD: ("Club", False)})
    page = await (await web.get(f"/me/{GUILD}")).text()
    assert not charts(page) and "<svg" not in page
    assert "No reviews in the last 20 weeks" in page
    assert "Nothing due in the next 14 days" in page


async def test_me_sends_a_visitor_to_their_server_or_lists_them(web):
    assert (await web.get("/me", allow_redirects=False)).headers["Location"] \
        == "/login?next=/me"
    log_in(web, 1, guilds={GUILD: ("Club", False)})
    response = await web.get("/me", allow_redirects=False)
    assert response.status == 302 and response.headers["Location"] == f"/me/{GUILD}"
    log_in(web, 1, guilds={GUILD: ("Club", False), OTHER: ("Band", True)})
    page = await (await web.get("/me")).text()
    assert f'href="/me/{GUILD}"' in page and f'href="/me/{OTHER}"' in page
    assert page.index("Band") < page.index("Club")
    log_in(web, 1, guilds={})
    assert "None of your servers" in await (await web.get("/me")).text()


async def test_hostile_titles_and_names_are_escaped(web, app):
    def hostile(deck):
        deck["mistakes"][0]["title"] = HOSTILE
        deck["mistakes"][0]["explanation"] = f"{HOSTILE} returns a new tensor."
    app.engine.decks.upload(GUILD, "deck.yaml", deck_yaml(hostile), "admin")
    played(app, "discord:1", GUILD, "upload-basics/move", "none", "same", "copy")
    log_in(web, 1, name=HOSTILE, guilds={GUILD: (HOSTILE, False)})
    page = await (await web.get(f"/me/{GUILD}")).text()
    assert "<script>" not in page
    assert page.count("&lt;script&gt;alert(1)&lt;/script&gt;") >= 4  # name, place, mistake
    assert "returns a new tensor." in page


async def test_local_mode_shows_the_terminal_s_learner(local_web, app):
    page = await (await local_web.get("/me")).text()
    assert "You have not practised here yet" in page and "tutor practice" in page
    played(app, "local:ada", None, "mini/clear", RIGHT["mini/clear"])
    page = await (await local_web.get("/me")).text()
    assert "this computer" in page and re.search(r"<dt>Reviews</dt><dd>1</dd>", page)
    assert "(the default)" in page and len(charts(page)) == 2
    assert (await local_web.get(f"/me/{GUILD}")).status == 404
