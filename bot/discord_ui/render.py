"""Cards, feedback and progress as Discord embeds and components.

Everything a component needs to act later lives in its custom_id (see components.py), so
a message rendered here keeps working after a restart.
"""

from __future__ import annotations

from datetime import date

import discord

from bot.discord_ui import components as c
from bot.tutor import MAX_ATTEMPTS, Progress, Served, Verdict, correct_answer
from content.loader import AnyCard
from content.schema import BLANK_RE, ChoiceCard, CodeCard, FillInCard

LETTERS = "ABCDEFGHIJ"
BLUE, GREEN, RED, GREY = 0x5865F2, 0x57F287, 0xED4245, 0x99AAB5
KIND_LABEL = {"new": "New card", "review": "Review", "drill": "Once more", "cram": "Practice"}


def clip(text: str, limit: int) -> str:
    """Discord rejects oversize fields (50035); cut visibly instead."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def code_block(code: str) -> str:
    return f"```py\n{code.rstrip()}\n```"


def when(day: date, today: date) -> str:
    days = (day - today).days
    if days <= 0:
        return "today"
    return "tomorrow" if days == 1 else f"in {days} days ({day.isoformat()})"


def _fill_in_code(card: FillInCard) -> str:
    numbers = {blank.id: i for i, blank in enumerate(card.blanks, 1)}
    return BLANK_RE.sub(lambda m: f"[{numbers[m.group(1)]}]", card.code)


def card_embed(card: AnyCard, served: Served, finished: bool = False) -> discord.Embed:
    parts = [card.prompt]
    if isinstance(card, FillInCard):
        parts.append(code_block(_fill_in_code(card)))
    elif isinstance(card, ChoiceCard):
        if card.code:
            parts.append(code_block(card.code))
        for letter, option in zip(LETTERS, card.options, strict=False):
            parts.append(f"**{letter}.** {option.text}")
            if option.code:
                parts.append(code_block(option.code))
    else:
        parts.append(code_block(card.starter))
        parts.append("Press **Write code** (or reply with a ```py``` block in a DM).")
    embed = discord.Embed(
        title=f"{KIND_LABEL[served.kind]} · {card.difficulty} · {', '.join(card.topics)}",
        description=clip("\n".join(parts), 4096), colour=BLUE,
    )
    if served.hint_used:
        embed.add_field(name="Hint", value=clip(card.hint, 1024), inline=False)
    left = MAX_ATTEMPTS - served.attempts
    status = "answered" if finished else f"{left} attempt{'s' * (left != 1)} left"
    embed.set_footer(text=f"{status} · {card.id}")
    return embed


def _findings_text(verdict: Verdict, card: AnyCard) -> str:
    lines = []
    for f in verdict.findings:
        if f.blank and isinstance(card, FillInCard):
            number = next(i for i, b in enumerate(card.blanks, 1) if b.id == f.blank)
            lines.append(f"**[{number}] `{f.choice}`**: {f.says}")
        elif f.says:
            lines.append(f"**{f.choice}**: {f.says}")
        if f.explanation:
            lines.append(f"> **{f.mistake_title}.** {f.explanation}")
    return "\n".join(lines)


def feedback_embed(card: AnyCard, verdict: Verdict, today: date | None) -> discord.Embed:
    """What the learner sees after an attempt: right or wrong, and why."""
    if verdict.correct:
        tries = verdict.served.attempts
        title = "Correct!" if tries == 1 else f"Correct, on attempt {tries}."
        colour = GREEN
    elif verdict.finished:
        title, colour = "Not this time.", RED
    else:
        left = verdict.attempts_left
        title, colour = f"Not quite. {left} attempt{'s' * (left != 1)} left.", RED
    parts = [_findings_text(verdict, card)]
    if verdict.report and verdict.report.feedback:
        parts.append("\n".join(f"• {line}" for line in verdict.report.feedback))
    if verdict.finished:
        if not verdict.correct:
            answer = correct_answer(card)
            parts.append("**The answer:** " + (code_block(answer) if isinstance(card, CodeCard)
                                               else answer))
        parts.append(_solution(card))
        parts.append(f"**Takeaway:** {card.takeaway}")
        if verdict.due and today and verdict.served.kind in ("new", "review"):
            parts.append(f"Next review of this card: **{when(verdict.due, today)}**.")
    embed = discord.Embed(title=title, description=clip("\n\n".join(p for p in parts if p), 4096),
                          colour=colour)
    if verdict.duplicate:
        embed.set_footer(text="This answer was already recorded.")
    return embed


def _solution(card: AnyCard) -> str:
    if isinstance(card, ChoiceCard):
        return "\n".join(f"{i}. **{s.title}**: {s.detail}"
                         for i, s in enumerate(card.solution, 1))
    if isinstance(card, FillInCard):
        return card.explanation
    return ""


def card_view(card: AnyCard, served: Served, draft: dict | None = None) -> discord.ui.View:
    """The controls for answering `served` (timeout=None: they live in custom_ids)."""
    view = discord.ui.View(timeout=None)
    sid, attempt = served.serve_id, served.attempts
    if isinstance(card, ChoiceCard):
        for letter, option in zip(LETTERS, card.options, strict=False):
            view.add_item(c.OptionButton(sid, attempt, option.id, letter))
    elif isinstance(card, FillInCard):
        for number, blank in enumerate(card.blanks, 1):
            chosen = (draft or {}).get(blank.id)
            options = [discord.SelectOption(label=clip(chip.text, 100), value=chip.id,
                                            default=chip.id == chosen) for chip in card.chips]
            view.add_item(c.BlankSelect(sid, blank.id, f"Blank [{number}]", options, number - 1))
        view.add_item(c.SubmitButton(sid, attempt, len(card.blanks)))
    else:
        view.add_item(c.CodeButton(sid, attempt))
    if not served.hint_used:
        view.add_item(c.HintButton(sid, attempt))
    return view


def next_view(mode: str, topic: str | None) -> discord.ui.View:
    view = discord.ui.View(timeout=None)
    view.add_item(c.NextButton(mode, topic))
    return view


def progress_embed(name: str, p: Progress, reviewed: int, accuracy: float | None,
                   cards_total: int, cards_seen: int) -> discord.Embed:
    embed = discord.Embed(title=f"{name}'s progress", colour=BLUE)
    embed.add_field(name="Due now", value=str(p.due_now))
    embed.add_field(name="New left today", value=str(p.new_left_today))
    embed.add_field(name="Cards seen", value=f"{cards_seen} / {cards_total}")
    embed.add_field(name="Reviews", value=str(reviewed))
    embed.add_field(name="First-try accuracy",
                    value="–" if accuracy is None else f"{accuracy:.0%}")
    embed.add_field(name="Next review",
                    value=when(p.next_due, p.today) if p.next_due else
                    ("now" if p.due_now else "–"))
    return embed


def notice(text: str, colour: int = GREY) -> discord.Embed:
    return discord.Embed(description=text, colour=colour)
