"""What to tell a learner, decided once for every front end: after an attempt, and the card
text both front ends show the same way (option letters, numbered blanks, kind labels).

The engine's `Verdict` says what happened; `feedback_of()` turns it into the decisions a
learner sees (right or wrong, which mistakes, attempts left, whether the answer is
revealed, the solution, the takeaway, the next review) as plain values. The terminal and
Discord only format them.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Collection
from dataclasses import dataclass
from datetime import date

from bot.engine.judging import correct_answer
from bot.engine.option_order import in_order
from bot.engine.outcomes import Verdict
from bot.engine.served import Served
from content.checkers import BEHAVIOUR
from content.loader import AnyCard
from content.safe_text import code_block, markdown
from content.schema import BLANK_RE, Chip, ChoiceCard, CodeCard, FillInCard, Option

LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"  # options and chips are shown as A, B, C, ...
# What code that is not judged stopped before (`CodeReport.ran_no_training`): (past,
# present), a train loop's by default, else by its checker.
TRAINING = ("it trained", "training")
STOPPED_BEFORE = {BEHAVIOUR: ("any case returned", "any case returns")}
KIND_LABEL = {"new": "New card", "review": "Review", "drill": "Once more",
              "remedy": "On a recent mistake", "cram": "Practice"}


@dataclass(frozen=True, slots=True)
class Mistake:
    """One wrong choice (a chip in a blank, an option, or what the checker found).

    Before the card's last try only `says` is told, what the choice does (a wrong pick's
    whole explanation would give the answer away while tries are left): `title` and
    `explanation` are "" then. They go into the card's final verdict, each mistake once."""

    choice: str
    blank: int | None  # the blank's number ([1], [2], ...) for a chip
    says: str  # what this choice actually does ("" when nothing is said)
    title: str
    explanation: str  # "" before the last try, and when `repeated`
    letter: str | None = None  # a chosen option's letter as this serve showed it
    # Its explanation is already in this verdict (another blank, the same mistake): only
    # its title and what this choice does are told again.
    repeated: bool = False


@dataclass(frozen=True, slots=True)
class Check:
    """One check a code answer failed: its mistake's title (None: no mistake explains
    it), what the checker measured in the learner's run (None: nothing said), and the
    mistake's explanation folded to its first sentence ("" once told on this card)."""

    title: str | None
    measured: str | None
    brief: str
    repeated: bool = False


@dataclass(frozen=True, slots=True)
class Feedback:
    correct: bool
    finished: bool
    attempt: int  # which attempt this was
    attempts_left: int
    mistakes: tuple[Mistake, ...]
    measured: tuple[str, ...]  # what the code checker measured, with its numbers
    answer: str | None  # revealed once the attempts are used without a right answer
    answer_is_code: bool
    # A choice card's key when revealed: its letter as served and its code, if it has some
    # (an option "This loop" says nothing without them).
    answer_letter: str | None
    answer_code: str | None
    steps: tuple[tuple[str, str], ...]  # a choice card's solution, step by step
    explanation: str  # a fill-in card's explanation
    takeaway: str | None  # once finished
    next_review: str | None  # "tomorrow", "in 6 days (2026-12-08)", once scheduled
    duplicate: bool  # the same answer was already recorded
    # Code that stopped before it trained: not judged, no attempt used; it may be sent again
    # (free `retries_left` more times; past them a run counts whatever it does).
    retry: bool = False
    retries_left: int = 0
    # What such code stopped before, as this card says it: (past, present).
    stopped_before: tuple[str, str] = TRAINING
    # Once finished: the mistakes of earlier attempts that this attempt did not make again,
    # each once, the latest first: explained in full when no later attempt was wrong, else
    # named (`explanation` ""). Before the last try a wrong pick is told in one line.
    earlier: tuple[Mistake, ...] = ()
    # Before the last try: whether the hint is still there to ask for.
    hint_left: bool = False
    # A code answer's failed checks, one each (its mistakes with what was measured of
    # each, then what no mistake explains); () for other cards.
    checks: tuple[Check, ...] = ()

    @property
    def headline(self) -> str:
        if self.retry:
            return f"Not judged: your code stopped before {self.stopped_before[0]}."
        if self.correct:
            return "Correct!" if self.attempt == 1 else f"Correct, on attempt {self.attempt}."
        return "Not this time." if self.finished else "Not quite."


    @property
    def retry_note(self) -> str:
        """What a learner whose code was not judged may do next."""
        return retry_text(self.retries_left, self.stopped_before[1])


REPEATED = "explained above"


def retry_text(retries_left: int, before: str = "training") -> str:
    """What a learner whose code stopped before `before` (it was not judged) may do next."""
    if retries_left:
        return (f"That run used no attempt: fix it and send your code again ({retries_left} "
                f"more such run{'s' * (retries_left != 1)} free on this card).")
    return ("That run used no attempt: fix it and send your code again. From now on a run "
            f"counts even if it stops before {before}.")


def first_sentence(text: str) -> str:
    """An explanation folded to its first sentence (a period, ! or ? before a space; a
    period inside a name such as `.grad` or `e.g.` is not an end)."""
    match = re.search(r"(?<!\be\.g)(?<!\bi\.e)[.!?](?=\s+[A-Z(`*])", text)
    return text[:match.end()] if match else text


def code_checks(verdict: Verdict, mistakes: list[Mistake]) -> tuple[Check, ...]:
    """A code answer's failed checks (and warnings), one each. A checker's report lists the
    line it measured for each mistake id in the same order as the ids, then the lines no
    mistake explains (content/checkers/_verdict.py); a mistake the deck does not register
    is told by its line alone."""
    report = verdict.report
    if report is None or verdict.retry:  # a pass may carry a warning (leftover_gradients)
        return ()
    ids, lines = report.mistakes, report.feedback
    by_id = dict(zip(ids, lines, strict=False)) if len(lines) >= len(ids) else {}
    checks, told = [], set()
    for finding, m in zip(verdict.findings, mistakes, strict=True):
        told.add(finding.mistake_id)
        checks.append(Check(m.title, by_id.get(finding.mistake_id),
                            first_sentence(m.explanation), m.repeated))
    paired = {i for i, m in enumerate(ids) if m in told and by_id}
    checks += [Check(None, line, "") for i, line in enumerate(lines) if i not in paired]
    return tuple(checks)


def reference_name(card: CodeCard) -> str:
    """What a code card's reference is, as a learner asks for it: a loop, or a behaviour
    exercise's solution."""
    return "solution" if card.checker == BEHAVIOUR else "loop"


def when(day: date, today: date) -> str:
    """A review day as a learner reads it."""
    days = (day - today).days
    if days <= 0:
        return "today"
    return "tomorrow" if days == 1 else f"in {days} days ({day.isoformat()})"


def shown(card: AnyCard, served: Served) -> list[Option] | list[Chip]:
    """The card's options or chips in the order this serve shows them."""
    return in_order(card, served.order)


def lettered(card: AnyCard, served: Served) -> list[tuple[str, Option | Chip]]:
    """The same, each with the letter it is shown under."""
    return list(zip(LETTERS, shown(card, served), strict=False))


def blank_number(card: FillInCard, blank_id: str) -> int:
    return next(i for i, b in enumerate(card.blanks, 1) if b.id == blank_id)


def numbered_code(card: FillInCard) -> str:
    """The card's code with each blank shown as its number: `optimizer.[1]()`."""
    return BLANK_RE.sub(lambda m: f"[{blank_number(card, m.group(1))}]", card.code)


def card_text(card: AnyCard, options, tried: Collection[str] = ()) -> str:
    """A card as Discord shows it: the prompt, its code, each option under its letter
    (`options`: (letter, option) pairs in the shown order; `tried`: the ids of options
    picked wrong so far). The upload limits measure the same text
    (bot/engine/deck_limits.py). Deck text may be a stranger's: see content/safe_text."""
    parts = [markdown(card.prompt)]
    if isinstance(card, FillInCard):
        parts.append(code_block(numbered_code(card)))
    elif has_code_options(card):
        return code_options_text(card, list(options), tried)
    elif isinstance(card, ChoiceCard):
        if card.code:
            parts.append(code_block(card.code))
        for letter, option in options:
            parts.append(f"**{letter}.** {markdown(option.text)}")
            if option.code:
                parts.append(code_block(option.code))
    else:
        parts.append(code_block(card.starter))
        parts.append("Press **Write code** (or reply with a ```py``` block in a DM).")
    return "\n".join(parts)


def has_code_options(card: AnyCard) -> bool:
    """A choice card whose options are code ("which loop is right?")."""
    return isinstance(card, ChoiceCard) and any(option.code for option in card.options)


def code_options_text(card: ChoiceCard, options: list[tuple[str, Option]],
                      tried: Collection[str] = ()) -> str:
    """A card whose options are code, short enough for a phone: the card's own code, one
    option's code in full under its letter, then each other option as the lines where it
    differs from that one (a diff, a line of context each side), and the question last,
    right above the buttons. The option shown in full is the one that makes the card
    shortest, so no option order makes it longer; an option already picked wrong is only
    its letter. Option texts are shown only where they tell options apart (a deck's
    options often all read "This loop")."""
    open_ = [(letter, o) for letter, o in options if o.code and o.id not in tried]
    bases = open_ or [(letter, o) for letter, o in options if o.code][:1]
    return min((_code_options_on(card, options, tried, base) for base in bases), key=len)


def _code_options_on(card: ChoiceCard, options: list[tuple[str, Option]],
                     tried: Collection[str], base_option: tuple[str, Option]) -> str:
    texts = {option.text for _, option in options}
    parts = [code_block(card.code)] if card.code else []
    base_letter, base = base_option
    # The loop in full first, then the others in their letters' order.
    for letter, option in [base_option, *(pair for pair in options if pair[1] is not base)]:
        head = f"**{letter}.**" + (f" {markdown(option.text)}" if len(texts) > 1 else "")
        if option.id in tried and option is not base:
            parts.append(f"{head} (tried: not this one)")
            continue
        diff = code_diff(base.code, option.code) if option.code and option is not base \
            else None
        if diff is not None and len(diff) < len(option.code):
            parts.append(f"{head} as **{base_letter}.** but:\n{code_block(diff, 'diff')}")
        else:  # the base, or one that shares too little with it to be told as a diff
            parts.append(f"{head}\n{code_block(option.code)}" if option.code else head)
    parts.append(f"**{markdown(card.prompt)}**")
    return "\n".join(parts)


def code_diff(base: str, code: str, context: int = 24) -> str:
    """Where `code` differs from `base`: diff lines ("-" base only, "+" code only, " "
    context: a line each side, cut to `context` characters, as the base shows it whole),
    "…" between parts, the indentation they share taken off; "(the same code)" if none."""
    lines = list(difflib.unified_diff(base.splitlines(), code.splitlines(), n=1,
                                      lineterm=""))[2:]
    body = [line[1:] for line in lines if not line.startswith("@@")]
    indent = min((len(b) - len(b.lstrip()) for b in body if b.strip()), default=0)
    out = []
    for line in lines:
        if line.startswith("@@"):
            out += ["…"] if out else []
            continue
        text = line[1 + indent:]
        if line[0] == " " and len(text) > context:
            text = text[:context - 1] + "…"
        out.append(f"{line[0]} {text}")
    return "\n".join(out) or "(the same code)"


def answer_text(answer: str, is_code: bool, letter: str | None = None,
                code: str | None = None) -> str:
    """The revealed answer as Discord shows it; the upload limits measure the same text."""
    if is_code:
        return "**The answer:** " + code_block(answer)
    head = f"**The answer:** {f'**{letter}.** ' if letter else ''}{markdown(answer)}"
    return f"{head}\n{code_block(code)}" if code else head


def feedback_of(card: AnyCard, verdict: Verdict, today: date | None) -> Feedback:
    finished = verdict.finished
    letters, key = {}, None
    if isinstance(card, ChoiceCard):
        letters = {option.id: letter for letter, option in lettered(card, verdict.served)}
        key = next(o for o in card.options if o.correct)
    # A choice card's finding is about the option this attempt chose.
    chosen = letters.get(verdict.served.chosen[-1]) if letters and verdict.served.chosen \
        else None
    told: set[str] = set()  # mistakes explained in this verdict
    mistakes = []
    for f in verdict.findings:
        blank = blank_number(card, f.blank) if f.blank and isinstance(card, FillInCard) \
            else None
        if not finished:  # one line: what the pick does (its title where it says nothing)
            mistakes.append(Mistake(f.choice, blank, f.says or f.mistake_title, "", "", chosen))
            continue
        repeated = f.mistake_id in told
        told.add(f.mistake_id)
        mistakes.append(Mistake(f.choice, blank, f.says, f.mistake_title,
                                "" if repeated else f.explanation, chosen, repeated))
    # The earlier attempts' mistakes, the latest first. To fit a phone screen, only the
    # last wrong attempt's are explained in full (this one's, else the one before a right
    # answer); older ones are named.
    earlier, full = [], not mistakes
    for findings in reversed(verdict.earlier if finished else ()):
        for f in findings:
            if f.mistake_id not in told:
                told.add(f.mistake_id)
                earlier.append(Mistake("", None, "", f.mistake_title,
                                       f.explanation if full else ""))
        full = full and not findings
    reveal = finished and not verdict.correct
    scheduled = finished and verdict.due is not None and today is not None and (
        verdict.served.kind in ("new", "review"))
    return Feedback(
        correct=verdict.correct, finished=finished, attempt=verdict.served.attempts,
        attempts_left=verdict.attempts_left, mistakes=tuple(mistakes),
        measured=tuple(verdict.report.feedback) if verdict.report else (),
        answer=correct_answer(card) if reveal else None,
        answer_is_code=isinstance(card, CodeCard),
        answer_letter=letters.get(key.id) if reveal and key else None,
        answer_code=key.code if reveal and key else None,
        steps=tuple((s.title, s.detail) for s in card.solution)
        if finished and isinstance(card, ChoiceCard) else (),
        explanation=card.explanation if finished and isinstance(card, FillInCard) else "",
        takeaway=card.takeaway if finished else None,
        next_review=when(verdict.due, today) if scheduled else None,
        duplicate=verdict.duplicate,
        retry=verdict.retry, retries_left=verdict.retries_left,
        stopped_before=STOPPED_BEFORE.get(card.checker, TRAINING)
        if isinstance(card, CodeCard) else TRAINING,
        earlier=tuple(earlier),
        hint_left=not finished and not verdict.served.hint_used,
        checks=code_checks(verdict, mistakes) if isinstance(card, CodeCard) else (),
    )



def tried_options(card: ChoiceCard, served: Served) -> frozenset[str]:
    """The options this served card's attempts chose and that are wrong: known wrong, so
    a front end offers them no more."""
    wrong = {o.id for o in card.options if not o.correct}
    return frozenset(c for c in served.chosen if c in wrong)


@dataclass(frozen=True, slots=True)
class BlankState:
    """One blank of a fill-in card in play: its number, the chip shown picked (the draft's,
    else the last attempt's: picks are kept after a wrong Submit), and what the attempts
    so far showed of its chips: `right` the key once picked, `wrong` the chips picked
    there that are not."""

    blank_id: str
    number: int
    pick: str | None
    right: str | None
    wrong: frozenset[str]

    def mark(self, chip_id: str) -> bool | None:
        """True for a chip known right here, False for one known wrong, else None."""
        return True if chip_id == self.right else False if chip_id in self.wrong else None

    @property
    def status(self) -> bool | None:
        """Whether the shown pick is known right (True), known wrong (False), or untried."""
        return None if self.pick is None else self.mark(self.pick)


def blank_states(card: FillInCard, served: Served, draft: dict | None = None) -> list[
        BlankState]:
    """Each blank as the learner should see it on this served card."""
    last = served.chosen[-1] if served.chosen else {}
    picks = {**last, **(draft or {})}
    states = []
    for number, blank in enumerate(card.blanks, 1):
        tried = {chosen.get(blank.id) for chosen in served.chosen}
        states.append(BlankState(
            blank.id, number, picks.get(blank.id),
            blank.answer if blank.answer in tried else None,
            frozenset(c for c in tried if c is not None and c != blank.answer)))
    return states
