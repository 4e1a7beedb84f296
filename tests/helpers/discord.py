"""Reading and poking what SimCord shows a learner."""

from __future__ import annotations

import copy
import re

from tests.helpers.clock import store_now


def custom_ids(message) -> list[str]:
    return [c["custom_id"] for row in message.components for c in row["components"]]


def served_id(message) -> str:
    return next(cid.split(":")[2] for cid in custom_ids(message) if cid.startswith("srs:"))


def card_id_of(store, message) -> str:
    """The id of the card a message shows (learners see no ids: the store knows it by the
    served card's id in the buttons)."""
    return store.served.load(served_id(message)).served["card_id"]


def letter_for(message, option_id: str) -> str:
    """The letter on the button that answers `option_id`: options are shuffled per serve,
    so a test finds the letter of the option it means in the card it was shown."""
    return next(c["label"] for row in message.components for c in row["components"]
                if c.get("custom_id", "").startswith("srs:opt:")
                and c["custom_id"].rsplit(":", 1)[1] == option_id)


async def choose(actor, message, option_id: str):
    """Click the button the learner sees for `option_id`."""
    return await actor.click(message, label=letter_for(message, option_id))


def shown_options(message) -> dict[str, str]:
    """{letter: option text} as the card's embed lists them."""
    return dict(re.findall(r"^\*\*([A-Z])\.\*\* (.*)$", message.embeds[0].description, re.M))


def chip_labels(message, blank: str) -> list[str]:
    """The chips of one blank's select menu, in the order shown."""
    select = next(c for row in message.components for c in row["components"]
                  if c.get("custom_id", "").startswith("srs:pick:")
                  and c["custom_id"].endswith(f":{blank}"))
    return [o["label"] for o in select["options"]]


def learner_of(store, user):
    return store.learners.get_or_create(f"discord:{user.id}", now=store_now())


def still_showing(message, rendering: list) -> None:
    """Put a rendering into a message, as a Discord client that has not yet received the
    bot's edit still shows it (or as a forged client sends it): the next click comes from
    there."""
    message._message.components = copy.deepcopy(rendering)  # SimCord's stored message


async def pick_and_submit(actor, message, choices: dict[str, str]):
    for blank, chip in choices.items():
        cid = next(c for c in custom_ids(message) if c.startswith("srs:pick:")
                   and c.endswith(f":{blank}"))
        await actor.select(message, [chip], custom_id=cid)
    return await actor.click(message, label="Submit")


def verdict_message(result):
    """Where a code verdict shows: the last follow-up, or the response."""
    return result.followups[-1] if result.followups else result.response


async def forged_slash(actor, channel, name: str, **options):
    """A slash command as a forged client sends it: values Discord's own client never
    allows (out of range, not among the choices) reach the bot, since discord.py does not
    check them. SimCord checks them, so this goes under its public API. ``name`` may be
    "group subcommand"."""
    from simcord import actors
    from simcord.enums import AppCommandType, InteractionType

    group, _, sub = name.partition(" ")
    root = actors._resolve_visible_command(actor, channel.id, group, AppCommandType.CHAT_INPUT)
    command = next(o for o in root["options"] if o["name"] == sub) if sub else root
    spec = {o["name"]: o for o in command.get("options", [])}
    values = [{"name": k, "type": spec[k]["type"], "value": v} for k, v in options.items()]
    if sub:
        values = [{"name": sub, "type": command["type"], "options": values}]
    data = {"id": root["id"], "name": root["name"], "type": root.get("type", 1),
            "options": values}
    if root.get("guild_id"):
        data["guild_id"] = root["guild_id"]
    return await actors._dispatch_actor_interaction(
        actor, InteractionType.APPLICATION_COMMAND, channel, data)


def final(result):
    """The message the admin ends up with: after a defer, the follow-up that fills it."""
    return result.followups[-1] if result.followups else result.response


async def text_of(message) -> str:
    """The message's text and every attached text file's."""
    parts = [message.content]
    for attachment in message.attachments:
        if attachment.filename.endswith(".txt"):
            parts.append((await attachment.read()).decode())
    return "\n".join(parts)


def untouched(decks, guild_id: int, before: list) -> None:
    """A refused upload stored nothing and enabled nothing (`decks`: CommunityDecks)."""
    assert decks.summaries(guild_id) == before
    assert "tensor-basics" not in decks.ids(guild_id, "")


def pings_nobody(message) -> None:
    stored = message._message  # SimCord's record of what was sent
    policy = stored.allowed_mentions
    assert (policy.everyone, policy.users, policy.roles) == (False, frozenset(), frozenset())
    assert not stored.mention_everyone and stored.ping_user_ids == []


def component(message, prefix: str, suffix: str = "") -> dict:
    """The one component whose custom_id starts with `prefix` (and ends with `suffix`)."""
    (found,) = [c for row in message.components for c in row["components"]
                if c.get("custom_id", "").startswith(prefix)
                and c["custom_id"].endswith(suffix)]
    return found
