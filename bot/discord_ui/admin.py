"""Commands for a server's admins, checked in their handlers as well as by Discord.

Discord hides them from members without Manage Server (`default_permissions`), but a server
owner can open a command to anyone, and a forged interaction skips the client entirely.
The permissions Discord resolved for this member in this channel come with every
interaction: each handler that changes something checks them first (`may_change`), and
every one refuses a DM (`in_server`). A refusal is a reply, not an error: no check
failure reaches the command tree.
"""

from __future__ import annotations

import discord
from discord import app_commands

from bot.discord_ui.replies import reply

IN_A_SERVER = "Use this in a server: {about}."
SETTINGS_AND_DECKS = "it is about that server's settings and decks"
MANAGE_SERVER = ("Only members with the **Manage Server** permission can use "
                 "**/{command}**. Nothing was changed.")


def admin_group(name: str, description: str) -> app_commands.Group:
    return app_commands.Group(
        name=name, description=description, guild_only=True,
        default_permissions=discord.Permissions(manage_guild=True))


async def in_server(interaction: discord.Interaction,
                    about: str = SETTINGS_AND_DECKS) -> bool:
    """False after telling the member to use a server (a forged DM), and why (`about`)."""
    if interaction.guild_id is not None:
        return True
    await reply(interaction, IN_A_SERVER.format(about=about))
    return False


async def may_change(interaction: discord.Interaction) -> bool:
    """In a server, by a member with Manage Server there; else False after saying why."""
    if not await in_server(interaction):
        return False
    permissions = interaction.permissions  # resolved by Discord for this member here
    if permissions.manage_guild or permissions.administrator:
        return True
    command = interaction.command
    await reply(interaction, MANAGE_SERVER.format(
        command=command.qualified_name if command else "this command"))
    return False
