"""Persistent buttons and selects: their state is their custom_id (at most 100 chars).

A click is routed by its custom_id alone (`route`, from the client's on_interaction), so a
card served before a restart, or by another bot process, is still answerable. The attempt
number inside each id makes a click on an outdated rendering (or a double click)
recognisable.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Iterator

import discord

from bot.discord_ui.replies import apologise
from bot.engine import DISCORD
from content.safe_text import plain

SERVE = r"(?P<serve>[0-9a-f]{8,32})"
MESSAGE_ROWS, ROW_WIDTH = DISCORD.message_rows, DISCORD.row_width
SLUG = r"[a-z][a-z0-9_-]{0,39}"
INPUT_LABEL = 45  # a modal text input's label


async def handled(interaction: discord.Interaction, call: Awaitable[None]) -> None:
    """Await a component's handler call (`interaction.client.handlers.on_...(...)`); a failure
    is logged and apologised for, never raised."""
    try:
        await call
    except Exception as exc:  # noqa: BLE001 - one broken click must not hurt the bot
        await apologise(interaction, exc)


class CardItem:
    """A card's persistent component: `make(...)` renders it as Discord's component JSON
    (what discord.py's own item gives), its custom_id matching `template`; the client
    routes a click on it (`route`) straight to `handle`. Neither a discord.py DynamicItem
    (discord.py rebuilds the whole message's view for every click on one of those) nor a
    discord.py item at all: building one costs ten times its JSON, on every click."""

    template = ""
    compiled: re.Pattern
    kind = discord.InteractionType.component  # what a click on it arrives as

    def __init_subclass__(cls, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        cls.compiled = re.compile(cls.template)

    @staticmethod
    def handle(handlers, interaction, match: re.Match) -> Awaitable[None]:
        raise NotImplementedError


def button(label: str, custom_id: str,
           style: discord.ButtonStyle = discord.ButtonStyle.secondary,
           emoji: str | None = None, disabled: bool = False) -> dict:
    """A button as Discord's JSON, as discord.ui.Button writes it."""
    data = {"type": 2, "style": style.value, "disabled": disabled, "label": label,
            "custom_id": custom_id}
    if emoji:
        data["emoji"] = {"id": None, "name": emoji}
    return data


class RoutedView(discord.ui.View):
    """A card's controls, rows of component JSON: their clicks are routed by custom_id
    (`route`), never by discord.py's view store. So it reports itself finished, and
    discord.py keeps no copy: a stored view (buttons with custom_ids, no timeout) would stay
    in memory for every card message the process ever sent or edited, and each click on one
    would run a no-op callback task besides ours."""

    def __init__(self, rows: list[list[dict]]) -> None:
        super().__init__(timeout=None)
        if len(rows) > MESSAGE_ROWS or any(not 0 < len(row) <= ROW_WIDTH for row in rows):
            raise ValueError(f"at most {MESSAGE_ROWS} rows of 1 to {ROW_WIDTH} components")
        self.rows = rows

    def to_components(self) -> list[dict]:
        return [{"type": 1, "components": row} for row in self.rows]

    def is_finished(self) -> bool:
        return True


def route(interaction: discord.Interaction, custom_id: str) -> Awaitable[None] | None:
    """The handler call for a card's component or form (by its custom_id and the kind of
    interaction), or None if it is none of them."""
    for item in CARD_ITEMS:
        if item.kind is interaction.type and (match := item.compiled.fullmatch(custom_id)):
            return handled(interaction, item.handle(interaction.client.handlers, interaction,
                                                    match))
    return None


class OptionButton(CardItem):
    template = rf"srs:opt:{SERVE}:(?P<attempt>\d):(?P<option>{SLUG})"

    TRIED = "✗"  # beside the letter of an option already tried: text, not colour alone

    @classmethod
    def make(cls, serve_id: str, attempt: int, option_id: str, label: str,
             tried: bool = False) -> dict:
        """`tried`: an option this served card already chose, known wrong: shown marked
        and disabled, so it cannot be chosen again."""
        if tried:
            return button(f"{label} {cls.TRIED}", f"srs:opt:{serve_id}:{attempt}:{option_id}",
                          discord.ButtonStyle.danger, disabled=True)
        return button(label, f"srs:opt:{serve_id}:{attempt}:{option_id}")

    @staticmethod
    def handle(handlers, interaction, match):
        return handlers.on_answer(interaction, match["serve"], int(match["attempt"]),
                                  match["option"])


class BlankSelect(CardItem):
    template = rf"srs:pick:{SERVE}:(?P<blank>{SLUG})"

    @classmethod
    def make(cls, serve_id: str, blank_id: str, placeholder: str,
             options: list[tuple[str, str, bool]]) -> dict:
        """`options`: (label, value, shown as picked) each."""
        return {"type": 3, "custom_id": f"srs:pick:{serve_id}:{blank_id}", "min_values": 1,
                "max_values": 1, "disabled": False, "required": True,
                "placeholder": placeholder,
                "options": [{"label": label, "value": value, "default": default}
                            for label, value, default in options]}

    @staticmethod
    def handle(handlers, interaction, match):
        values = (interaction.data or {}).get("values") or [""]
        return handlers.on_pick(interaction, match["serve"], match["blank"], values[0])


class _AttemptButton(CardItem):
    """A button on one attempt of a served card: `srs:<action>:<serve id>:<attempt>`."""

    action = ""
    label, emoji, style = "", None, discord.ButtonStyle.secondary

    @classmethod
    def make(cls, serve_id: str, attempt: int) -> dict:
        return button(cls.label, f"srs:{cls.action}:{serve_id}:{attempt}", cls.style, cls.emoji)


class SubmitButton(_AttemptButton):
    template = rf"srs:submit:{SERVE}:(?P<attempt>\d)"
    action, label, style = "submit", "Submit", discord.ButtonStyle.primary

    @staticmethod
    def handle(handlers, interaction, match):
        return handlers.on_submit(interaction, match["serve"], int(match["attempt"]))


class HintButton(_AttemptButton):
    template = rf"srs:hint:{SERVE}:(?P<attempt>\d)"
    action, label, emoji = "hint", "Hint", "💡"

    @staticmethod
    def handle(handlers, interaction, match):
        return handlers.on_hint(interaction, match["serve"], int(match["attempt"]))


class CodeButton(_AttemptButton):
    template = rf"srs:code:{SERVE}:(?P<attempt>\d)"
    action, label, style = "code", "Write code", discord.ButtonStyle.primary

    @staticmethod
    def handle(handlers, interaction, match):
        return handlers.on_code_button(interaction, match["serve"], int(match["attempt"]))


class ReferenceButton(CardItem):
    """Under a finished code card's verdict: its reference, shown on request."""

    template = rf"srs:ref:{SERVE}"

    @classmethod
    def make(cls, serve_id: str, label: str) -> dict:
        return button(label, f"srs:ref:{serve_id}", emoji="📖")

    @staticmethod
    def handle(handlers, interaction, match):
        return handlers.on_reference(interaction, match["serve"])


class NextButton(CardItem):
    template = rf"srs:next:(?P<mode>auto|review|learn|practice)(?::(?P<topic>{SLUG}))?"

    @classmethod
    def make(cls, mode: str, topic: str | None) -> dict:
        return button("Next card", f"srs:next:{mode}" + (f":{topic}" if topic else ""),
                      discord.ButtonStyle.primary)

    @staticmethod
    def handle(handlers, interaction, match):
        return handlers.on_next(interaction, match["mode"], match["topic"])


class CodeModal(discord.ui.Modal):
    """The learner's code. Submits are routed by custom_id (see client.on_interaction),
    so a modal opened before a restart is still judged."""

    def __init__(self, serve_id: str, attempt: int, starter: str, error: str = ""):
        """`starter`: the code it opens on (the card's starter, or the learner's own code
        after a run that was not judged, whose first line of error is `error`: the
        input's label then says it, cut to Discord's 45 characters)."""
        super().__init__(title="Your training loop", custom_id=f"srs:modal:{serve_id}:{attempt}",
                         timeout=900)
        label = " ".join(plain(error).replace("`", "").split())
        if len(label) > INPUT_LABEL:
            label = label[:INPUT_LABEL - 1] + "…"
        # A bidi override in a stranger's starter would show the learner other code.
        self.code = discord.ui.TextInput(
            label=label or "Python code", style=discord.TextStyle.paragraph, custom_id="code",
            default=plain(starter)[:DISCORD.modal_text], max_length=DISCORD.modal_text,
            required=True)
        self.add_item(self.code)

    async def on_submit(self, interaction: discord.Interaction) -> None:
        """Answered by the custom_id route instead (CodeForm)."""


class CodeForm(CardItem):
    """A CodeModal's submit: routed by its custom_id like the card's buttons, so a form
    opened before a restart is still judged."""

    template = rf"srs:modal:{SERVE}:(?P<attempt>\d)"
    kind = discord.InteractionType.modal_submit

    @staticmethod
    def handle(handlers, interaction, match):
        code = next(_field_values(interaction.data, "code"), "")
        return handlers.on_code_modal(interaction, match["serve"], int(match["attempt"]), code)


def _field_values(node, custom_id: str) -> Iterator[str]:
    """Values of modal fields with this custom_id, wherever the layout nests them."""
    if isinstance(node, dict):
        if node.get("custom_id") == custom_id and isinstance(node.get("value"), str):
            yield node["value"]
        for child in node.values():
            yield from _field_values(child, custom_id)
    elif isinstance(node, list):
        for child in node:
            yield from _field_values(child, custom_id)



CARD_ITEMS = (OptionButton, BlankSelect, SubmitButton, HintButton, CodeButton, NextButton,
              CodeForm, ReferenceButton)
