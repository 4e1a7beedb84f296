"""What several features' commands share: where learner commands work, the timezone
autocomplete, and the schedulers offered."""

from __future__ import annotations

import zoneinfo
from functools import cache

from discord import app_commands

from bot.engine import DISCORD, SCHEDULERS


@cache
def _zones() -> tuple[str, ...]:
    return tuple(sorted(zoneinfo.available_timezones()))


def learner_command(**kwargs):
    """A learner command: usable in servers and in a DM with the bot."""
    def wrap(func):
        command = app_commands.command(**kwargs)(func)
        return app_commands.allowed_contexts(guilds=True, dms=True, private_channels=False)(
            command)
    return wrap


def scheduler_choices(fallback_name: str, fallback_value: str) -> list[app_commands.Choice]:
    """Each scheduler, then the choice to leave it to the level above (server, default)."""
    return [*(app_commands.Choice(name=name, value=value) for value, name in SCHEDULERS.items()),
            app_commands.Choice(name=fallback_name, value=fallback_value)]


async def timezone_names(interaction, current: str) -> list[app_commands.Choice[str]]:
    needle = current.lower().replace(" ", "_")
    return [app_commands.Choice(name=z, value=z) for z in _zones()
            if needle in z.lower()][:DISCORD.select_options]
