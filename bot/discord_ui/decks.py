"""/deck: a server's admins upload, share, enable and export decks (issue 15).

Every check of an upload is the engine's (bot/engine/community_decks.py); this module refuses
only what it must not even download, and formats what the engine returns or refuses.
"""

from __future__ import annotations

import asyncio
import io
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime

import discord
from discord import app_commands

from bot.discord_ui import render
from bot.discord_ui.admin import admin_group, in_server, may_change
from bot.discord_ui.handlers import CardHandlers
from bot.discord_ui.replies import reply
from bot.engine import (
    DISCORD,
    Checked,
    DeckRejected,
    DeckSummary,
    Draft,
    Served,
    TutorError,
    Uploaded,
    counted,
    preview,
)
from content.safe_text import clip, literal, markdown, plain
from content.schema import Deck

MAX_UPLOAD = 256 * 1024  # bytes; the engine checks the bytes again
MESSAGE_LIMIT = DISCORD.message
EMBED_DESCRIPTION, EMBEDS_TOTAL = DISCORD.embed_description, DISCORD.embeds_total
ORIGIN = {"bundled": "bundled", "uploaded": "this server's", "shared": "shared"}
TYPE_LABEL = {"fill_in": "fill-in", "multiple_choice": "multiple choice", "code": "code"}
NOT_STORED = "Nothing was stored."
REFUSED = object()  # the engine said no, and the admin was told why


def commands(handlers: CardHandlers) -> list[app_commands.Group]:
    decks = handlers.engine.decks
    # Trials take minutes in the sandbox: on threads of their own, as many as the gate lets
    # run at once, never the ones that judge learners' answers.
    trials = ThreadPoolExecutor(decks.trials.at_once, thread_name_prefix="deck-trials")

    group = admin_group("deck", "This server's decks: upload, share, choose (admins).")

    async def engine(interaction: discord.Interaction, call, *args):
        """The engine's answer, or REFUSED after telling the admin why."""
        try:
            return await handlers.db(call, interaction.guild_id, *args)
        except TutorError as exc:
            await reply(interaction, render.clip(markdown(exc), MESSAGE_LIMIT))  # lists grow
            return REFUSED

    @group.command(name="upload",
                   description="Upload a deck (.yaml), or a practice page (.txt) for a draft.")
    @app_commands.describe(file="A deck YAML file (at most 256 KiB), or a practice page")
    async def upload(interaction: discord.Interaction, file: discord.Attachment) -> None:
        if not await may_change(interaction):
            return
        if file.size > MAX_UPLOAD:  # from Discord's metadata: never downloaded
            await reply(interaction, f"**{literal(file.filename)}** is "
                                     f"{file.size / 1024:.0f} KiB; a deck file can be at most "
                                     f"256 KiB. {NOT_STORED}")
            return
        await interaction.response.defer(ephemeral=True, thinking=True)
        data = await file.read()
        try:
            result = await handlers.db(decks.check, interaction.guild_id, file.filename, data)
            if isinstance(result, Checked):
                if result.exercises:  # seconds to minutes in the sandbox: off the loop
                    with decks.trial(interaction.guild_id):
                        await asyncio.get_running_loop().run_in_executor(
                            trials, decks.try_exercises, interaction.guild_id, result)
                result = await handlers.db(decks.store, interaction.guild_id, result,
                                           f"discord:{interaction.user.id}")
        except DeckRejected as exc:
            await _send(interaction, rejection(file.filename, exc), f"{_stem(file.filename)}"
                        ".problems.txt", tail=True)
            return
        except TutorError as exc:
            await reply(interaction, render.clip(f"{markdown(exc)} {NOT_STORED}",
                                                 MESSAGE_LIMIT))
            return
        if isinstance(result, Draft):
            await send_draft(interaction, result)
        else:
            await reply(interaction, uploaded_text(result))

    @group.command(name="list", description="The decks this server plays and can enable.")
    async def list_(interaction: discord.Interaction) -> None:
        if not await in_server(interaction):
            return
        summaries = await handlers.db(decks.summaries, interaction.guild_id)
        await reply(interaction, None, embed=list_embed(summaries))

    @group.command(name="show", description="A deck's cards, with a preview of one.")
    @app_commands.describe(deck="A deck id")
    async def show(interaction: discord.Interaction, deck: str) -> None:
        if not await in_server(interaction):
            return
        found = await engine(interaction, decks.deck, deck)
        if found is not REFUSED:
            await reply(interaction, None, embeds=show_embeds(found))

    @group.command(name="enable", description="Play a deck on this server.")
    @app_commands.describe(deck="A deck id: bundled, this server's, or a shared one")
    async def enable(interaction: discord.Interaction, deck: str) -> None:
        await switch(interaction, deck, True)

    @group.command(name="disable", description="Stop playing a deck on this server.")
    @app_commands.describe(deck="A deck id")
    async def disable(interaction: discord.Interaction, deck: str) -> None:
        await switch(interaction, deck, False)

    async def switch(interaction: discord.Interaction, deck: str, enabled: bool) -> None:
        if not await may_change(interaction):
            return
        played = await engine(interaction, decks.set_enabled, deck, enabled)
        if played is REFUSED:
            return
        titles = {s.deck_id: s.title for s in await handlers.db(decks.summaries,
                                                                interaction.guild_id)}
        await reply(interaction, "Decks played here: " + ", ".join(
            f"**{literal(titles.get(d, d))}** (`{d}`)" for d in played) + ".")

    @group.command(name="publish", description="Let any server enable this server's deck.")
    @app_commands.describe(deck="A deck this server uploaded", public="Shared or not")
    async def publish(interaction: discord.Interaction, deck: str, public: bool) -> None:
        if not await may_change(interaction):
            return
        if await engine(interaction, decks.publish, deck, public) is REFUSED:
            return
        await reply(interaction, f"`{deck}` is now public: any server can play it with "
                                 "**/deck enable**." if public else
                    f"`{deck}` is no longer public: other servers cannot enable it.")

    @group.command(name="remove", description="Stop serving this server's deck anywhere.")
    @app_commands.describe(deck="A deck this server uploaded")
    async def remove(interaction: discord.Interaction, deck: str) -> None:
        if not await may_change(interaction):
            return
        if await engine(interaction, decks.remove, deck) is REFUSED:
            return
        await reply(interaction, f"Removed `{deck}`: it is no longer served, here or on any "
                                 "server it was shared with. Learners' reviews and history "
                                 "are kept.")

    @group.command(name="export", description="Download a deck as YAML or an Anki package.")
    @app_commands.describe(deck="A deck id", format="yaml: to edit and upload; apkg: for Anki")
    @app_commands.choices(format=[app_commands.Choice(name="YAML", value="yaml"),
                                  app_commands.Choice(name="Anki (.apkg)", value="apkg")])
    async def export(interaction: discord.Interaction, deck: str, format: str) -> None:
        if not await in_server(interaction):
            return
        await interaction.response.defer(ephemeral=True, thinking=True)  # apkg takes a moment
        exported = await engine(interaction, decks.export, deck, format)
        if exported is not REFUSED:
            name, data = exported
            await reply(interaction, f"`{deck}` as {format}:",
                        file=discord.File(io.BytesIO(data), filename=name))

    async def deck_ids(interaction: discord.Interaction,
                       current: str) -> list[app_commands.Choice[str]]:
        found = await handlers.db(decks.choices, interaction.guild_id, current)
        return [app_commands.Choice(name=clip(" ".join(plain(title).split()),
                                              DISCORD.select_label), value=deck_id)
                for deck_id, title in found[:DISCORD.select_options]]

    for command in (show, enable, disable, publish, remove, export):
        command.autocomplete("deck")(deck_ids)
    return [group]


def _stem(filename: str) -> str:
    name = filename.rsplit("/", 1)[-1]
    for suffix in (".draft.yaml", ".yaml", ".yml", ".txt"):
        if name.lower().endswith(suffix):
            return name[: -len(suffix)] or "deck"
    return name or "deck"


def uploaded_text(up: Uploaded) -> str:
    what = "a new deck" if up.new else "a new version of this server's deck"
    return (f"Uploaded **{literal(up.title)}** (`{up.deck_id}`), {what}: version "
            f"{up.version}, {counted(up.cards, 'card')}. It is enabled here: learners get its "
            "cards with **/learn** and **/practice**. Share it with **/deck publish**.")


NEXT_STEP = "**Next:** fix these and upload the file again with **/deck upload**."


def rejection(filename: str, exc: DeckRejected) -> list[str]:
    """The refusal, every problem in line order naming its card, what could not be checked,
    and what comes next (the last line, which `_send` always keeps)."""
    said = str(exc)
    stored = "" if "nothing was stored" in said.lower() else f" {NOT_STORED}"
    return [f"**{literal(filename)}** was refused: {markdown(said)}{stored}",
            *map(markdown, exc.problems), *map(markdown, exc.notes), NEXT_STEP]


async def send_draft(interaction: discord.Interaction, draft: Draft) -> None:
    name = f"{_stem(draft.filename)}.draft.yaml"
    lines = [f"That is a practice page, so here is a draft deck: **{name}**. Fix what the "
             "notes below flag (each is also a `# GUESS:` comment in the file), then upload "
             f"it with **/deck upload**. {NOT_STORED}", *map(markdown, draft.notes)]
    await _send(interaction, lines, f"{_stem(draft.filename)}.notes.txt",
                [discord.File(io.BytesIO(draft.yaml.encode()), filename=name)])


async def _send(interaction: discord.Interaction, lines: list[str], overflow_name: str,
                files: list[discord.File] = (), tail: bool = False) -> None:
    """The lines in one private message; when they do not fit, all but the first go in a
    text file too, and the message keeps as many as fit (and, with `tail`, the last line
    after the note of the file: what comes next)."""
    files, text = list(files), "\n".join(lines)
    if len(text) > MESSAGE_LIMIT:
        files.append(discord.File(io.BytesIO("\n".join(lines[1:]).encode()),
                                  filename=overflow_name))
        body, end = (lines[:-1], [lines[-1]]) if tail else (lines, [])

        def note(left: int) -> str:
            return f"\n… {counted(left, 'more line')} in **{overflow_name}**."

        kept = [body[0]]
        room = MESSAGE_LIMIT - len("".join(f"\n{line}" for line in end))
        for line in body[1:]:
            if len("\n".join([*kept, line])) + len(note(len(body))) > room:
                break
            kept.append(line)
        text = "\n".join([*kept]) + note(len(body) - len(kept)) + "".join(
            f"\n{line}" for line in end)
    extra = {"files": files} if files else {}
    await reply(interaction, render.clip(text, MESSAGE_LIMIT), **extra)


def list_embed(summaries: list[DeckSummary]) -> discord.Embed:
    def line(s: DeckSummary) -> str:
        # Bundled decks are everyone's and shared ones public by definition: say it for ours.
        shared = (" · public" if s.public else " · not shared") if s.origin == "uploaded" else ""
        return (f"**{literal(s.title)}** (`{s.deck_id}`) · {counted(s.cards, 'card')} · "
                f"v{s.version} · {ORIGIN[s.origin]}{shared}")

    on = [line(s) for s in summaries if s.enabled]
    off = [line(s) for s in summaries if not s.enabled]
    parts = ["**Played here**", *(on or ["none"])]
    if off:
        parts += ["", "**Available** (turn one on with **/deck enable**)", *off]
    return discord.Embed(title="Decks on this server", colour=render.BLUE,
                         description=_fit(parts, EMBED_DESCRIPTION))


def _fit(lines: list[str], limit: int) -> str:
    """Whole lines up to `limit`, and how many were left out (many servers may share)."""
    kept: list[str] = []
    for i, text in enumerate(lines):
        if len("\n".join([*kept, text])) > limit - 40:
            return "\n".join([*kept, f"… and {len(lines) - i} more"])
        kept.append(text)
    return "\n".join(kept)


def show_embeds(deck: Deck) -> list[discord.Embed]:
    kinds = Counter(card.type for card in deck.cards)
    preview = render.card_embed(deck.cards[0], preview_of(deck.cards[0]))
    preview.set_author(name="Preview: the first card, as learners see it")
    about = discord.Embed(title=render.clip(f"{literal(deck.title)} ({deck.id})", 256),
                          colour=render.BLUE)
    about.add_field(name="Cards", value=f"{len(deck.cards)}: " + ", ".join(
        f"{n} {TYPE_LABEL.get(kind, kind)}" for kind, n in kinds.items()))
    about.add_field(name="Version", value=str(deck.version))
    about.add_field(name="Mistakes explained", value=str(len(deck.mistakes)))
    # Discord refuses a message whose embeds hold over 6000 characters in all (50035).
    room = min(EMBED_DESCRIPTION, EMBEDS_TOTAL - len(preview) - len(about))
    about.description = render.clip(markdown(deck.description), max(room, 1))
    return [about, preview]


def preview_of(card) -> Served:
    """A serve nobody answers, for rendering only: options in the file's order."""
    return preview(card.id, card.rev, datetime.now(UTC))
