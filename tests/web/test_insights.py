"""What a server's learners get wrong (issue 42.4), for its admins: the cards missed most
and the mistakes made most over 30 days, as bar charts drawn on the server in SVG, named by
the card's prompt and the mistake's title (escaped), never an id; nothing: a sentence."""

from __future__ import annotations

import re

from bot.web.insight_charts import bar_chart, missed_cards_chart, mistakes_chart
from tests.helpers.paths import COMMUNITY_DECK
from tests.helpers.records import record
from tests.helpers.web import log_in

GUILD, OTHER = 4242, 5151
PAGE = f"/servers/{GUILD}/insights"
HOSTILE = ("<img src=x onerror=alert(1)>", "<script>alert(1)</script>")


def missed(store, clock, card_id: str, times: int, mistake: str, deck="tensor-basics"):
    learner = store.learners.get_or_create("discord:9", display_name="Bo", now=clock())
    for i in range(times):
        store.record(record(learner.id, f"{card_id}-{i}", card_id=card_id, deck_id=deck,
                            guild_id=GUILD, correct=False, quality=1, attempts=3,
                            mistake_ids=[mistake], changes_schedule=False))


async def test_nothing_missed_is_a_sentence_not_an_empty_chart(web):
    log_in(web, 1, guilds={GUILD: ("Club", True)})
    page = await (await web.get(PAGE)).text()
    assert "No card was missed in the last 30 days" in page and "<svg" not in page
    assert "No mistake was made" in page


async def test_the_cards_and_mistakes_missed_most_as_escaped_bars(web, app, store, clock):
    deck = (COMMUNITY_DECK.replace('prompt: What does x.to("cuda") return?',
                                   f"prompt: '{HOSTILE[0]} What does x.to(\"cuda\") do?'")
            .replace("title: Thinking to() works in place", f'title: "{HOSTILE[1]}"'))
    app.engine.decks.upload(GUILD, "deck.yaml", deck.encode(), "discord:1")
    missed(store, clock, "tensor-basics/move", 3, "in_place")
    missed(store, clock, "tensor-basics/shape", 1, "wrong_attribute")
    log_in(web, 1, guilds={GUILD: ("Club", True)})
    response = await web.get(PAGE)
    page = await response.text()
    assert response.status == 200 and page.count("<svg") == 2
    assert "<img src=x" not in page and "<script>alert" not in page and "style=" not in page
    assert "&lt;img src=x onerror=alert(1)&gt; What does" in page  # the card, by its prompt
    assert "Print the dimensions of the tensor." in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page and "Wrong attribute" in page
    assert "tensor-basics/move" not in page  # titles, not ids
    widths = [int(w) for w in re.findall(r'class="bar card"[^>]*width="(\d+)"', page)]
    assert len(widths) == 2 and widths[0] > widths[1] > 0
    assert "3 of 3" in page and "× 3" in page


async def test_only_the_server_s_admins_see_its_insights(web):
    for guilds in ({OTHER: ("Mine", True)}, {GUILD: ("Club", False)}):
        log_in(web, 2, guilds=guilds)
        assert (await web.get(PAGE)).status == 404
    web.session.cookie_jar.clear()
    assert (await web.get(PAGE, allow_redirects=False)).status == 302  # log in first


def test_a_chart_is_one_bar_per_row_scaled_to_the_largest():
    svg = str(bar_chart([("a", 4, "4"), ("b", 2, "2"), ("c", 0, "0")], "T"))
    widths = [int(w) for w in re.findall(r'<rect[^>]*width="(\d+)"', svg)]
    assert widths[0] == 2 * widths[1] and widths[2] == 0 and "<title>T</title>" in svg
    assert str(bar_chart([], "T")) == ""
    long = str(missed_cards_chart([("d/x", 1, 2)], {"d/x": "q" * 80}))
    assert "q" * 47 + "…" in long and "1 of 2" in long
    assert "&lt;b&gt;" in str(mistakes_chart([("<b>", 1)]))
