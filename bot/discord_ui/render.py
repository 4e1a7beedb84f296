"""Cards, feedback and progress as Discord embeds and components.

Everything a component needs to act later lives in its custom_id (see components.py), so
a message rendered here keeps working after a restart.
"""

from __future__ import annotations

from datetime import date

import discord

from bot.discord_ui import components as c
from bot.engine import (
    DISCORD,
    FREE_RETRIES,
    KIND_LABEL,
    MAX_ATTEMPTS,
    REPEATED,
    Check,
    Feedback,
    Served,
    Verdict,
    answer_text,
    blank_states,
    card_text,
    feedback_of,
    first_sentence,
    has_code_options,
    lettered,
    reference_name,
    shown,
    topic_name,
    tried_options,
)
from content.loader import AnyCard
from content.safe_text import clip, code_block, code_span, markdown, plain
from content.schema import ChoiceCard, CodeCard, FillInCard

BLUE, GREEN, RED, GREY = 0x5865F2, 0x57F287, 0xED4245, 0x99AAB5
# One phone screen: the one measure of "fits a phone", the product's and every test's.
PHONE_SCREEN = 1_800


def on_screen(content: str | None, embeds: list[discord.Embed]) -> int:
    """The characters a message shows: its content and every embed's title, text, fields
    and footer. PHONE_SCREEN bounds it at 1,800: an embed on a 6.1 to 6.7-inch phone at
    Discord's default text size shows about 40 lines of 45 characters, one screen. Every
    card, and every verdict under its card, is rendered to fit (tests/discord/
    test_verdicts_phone.py, test_code_cards_phone.py, test_code_option_cards.py)."""
    return len(content or "") + sum(
        len(e.title or "") + len(e.description or "") + len(e.footer.text or "")
        + sum(len(f.name or "") + len(f.value or "") for f in e.fields) for e in embeds)


# A code card's footer, until it is answered: what a run costs.
RUN_RULE = f"Syntax errors are free (up to {FREE_RETRIES}); one run is graded."


class AnswerEmbed(discord.Embed):
    """A card's or a verdict's embed, sent on every click: its JSON is built from what
    these embeds set (title, description, colour, fields, footer), where discord.py's
    to_dict tries each of its twenty attributes (5 us an embed; a click sends two).
    tests/discord/test_card_controls.py holds the two equal."""

    def to_dict(self) -> dict:
        data = {"flags": self._flags, "type": self.type}
        if self._colour:
            data["color"] = self._colour.value
        if self.title:
            data["title"] = self.title
        if self.description:
            data["description"] = self.description
        if getattr(self, "_fields", None) is not None:
            data["fields"] = self._fields
        if getattr(self, "_footer", None) is not None:
            data["footer"] = self._footer
        return data


def card_embed(card: AnyCard, served: Served, finished: bool = False,
               note: str | None = None) -> discord.Embed:
    """The card; `note`: a line under its status (why a click changed nothing). A finished
    card folds to its question: its verdict, under it, shows the answer, and the two fit
    one phone screen."""
    embed = AnswerEmbed(
        title=f"{KIND_LABEL[served.kind]} · {card.difficulty} · "
              f"{', '.join(topic_name(t) for t in card.topics)}",
        description=clip(f"**{markdown(card.prompt)}**" if finished
                         else card_text(card, lettered(card, served), served.chosen),
                         DISCORD.embed_description),
        colour=BLUE,
    )
    if served.hint_used and not finished:
        embed.add_field(name="Hint", value=clip(markdown(card.hint), DISCORD.field_value),
                        inline=False)
    left = MAX_ATTEMPTS - served.attempts
    status = ("answered" if finished else RUN_RULE
              if isinstance(card, CodeCard) else f"{left} attempt{'s' * (left != 1)} left")
    # The card's id is ours, not the learner's.
    embed.set_footer(text=f"{status}\n{note}" if note else status)
    return embed


def _mistakes_text(fb: Feedback, brief: bool = False) -> str:
    """`brief`: each mistake's paragraph folded to its first sentence."""
    fold = first_sentence if brief else str
    lines = []
    for m in fb.mistakes:
        if m.blank:
            lines.append(f"**[{m.blank}] {code_span(m.choice, 100)}**: {markdown(m.says)}")
        elif m.says:
            letter = f"{m.letter}. " if m.letter else ""
            lines.append(f"**{letter}{markdown(m.choice)}**: {markdown(m.says)}")
        if m.repeated:
            lines.append(f"> **{markdown(m.title)}** ({REPEATED}).")
        elif m.explanation:
            lines.append(f"> **{markdown(m.title)}.** {markdown(fold(m.explanation))}")
    if fb.earlier:  # once finished: what the earlier picks got wrong, each mistake once
        lines.append("Your earlier picks:")
        lines += [f"> **{markdown(m.title)}.** {markdown(fold(m.explanation))}"
                  if m.explanation
                  else f"> **{markdown(m.title)}.**" for m in fb.earlier]
    return "\n".join(lines)


def go_on(card: AnyCard, served: Served, fb: Feedback) -> str:
    """How to go on after a wrong pick before the last try."""
    if isinstance(card, FillInCard) and len(card.blanks) > 1:
        right = any(b.status for b in blank_states(card, served))
        return ("Change each ❌ pick, then **Submit**." + " Your ✅ picks stay." * right
                + " Stuck? Press **Hint**." * fb.hint_left)
    return "Try again, or press **Hint**." if fb.hint_left else "Try again."


def feedback_embed(card: AnyCard, verdict: Verdict, today: date | None) -> discord.Embed:
    """What the learner sees after an attempt: right or wrong, and why. What the checker
    measured comes first: its lines quote the learner's text as code, and markdown pairs
    backticks left to right, so no deck text after them can reach back into those spans."""
    fb = feedback_of(card, verdict, today)
    if isinstance(card, CodeCard) and fb.finished:
        return _code_verdict(fb)
    if has_code_options(card):
        return _code_option_verdict(card, verdict, fb)
    title, colour = fb.headline, GREEN if fb.correct else RED
    if fb.retry:
        colour = GREY
    elif not fb.finished:
        left = fb.attempts_left
        title = f"{title} {left} attempt{'s' * (left != 1)} left."
    measured = "\n".join(f"• {plain(line)}" for line in fb.measured)
    if fb.finished:
        embed = _fitted_verdict(card, verdict, fb, title, colour, measured)
    else:
        parts = [measured, _mistakes_text(fb)]
        parts.append(fb.retry_note if fb.retry else "" if isinstance(card, CodeCard)
                     else go_on(card, verdict.served, fb))
        embed = _verdict_embed(title, colour, parts, fb)
    if fb.retry and not fb.duplicate:
        embed.set_footer(text=RUN_RULE)
    return embed


def _fitted_verdict(card: AnyCard, verdict: Verdict, fb: Feedback, title: str, colour: int,
                    measured: str) -> AnswerEmbed:
    """A finished verdict that fits one phone screen under its folded card: everything in
    full where it fits; else the card's explanation folded to its first sentence (the
    takeaway says it short), then each mistake's paragraph too. A multiple-choice card's
    steps are a button away (after_options)."""
    room = PHONE_SCREEN - on_screen(None, [card_embed(card, verdict.served, finished=True)])
    explanation = None if fb.steps else fb.explanation
    for brief_why, brief_mistakes in ((False, False), (True, False), (True, True)):
        why = first_sentence(explanation) if brief_why and explanation else explanation
        parts = [measured, _mistakes_text(fb, brief_mistakes),
                 *_ending(fb, fb.answer_is_code, why)]
        embed = _verdict_embed(title, colour, parts, fb)
        if on_screen(None, [embed]) <= room:
            break
    return embed


def _check_line(check: Check) -> str:
    """One failed check of a code answer, as a bullet: the mistake's title, what was
    measured in the learner's run (checker text that quotes the learner's code as code
    spans: it comes before any deck text that follows it), the first sentence of why."""
    measured = plain(check.measured) if check.measured else ""
    if check.title is None:
        return f"• {measured}"
    head = f"• **{markdown(check.title)}**"
    if check.repeated:
        head += f" ({REPEATED})"
    said = [measured if measured[-1:] in ".!?" else f"{measured}."] if measured else []
    if check.brief:
        said.append(markdown(check.brief))
    return f"{head}: {' '.join(said)}" if said else head


def _code_verdict(fb: Feedback) -> discord.Embed:
    """A judged code answer: a bullet per failed check, the takeaway and the next review;
    the reference is behind the verdict's button (`reference_embed`), not inline."""
    parts = ["\n".join(_check_line(check) for check in fb.checks)]
    if fb.takeaway:
        parts.append(f"**Takeaway:** {markdown(fb.takeaway)}")
    if fb.next_review:
        parts.append(f"Next review of this card: **{fb.next_review}**.")
    embed = AnswerEmbed(title=fb.headline, colour=GREEN if fb.correct else RED,
                        description=clip("\n\n".join(p for p in parts if p),
                                         DISCORD.embed_description))
    if fb.duplicate:
        embed.set_footer(text="This answer was already recorded.")
    return embed


def _code_option_verdict(card: AnyCard, verdict: Verdict, fb: Feedback) -> discord.Embed:
    """A pick on a card whose options are code, short enough for a phone under the card:
    what the picked loop does and how to go on; once finished, the first sentence of why
    (and of each earlier pick's mistake), the right letter with its code and the takeaway
    (the solution's steps: `reference_embed`)."""
    title, colour = fb.headline, GREEN if fb.correct else RED
    if not fb.finished:
        title = f"{title} {fb.attempts_left} attempt{'s' * (fb.attempts_left != 1)} left."
    lines = []
    for m in fb.mistakes:
        says = markdown(m.says or m.choice)
        lines.append(f"**{m.letter}.** {says}" if m.letter else says)
        if m.repeated:
            lines.append(f"> **{markdown(m.title)}** ({REPEATED}).")
        elif m.explanation:
            lines.append(f"> **{markdown(m.title)}.** {markdown(first_sentence(m.explanation))}")
    lines += [f"> **{markdown(m.title)}.** {markdown(first_sentence(m.explanation))}"
              if m.explanation else f"> **{markdown(m.title)}.**" for m in fb.earlier]
    parts = ["\n".join(lines)]
    if not fb.finished:
        parts.append(go_on(card, verdict.served, fb))
    if fb.finished:
        parts += _ending(fb, False, None)  # the steps: a button away
    return _verdict_embed(title, colour, parts, fb)


def _ending(fb: Feedback, answer_is_code: bool, explanation: str | None) -> list[str]:
    """What a finished verdict ends with: the answer, the explanation where one is shown
    here, the takeaway and the next review."""
    parts = []
    if fb.answer is not None:
        parts.append(answer_text(fb.answer, answer_is_code, fb.answer_letter, fb.answer_code))
    if explanation:
        parts.append(markdown(explanation))
    parts.append(f"**Takeaway:** {markdown(fb.takeaway)}")
    if fb.next_review:
        parts.append(f"Next review of this card: **{fb.next_review}**.")
    return parts


def _verdict_embed(title: str, colour: int, parts: list[str], fb: Feedback) -> AnswerEmbed:
    embed = AnswerEmbed(title=title, colour=colour, description=clip(
        "\n\n".join(p for p in parts if p), DISCORD.embed_description))
    if fb.duplicate:
        embed.set_footer(text="This answer was already recorded.")
    return embed


def reference_embed(card: CodeCard | ChoiceCard) -> discord.Embed:
    """A finished card's solution, shown on request: a code card's reference, or the
    steps of a card whose options are code."""
    if isinstance(card, CodeCard):
        text = code_block(card.reference)
    else:
        text = "\n".join(f"{i}. **{markdown(t.title)}**: {markdown(t.detail)}"
                         for i, t in enumerate(card.solution, 1))
    return AnswerEmbed(title=reference_label(card), colour=GREY,
                       description=clip(text, DISCORD.embed_description))


def reference_label(card: CodeCard | ChoiceCard) -> str:
    if isinstance(card, ChoiceCard):
        return "Why this is right"
    return f"Show a correct {reference_name(card)}"


def card_view(card: AnyCard, served: Served, draft: dict | None = None) -> discord.ui.View:
    """The controls for answering `served` (their state lives in custom_ids): a choice
    card's options in rows of five, a fill-in card's select menus (a row each) and Submit,
    a code card's editor button beside the hint; the hint on a row of its own where one is
    left (deck_limits keeps every card inside Discord's five rows)."""
    sid, attempt = served.serve_id, served.attempts
    hint = [] if served.hint_used else [c.HintButton.make(sid, attempt)]
    if isinstance(card, CodeCard):
        return c.RoutedView([[c.CodeButton.make(sid, attempt), *hint]])
    if isinstance(card, ChoiceCard):
        tried = tried_options(card, served)
        buttons = [c.OptionButton.make(sid, attempt, option.id, letter, option.id in tried)
                   for letter, option in lettered(card, served)]
        rows = [buttons[i:i + c.ROW_WIDTH] for i in range(0, len(buttons), c.ROW_WIDTH)]
    else:
        chips = shown(card, served)
        rows = [[c.BlankSelect.make(sid, blank.blank_id, _placeholder(blank), [
            (_chip_label(chip.text, blank.mark(chip.id)), chip.id, chip.id == blank.pick)
            for chip in chips])] for blank in blank_states(card, served, draft)]
        rows.append([c.SubmitButton.make(sid, attempt)])
    if hint and len(rows) == c.MESSAGE_ROWS:  # no row left: beside the last ones
        rows[-1] += hint
    elif hint:
        rows.append(hint)
    return c.RoutedView(rows)


MARKS = {True: "✅", False: "❌"}  # a chip's or blank's standing: text, not colour alone


def _chip_label(text: str, mark: bool | None) -> str:
    """A chip as its blank's select lists it, marked once an attempt showed it right or
    wrong there."""
    if mark is None:
        return plain(text)[:DISCORD.select_label]
    return f"{plain(text)[:DISCORD.select_label - 2]} {MARKS[mark]}"


def _placeholder(blank) -> str:
    """What a blank's select says with nothing picked (a blank whose pick was wrong)."""
    return f"Blank [{blank.number}]" + (" ❌ pick again" if blank.wrong and blank.right is None
                                        else "")


def after_code(card: AnyCard, verdict: Verdict) -> discord.ui.View:
    """The controls under a code verdict: the card's own again when the code may be sent
    again (it ran no training), else Next."""
    if not verdict.finished:
        return card_view(card, verdict.served)
    return c.RoutedView([[c.NextButton.make("auto", None),
                          c.ReferenceButton.make(verdict.served.serve_id,
                                                 reference_label(card))]])


def after_options(card: ChoiceCard, verdict: Verdict, mode: str) -> discord.ui.View:
    """Under a finished multiple-choice verdict: Next, and its solution's steps on request
    (inline they would take a phone's screen)."""
    return c.RoutedView([[c.NextButton.make(mode, None),
                          c.ReferenceButton.make(verdict.served.serve_id,
                                                 reference_label(card))]])


def next_view(mode: str, topic: str | None) -> discord.ui.View:
    return c.RoutedView([[c.NextButton.make(mode, topic)]])


def notice(text: str, colour: int = GREY) -> discord.Embed:
    return discord.Embed(description=text, colour=colour)
