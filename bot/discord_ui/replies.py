"""Answering an interaction whatever state it is in, and failing politely."""

from __future__ import annotations

import logging

import discord

log = logging.getLogger(__name__)
APOLOGY = "Sorry, something went wrong on my side. It has been logged; please try again."
CLOSED_DMS = 50007  # Discord: cannot send messages to this user


async def reply(interaction: discord.Interaction, text: str, **kwargs) -> None:
    """A private message to the person who interacted: the response if still open, else a
    follow-up."""
    kwargs.setdefault("ephemeral", True)
    if interaction.response.is_done():
        await interaction.followup.send(text, **kwargs)
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


async def dm(user: discord.abc.User, text: str) -> bool:
    """DM a user; False when their DMs are closed to the bot (Discord error 50007)."""
    try:
        await user.send(text)
    except discord.Forbidden as exc:
        if exc.code == CLOSED_DMS:
            return False
        raise
    return True
