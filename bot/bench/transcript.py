"""A transcript of a whole session with the real bot, as Markdown (issue 41): what a new
learner and a server's admin do, and every word the bot answers.

    python -m bot.bench.transcript            # writes docs/transcript.md
    python -m bot.bench.transcript -o FILE    # elsewhere ("-": stdout)

The bot is the product's own (`TutorBot` on `bot.app.build`, no sandbox) against the offline
Discord (`bot.bench.offline_discord`): discord.py's real HTTP and gateway code, in this
process, on a throwaway SQLite database. Time is a fake clock, so the learner's reminder
comes due the next day without waiting for it; a run differs from the last only in the
order the bot shuffles a card's options into. The run takes seconds.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

from bot.bench.offline_discord import InteractionRecord, OfflineDiscord

REPO = Path(__file__).resolve().parents[2]
DEFAULT_OUT = REPO / "docs" / "transcript.md"
COMMAND = "python -m bot.bench.transcript"
START = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)
WAIT_S = 60.0  # a bound for a hung bot only: each wait ends when the bot has answered

# The small community deck root uploads: the project's example of one.
SMALL_DECK = (REPO / "content" / "examples" / "tensor-basics.yaml").read_text(encoding="utf-8")

# Every step of the session, in order: the test checks that each one is in the transcript.
STEPS = ("/learn", "picks a wrong answer", "picks the right answer", "/review",
         "/practice", "/stats", "/settings", "reminder", "Snooze", "/leaderboard", "/help",
         "/deck upload", "/deck list", "/server-settings learning")


class FakeClock:
    def __init__(self, start: datetime = START):
        self.now = start

    def __call__(self) -> datetime:
        return self.now


@dataclass
class Transcript:
    parts: list[str] = field(default_factory=list)

    def step(self, who: str, did: str) -> None:
        self.parts.append(f"**{who}** › {did}\n")

    def said(self, messages: list[dict], note: str = "") -> None:
        for message in messages:
            lines = "\n".join(shown(message)).splitlines()
            self.parts.append("\n".join(f"> {line}" if line else ">" for line in lines) + "\n")
        if note:
            self.parts.append(f"_{note}_\n")
        self.parts.append("")

    def markdown(self) -> str:
        return "\n".join([
            "# A session with the tutor bot",
            "",
            "What a new learner (**ann**) and a server's admin (**root**) do, and everything "
            "the bot answers, from the real bot on an offline Discord. Generated: do not edit; "
            f"regenerate with `{COMMAND}` (it writes this file).",
            "",
            "Each step is who did what, then the bot's messages quoted: their text, each "
            "embed's title, description, fields and footer, and their buttons and menus "
            "(`[label]`, *disabled* when greyed out). \"(only you)\" marks a message only "
            "that person sees.",
            "", *self.parts]).rstrip() + "\n"


def shown(message: dict) -> list[str]:
    """A Discord message as Markdown lines: its content, embeds and components."""
    lines: list[str] = []
    if message.get("flags", 0) & 64:
        lines.append("*(only you)*")
    if message.get("content"):
        lines += [message["content"], ""]
    for embed in message.get("embeds") or []:
        if embed.get("author", {}).get("name"):
            lines.append(f"*{embed['author']['name']}*")
        if embed.get("title"):
            lines.append(f"**{embed['title']}**")
        if embed.get("description"):
            lines += [embed["description"]]
        for item in embed.get("fields") or []:
            lines += ["", f"**{item['name']}**", item["value"]]
        if embed.get("image", {}).get("url"):
            lines.append(f"(image: {embed['image']['url'].rsplit('/', 1)[-1]})")
        if embed.get("footer", {}).get("text"):
            lines += ["", f"*{embed['footer']['text']}*"]
        lines.append("")
    for attachment in message.get("attachments") or []:
        lines.append(f"📎 {attachment['filename']}")
    for row in message.get("components") or []:
        lines.append(" ".join(_component(c) for c in row.get("components", [])))
    while lines and not lines[-1]:
        lines.pop()
    return lines or ["(nothing)"]


def _component(item: dict) -> str:
    off = " *disabled*" if item.get("disabled") else ""
    if item.get("type") == 2:
        label = " ".join(p for p in ((item.get("emoji") or {}).get("name"), item.get("label"))
                         if p)
        return f"`[{label}]`{off}"
    if item.get("type") == 3:
        options = " / ".join(o["label"] for o in item.get("options", []))
        return f"`[{item.get('placeholder') or 'choose'} ▾ {options}]`{off}"
    return f"`[{item.get('label') or item.get('custom_id')}]`{off}"


def messages_of(rec: InteractionRecord) -> list[dict]:
    """What an interaction left: its own message (after edits), then its follow-ups."""
    own = [rec.message] if rec.message else ([rec.data] if rec.data else [])
    return own + [m for m in rec.followups if not own or m["id"] != own[0].get("id")]


async def answered(rec: InteractionRecord) -> InteractionRecord:
    """The interaction once the bot has filled it: a deferral waits for its follow-up."""
    if rec.callback_type == 5:
        await rec.wait_for(lambda r: r.followups, timeout=WAIT_S)
    return rec


def buttons(message: dict) -> dict[str, str]:
    return {c.get("label") or "": c["custom_id"] for row in message.get("components") or []
            for c in row["components"] if c.get("type") == 2 and "custom_id" in c}


async def run_session(out: Path | None = None, progress: Callable[[str], None] = print) -> str:
    """The session, its Markdown (also written to `out` when given)."""
    from bot.app import build
    from bot.discord_ui.client import TutorBot, use_endpoints
    from bot.discord_ui.reminders import DiscordReminderSender
    from bot.engine.reminders import ReminderSweep
    from scheduler.storage.db import sqlite_url

    clock = FakeClock()
    text = Transcript()
    with tempfile.TemporaryDirectory() as tmp, build(
            database_url=sqlite_url(Path(tmp) / "tutor.db"), clock=clock,
            sandbox=False) as app:
        dc = await OfflineDiscord().start()
        ann, root = dc.create_user("ann"), dc.create_user("root")  # there before the bot
        guild = dc.create_guild("Study Group", members=[ann, root], channel_name="study")
        gid = guild["id"]
        channel = dc.guilds[gid]["channels"][0]
        use_endpoints(dc.api_base, dc.gateway_url)
        bot = TutorBot(app.engine)
        running = asyncio.create_task(bot.start("offline-token"))
        try:
            await dc.wait_ready(timeout=WAIT_S)
            await dc.wait_commands(timeout=WAIT_S)

            async def slash(user, label: str, name: str, options=None, subcommand=None,
                            note: str = "") -> InteractionRecord:
                progress(label)
                text.step(user["username"], label)
                rec = await answered(await dc.slash(user, name, options, guild_id=gid,
                                                    subcommand=subcommand, timeout=WAIT_S))
                text.said(messages_of(rec), note)
                return rec

            async def click(user, label: str, message: dict, custom_id: str,
                            note: str = "") -> InteractionRecord:
                progress(label)
                text.step(user["username"], label)
                rec = await answered(await dc.click(user, message, custom_id, timeout=WAIT_S))
                text.said(messages_of(rec), note)
                return rec

            async def answer(user, label: str, card: dict, *, right: bool) -> None:
                """Pick the right (or a wrong) option, or chip for each blank and submit."""
                choices = _choices(app, card, right)
                if choices[0][0] == "button":
                    _, shown_as, custom_id = choices[0]
                    await click(user, f"{label}: **{shown_as}**", card, custom_id)
                    return
                for _, _shown, custom_id, value in choices:
                    progress(f"{label}: {value}")
                    rec = await dc.select(user, card, custom_id, [value], timeout=WAIT_S)
                    card = rec.message or card
                picked = ", ".join(f"**{value}** for {shown_as}" for _, shown_as, _, value
                                   in choices)
                await click(user, f"{label}: {picked}, then **Submit**", card,
                            buttons(card)["Submit"])

            # -- the learner ----------------------------------------------------------------
            learn = await slash(ann, "/learn", "learn")
            card = next(m for m in messages_of(learn) if m.get("components"))
            await answer(ann, "picks a wrong answer", card, right=False)
            await answer(ann, "picks the right answer", dc.messages[card["id"]], right=True)
            await slash(ann, "/review", "review")
            topic = app.engine.tutor.library.cards()[0].topics[0]
            await slash(ann, f"/practice topic: {topic}", "practice", {"topic": topic})
            await slash(ann, "/stats", "stats")
            await slash(ann, "/settings reminders: True timezone: Europe/Berlin "
                             "reminder_hour: 18", "settings",
                        {"reminders": True, "timezone": "Europe/Berlin", "reminder_hour": 18})

            # A day later her reminder is due: the sweep the bot runs every minute, once.
            clock.now += timedelta(days=1)
            learner = app.store.learners.get_or_create(f"discord:{ann['id']}", now=clock.now)
            app.store.learners.update(learner.id, next_reminder_at=clock.now)
            progress("reminder")
            text.step("the next day", "the reminder sweep runs (every minute in the bot)")
            dm = dc.dm_channel(ann)
            before = len(dc.channel_messages(dm["id"]))
            await ReminderSweep(app.store, DiscordReminderSender(bot), clock=clock).run()
            await dc._wait(lambda: len(dc.channel_messages(dm["id"])) > before, WAIT_S,
                           "the reminder DM")
            reminder = dc.channel_messages(dm["id"])[-1]
            text.said([reminder], "ann's DMs")
            snooze = next(cid for label, cid in buttons(reminder).items()
                          if label.startswith("Snooze"))
            await click(ann, "clicks **Snooze** in the reminder", reminder, snooze)
            await slash(ann, "/leaderboard", "leaderboard")
            await slash(ann, "/help", "help")

            # -- the admin ------------------------------------------------------------------
            progress("/deck upload")
            text.step("root", "/deck upload file: tensors.yaml")
            upload = dc.attachment(channel["id"], "tensors.yaml", SMALL_DECK.encode(),
                                   "text/yaml")
            rec = await answered(await dc.slash(root, "deck", {"file": upload}, guild_id=gid,
                                                subcommand="upload", timeout=WAIT_S))
            text.said(messages_of(rec))
            await slash(root, "/deck list", "deck", subcommand="list")
            await slash(root, "/server-settings learning", "server-settings",
                        subcommand="learning")
        finally:
            await bot.close()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(running, WAIT_S)
            await dc.stop()
    markdown = text.markdown()
    if out is not None:
        out.write_text(markdown, encoding="utf-8")
    return markdown


def _choices(app, card: dict, right: bool) -> list[tuple]:
    """What answers a served card rightly or wrongly: ("button", label, custom_id) for a
    multiple-choice card, ("select", placeholder, custom_id, chip) per blank otherwise."""
    ids = [c["custom_id"] for row in card["components"] for c in row["components"]
           if c.get("custom_id", "").startswith(("srs:opt:", "srs:pick:"))]
    served = app.store.served.load(ids[0].split(":")[2]).served["card_id"]
    shown = app.engine.tutor.library.card(served)
    if ids[0].startswith("srs:opt:"):
        correct = {o.id for o in shown.options if o.correct}
        return [min(("button", label, cid) for label, cid in buttons(card).items()
                    if cid.startswith("srs:opt:")
                    and (cid.rsplit(":", 1)[1] in correct) == right)]
    picks = []
    for row in card["components"]:
        for menu in row["components"]:
            if not menu.get("custom_id", "").startswith("srs:pick:"):
                continue
            blank = next(b for b in shown.blanks if b.id == menu["custom_id"].rsplit(":", 1)[1])
            value = blank.answer if right else sorted(
                o["value"] for o in menu["options"] if o["value"] != blank.answer)[0]
            picks.append(("select", menu.get("placeholder") or blank.id, menu["custom_id"],
                          value))
    return picks


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=COMMAND, description=__doc__.split("\n\n")[0])
    parser.add_argument("-o", "--output", default=str(DEFAULT_OUT),
                        help="where to write the Markdown ('-': stdout)")
    args = parser.parse_args(argv)
    out = None if args.output == "-" else Path(args.output)
    started = time.monotonic()
    markdown = asyncio.run(run_session(out, progress=lambda step: print(
        f"{time.monotonic() - started:6.1f} s · {step}", file=sys.stderr)))
    if out is None:
        sys.stdout.write(markdown)
    else:
        print(f"wrote {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
