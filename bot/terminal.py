"""`tutor practice`: the terminal front end on the same engine and database as the bot."""

from __future__ import annotations

import re
import textwrap
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TextIO

from bot.engine import (
    LETTERS,
    REPEATED,
    SCHEDULERS,
    Engine,
    InvalidAnswer,
    Learner,
    Served,
    TryAgain,
    TutorError,
    Verdict,
    counted,
    feedback_of,
    lettered,
    numbered_code,
    when,
)
from content.safe_text import plain
from content.schema import ChoiceCard, CodeCard, FillInCard

QUIT = {"q", "quit", "exit"}
HINT = {"?", "h", "hint"}


class Quit(Exception):
    pass


def _indent(text: str, prefix: str = "    ") -> str:
    return textwrap.indent(text.rstrip("\n"), prefix)


@dataclass
class Console:
    engine: Engine
    learner: Learner
    deck_id: str | None = None
    out: TextIO | None = None
    read: Callable[[str], str] = input
    topic: str | None = None  # practise this topic (even when nothing is due)
    scheduler: str | None = None  # this session's scheduler (None: the learner's choice)
    remediation: bool | None = None  # this session's (None: their server's, else off)
    answered: int = field(default=0, init=False)

    @property
    def tutor(self):
        """The engine's core: a terminal keeps its served card in memory."""
        return self.engine.tutor

    def say(self, text: str = "") -> None:
        # Deck text and the learner's exception reach a terminal, which acts on controls
        # (escape sequences) and bidi overrides: everything printed passes here.
        print(plain(text), file=self.out, flush=True)

    def ask(self, prompt: str) -> str:
        try:
            line = self.read(prompt)
        except EOFError:
            raise Quit from None
        if line.strip().lower() in QUIT:
            raise Quit
        return line.strip()

    # -- the session ---------------------------------------------------------------------

    def run(self) -> int:
        title = (self.tutor.library.deck(self.deck_id).title if self.deck_id
                 else ", ".join(d.title for d in self.tutor.library.decks.values()))
        self.say(f"{title} - practising as {self.learner.display_name or 'you'}")
        skipped = [c for c in self.tutor.library.cards(self.deck_id)
                   if isinstance(c, CodeCard) and self.tutor.code_judge is None]
        if skipped:
            self.say(f"({counted(len(skipped), 'code card')} "
                     f"{'needs' if len(skipped) == 1 else 'need'} the sandbox and "
                     f"{'is' if len(skipped) == 1 else 'are'} skipped here.)")
        self._status()
        self.say("Answer with a letter or the option's text; ? shows a hint, q quits.")
        try:
            mode = "practice" if self.topic else "auto"
            while served := self.tutor.next_card(self.learner, deck_id=self.deck_id,
                                                 mode=mode, topic=self.topic,
                                                 scheduler=self.scheduler,
                                                 remediation=self.remediation):
                self._play(served)
        except Quit:
            self.say()
        self._farewell()
        return 0

    def _status(self) -> None:
        p = self.tutor.progress(self.learner, self.deck_id, scheduler=self.scheduler,
                                remediation=self.remediation)
        self.say(f"{p.due_now} due now, {p.new_left_today} new left today.")
        self.say(f"Scheduler: {SCHEDULERS[p.choice.scheduler]}; remediation of mistakes "
                 f"{'on' if p.choice.remediation else 'off'}.")

    def _farewell(self) -> None:
        p = self.tutor.progress(self.learner, self.deck_id, scheduler=self.scheduler)
        self.say(f"Answered {counted(self.answered, 'card')} this session.")
        if p.due_now or p.drills_left:
            self.say(f"Still waiting today: {p.due_now} due, {p.drills_left} to drill again.")
        elif p.next_due:
            self.say(f"All caught up. Next review: {when(p.next_due, p.today)}.")
        else:
            self.say("All caught up.")
        held = [m for m in self.engine.learners.mistakes(self.learner) if m.is_open]
        if held:
            self.say("Mistakes to work on: " + "; ".join(
                f"{m.title} (made {m.times_shown}x)" for m in held) + ".")

    # -- one card ------------------------------------------------------------------------

    def _play(self, served: Served) -> None:
        card = self.tutor.card(served)
        self.say()
        label = {"new": "new card", "review": "review", "drill": "once more",
                 "remedy": "on a recent mistake", "cram": "practice"}[served.kind]
        self.say(f"== {label} - {card.difficulty} - {', '.join(card.topics)}")
        self.say(card.prompt)
        if isinstance(card, FillInCard):
            self._show_fill_in(card, served)
        elif isinstance(card, CodeCard):
            self._show_code(card)
        else:
            self._show_choice(card, served)
        while True:
            response = self._read_response(served, card)
            if isinstance(response, Served):  # a hint was shown
                served = response
                continue
            if isinstance(card, CodeCard):
                self.say("Running your code in the sandbox...")
            try:
                verdict = self.tutor.answer(served, response)
            except (InvalidAnswer, TryAgain) as exc:  # not judged: the card stays open
                self.say(str(exc))
                continue
            except TutorError as exc:
                self.say(str(exc))
                return
            served = verdict.served
            self._show_verdict(card, verdict)
            if verdict.finished:
                self.answered += 1
                return

    def _show_fill_in(self, card: FillInCard, served: Served) -> None:
        self.say()
        self.say(_indent(numbered_code(card)))
        self.say()
        self.say("  " + "   ".join(f"{letter}) {c.text}" for letter, c in lettered(card, served)))

    def _show_choice(self, card: ChoiceCard, served: Served) -> None:
        if card.code:
            self.say()
            self.say(_indent(card.code))
        self.say()
        for letter, option in lettered(card, served):
            self.say(f"  {letter}) {option.text}")
            if option.code:
                self.say(_indent(option.code, "       "))

    def _show_code(self, card: CodeCard) -> None:
        self.say()
        self.say(_indent(card.starter))
        self.say()
        self.say("Type or paste your code, then a line with just EOF. (? for a hint, q quits)")

    def _read_code(self, served: Served):
        lines: list[str] = []
        while True:
            try:
                line = self.read("... " if lines else "code> ")
            except EOFError:
                line = "EOF"  # Ctrl-D ends the code as EOF would
            if line.strip() == "EOF":
                return "\n".join(lines) + "\n"
            if not lines and line.strip().lower() in QUIT:
                raise Quit
            if not lines and line.strip().lower() in HINT:
                served, hint = self.tutor.hint(served)
                self.say(f"Hint: {hint}")
                return served
            lines.append(line)

    def _read_response(self, served: Served, card):
        if isinstance(card, CodeCard):
            return self._read_code(served)
        blanks = len(card.blanks) if isinstance(card, FillInCard) else 1
        prompt = "Answer > " if blanks == 1 else f"Answers for [1]..[{blanks}] > "
        while True:
            line = self.ask(prompt)
            if line.lower() in HINT:
                served, hint = self.tutor.hint(served)
                self.say(f"Hint: {hint}")
                return served
            if not line:
                continue
            try:
                if isinstance(card, FillInCard):
                    return self._parse_fill_in(card, served, line)
                return self._pick(card, served, line)
            except ValueError as exc:
                self.say(str(exc))

    def _pick(self, card: ChoiceCard | FillInCard, served: Served, token: str) -> str:
        """An option or chip id from its letter as shown to this learner, text or id."""
        token = token.strip().strip("`")
        shown = dict(lettered(card, served))
        if len(token) == 1 and token.upper() in shown:
            return shown[token.upper()].id
        for item in shown.values():
            if token.lower() in (item.text.lower(), item.id.lower()):
                return item.id
        raise ValueError(f"'{token}' is not one of the options (A-{LETTERS[len(shown) - 1]}).")

    def _parse_fill_in(self, card: FillInCard, served: Served, line: str) -> dict[str, str]:
        tokens = [t for t in re.split(r"[\s,]+", line) if t]
        if len(tokens) != len(card.blanks):
            raise ValueError(
                f"This card has {counted(len(card.blanks), 'blank')}: give "
                f"{counted(len(card.blanks), 'answer')} in order, e.g. "
                f"'{' '.join(LETTERS[: len(card.blanks)].lower())}'."
            )
        pairs = zip(card.blanks, tokens, strict=True)
        return {blank.id: self._pick(card, served, token) for blank, token in pairs}

    def _show_verdict(self, card, verdict: Verdict) -> None:
        fb = feedback_of(card, verdict, verdict.today)
        if fb.duplicate:
            self.say("(This answer was already recorded.)")
        self.say(fb.headline)
        for line in fb.measured:  # what the checker measured, with its numbers
            self._wrapped(f"- {line}")
        for m in fb.mistakes:
            if fb.correct:  # a passing loop can still carry a warning
                self._wrapped(f"Note - {m.title}: {m.explanation}")
                continue
            where = f" for [{m.blank}]" if m.blank else ""
            chose = f"{m.letter} ('{m.choice}')" if m.letter else f"'{m.choice}'"
            if m.says:
                self._wrapped(f"You chose {chose}{where}: {m.says}")
            if m.repeated:
                self._wrapped(f"Common mistake - {m.title} ({REPEATED}).")
            elif m.explanation:
                self._wrapped(f"Common mistake - {m.title}: {m.explanation}")
        for m in fb.earlier:  # once finished: what the earlier attempts got wrong
            self._wrapped(f"Common mistake - {m.title}: {m.explanation}" if m.explanation
                          else f"Common mistake - {m.title}.")
        if fb.retry:
            self._wrapped(fb.retry_note)
            return
        if not fb.finished:
            self.say(f"  {counted(fb.attempts_left, 'attempt')} left. Try again"
                     + (", or ? for a hint." if fb.hint_left else "."))
            return
        if fb.answer is not None:
            letter = f"{fb.answer_letter}) " if fb.answer_letter else ""
            self.say("A working solution:\n" + _indent(fb.answer) if fb.answer_is_code
                     else f"The answer: {letter}{fb.answer}")
            if fb.answer_code:
                self.say(_indent(fb.answer_code, "       "))
        for i, (title, detail) in enumerate(fb.steps, 1):
            self._wrapped(f"{i}. {title}: {detail}")
        if fb.explanation:
            self._wrapped(fb.explanation)
        self.say(f"Takeaway: {fb.takeaway}")
        if fb.next_review:
            self.say(f"Next review of this card: {fb.next_review}.")

    def _wrapped(self, text: str) -> None:
        self.say(textwrap.fill(text, width=88, initial_indent="  ", subsequent_indent="  "))
