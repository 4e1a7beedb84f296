"""Playing cards in Discord: serve, answer, hint, code, next. A thin layer on the engine.

Served cards are stored (served_card) so any click, after a restart too, finds its card;
the stored attempt count is a compare-and-set guard, so a double click or a click on an
outdated rendering is answered once and told so the second time.
"""

from __future__ import annotations

import asyncio
import logging
import re
from dataclasses import dataclass
from datetime import timedelta

import discord

from bot.discord_ui import render
from bot.discord_ui.components import CodeModal
from bot.discord_ui.replies import reply
from bot.tutor import (
    InvalidAnswer,
    Served,
    StaleCard,
    Tutor,
    TutorError,
    Verdict,
)
from content.schema import CodeCard
from scheduler.models import Learner

log = logging.getLogger(__name__)
SNOOZE = timedelta(hours=1)
FENCED = re.compile(r"```(?:py|python|python3)?[ \t]*\n(?P<code>.*?)```", re.S | re.I)
NOTHING = {
    "review": "Nothing is due right now. Try **/learn** for new cards or **/practice**.",
    "learn": "No new cards left for today. Come back tomorrow, or **/practice** a topic.",
    "auto": "All caught up for now.",
    "practice": "No cards match that topic.",
}


@dataclass(frozen=True)
class Loaded:
    served: Served
    draft: dict
    learner: Learner


class CardFlow:
    def __init__(self, tutor: Tutor):
        self.tutor = tutor
        self.store = tutor.store

    def learner(self, user: discord.abc.User) -> Learner:
        return self.tutor.learner(f"discord:{user.id}", display_name=user.display_name)

    # -- serving -------------------------------------------------------------------------

    async def serve(self, interaction: discord.Interaction, mode: str, topic: str | None = None,
                    *, ephemeral: bool = True, edit: bool = False,
                    card_id: str | None = None) -> None:
        learner = self.learner(interaction.user)
        decks = (self.store.guild_settings(interaction.guild_id).decks
                 if interaction.guild_id else None)
        served = self.tutor.next_card(learner, mode=mode, topic=topic,
                                      guild_id=interaction.guild_id, only=card_id, decks=decks)
        if served is None:
            await self._nothing(interaction, learner, mode, edit)
            return
        self.store.save_served(served.serve_id, learner.id, served.to_json(), served.served_at)
        card = self.tutor.card(served)
        embed, view = render.card_embed(card, served), render.card_view(card, served)
        if edit:
            await interaction.response.edit_message(content=None, embeds=[embed], view=view)
        else:
            await interaction.response.send_message(embed=embed, view=view, ephemeral=ephemeral)

    async def _nothing(self, interaction, learner: Learner, mode: str, edit: bool) -> None:
        progress = self.tutor.progress(learner)
        text = NOTHING[mode]
        if progress.next_due:
            text += f"\nNext review: **{render.when(progress.next_due, progress.today)}**."
        if edit:
            await interaction.response.edit_message(embeds=[render.notice(text)], view=None)
        else:
            await reply(interaction, text)

    async def on_next(self, interaction: discord.Interaction, mode: str, topic: str | None):
        await self.serve(interaction, mode, topic, edit=True)

    # -- loading a served card for a click -----------------------------------------------

    async def _load(self, interaction: discord.Interaction, serve_id: str,
                    attempt: int | None = None) -> Loaded | None:
        """The served card behind a click, or None after telling the clicker why not."""
        row = self.store.load_served(serve_id)
        if row is None:
            await reply(interaction, "This card is no longer available. Use **/review** "
                                     "or **/learn** for a new one.")
            return None
        served = Served.from_json(row.served)
        learner = self.learner(interaction.user)
        if learner.id != served.learner_id:
            await reply(interaction, "This card was served to someone else. Use **/review** "
                                     "to get your own.")
            return None
        if row.finished:
            await reply(interaction, "This card was already answered. Press **Next card** "
                                     "or use **/review**.")
            return None
        if attempt is not None and attempt != served.attempts:
            await reply(interaction, "That click was already counted.")
            return None
        return Loaded(served, row.draft, learner)

    # -- answering -----------------------------------------------------------------------

    async def on_answer(self, interaction, serve_id: str, attempt: int, response) -> None:
        loaded = await self._load(interaction, serve_id, attempt)
        if loaded is None:
            return
        try:
            verdict = self.tutor.answer(loaded.served, response)
        except StaleCard as exc:
            self.store.advance_served(serve_id, attempt, loaded.served.to_json(), True)
            await self._stale(interaction, str(exc))
            return
        except InvalidAnswer as exc:
            await reply(interaction, str(exc))
            return
        await self._show(interaction, loaded, verdict)

    async def on_pick(self, interaction, serve_id: str, blank_id: str, chip_id: str) -> None:
        loaded = await self._load(interaction, serve_id)
        if loaded is None:
            return
        self.store.set_draft(serve_id, blank_id, chip_id)
        await interaction.response.defer()  # the select itself shows the pick

    async def on_submit(self, interaction, serve_id: str, attempt: int) -> None:
        loaded = await self._load(interaction, serve_id, attempt)
        if loaded is None:
            return
        card = self.tutor.card(loaded.served)
        missing = [i for i, b in enumerate(card.blanks, 1) if b.id not in loaded.draft]
        if missing:
            await reply(interaction, "Pick an option for blank "
                        + ", ".join(f"[{i}]" for i in missing) + " first.")
            return
        await self.on_answer(interaction, serve_id, attempt, dict(loaded.draft))

    async def on_hint(self, interaction, serve_id: str, attempt: int) -> None:
        loaded = await self._load(interaction, serve_id, attempt)
        if loaded is None:
            return
        served, _ = self.tutor.hint(loaded.served)
        self.store.advance_served(serve_id, attempt, served.to_json(), False)
        card = self.tutor.card(served)
        await interaction.response.edit_message(
            embeds=[render.card_embed(card, served)],
            view=render.card_view(card, served, loaded.draft))

    async def _show(self, interaction, loaded: Loaded, verdict: Verdict) -> None:
        if not self.store.advance_served(loaded.served.serve_id, loaded.served.attempts,
                                         verdict.served.to_json(), verdict.finished):
            await reply(interaction, "That answer was already counted.")
            return
        card = self.tutor.card(verdict.served)
        today = self.tutor.today(loaded.learner)
        feedback = render.feedback_embed(card, verdict, today)
        if verdict.finished:
            mode = {"review": "review", "drill": "review", "new": "learn"}.get(
                verdict.served.kind, "practice")
            embeds = [render.card_embed(card, verdict.served, finished=True), feedback]
            view = render.next_view(mode, None)
        else:
            embeds = [render.card_embed(card, verdict.served), feedback]
            view = render.card_view(card, verdict.served)
        if interaction.response.is_done():
            await interaction.edit_original_response(embeds=embeds, view=view)
        else:
            await interaction.response.edit_message(embeds=embeds, view=view)

    async def _stale(self, interaction, why: str) -> None:
        await interaction.response.edit_message(
            embeds=[render.notice(why + " Press **Next card** for a fresh one.")],
            view=render.next_view("auto", None))

    # -- code cards ----------------------------------------------------------------------

    async def on_code_button(self, interaction, serve_id: str, attempt: int) -> None:
        loaded = await self._load(interaction, serve_id, attempt)
        if loaded is None:
            return
        card = self.tutor.card(loaded.served)
        await interaction.response.send_modal(CodeModal(serve_id, attempt, card.starter))

    async def on_code_modal(self, interaction, serve_id: str, attempt: int, code: str) -> None:
        loaded = await self._load(interaction, serve_id, attempt)
        if loaded is None:
            return
        # The sandbox can take longer than Discord's 3-second window: acknowledge first.
        await interaction.response.defer(ephemeral=True, thinking=True)
        verdict = await self._judge(interaction, loaded, code)
        if verdict is None:
            return
        if not self.store.advance_served(serve_id, attempt, verdict.served.to_json(), True):
            await interaction.followup.send("That answer was already counted.", ephemeral=True)
            return
        card = self.tutor.card(verdict.served)
        await interaction.followup.send(
            embed=render.feedback_embed(card, verdict, self.tutor.today(loaded.learner)),
            view=render.next_view("auto", None), ephemeral=True)

    async def _judge(self, interaction, loaded: Loaded, code: str) -> Verdict | None:
        try:
            return await asyncio.to_thread(self.tutor.answer, loaded.served, code)
        except TutorError as exc:  # no sandbox, busy, empty code, stale card
            await interaction.followup.send(str(exc), ephemeral=True)
            return None

    async def on_code_message(self, message: discord.Message) -> bool:
        """A fenced code block sent to the bot answers the learner's open code card."""
        match = FENCED.search(message.content or "")
        if match is None:
            return False
        learner = self.learner(message.author)
        for row in self.store.open_served(learner.id):
            served = Served.from_json(row.served)
            if self.tutor.library.has_card(served.card_id) and isinstance(
                    self.tutor.library.card(served.card_id), CodeCard):
                break
        else:
            await message.reply("You have no code card open. Use **/learn** or **/practice** "
                                "to get one, then send your loop here.", mention_author=False)
            return True
        try:
            verdict = await asyncio.to_thread(self.tutor.answer, served, match["code"])
        except TutorError as exc:
            await message.reply(str(exc), mention_author=False)
            return True
        self.store.advance_served(served.serve_id, served.attempts, verdict.served.to_json(),
                                  True)
        card = self.tutor.card(verdict.served)
        await message.reply(
            embed=render.feedback_embed(card, verdict, self.tutor.today(learner)),
            view=render.next_view("auto", None), mention_author=False)
        return True

    # -- reminder buttons ----------------------------------------------------------------

    async def on_reminder(self, interaction, action: str) -> None:
        learner = self.learner(interaction.user)
        if action == "review":
            await self.serve(interaction, "review", ephemeral=False)
            return
        if action == "snooze":
            until = self.tutor.clock() + SNOOZE
            self.store.update_learner(learner.id, next_reminder_at=until)
            await reply(interaction, f"Snoozed: I'll remind you again <t:{int(until.timestamp())}"
                                     ":t>.", ephemeral=False)
            return
        self.store.update_learner(learner.id, reminders_enabled=False, next_reminder_at=None)
        await reply(interaction, "Reminders paused. Turn them back on any time with "
                                 "**/settings reminders:True**.", ephemeral=False)

    # -- forgetting ----------------------------------------------------------------------

    async def on_forget(self, interaction, user_id: int, confirmed: bool) -> None:
        if interaction.user.id != user_id:
            await reply(interaction, "Only the person who asked can confirm this.")
            return
        if not confirmed:
            await interaction.response.edit_message(
                embeds=[render.notice("Nothing was deleted.")], view=None)
            return
        learner = self.learner(interaction.user)
        self.store.delete_learner(learner.id)
        await interaction.response.edit_message(
            embeds=[render.notice("Done: your progress, reviews and settings are deleted.")],
            view=None)
