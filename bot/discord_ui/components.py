"""Persistent buttons and selects: their state is their custom_id (at most 100 chars).

discord.py rebuilds a DynamicItem from any matching custom_id, so a card served before a
restart, or by another bot process, is still answerable. The attempt number inside each
id makes a click on an outdated rendering (or a double click) recognisable.
"""

from __future__ import annotations

from collections.abc import Awaitable

import discord

from bot.discord_ui.replies import apologise
from content.safe_text import plain

SERVE = r"(?P<serve>[0-9a-f]{8,32})"
SLUG = r"[a-z][a-z0-9_-]{0,39}"


async def handled(interaction: discord.Interaction, call: Awaitable[None]) -> None:
    """Await a component's handler call (`interaction.client.handlers.on_...(...)`); a failure
    is logged and apologised for, never raised."""
    try:
        await call
    except Exception as exc:  # noqa: BLE001 - one broken click must not hurt the bot
        await apologise(interaction, exc)


class OptionButton(discord.ui.DynamicItem[discord.ui.Button],
                   template=rf"srs:opt:{SERVE}:(?P<attempt>\d):(?P<option>{SLUG})"):
    def __init__(self, serve_id: str, attempt: int, option_id: str, label: str):
        super().__init__(discord.ui.Button(
            label=label, style=discord.ButtonStyle.secondary,
            custom_id=f"srs:opt:{serve_id}:{attempt}:{option_id}", row=0))
        self.serve_id, self.attempt, self.option_id = serve_id, attempt, option_id

    @classmethod
    async def from_custom_id(cls, interaction, item, match):
        return cls(match["serve"], int(match["attempt"]), match["option"], item.label or "?")

    async def callback(self, interaction: discord.Interaction) -> None:
        await handled(interaction, interaction.client.handlers.on_answer(
            interaction, self.serve_id, self.attempt, self.option_id))


class BlankSelect(discord.ui.DynamicItem[discord.ui.Select],
                  template=rf"srs:pick:{SERVE}:(?P<blank>{SLUG})"):
    def __init__(self, serve_id: str, blank_id: str, placeholder: str = "Blank",
                 options: list[discord.SelectOption] | None = None, row: int = 0):
        super().__init__(discord.ui.Select(
            custom_id=f"srs:pick:{serve_id}:{blank_id}", placeholder=placeholder,
            options=options or [discord.SelectOption(label="?")], row=row))
        self.serve_id, self.blank_id = serve_id, blank_id

    @classmethod
    async def from_custom_id(cls, interaction, item, match):
        return cls(match["serve"], match["blank"])

    async def callback(self, interaction: discord.Interaction) -> None:
        values = (interaction.data or {}).get("values") or [""]
        await handled(interaction, interaction.client.handlers.on_pick(
            interaction, self.serve_id, self.blank_id, values[0]))


class _AttemptButton(discord.ui.DynamicItem[discord.ui.Button],
                     template=rf"srs:(?P<action>submit|hint|code):{SERVE}:(?P<attempt>\d)"):
    """A button on one attempt of a served card: `srs:<action>:<serve id>:<attempt>`.
    Only its subclasses are registered, each with its own action's template."""

    action = ""
    label, emoji, style = "", None, discord.ButtonStyle.secondary

    def __init__(self, serve_id: str, attempt: int, row: int = 4):
        super().__init__(discord.ui.Button(
            label=self.label, emoji=self.emoji, style=self.style,
            custom_id=f"srs:{self.action}:{serve_id}:{attempt}", row=row))
        self.serve_id, self.attempt = serve_id, attempt

    @classmethod
    async def from_custom_id(cls, interaction, item, match):
        return cls(match["serve"], int(match["attempt"]))

    async def callback(self, interaction: discord.Interaction) -> None:
        await handled(interaction, self.handle(interaction.client.handlers, interaction))

    def handle(self, handlers, interaction) -> Awaitable[None]:
        raise NotImplementedError


class SubmitButton(_AttemptButton, template=rf"srs:submit:{SERVE}:(?P<attempt>\d)"):
    action, label, style = "submit", "Submit", discord.ButtonStyle.primary

    def handle(self, handlers, interaction) -> Awaitable[None]:
        return handlers.on_submit(interaction, self.serve_id, self.attempt)


class HintButton(_AttemptButton, template=rf"srs:hint:{SERVE}:(?P<attempt>\d)"):
    action, label, emoji = "hint", "Hint", "💡"

    def handle(self, handlers, interaction) -> Awaitable[None]:
        return handlers.on_hint(interaction, self.serve_id, self.attempt)


class CodeButton(_AttemptButton, template=rf"srs:code:{SERVE}:(?P<attempt>\d)"):
    action, label, style = "code", "Write code", discord.ButtonStyle.primary

    def handle(self, handlers, interaction) -> Awaitable[None]:
        return handlers.on_code_button(interaction, self.serve_id, self.attempt)


class NextButton(discord.ui.DynamicItem[discord.ui.Button],
                 template=rf"srs:next:(?P<mode>auto|review|learn|practice)(?::(?P<topic>{SLUG}))?"):
    def __init__(self, mode: str, topic: str | None):
        super().__init__(discord.ui.Button(
            label="Next card", style=discord.ButtonStyle.primary,
            custom_id=f"srs:next:{mode}" + (f":{topic}" if topic else "")))
        self.mode, self.topic = mode, topic

    @classmethod
    async def from_custom_id(cls, interaction, item, match):
        return cls(match["mode"], match["topic"])

    async def callback(self, interaction: discord.Interaction) -> None:
        await handled(interaction, interaction.client.handlers.on_next(
            interaction, self.mode, self.topic))


class CodeModal(discord.ui.Modal):
    """The learner's code. Submits are routed by custom_id (see client.on_interaction),
    so a modal opened before a restart is still judged."""

    def __init__(self, serve_id: str, attempt: int, starter: str):
        super().__init__(title="Your training loop", custom_id=f"srs:modal:{serve_id}:{attempt}",
                         timeout=900)
        # A bidi override in a stranger's starter would show the learner other code.
        self.code = discord.ui.TextInput(
            label="Python code", style=discord.TextStyle.paragraph, custom_id="code",
            default=plain(starter)[:4000], max_length=4000, required=True)
        self.add_item(self.code)

    async def on_submit(self, interaction: discord.Interaction) -> None:
        """Answered by the custom_id route instead."""


MODAL_TEMPLATE = rf"srs:modal:{SERVE}:(?P<attempt>\d)"
CARD_ITEMS = (OptionButton, BlankSelect, SubmitButton, HintButton, CodeButton, NextButton)
