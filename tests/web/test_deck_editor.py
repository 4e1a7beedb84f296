"""A server's decks on the web (issue 42.4): the list with enable, disable, remove (asked
first) and export; the editor that checks a deck as an upload is checked, with each problem
beside its line, previews each card as Discord shows it, tries its exercises in the sandbox
(rate limited) and publishes it; only the server's admins, and never another server's deck."""

from __future__ import annotations

import html
import re

import pytest

from tests.helpers.exercises import EXAMPLE
from tests.helpers.paths import COMMUNITY_DECK
from tests.helpers.web import log_in

GUILD, OTHER = 4242, 5151
DECKS = f"/servers/{GUILD}/decks"
NEW = f"{DECKS}/new"
HOSTILE_TITLE = "<script>alert(1)</script>"
HOSTILE_PROMPT = "<img src=x onerror=alert(1)>"
# the first card's difficulty, made unknown
BROKEN = COMMUNITY_DECK.replace("    difficulty: easy\n", "    difficulty: impossible\n", 1)


def broken_line() -> int:
    return BROKEN.split("\n").index("    difficulty: impossible") + 1


def textarea(page: str) -> str:
    found = re.search(r'<textarea id="deck-text" name="text"[^>]*>(.*?)</textarea>', page,
                      re.DOTALL)
    assert found, page
    return found[1]


def admin_of(web, guild=GUILD, name="Club"):
    return log_in(web, 1, guilds={guild: (name, True)})


async def post(web, path, csrf, **form):
    return await web.post(path, data={"csrf": csrf, **form}, allow_redirects=False)


def uploaded(app, guild=GUILD, text=COMMUNITY_DECK):
    return app.engine.decks.upload(guild, "deck.yaml", text.encode(), "discord:1")


async def test_a_problem_is_shown_beside_its_line_the_fix_previews_and_publish_plays_it(
        web, app, store, clock):
    csrf = admin_of(web)
    starter = await web.get(NEW)
    assert starter.status == 200 and "id: my-deck" in textarea(await starter.text())

    response = await post(web, f"{NEW}/check", csrf, text=BROKEN)
    page = await response.text()
    line = broken_line()
    assert response.status == 200 and "nothing was stored" in page.lower()
    assert f'data-line="{line}">line {line}</a>' in page
    row = re.search(rf'<tr id="L{line}" class="problem">(.*?)</tr>', page, re.DOTALL)[1]
    assert "difficulty: impossible" in row
    assert "card tensor-basics/move" in row.split("</pre>")[1] and "&#39;easy&#39;" in row
    assert html.unescape(textarea(page)).strip() == BROKEN.strip()  # the text is kept
    assert "tensor-basics" not in app.engine.decks.summaries(GUILD).__repr__()

    fixed = await post(web, f"{NEW}/check", csrf, text=COMMUNITY_DECK)
    page = await fixed.text()
    assert "No problems: 2 cards" in page and 'class="problem"' not in page
    assert page.count('<article class="embed"') == 2
    assert "New card · easy · devices" in page
    assert "What does x.to(&#34;cuda&#34;) return?" in page
    assert "A new tensor on the GPU" in page and "print(x.[1])" in page
    assert '<span class="chip">shape</span>' in page and "3 attempts left" in page
    assert app.engine.decks.summaries(GUILD) == app.engine.decks.summaries(GUILD)
    assert "tensor-basics" not in {s.deck_id for s in app.engine.decks.summaries(GUILD)}

    published = await post(web, f"{NEW}/publish", csrf, text=COMMUNITY_DECK)
    assert published.status == 303
    assert published.headers["Location"] == f"{DECKS}?published=tensor-basics"
    listing = await (await web.get(published.headers["Location"])).text()
    assert "Published <strong>Tensor basics</strong>" in listing and "discord:1" in listing
    assert "tensor-basics" in app.engine.plays.server_decks(GUILD)
    learner = store.learners.get_or_create("discord:7", display_name="Bo", now=clock())
    cards = {card.id for card in app.engine.plays.cards(learner.id, GUILD)}
    assert {"tensor-basics/move", "tensor-basics/shape"} <= cards


async def test_the_editor_of_a_deck_starts_from_its_export_and_publishes_a_new_version(
        web, app):
    uploaded(app)
    csrf = admin_of(web)
    page = await (await web.get(f"{DECKS}/tensor-basics/edit")).text()
    assert "id: tensor-basics" in textarea(page)
    edited = COMMUNITY_DECK.replace("rev: 1\n    difficulty: easy\n    topics: [devices]\n    "
                                    "prompt: What does",
                                    "rev: 2\n    difficulty: easy\n    topics: [devices]\n    "
                                    "prompt: Now, what does", 1)
    stale = COMMUNITY_DECK.replace("prompt: What does", "prompt: Now, what does", 1)
    refused = await (await post(web, f"{DECKS}/tensor-basics/edit/publish", csrf,
                                text=stale)).text()
    assert "bump rev" in refused and app.engine.decks.summaries(GUILD)
    done = await post(web, f"{DECKS}/tensor-basics/edit/publish", csrf, text=edited)
    assert done.status == 303
    assert {s.deck_id: s.version for s in app.engine.decks.summaries(GUILD)}[
        "tensor-basics"] == 2


async def test_enable_disable_export_and_remove_after_asking(web, app):
    uploaded(app)
    csrf = admin_of(web)
    page = await (await web.get(DECKS)).text()
    assert "Tensor basics" in page and f'action="{DECKS}/tensor-basics/disable"' in page
    assert (await post(web, f"{DECKS}/tensor-basics/disable", csrf)).status == 303
    assert "tensor-basics" not in app.engine.decks.enabled(GUILD)
    assert (await post(web, f"{DECKS}/tensor-basics/enable", csrf)).status == 303
    assert "tensor-basics" in app.engine.decks.enabled(GUILD)

    exported = await web.get(f"{DECKS}/tensor-basics/export")
    assert exported.status == 200 and exported.content_type == "text/yaml"
    assert exported.headers["Content-Disposition"] == \
        'attachment; filename="tensor-basics.yaml"'
    assert (await exported.text()) == COMMUNITY_DECK

    asked = await post(web, f"{DECKS}/tensor-basics/remove", csrf)
    assert asked.status == 200 and 'name="confirm" value="yes"' in await asked.text()
    assert "tensor-basics" in app.engine.decks.enabled(GUILD)  # only asked
    removed = await post(web, f"{DECKS}/tensor-basics/remove", csrf, confirm="yes")
    assert removed.status == 303
    assert "tensor-basics" not in {s.deck_id for s in app.engine.decks.summaries(GUILD)}


async def test_turning_off_the_last_deck_is_refused_in_words(web, app):
    csrf = admin_of(web)
    for deck_id in app.engine.decks.enabled(GUILD)[:-1]:
        assert (await post(web, f"{DECKS}/{deck_id}/disable", csrf)).status == 303
    last = app.engine.decks.enabled(GUILD)
    refused = await post(web, f"{DECKS}/{last[0]}/disable", csrf)
    assert refused.status == 409 and "has to stay on" in await refused.text()
    assert app.engine.decks.enabled(GUILD) == last


async def test_strangers_titles_and_prompts_are_shown_escaped(web, app):
    hostile = (COMMUNITY_DECK.replace("title: Tensor basics", f'title: "{HOSTILE_TITLE}"')
               .replace('prompt: What does x.to("cuda") return?',
                        f"prompt: '{HOSTILE_PROMPT} x.to(\"cuda\")?'"))
    csrf = admin_of(web)
    checked = await (await post(web, f"{NEW}/check", csrf, text=hostile)).text()
    assert "No problems" in checked, checked
    uploaded(app, text=hostile)
    broken = hostile.replace("difficulty: easy", "difficulty: <script>x</script>", 1)
    pages = [checked, await (await web.get(DECKS)).text(),
             await (await web.get(f"{DECKS}/tensor-basics/edit")).text(),
             await (await post(web, f"{NEW}/check", csrf, text=broken)).text()]
    for page in pages:
        assert "<script>alert" not in page and "<img src=x" not in page
        assert "<script>x" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in pages[1]
    assert "&lt;img src=x onerror=alert(1)&gt;" in pages[0]


async def test_another_server_s_admin_and_a_member_are_refused_everywhere(web, app):
    uploaded(app)
    theirs = COMMUNITY_DECK.replace("tensor-basics", "theirs")
    uploaded(app, OTHER, theirs)
    before = app.engine.decks.summaries(GUILD), app.engine.decks.summaries(OTHER)
    gets = [DECKS, NEW, f"{DECKS}/tensor-basics/edit", f"{DECKS}/tensor-basics/export",
            f"/servers/{GUILD}/insights"]
    posts = [f"{NEW}/check", f"{NEW}/try", f"{NEW}/publish",
             f"{DECKS}/tensor-basics/edit/check", f"{DECKS}/tensor-basics/edit/publish",
             f"{DECKS}/tensor-basics/disable", f"{DECKS}/tensor-basics/enable",
             f"{DECKS}/tensor-basics/remove"]
    for guilds in ({OTHER: ("Mine", True)}, {GUILD: ("Club", False), OTHER: ("Mine", True)}):
        csrf = log_in(web, 2, guilds=guilds)
        for path in gets:
            assert (await web.get(path)).status == 404, (guilds, path)
        for path in posts:
            response = await post(web, path, csrf, text=COMMUNITY_DECK, confirm="yes")
            assert response.status == 404, (guilds, path)
    # An admin here names the other server's private deck: as if it did not exist.
    csrf = admin_of(web)
    for path in (f"{DECKS}/theirs/export", f"{DECKS}/theirs/edit"):
        assert (await web.get(path)).status == 404, path
    for path in (f"{DECKS}/theirs/enable", f"{DECKS}/theirs/remove",
                 f"{DECKS}/theirs/edit/publish"):
        assert (await post(web, path, csrf, text=theirs, confirm="yes")).status == 404, path
    taken = await (await post(web, f"{NEW}/publish", csrf, text=theirs)).text()
    assert "belongs to another server" in taken or "taken by another server" in taken
    assert (app.engine.decks.summaries(GUILD), app.engine.decks.summaries(OTHER)) == before


async def test_a_post_without_the_session_token_changes_nothing(web, app):
    uploaded(app)
    admin_of(web)
    for path, form in ((f"{DECKS}/tensor-basics/disable", {}),
                       (f"{DECKS}/tensor-basics/remove", {"confirm": "yes"}),
                       (f"{NEW}/publish", {"text": COMMUNITY_DECK.replace(
                           "tensor-basics", "fresh")})):
        for csrf in ({}, {"csrf": "wrong"}):
            response = await web.post(path, data={**form, **csrf}, allow_redirects=False)
            assert response.status == 403, path
    summaries = {s.deck_id: s for s in app.engine.decks.summaries(GUILD)}
    assert summaries["tensor-basics"].enabled and "fresh" not in summaries


async def test_no_sandbox_says_exercises_cannot_be_tried_here(web, app):
    csrf = admin_of(web)
    text = EXAMPLE.read_text()
    for action in ("try", "publish"):
        response = await post(web, f"{NEW}/{action}", csrf, text=text)
        page = await response.text()
        assert "Exercises cannot be tried here" in page, action
        assert textarea(page).startswith("#") or "pytorch-exercises" in textarea(page)
    assert "pytorch-exercises" not in app.engine.decks.enabled(GUILD)


class Judge:
    """A sandbox's answer on each exercise, without the sandbox: `failing` cards fail."""

    def __init__(self, failing=()):
        self.failing, self.tried = set(failing), []

    def vet(self, card, server):
        self.tried.append((card.id, server))
        return ([f"the reference fails case {card.id}"] if card.id in self.failing else [],
                False)


async def test_try_exercises_shows_each_card_s_result(web, app):
    judge = Judge(failing={"pytorch-exercises/causal-mask"})
    app.tutor.code_judge = judge
    csrf = admin_of(web)
    page = await (await post(web, f"{NEW}/try", csrf, text=EXAMPLE.read_text())).text()
    assert [card for card, _ in judge.tried] == [
        "pytorch-exercises/stable-softmax", "pytorch-exercises/causal-mask",
        "pytorch-exercises/padded-token-loss"]
    assert {server for _, server in judge.tried} == {GUILD}
    results = re.findall(r"<code>(pytorch-exercises/[a-z-]+)</code>:\s*<span class=\"(ok|bad)\"",
                         page)
    assert results == [("pytorch-exercises/stable-softmax", "ok"),
                       ("pytorch-exercises/causal-mask", "bad"),
                       ("pytorch-exercises/padded-token-loss", "ok")], page
    assert "the reference fails case pytorch-exercises/causal-mask" in page
    judge.failing.clear()
    passed = await (await post(web, f"{NEW}/try", csrf, text=EXAMPLE.read_text())).text()
    assert "Every exercise passed" in passed
    published = await post(web, f"{NEW}/publish", csrf, text=EXAMPLE.read_text())
    assert published.status == 303 and "pytorch-exercises" in app.engine.decks.enabled(GUILD)


async def test_the_fourth_try_in_a_minute_is_told_when_to_try_again(web, app):
    csrf = admin_of(web)
    for _ in range(3):
        assert (await post(web, f"{NEW}/try", csrf, text=COMMUNITY_DECK)).status == 200
    refused = await post(web, f"{NEW}/try", csrf, text=COMMUNITY_DECK)
    page = await refused.text()
    assert refused.status == 429 and re.search(r"try again in \d+ seconds?", page)
    assert "id: tensor-basics" in textarea(page)  # nothing lost
    assert (await post(web, f"{NEW}/check", csrf, text=COMMUNITY_DECK)).status == 200


async def test_a_deck_too_large_is_told_so_and_kept_for_fixing(web, app):
    csrf = admin_of(web)
    big = COMMUNITY_DECK + "# " + "x" * (300 * 1024) + "\n"
    response = await post(web, f"{NEW}/check", csrf, text=big)
    assert response.status == 413 and "at most 256 KiB" in await response.text()
    huge = await post(web, f"{NEW}/check", csrf, text="x" * (2 << 20))
    assert huge.status == 413 and "at most 256 KiB" in await huge.text()


@pytest.mark.parametrize("path", [f"{DECKS}/../decks/x/export", f"{DECKS}/Bad%20Id/export"])
async def test_odd_deck_ids_are_not_found(web, path):
    admin_of(web)
    assert (await web.get(path)).status == 404


async def test_try_exercises_in_the_real_sandbox(web, app, sandbox_judge):
    app.tutor.code_judge = sandbox_judge
    csrf = admin_of(web)
    broken = EXAMPLE.read_text().replace("          z = x - x.max(dim=-1, keepdim=True).values",
                                         "          z = x", 1)
    page = await (await post(web, f"{NEW}/try", csrf, text=broken)).text()
    results = dict(re.findall(r"<code>(pytorch-exercises/[a-z-]+)</code>:\s*"
                              r"<span class=\"(ok|bad)\"", page))
    assert results == {"pytorch-exercises/stable-softmax": "bad",
                       "pytorch-exercises/causal-mask": "ok",
                       "pytorch-exercises/padded-token-loss": "ok"}, page
    assert "nothing was stored" in page.lower()
    assert "pytorch-exercises" not in app.engine.decks.enabled(GUILD)
