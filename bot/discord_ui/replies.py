"""Answering an interaction whatever state it is in, and failing politely."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import TypeVar

import discord
from discord.webhook.async_ import AsyncWebhookAdapter, async_context

log = logging.getLogger(__name__)
APOLOGY = "Sorry, something went wrong on my side. It has been logged; please try again."
CLOSED_DMS = 50007  # Discord: cannot send messages to this user
MAX_RETRY_WAIT = 5.0
ACK_WINDOW = 3.0  # Discord refuses an interaction's first response after 3 s (10062)
ACK_FLOOR = 0.25  # a clock running ahead of Discord's must not fail every response
T = TypeVar("T")


class AckMissed(discord.DiscordException):
    """An interaction's first response could not be sent inside Discord's window: the
    learner saw "This interaction failed" and nothing more can be sent for it."""


class DeadlineAdapter(AsyncWebhookAdapter):
    """discord.py waits out a 429 (or retries a 5xx) on an interaction's first response
    however long that takes, though Discord refuses it after 3 s. This gives up when the
    window closes, so the handler stops at once instead of answering a dead interaction;
    what the click changed stays stored, and the next click on the card shows it."""

    async def create_interaction_response(self, interaction_id: int, token: str, **kwargs):
        budget = ack_budget(interaction_id, datetime.now(UTC))
        try:
            async with asyncio.timeout(budget):
                data = await super().create_interaction_response(interaction_id, token,
                                                                 **kwargs)
        except TimeoutError:
            raise AckMissed(f"no acknowledgement within Discord's {ACK_WINDOW:.0f} s "
                            f"(gave up after {budget:.2f} s)") from None
        # discord.py asks Discord to echo the message back (with_response) and builds a
        # Message of it, which the bot never reads: a twentieth of a click's CPU.
        if isinstance(data, dict) and isinstance(resource := data.get("resource"), dict):
            resource.pop("message", None)
        return data


def ack_budget(interaction_id: int, now: datetime) -> float:
    """Seconds left to acknowledge, by the interaction's own timestamp (its snowflake)."""
    age = now.timestamp() - ((interaction_id >> 22) + discord.utils.DISCORD_EPOCH) / 1000
    return min(ACK_WINDOW, max(ACK_FLOOR, ACK_WINDOW - age))


def bound_acknowledgements() -> None:
    """Make every interaction answered from this task (and the tasks it starts) use the
    DeadlineAdapter; call it before connecting."""
    async_context.set(DeadlineAdapter())


async def reply(interaction: discord.Interaction, text: str, **kwargs) -> None:
    """A private message to the person who interacted: the response if still open, else a
    follow-up."""
    kwargs.setdefault("ephemeral", True)
    if interaction.response.is_done():
        await retrying(lambda: interaction.followup.send(text, **kwargs))
    else:
        await interaction.response.send_message(text, **kwargs)


def describe(interaction: discord.Interaction) -> str:
    data = interaction.data if isinstance(interaction.data, dict) else {}  # forged: anything
    what = data.get("name") or data.get("custom_id") or interaction.type.name
    return (f"interaction={interaction.id} what={what!r} user={interaction.user.id} "
            f"guild={interaction.guild_id} channel={interaction.channel_id}")


async def apologise(interaction: discord.Interaction, error: BaseException) -> None:
    """Log a handler's failure with its context and tell the learner, never re-raise."""
    if isinstance(error, AckMissed):  # nothing can reach the learner any more
        log.warning("%s: %s", error, describe(interaction))
        return
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
