"""The handlers behind a card's buttons, modals and code replies (serve, answer, hint,
code, next), reminder buttons and /forget-me: a thin layer on the engine (`bot.engine.served_cards`
keeps served cards and their attempts; `bot.engine.learners` a learner's settings). This
module only turns clicks into engine calls and results into messages, and holds no state;
the other features run their database calls through `CardHandlers.db` too.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import re
from concurrent.futures import ThreadPoolExecutor

import discord

from bot.discord_ui import refusals, render
from bot.discord_ui.components import CodeModal
from bot.discord_ui.replies import reply
from bot.engine import (
    AlreadyCounted,
    Engine,
    Finished,
    Learner,
    RepeatedAnswer,
    StaleCard,
    TutorError,
    Verdict,
    has_code_options,
    when,
)
from content.schema import ChoiceCard

log = logging.getLogger(__name__)
FENCED = re.compile(r"```(?:py|python|python3)?[ \t]*\n(?P<code>.*?)```", re.S | re.I)
NOTHING = {
    "review": "Nothing is due right now. Try **/learn** for new cards or **/practice**.",
    "learn": "No new cards left for today. Come back tomorrow, or **/practice** a topic.",
    "auto": "All caught up for now.",
    "practice": "No cards match that topic.",
}
NOT_PLAYED_HERE = "That card is not in the decks played here."


def _next_mode(kind: str) -> str:
    """Where a finished card's Next button leads: the queue it was served from."""
    return {"review": "review", "drill": "review", "remedy": "review",
            "new": "learn"}.get(kind, "practice")


def owner(user: discord.abc.User) -> str:
    """The external id of a Discord user's learner."""
    return f"discord:{user.id}"


# What a new learner reads above their first card, and /help: a few lines, no more.
WELCOME = ("👋 **Welcome!** This bot teaches with cards and spaced review:\n"
           "• **/learn**: new cards, a few a day\n"
           "• **/review**: the cards due today, spaced so they stick\n"
           "• **/practice**: any topic, any time\n"
           "Answer with the buttons: a wrong pick says what it does, the last try explains "
           "it. **/stats** shows your progress, **/settings** your daily reminder.")
HELP = WELCOME.replace("👋 **Welcome!** ", "") + (
    "\n**/leaderboard** and **/insights**: how this server is doing. "
    "**/forget-me**: delete everything about you.")


class CardHandlers:
    """Every feature's way into the engine (`db`, `learner`), and the card handlers that the
    components call as `interaction.client.handlers.on_...(...)`."""

    def __init__(self, engine: Engine):
        self.engine, self.tutor = engine, engine.tutor
        self.play, self.learners = engine.cards, engine.learners
        self._workers = ThreadPoolExecutor(8, thread_name_prefix="engine") \
            if engine.database_waits else None

    async def db(self, call, /, *args, **kwargs):
        """Run an engine call that reads or writes the database. On SQLite it is a few
        hundred microseconds of CPU: it runs on the event loop, where a thread hop would
        cost more than it saves. A database server makes it wait on the network and on the
        server's commit flush, which would stall every other learner's click (bench
        discord, PostgreSQL: 23 ticks of loop lag over 50 ms): it runs on a worker."""
        if self._workers is None:
            return call(*args, **kwargs)
        return await asyncio.get_running_loop().run_in_executor(
            self._workers, functools.partial(call, *args, **kwargs))

    async def learner(self, user: discord.abc.User) -> Learner:
        return await self.db(self.tutor.learner, owner(user), display_name=user.display_name)

    # -- serving -------------------------------------------------------------------------

    async def serve(self, interaction: discord.Interaction, mode: str, topic: str | None = None,
                    *, ephemeral: bool = True, edit: bool = False,
                    card_id: str | None = None) -> None:
        learner = await self.learner(interaction.user)
        playing = await self.db(self.play.serve, learner, mode=mode, topic=topic,
                                guild_id=interaction.guild_id, card_id=card_id)
        if playing is None:
            if card_id is not None:  # a /stats review button, clicked where its deck is off
                await reply(interaction, NOT_PLAYED_HERE)
                return
            await self._nothing(interaction, learner, mode, edit)
            return
        embed = render.card_embed(playing.card, playing.served)
        view = render.card_view(playing.card, playing.served)
        # A learner who has never answered a card is told, once above it, how this works.
        welcome = WELCOME if learner.day_reviews_day is None and not edit else None
        if edit:
            await interaction.response.edit_message(content=None, embeds=[embed], view=view)
        elif welcome and render.on_screen(welcome, [embed]) > render.PHONE_SCREEN:
            # A card whose options are code fills a phone screen alone: the welcome first.
            await interaction.response.send_message(welcome, ephemeral=ephemeral)
            await interaction.followup.send(embed=embed, view=view, ephemeral=ephemeral)
        else:
            await interaction.response.send_message(welcome, embed=embed, view=view,
                                                    ephemeral=ephemeral)

    async def _nothing(self, interaction, learner: Learner, mode: str, edit: bool) -> None:
        progress = await self.db(self.engine.plays.progress, learner, interaction.guild_id)
        text = NOTHING[mode]
        if progress.next_due:
            text += f"\nNext review: **{when(progress.next_due, progress.today)}**."
        if edit:
            await interaction.response.edit_message(embeds=[render.notice(text)], view=None)
        else:
            await reply(interaction, text)

    async def on_next(self, interaction: discord.Interaction, mode: str, topic: str | None):
        await self.serve(interaction, mode, topic, edit=True)

    async def _refused(self, interaction, serve_id: str, who: Learner | str,
                       error: TutorError) -> None:
        """Say why a click changed nothing, and leave a way forward: a click made on an
        outdated rendering also gets the card as it stands (its answer may have been
        counted while the message kept the old buttons), a finished card a Next button."""
        if isinstance(error, StaleCard):
            await self._stale(interaction, error)
            return
        if isinstance(error, RepeatedAnswer) and interaction.message is not None:
            await self._repeated(interaction, serve_id, who, error)
            return
        if isinstance(error, AlreadyCounted):
            try:
                playing = await self.db(self.play.current, serve_id, who)
            except TutorError:
                playing = None
            if playing is not None:
                await reply(interaction, f"{error} This is the card as it stands:",
                            embed=render.card_embed(playing.card, playing.served),
                            view=render.card_view(playing.card, playing.served, playing.draft))
                return
        if isinstance(error, Finished):
            await reply(interaction, refusals.words(error), view=render.next_view("auto", None))
            return
        await reply(interaction, refusals.words(error))

    async def _repeated(self, interaction, serve_id: str, who: Learner | str,
                        error: RepeatedAnswer) -> None:
        """An answer already tried on this card: no new message, the card's own line says
        so, above the verdict it had (its controls as they stand: tried options disabled,
        each blank's pick marked)."""
        try:
            playing = await self.db(self.play.current, serve_id, who)
        except TutorError as exc:
            await self._refused(interaction, serve_id, who, exc)
            return
        embeds = [render.card_embed(playing.card, playing.served, note=str(error)),
                  *interaction.message.embeds[1:2]]
        await interaction.response.edit_message(
            content=None, embeds=embeds,
            view=render.card_view(playing.card, playing.served, playing.draft))

    # -- answering -----------------------------------------------------------------------

    # A click on a card is its owner's (the served card's learner, by external id): no
    # learner lookup on the way, a sixth of a click's CPU under a burst (bench discord).

    async def on_answer(self, interaction, serve_id: str, attempt: int, response) -> None:
        who = owner(interaction.user)
        try:
            verdict = await self.db(self.play.answer, serve_id, attempt, who, response)
        except TutorError as exc:
            await self._refused(interaction, serve_id, who, exc)
            return
        await self._show(interaction, verdict)

    async def on_pick(self, interaction, serve_id: str, blank_id: str, chip_id: str) -> None:
        who = owner(interaction.user)
        try:
            await self.db(self.play.pick, serve_id, who, blank_id, chip_id)
        except TutorError as exc:
            await self._refused(interaction, serve_id, who, exc)
            return
        await interaction.response.defer()  # the select itself shows the pick

    async def on_submit(self, interaction, serve_id: str, attempt: int) -> None:
        who = owner(interaction.user)
        try:
            verdict = await self.db(self.play.submit, serve_id, attempt, who)
        except TutorError as exc:
            await self._refused(interaction, serve_id, who, exc)
            return
        await self._show(interaction, verdict)

    async def on_hint(self, interaction, serve_id: str, attempt: int) -> None:
        who = owner(interaction.user)
        try:
            playing = await self.db(self.play.hint, serve_id, attempt, who)
        except TutorError as exc:
            await self._refused(interaction, serve_id, who, exc)
            return
        await interaction.response.edit_message(
            embeds=[render.card_embed(playing.card, playing.served)],
            view=render.card_view(playing.card, playing.served, playing.draft))

    async def _show(self, interaction, verdict: Verdict) -> None:
        card = verdict.card
        if has_code_options(card):
            await self._show_below(interaction, verdict)
            return
        feedback = render.feedback_embed(card, verdict, verdict.today)
        if verdict.finished:
            mode = {"review": "review", "drill": "review", "remedy": "review",
                    "new": "learn"}.get(
                verdict.served.kind, "practice")
            embeds = [render.card_embed(card, verdict.served, finished=True), feedback]
            view = render.after_options(card, verdict, mode) if isinstance(card, ChoiceCard) \
                and card.solution else render.next_view(mode, None)
        else:
            embeds = [render.card_embed(card, verdict.served), feedback]
            view = render.card_view(card, verdict.served)
        # The welcome above a first card was read before this click: the verdict replaces
        # it, so the card and what was said of the pick fit a phone's screen.
        if interaction.response.is_done():
            await interaction.edit_original_response(content=None, embeds=embeds, view=view)
        else:
            await interaction.response.edit_message(content=None, embeds=embeds, view=view)

    async def _show_below(self, interaction, verdict: Verdict) -> None:
        """A pick on a card whose options are code: the card and its verdict together are
        more than a phone screen, so the verdict comes as a message of its own below the
        card (the card keeps its buttons while attempts are left; once it is finished it
        folds to its question, and the Next button is under the verdict)."""
        card, served = verdict.card, verdict.served
        feedback = render.feedback_embed(card, verdict, verdict.today)
        top = [render.card_embed(card, served, finished=verdict.finished)]
        view = render.after_options(card, verdict, _next_mode(served.kind)) \
            if verdict.finished else None
        controls = None if verdict.finished else render.card_view(card, served)
        if interaction.response.is_done():
            await interaction.edit_original_response(embeds=top, view=controls)
        else:
            await interaction.response.edit_message(embeds=top, view=controls)
        if view is None:
            await interaction.followup.send(embed=feedback, ephemeral=True)
        else:
            await interaction.followup.send(embed=feedback, view=view, ephemeral=True)

    async def _stale(self, interaction, error: StaleCard) -> None:
        await interaction.response.edit_message(
            embeds=[render.notice(refusals.words(error))],
            view=render.next_view("auto", None))

    # -- code cards ----------------------------------------------------------------------

    async def on_code_button(self, interaction, serve_id: str, attempt: int) -> None:
        learner = await self.learner(interaction.user)
        try:
            playing = await self.db(self.play.code_card, serve_id, attempt, learner)
        except TutorError as exc:
            await self._refused(interaction, serve_id, learner, exc)
            return
        served = playing.served  # after a run that was not judged: the learner's own code
        await interaction.response.send_modal(CodeModal(
            serve_id, attempt, served.retry_code or playing.card.starter, served.retry_error))

    async def on_reference(self, interaction, serve_id: str) -> None:
        """A finished code card's reference, for its learner only."""
        try:
            card = await self.db(self.play.reference, serve_id, owner(interaction.user))
        except TutorError as exc:
            await reply(interaction, refusals.words(exc))
            return
        await interaction.response.send_message(embed=render.reference_embed(card),
                                                ephemeral=True)

    async def on_code_modal(self, interaction, serve_id: str, attempt: int, code: str) -> None:
        learner = await self.learner(interaction.user)
        try:
            playing = await self.db(self.play.code_card, serve_id, attempt, learner)
        except TutorError as exc:
            await self._refused(interaction, serve_id, learner, exc)
            return
        # The sandbox can take longer than Discord's 3-second window: acknowledge first.
        await interaction.response.defer(ephemeral=True, thinking=True)
        try:
            verdict = await asyncio.to_thread(self.play.judge_code, playing, code, learner)
        except TutorError as exc:  # no sandbox, busy, empty code, stale, already counted
            await interaction.followup.send(refusals.words(exc), ephemeral=True)
            return
        await interaction.followup.send(
            embed=render.feedback_embed(verdict.card, verdict, verdict.today),
            view=render.after_code(verdict.card, verdict), ephemeral=True)

    async def on_code_message(self, message: discord.Message) -> bool:
        """A fenced code block sent to the bot answers the learner's open code card."""
        match = FENCED.search(message.content or "")
        if match is None:
            return False
        learner = await self.learner(message.author)
        playing = await self.db(self.play.open_code_card, learner)
        if playing is None:
            await message.reply("You have no code card open. Use **/learn** or **/practice** "
                                "to get one, then send your loop here.", mention_author=False)
            return True
        try:
            verdict = await asyncio.to_thread(self.play.judge_code, playing, match["code"],
                                              learner)
        except TutorError as exc:
            await message.reply(refusals.words(exc), mention_author=False)
            return True
        await message.reply(
            embed=render.feedback_embed(verdict.card, verdict, verdict.today),
            view=render.after_code(verdict.card, verdict), mention_author=False)
        return True

    # -- reminder buttons ----------------------------------------------------------------

    async def on_reminder(self, interaction, action: str) -> None:
        learner = await self.learner(interaction.user)
        if action == "review":
            await self.serve(interaction, "review", ephemeral=False)
            return
        if action == "snooze":
            until = await self.db(self.learners.snooze_reminders, learner)
            done = f"⏰ Snoozed: I'll remind you again <t:{int(until.timestamp())}:t>."
        else:
            await self.db(self.learners.pause_reminders, learner)
            done = ("⏸️ Reminders paused. Turn them back on any time with "
                    "**/settings reminders:True**.")
        # On the reminder itself: what was done, and no button left to press again.
        message = interaction.message
        if message is None:
            await reply(interaction, done, ephemeral=False)
            return
        await interaction.response.edit_message(
            content=f"{message.content}\n\n{done}", view=None)

    # -- forgetting ----------------------------------------------------------------------

    async def on_forget(self, interaction, user_id: int, confirmed: bool) -> None:
        if interaction.user.id != user_id:
            await reply(interaction, "Only the person who asked can confirm this.")
            return
        # The answer replaces the question, and its buttons go.
        if not confirmed:
            await interaction.response.edit_message(content="Nothing was deleted.", view=None)
            return
        await self.db(self.learners.forget, await self.learner(interaction.user))
        await interaction.response.edit_message(
            content="Done: your progress, reviews and settings are deleted.", view=None)
