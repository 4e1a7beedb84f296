"""Discord's size limits, checked on an uploaded deck where its text will be shown.

`bot/discord_ui/render.py` clips oversize text so Discord accepts it; a bundled deck is
written to fit, an uploaded one is checked here at upload time so that nothing a learner
needs is clipped away. Each check measures the text as the renderer assembles it (letters,
numbered blanks, bold markers) and reports (YAML path, message) naming the limit.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from bot.engine.feedback import KIND_LABEL, LETTERS, answer_text, card_text
from bot.engine.judging import correct_answer
from content.schema import ChoiceCard, CodeCard, Deck, FillInCard


@dataclass(frozen=True)
class MessageLimits:
    """Discord's size limits, named once: uploads are measured by them here and the Discord
    front end renders within them (it imports `DISCORD` from the engine's face)."""

    message: int = 2000  # a message's content
    embed_title: int = 256
    embed_description: int = 4096
    embeds_total: int = 6000  # all of a message's embeds together
    field_value: int = 1024
    select_label: int = 100  # a select option's label; also an autocomplete choice's name
    select_options: int = 25  # a select's options; also autocomplete choices
    custom_id: int = 100
    button_label: int = 80
    message_components: int = 25  # buttons per message (5 rows of 5)
    message_rows: int = 5
    row_width: int = 5
    modal_text: int = 4000  # a modal text input's value


DISCORD = MessageLimits()
EMBED_TITLE, EMBED_DESCRIPTION = DISCORD.embed_title, DISCORD.embed_description
FIELD_VALUE, SELECT_LABEL, SELECT_OPTIONS = (DISCORD.field_value, DISCORD.select_label,
                                             DISCORD.select_options)
MESSAGE_COMPONENTS, MESSAGE_ROWS, MODAL_TEXT = (DISCORD.message_components,
                                                DISCORD.message_rows, DISCORD.modal_text)
NEXT_REVIEW = 60  # "Next review of this card: **in 365 days (2027-12-02)**." and spacing

Problem = tuple[tuple[Any, ...], str]


def _over(length: int, limit: int, what: str) -> str:
    return f"{what} is {length:,} characters; Discord shows at most {limit:,}"


def check_limits(deck: Deck) -> list[Problem]:
    problems: list[Problem] = []
    if len(deck.title) > SELECT_LABEL:
        problems.append((("title",), _over(len(deck.title), SELECT_LABEL,
                         "the deck title (a deck choice's name in menus)")))
    if len(deck.description) > EMBED_DESCRIPTION:
        problems.append((("description",), _over(len(deck.description), EMBED_DESCRIPTION,
                         "the description (an embed description)")))
    mistakes = {m.id: m for m in deck.mistakes}
    for index, card in enumerate(deck.cards):
        problems += _card_problems(card, ("cards", index), mistakes)
    return problems


def _card_problems(card, base: tuple, mistakes: dict) -> Iterator[Problem]:
    title = f"{max(KIND_LABEL.values(), key=len)} · {card.difficulty} · {', '.join(card.topics)}"
    if len(title) > EMBED_TITLE:
        yield (*base, "topics"), _over(len(title), EMBED_TITLE,
                                       "the card's title (kind, difficulty and topics)")
    shown = _shown_length(card)
    if shown > EMBED_DESCRIPTION:
        yield (*base, "prompt"), _over(shown, EMBED_DESCRIPTION,
                                       "the card as shown (prompt, code and options)")
    if len(card.hint) > FIELD_VALUE:
        yield (*base, "hint"), _over(len(card.hint), FIELD_VALUE, "the hint (an embed field)")
    worst = 0  # the longest feedback on wrong choices one attempt can get
    if isinstance(card, FillInCard):
        yield from _fill_in_problems(card, base)
        chips = {chip.id: chip.text for chip in card.chips}
        for b, blank in enumerate(card.blanks, 1):
            longest = 0
            for chip_id, wrong in blank.wrong.items():
                text = _wrong_text(f"[{b}] `{chips.get(chip_id, chip_id)}`", wrong.says,
                                   mistakes.get(wrong.mistake))
                longest = max(longest, len(text) + 1)
                if len(text) > FIELD_VALUE:
                    yield ((*base, "blanks", b - 1, "wrong", chip_id, "says"), _over(
                        len(text), FIELD_VALUE, "this wrong chip's feedback (says, mistake "
                        "title and explanation)"))
            worst += longest
    elif isinstance(card, ChoiceCard):
        if len(card.options) > MESSAGE_COMPONENTS - 1:
            yield (*base, "options"), (
                f"the card has {len(card.options)} options; a message holds "
                f"{MESSAGE_COMPONENTS} buttons, one per option (labelled A, B, ...) and the "
                f"hint, so at most {MESSAGE_COMPONENTS - 1} options")
        for o, option in enumerate(card.options):
            if option.correct:
                continue
            text = _wrong_text(f"{LETTERS[o]}. {option.text}", option.says or "",
                               mistakes.get(option.mistake))
            worst = max(worst, len(text))
            if len(text) > FIELD_VALUE:
                yield (*base, "options", o, "says"), _over(
                    len(text), FIELD_VALUE, "this wrong option's feedback (option, says, "
                    "mistake title and explanation)")
    else:
        yield from _code_problems(card, base, mistakes)
    reveal = len("\n\n".join(_reveal_parts(card))) + NEXT_REVIEW + _earlier_named(card,
                                                                                  mistakes)
    if worst + reveal > EMBED_DESCRIPTION:
        yield (*base, "takeaway"), _over(worst + reveal, EMBED_DESCRIPTION, (
            "the feedback after a last wrong attempt (mistakes, answer, explanation and "
            "takeaway)"))


def _shown_length(card) -> int:
    """The card as shown, before any pick. Options are shuffled per serve, but only their
    letters depend on the order (one character each): a code-option card shows in full
    whichever option makes it shortest (`feedback.code_options_text`)."""
    return len(card_text(card, zip(LETTERS, getattr(card, "options", []), strict=False)))


def _earlier_named(card, mistakes: dict) -> int:
    """At most what the final verdict adds for earlier attempts' mistakes, by name (the
    last wrong attempt's are explained in full: `worst` bounds them; see
    `feedback.Feedback.earlier`)."""
    if isinstance(card, FillInCard):
        ids = {w.mistake for blank in card.blanks for w in blank.wrong.values()}
    elif isinstance(card, ChoiceCard):
        ids = {o.mistake for o in card.options if not o.correct}
    else:
        return 0
    titles = [mistakes[m].title for m in ids if m in mistakes]
    return len("Your earlier picks:\n") + sum(len(f"> **{t}.**\n") for t in titles) \
        if titles else 0


def _wrong_text(choice: str, says: str, mistake) -> str:
    lines = [f"**{choice}**: {says}"]
    if mistake is not None:
        lines.append(f"> **{mistake.title}.** {mistake.explanation}")
    return "\n".join(lines)


def _reveal_parts(card) -> list[str]:
    key = next((o for o in card.options if o.correct), None) if isinstance(
        card, ChoiceCard) else None
    parts = [answer_text(correct_answer(card), isinstance(card, CodeCard),
                         LETTERS[0] if key else None, key and key.code)]
    if isinstance(card, ChoiceCard):
        parts.append("\n".join(f"{i}. **{s.title}**: {s.detail}"
                               for i, s in enumerate(card.solution, 1)))
    elif isinstance(card, FillInCard):
        parts.append(card.explanation)
    parts.append(f"**Takeaway:** {card.takeaway}")
    return parts


def _fill_in_problems(card: FillInCard, base: tuple) -> Iterator[Problem]:
    if len(card.chips) > SELECT_OPTIONS:
        yield (*base, "chips"), (f"the card has {len(card.chips)} chips; a Discord select "
                                 f"menu holds at most {SELECT_OPTIONS} options")
    if len(card.blanks) > MESSAGE_ROWS - 1:
        yield (*base, "blanks"), (
            f"the card has {len(card.blanks)} blanks; a message has {MESSAGE_ROWS} rows, one "
            f"select menu per blank and one for the buttons, so at most {MESSAGE_ROWS - 1}")
    for c, chip in enumerate(card.chips):
        if len(chip.text) > SELECT_LABEL:
            yield (*base, "chips", c, "text"), _over(len(chip.text), SELECT_LABEL,
                                                     "a chip (a select option's label)")


def _code_problems(card: CodeCard, base: tuple, mistakes: dict) -> Iterator[Problem]:
    if len(card.starter) > MODAL_TEXT:
        yield (*base, "starter"), _over(len(card.starter), MODAL_TEXT,
                                        "the starter code (the code editor's text)")
    for m, mistake_id in enumerate(card.mistakes):
        mistake = mistakes.get(mistake_id)
        text = _wrong_text("your code", "", mistake) if mistake else ""
        if len(text) > FIELD_VALUE:
            yield (*base, "mistakes", m), _over(len(text), FIELD_VALUE,
                                                "this mistake's feedback (title and explanation)")
