"""How much of a phone screen a message fills (the limit: bot/discord_ui/render.py's
PHONE_SCREEN)."""

from __future__ import annotations

from bot.discord_ui import render


def on_screen(message) -> int:
    """The characters a message shows: its content and every embed's title, text, fields
    and footer."""
    return render.on_screen(message.content, message.embeds)


def labels(message) -> list[str]:
    """The message's buttons, as the learner reads them."""
    return [c.get("label") for row in message.components for c in row["components"]]
