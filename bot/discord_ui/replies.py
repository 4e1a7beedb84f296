"""Answering an interaction whatever state it is in, and failing politely."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import TypeVar

import discord

log = logging.getLogger(__name__)
APOLOGY = "Sorry, something went wrong on my side. It has been logged; please try again."
CLOSED_DMS = 50007  # Discord: cannot send messages to this user
MAX_RETRY_WAIT = 5.0
T = TypeVar("T")


async def reply(interaction: discord.Interaction, text: str, **kwargs) -> None:
    """A private message to the person who interacted: the response if still open, else a
    follow-up."""
    kwargs.setdefault("ephemeral", True)
    if interaction.response.is_done():
        await retrying(lambda: interaction.followup.send(text, **kwargs))
    else:
        await interaction.response.send_message(text, **kwargs)


def describe(interaction: discord.Interaction) -> str:
    data = interaction.data or {}
    what = data.get("name") or data.get("custom_id") or interaction.type.name
    return (f"interaction={interaction.id} what={what!r} user={interaction.user.id} "
            f"guild={interaction.guild_id} channel={interaction.channel_id}")


async def apologise(interaction: discord.Interaction, error: BaseException) -> None:
    """Log a handler's failure with its context and tell the learner, never re-raise."""
    if isinstance(error, discord.RateLimited):
        log.warning("rate limited (%.1fs) during %s", error.retry_after, describe(interaction))
        text = f"Discord is rate-limiting me; please try again in {error.retry_after:.0f} s."
    else:
        log.error("handler failed: %s", describe(interaction), exc_info=error)
        text = APOLOGY
    try:
        await reply(interaction, text)
    except (discord.HTTPException, discord.RateLimited):
        log.warning("could not send the apology for %s", describe(interaction))


async def retrying(send: Callable[[], Awaitable[T]], attempts: int = 3) -> T:
    """Call `send`, waiting out short rate limits (429) instead of failing.

    discord.py already retries 429s inside its HTTP client; this covers the ones that
    still surface (a proxy's or a webhook's), bounded so a learner is never kept waiting.
    """
    for attempt in range(1, attempts + 1):
        try:
            return await send()
        except discord.HTTPException as exc:
            if exc.status != 429 or attempt == attempts:
                raise
            wait = min(MAX_RETRY_WAIT, _retry_after(exc))
            log.warning("rate limited (429), retrying in %.2fs (attempt %d)", wait, attempt)
            await asyncio.sleep(wait)
    raise AssertionError("unreachable")


def _retry_after(exc: discord.HTTPException) -> float:
    headers = getattr(exc.response, "headers", None) or {}
    try:
        return float(headers.get("Retry-After", 1.0))
    except (TypeError, ValueError):
        return 1.0


async def dm(user: discord.abc.User, text: str) -> bool:
    """DM a user; False when their DMs are closed to the bot (Discord error 50007)."""
    try:
        await retrying(lambda: user.send(text))
    except discord.Forbidden as exc:
        if exc.code == CLOSED_DMS:
            return False
        raise
    return True
