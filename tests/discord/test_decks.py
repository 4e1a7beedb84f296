"""/deck: what an admin sees for each upload, good or refused, and the decks a server plays.

The engine (bot/engine/community_decks.py) does every check; these tests drive the real
client against
SimCord and assert the admin's view, and through the engine that a refusal stored nothing.
"""

from __future__ import annotations

import re

import discord
import pytest
import simcord

from bot.discord_ui.decks import NEXT_STEP, show_embeds
from bot.engine.tutor import Tutor
from content.loader import DeckLibrary, parse_deck
from tests.helpers.clock import store_now
from tests.helpers.discord import (
    card_id_of,
    choose,
    final,
    learner_of,
    pings_nobody,
    text_of,
    untouched,
)
from tests.helpers.paths import COMMUNITY_DECK as DECK
from tests.helpers.paths import FIXTURES

PAGE = (FIXTURES / "practice-page.txt").read_text(encoding="utf-8")
CHECKER_CARD = """\
  - id: tensor-basics/loop
    type: code
    rev: 1
    difficulty: hard
    topics: [devices]
    prompt: Move every batch to the GPU.
    starter: "# move each batch\\n"
    given_names: [model, dataloader]
    checker: no_such_checker
    mistakes: [in_place]
    hint: Keep what the call returns.
    reference: "for x in dataloader: x = x.to('cuda')\\n"
    takeaway: Keep the moved batch.
"""
# Nine levels of nine aliases each: a few hundred bytes that expand to 9**9 strings.
BOMB = "a: &a [" + ",".join(['"lol"'] * 9) + "]\n" + "".join(
    f"{c}: &{c} [" + ",".join([f"*{p}"] * 9) + "]\n"
    for p, c in zip("abcdefgh", "bcdefghi", strict=True))


def line_of(text: str, needle: str) -> int:
    return text[: text.index(needle)].count("\n") + 1


@pytest.fixture
def extra_decks() -> list:
    """Decks bundled beside the real ones; a test parametrizes it to add its own."""
    return []


@pytest.fixture
def bot_tutor(store, library, clock, extra_decks) -> Tutor:
    return Tutor(store, DeckLibrary([*library.decks.values(), *extra_decks]), clock=clock)


async def test_deck_commands_are_for_admins(world, admin):
    _, channel, ann, _ = world
    subcommands = {"upload", "list", "show", "enable", "disable", "publish", "remove", "export"}
    assert {f"deck {s}" for s in subcommands} <= set(admin.available_commands(channel))
    assert not any(c.startswith("deck") for c in ann.available_commands(channel))
    with pytest.raises(simcord.SetupError, match="default-member-permissions"):
        await ann.slash(channel, "deck upload", file=("community.yaml", DECK.encode()))


async def test_a_file_over_256_kib_is_refused_without_downloading(
        world, admin, decks, simcord_env, monkeypatch):
    guild, channel, *_ = world
    fetched = []
    real_get = simcord_env.backend.cdn.get
    monkeypatch.setattr(simcord_env.backend.cdn, "get",
                        lambda url: fetched.append(url) or real_get(url))
    before = decks.summaries(guild.id)
    big = DECK.encode() + b"#" * (256 * 1024)
    result = await admin.slash(channel, "deck upload", file=("big.yaml", big))
    assert result.ephemeral and not result.deferred
    assert "at most 256 KiB" in result.response.content
    assert "Nothing was stored." in result.response.content
    assert fetched == []
    untouched(decks, guild.id, before)


REFUSALS = {
    "malformed YAML": (DECK.replace("title: Tensor basics", "title: [Tensor basics"), None),
    "an alias bomb": (BOMB, None),
    "a bad reference": (DECK.replace("mistake: in_place, says: It returns",
                                     "mistake: no_such_mistake, says: It returns"),
                        "no_such_mistake"),
    "an over-long prompt": (DECK.replace('prompt: What does x.to("cuda") return?',
                                         "prompt: " + "Why? " * 1000), "Why? Why?"),
    "a checker that does not exist": (DECK + CHECKER_CARD, "no_such_checker"),
}


@pytest.mark.parametrize("case", REFUSALS)
async def test_a_refused_upload_shows_its_problems_and_stores_nothing(world, admin, decks,
                                                                      case):
    guild, channel, *_ = world
    text, bad = REFUSALS[case]
    before = decks.summaries(guild.id)
    result = await admin.slash(channel, "deck upload", file=("tensors.yaml", text.encode()))
    message = final(result)
    assert result.ephemeral and message.ephemeral
    assert message.content.startswith("**tensors.yaml** was refused: ")
    assert "nothing was stored" in message.content.lower() and len(message.content) <= 2000
    shown = await text_of(message)
    assert re.search(r"^line \d+, (card \S+|mistake \S+|deck): ", shown, re.M), shown
    if bad:
        assert f"line {line_of(text, bad)}, " in shown, shown
    assert message.content.endswith(NEXT_STEP)
    untouched(decks, guild.id, before)


async def test_problems_that_do_not_fit_in_a_message_come_as_a_file(world, admin, decks):
    guild, channel, *_ = world
    broken = DECK.replace("mistake: in_place, says: It returns",
                          "mistake: no_such_mistake, says: It returns")
    card = broken[broken.index("  - id: tensor-basics/move"):broken.index(
        "  - id: tensor-basics/shape")]
    many = broken + "".join(card.replace("basics/move", f"basics/move-{i}")
                            for i in range(60))
    before = decks.summaries(guild.id)
    message = final(await admin.slash(channel, "deck upload",
                                      file=("many.yaml", many.encode())))
    assert len(message.content) <= 2000 and "more lines in **many.problems.txt**" in (
        message.content)
    [attached] = message.attachments
    lines = (await attached.read()).decode().splitlines()
    problems = [p for p in lines if p.startswith("line ")]
    assert len(problems) > 60 and lines[-1] == NEXT_STEP
    assert message.content.endswith(f"**many.problems.txt**.\n{NEXT_STEP}")
    untouched(decks, guild.id, before)


async def test_one_upload_reports_a_cards_schema_problem_and_anothers_content_in_line_order(
        world, admin, decks):
    """A schema problem in one card hides nothing of another card's content problems (an
    unregistered mistake id, a hint that gives the answer away): one upload names them
    all, in line order, each with its card, and says what comes next."""
    guild, channel, *_ = world
    text = (DECK.replace("mistake: in_place, says: It returns",
                         "mistake: no_such_mistake, says: It returns")
            .replace("hint: Does the call change x itself?",
                     "hint: You get a new tensor on the GPU.")
            .replace("    topics: [devices]\n    prompt: Print", "    topics: [devices]\n"
                     "    prompt: Print", 1)
            .replace("    difficulty: easy\n    topics: [devices]\n    prompt: Print",
                     "    difficulty: impossible\n    topics: [devices]\n    prompt: Print"))
    before = decks.summaries(guild.id)
    message = final(await admin.slash(channel, "deck upload",
                                      file=("tensors.yaml", text.encode())))
    assert message.ephemeral and len(message.content) <= 2000
    problems = [p for p in message.content.splitlines() if p.startswith("line ")]
    lines = [int(re.match(r"line (\d+), ", p)[1]) for p in problems]
    assert lines == sorted(lines) and len(problems) == 3, problems
    mistake, hint, schema = problems
    assert mistake.startswith(f"line {line_of(text, 'no_such_mistake')}, card tensor-basics/"
                              "move: unknown mistake id") and "no_such_mistake" in mistake
    assert hint.startswith(f"line {line_of(text, 'hint: You get')}, card tensor-basics/move: "
                           "hint gives away")
    assert schema.startswith(f"line {line_of(text, 'difficulty: impossible')}, card "
                             "tensor-basics/shape: ") and "difficulty" in schema
    assert "left out of the content checks" in message.content
    assert message.content.endswith(NEXT_STEP)
    untouched(decks, guild.id, before)


async def test_a_practice_page_becomes_a_deck_learners_here_play(world, admin, decks, store):
    guild, channel, ann, _ = world
    before = decks.summaries(guild.id)
    page = final(await admin.slash(channel, "deck upload",
                                   file=("practice-page.txt", PAGE.encode())))
    assert page.ephemeral and "here is a draft deck" in page.content
    assert "Nothing was stored." in page.content and "guessed: " in page.content
    draft = next(a for a in page.attachments if a.filename == "practice-page.draft.yaml")
    yaml_text = (await draft.read()).decode()
    assert "# GUESS:" in yaml_text and "cards:" in yaml_text
    untouched(decks, guild.id, before)
    # The draft as it stands is not a deck yet; the fixed one is.
    unfixed = final(await admin.slash(channel, "deck upload",
                                      file=(draft.filename, yaml_text.encode())))
    assert unfixed.content.startswith("**practice-page.draft.yaml** was refused")
    assert "allow-giveaways" in unfixed.content
    assert decks.summaries(guild.id) == before
    up = final(await admin.slash(channel, "deck upload",
                                 file=("community.yaml", DECK.encode())))
    assert up.ephemeral
    assert up.content.startswith("Uploaded **Tensor basics** (`tensor-basics`), a new deck: "
                                 "version 1, 2 cards. It is enabled here")
    listed = (await admin.slash(channel, "deck list")).response.embeds[0].description
    played, _, available = listed.partition("**Available**")
    assert ("**Tensor basics** (`tensor-basics`) · 2 cards · v1 · this server's · "
            "not shared" in played)
    assert "(`gradient-accumulation`)" in played and " · bundled" in played
    shown = (await admin.slash(channel, "deck show", deck="tensor-basics")).response
    about, preview = shown.embeds
    fields = {f.name: f.value for f in about.fields}
    assert fields["Cards"] == "2: 1 multiple choice, 1 fill-in" and fields["Version"] == "1"
    assert preview.description.startswith('What does x.to("cuda") return?')
    # Learners here get it once the bundled deck is off.
    off = await admin.slash(channel, "deck disable", deck="gradient-accumulation")
    assert off.response.content == "Decks played here: **Tensor basics** (`tensor-basics`)."
    card = (await ann.slash(channel, "learn")).response
    assert card_id_of(store, card) == "tensor-basics/move"
    answered = await choose(ann, card, "copy")
    assert answered.response.embeds[-1].title.startswith("Correct")


async def test_a_new_version_replaces_this_servers_deck(world, admin):
    _, channel, *_ = world
    await admin.slash(channel, "deck upload", file=("community.yaml", DECK.encode()))
    again = DECK.replace("version: 1", "version: 2").replace("rev: 1", "rev: 2", 1)
    up = final(await admin.slash(channel, "deck upload", file=("v2.yaml", again.encode())))
    assert "a new version of this server's deck: version 2, 2 cards" in up.content


async def test_a_published_deck_is_played_on_another_server(world, admin, simcord_env, decks):
    guild, channel, *_ = world
    await admin.slash(channel, "deck upload", file=("community.yaml", DECK.encode()))
    other = simcord_env.create_guild(name="Other Group")
    hall = other.create_text_channel("hall")
    admins = other.create_role("Admins", permissions=discord.Permissions(manage_guild=True))
    admin2 = other.add_member(simcord_env.create_user("boss"), roles=[admins])
    cat = other.add_member(simcord_env.create_user("cat"))
    refused = await admin2.slash(hall, "deck enable", deck="tensor-basics")
    assert refused.ephemeral and "Decks played here" not in refused.response.content
    assert "tensor-basics" not in decks.ids(other.id, "")

    public = await admin.slash(channel, "deck publish", deck="tensor-basics", public=True)
    assert "is now public" in public.response.content
    mine = (await admin.slash(channel, "deck list")).response.embeds[0].description
    assert "this server's · public" in mine
    # Titles to read, ids as the values sent.
    assert (await admin2.autocomplete(hall, "deck enable", "deck", "tensor")) == [
        {"name": "Tensor basics", "value": "tensor-basics"}]
    on = await admin2.slash(hall, "deck enable", deck="tensor-basics")
    assert "**Tensor basics** (`tensor-basics`)" in on.response.content
    listed = (await admin2.slash(hall, "deck list")).response.embeds[0].description
    assert "(`tensor-basics`) · 2 cards · v1 · shared" in listed
    await admin2.slash(hall, "deck disable", deck="gradient-accumulation")
    card = (await cat.slash(hall, "learn")).response
    assert card_id_of(decks.tutor.store, card) == "tensor-basics/move"
    # Only the owner decides who shares it.
    taken = await admin2.slash(hall, "deck publish", deck="tensor-basics", public=False)
    assert "is no longer public" not in taken.response.content


async def test_remove_keeps_reviews_and_export_gives_the_file(world, admin, decks, store):
    guild, channel, ann, _ = world
    await admin.slash(channel, "deck upload", file=("community.yaml", DECK.encode()))
    await admin.slash(channel, "deck disable", deck="gradient-accumulation")
    card = (await ann.slash(channel, "learn")).response
    await choose(ann, card, "copy")
    for fmt, check in (("yaml", lambda b: b"id: tensor-basics" in b),
                       ("apkg", lambda b: b.startswith(b"PK"))):
        exported = final(await admin.slash(channel, "deck export", deck="tensor-basics",
                                           format=fmt))
        [attached] = exported.attachments
        assert attached.filename.endswith(f".{fmt}") and check(await attached.read())
    gone = await admin.slash(channel, "deck remove", deck="tensor-basics")
    assert "reviews and history are kept" in gone.response.content
    assert "tensor-basics" not in [s.deck_id for s in decks.summaries(guild.id) if s.enabled]
    assert store.reviews.on_day(learner_of(store, ann).id, store_now().date())


async def test_every_deck_option_is_autocompleted(world, admin):
    _, channel, *_ = world
    await admin.slash(channel, "deck upload", file=("community.yaml", DECK.encode()))
    for command in ("show", "enable", "disable", "publish", "remove", "export"):
        choices = await admin.autocomplete(channel, f"deck {command}", "deck", "ten")
        assert [c["value"] for c in choices] == ["tensor-basics"], command
    assert 2 <= len(await admin.autocomplete(channel, "deck show", "deck", "")) <= 25


def shouting_deck():
    """A bundled deck whose text would ping: built in memory, as uploads refuse mentions."""
    deck = parse_deck(DECK)
    card = deck.cards[0]
    loud = card.model_copy(update={"id": "shout/move",
                                   "prompt": f"@everyone and <@123>: {card.prompt}"})
    return deck.model_copy(update={"id": "shout", "title": "Shout @everyone <@123>",
                                   "cards": [loud]})


@pytest.mark.parametrize("extra_decks", [[shouting_deck()]])
async def test_deck_text_is_shown_intact_and_pings_nobody(world, admin, extra_decks):
    """Escaped, the mentions show as written: no ping, and no mention pill either."""
    guild, channel, ann, _ = world
    shown = (await admin.slash(channel, "deck show", deck="shout")).response
    assert r"\@everyone and \<@123>: What does" in shown.embeds[1].description
    off = await admin.slash(channel, "deck disable", deck="gradient-accumulation")
    assert r"**Shout \@everyone \<\@123\>** (`shout`)" in off.response.content
    await admin.slash(channel, "server-settings public-play", enabled=True)
    card = (await ann.slash(channel, "learn", public=True)).response
    assert not card.ephemeral and r"\@everyone and \<@123>" in card.embeds[0].description
    for message in (shown, off.response, card):
        pings_nobody(message)


async def test_a_mention_in_an_uploaded_prompt_is_shown_as_text(world, admin):
    """The engine takes mentions as text (it does not refuse them): the admin sees them
    as written, and no message pings anyone."""
    _, channel, *_ = world
    loud = DECK.replace("title: Tensor basics", "title: Tensor basics @everyone").replace(
        'prompt: What does x.to("cuda") return?',
        """prompt: '@everyone <@123> what does x.to("cuda") return?'""")
    up = final(await admin.slash(channel, "deck upload", file=("loud.yaml", loud.encode())))
    assert up.content.startswith(r"Uploaded **Tensor basics \@everyone** (`tensor-basics`)")
    shown = (await admin.slash(channel, "deck show", deck="tensor-basics")).response
    assert shown.embeds[1].description.startswith(r'\@everyone \<@123> what does x.to("cuda")')
    for message in (up, shown):
        pings_nobody(message)


def test_a_long_description_beside_a_long_card_fits_one_message():
    deck = parse_deck(DECK)
    long_card = deck.cards[0].model_copy(update={"prompt": "Why? " * 790})
    embeds = show_embeds(deck.model_copy(update={"description": "About. " * 700,
                                                 "cards": [long_card]}))
    assert sum(len(e) for e in embeds) <= 6000
    assert embeds[0].description.endswith("…") and "Why? Why?" in embeds[1].description
