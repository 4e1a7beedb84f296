"""The baseline of `tutor bench discord` (issue 28): a bare discord.py bot, benchmark code
and not part of the product. `/practice` answers an embed with four option buttons; a
click on one edits the message; with `--sqlite PATH`, each click first writes one durable
SQLite transaction (WAL, synchronous=NORMAL: a row inserted and a counter updated, on the
event loop as `tutor run` does on SQLite). The same Discord calls as ours, one response per
interaction, and nothing else: what any bot on discord.py pays.

    python -m bot.bench.bare_bot [--sqlite PATH]   (DISCORD_TOKEN, DISCORD_API_BASE_URL,
                                                    DISCORD_GATEWAY_URL from the environment)
"""

from __future__ import annotations

import argparse
import itertools
import os
import sqlite3
import time

import discord
from discord import app_commands

from bot.discord_ui.client import intents, use_endpoints

OPTIONS = ("a", "b", "c", "d")
_serves = itertools.count()


def _card(serve: int, attempt: int, said: str | None = None) -> dict:
    view = discord.ui.View(timeout=None)
    for option in OPTIONS:
        view.add_item(discord.ui.Button(label=option.upper(),
                                        custom_id=f"srs:opt:{serve:08x}:{attempt}:{option}"))
    embed = discord.Embed(title="Practice · medium · concept",
                          description="Which call clears the accumulated gradients?")
    embeds = [embed] if said is None else [embed, discord.Embed(title=said)]
    return {"embeds": embeds, "view": view}


class BareBot(discord.Client):
    def __init__(self, sqlite_path: str | None):
        super().__init__(intents=intents(), allowed_mentions=discord.AllowedMentions.none())
        self.tree = app_commands.CommandTree(self)
        self.db = _open(sqlite_path) if sqlite_path else None

        @self.tree.command(name="practice", description="A card, answered with a click.")
        @app_commands.describe(topic="What to practise")
        async def practice(interaction: discord.Interaction, topic: str | None = None) -> None:
            await interaction.response.send_message(**_card(next(_serves), 0),
                                                    ephemeral=True)

    async def setup_hook(self) -> None:
        await self.tree.sync()

    async def on_interaction(self, interaction: discord.Interaction) -> None:
        custom_id = (interaction.data or {}).get("custom_id", "")
        if interaction.type is not discord.InteractionType.component or not custom_id.startswith(
                "srs:opt:"):
            return
        _, _, serve, attempt, option = custom_id.split(":")
        if self.db is not None:
            with self.db:  # one transaction, committed on exit
                self.db.execute("INSERT INTO click (user_id, custom_id, at) VALUES (?, ?, ?)",
                                (interaction.user.id, custom_id, time.time()))
                self.db.execute("UPDATE counter SET n = n + 1 WHERE id = 1")
        await interaction.response.edit_message(**_card(int(serve, 16), int(attempt) + 1,
                                                        f"You picked {option}."))


def _open(path: str) -> sqlite3.Connection:
    db = sqlite3.connect(path, isolation_level="DEFERRED")
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=NORMAL")
    with db:
        db.execute("CREATE TABLE IF NOT EXISTS click (id INTEGER PRIMARY KEY, user_id INTEGER,"
                   " custom_id TEXT, at REAL)")
        db.execute("CREATE TABLE IF NOT EXISTS counter (id INTEGER PRIMARY KEY, n INTEGER)")
        db.execute("INSERT OR IGNORE INTO counter VALUES (1, 0)")
    return db


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sqlite", help="one durable SQLite write per click, in this file")
    args = parser.parse_args(argv)
    use_endpoints(os.environ["DISCORD_API_BASE_URL"], os.environ["DISCORD_GATEWAY_URL"])
    BareBot(args.sqlite).run(os.environ["DISCORD_TOKEN"], log_handler=None)


if __name__ == "__main__":
    main()
