"""Read a practice page in the seed format (see content/sources/*.txt) into draft cards.

A page is a title, its fill-in tasks ('1fill in blank', code with [1] blanks, lettered chips,
'Common Mistakes', an explanation), then after 'Practice' its multiple-choice questions
(options 'A. ...', a 'Solution' with steps, a Final Answer '-> Option C', a Quick Check, a hint,
'Common Mistakes'). What the page leaves out is guessed by content/draft_guesses.py.
"""

from __future__ import annotations

import re
import textwrap

from content.draft_guesses import (
    TAKEAWAY,
    Draft,
    gap_flags,
    guess_answers,
    indent_flags,
    set_hint,
    slug,
    stems,
)

_FILL = re.compile(r"(\d+)\s*fill in (?:the )?blanks?", re.I)
_DIFF = re.compile(r"easy|medium|hard", re.I)
_OPTION = re.compile(r"([A-Z])\.\s+(.*)")
_STEP = re.compile(r"\d+\.\s+Step\s*\d+\s*:\s*(.*)", re.I)
_CHECK = re.compile(r"\d+\.\s+Quick Check\s*:?\s*(.*)", re.I)
_ARROW = re.compile(r"(.*?)\s*->\s*Option\s+([A-Z])\W*", re.I)
_MARKER = re.compile(r"(?<![\w\])])\[(\d+)\]")  # [1] but not the index in x[1]
_META = re.compile(r"Attempts:?|\d+ left|(?:💡\s*)?Hint\b.*|Common Mistakes:?", re.I)
_PRECEDENCE = re.compile(r"\b(\w+)\s*\+\s*1\s*%\s*")  # i+1 % 4: Python reads i + (1 % 4)


class _Page:
    """The page's non-empty lines with their numbers, read front to back."""

    def __init__(self, text: str):
        self.rows = [(n, s.rstrip()) for n, s in enumerate(text.splitlines(), 1) if s.strip()]
        self.at = 0

    def peek(self) -> str:
        return self.rows[self.at][1].strip() if self.at < len(self.rows) else ""

    @property
    def line(self) -> int:
        return self.rows[min(self.at, len(self.rows) - 1)][0] if self.rows else 1

    def error(self, what: str) -> ValueError:
        found = repr(self.peek()) if self.at < len(self.rows) else "the end of the page"
        return ValueError(f"line {self.line}: expected {what}, found {found}")

    def take(self) -> str:
        self.at += 1
        return self.rows[self.at - 1][1]

    def expect(self, pattern: re.Pattern | str, what: str) -> re.Match:
        match = re.fullmatch(pattern, self.peek()) if self.peek() else None
        if not match:
            raise self.error(what)
        self.at += 1
        return match

    def until(self, stop) -> list[str]:
        lines = []
        while self.at < len(self.rows) and not stop(self.peek()):
            lines.append(self.take())
        return lines


def _block(code: list[str]) -> str:
    return textwrap.dedent("\n".join(s.rstrip() for s in code) + "\n")


def _fill_task(page: _Page, draft: Draft) -> dict:
    line = page.line
    number = int(page.expect(_FILL, "a task header like '1fill in blank'")[1])
    difficulty = page.expect(_DIFF, "a difficulty (easy, medium or hard)")[0].lower()
    prompt = page.expect(r".+", "the task's prompt")[0]
    body = page.until(lambda s: s.startswith("Drag options"))
    page.expect(r"Drag options.*", "the line 'Drag options to blanks, ...'")
    if len(body) > 1 and re.fullmatch(r"[A-Za-z][\w+# ]{0,20}", body[0].strip()):
        body = body[1:]  # the language label ("PyTorch")
    numbers = [int(m[1]) for m in _MARKER.finditer("\n".join(body))]
    if not numbers or sorted(numbers) != list(range(1, len(numbers) + 1)):
        raise ValueError(f"line {line}: task {number}'s code has blanks {numbers}; expected "
                         "[1], [2], ... each once")
    letters, texts, hint = [], [], ""
    while page.peek() and not _META.fullmatch(page.peek()):
        chip = page.expect(r"([A-Z])(\S.*)", "a lettered chip like 'Azero_grad' or 'Attempts:'")
        letters, texts = [*letters, chip[1]], [*texts, chip[2].strip()]
    if len(texts) < 2:
        raise page.error(f"at least two lettered chips for task {number}")
    while _META.fullmatch(page.peek()) and not page.peek().lower().startswith("common"):
        found = re.fullmatch(r"(?:💡\s*)?Hint\b\s*:?\s*(.*)", page.take().strip(), re.I)
        hint = found[1].strip() if found else hint
    page.expect(r"Common Mistakes:?", "'Common Mistakes'")
    rest = [s.strip() for s in page.until(lambda s: bool(_FILL.fullmatch(s)) or s == "Practice")]
    if not rest:
        raise page.error(f"task {number}'s explanation after its 'Common Mistakes' lines")
    explanation, flags, taken = rest[-1], [], set()
    chips = [{"id": slug(text, "_", taken), "text": text} for text in texts]
    blanks = sorted((int(m[1]), _MARKER.sub("", row[: m.start()]), _MARKER.sub("", row[m.end():]))
                    for row in body for m in _MARKER.finditer(row))
    answers = guess_answers(texts, blanks, explanation)
    flags += [f"guessed: answer '{texts[a]}' for blank b{n} from {why}"
              for (n, _, _), (a, why) in zip(blanks, answers, strict=True)]
    slots = [(n, i) for (n, _, _), (a, _) in zip(blanks, answers, strict=True)
             for i in range(len(texts)) if i != a]
    wrong = draft.wrong([(f"wrong chip '{texts[i]}' in blank b{n}", f"'{texts[i]}'", texts[i])
                         for n, i in slots], draft.register(
                            [re.sub(r"^[•*-]\s*", "", s) for s in rest[:-1]]), flags)
    card = {"id": draft.card_id(prompt), "type": "fill_in", "rev": 1, "difficulty": difficulty,
            "topics": [draft.deck_id], "source": f"page task {number}", "prompt": prompt,
            "code": _MARKER.sub(r"[[b\1]]", _block(body)), "chips": chips,
            "blanks": [{"id": f"b{n}", "#": f"GUESS: answer from {why}", "answer": chips[a]["id"],
                        "wrong": {chips[i]["id"]: w for (b, i), w in zip(slots, wrong, strict=True)
                                  if b == n}}
                       for (n, _, _), (a, why) in zip(blanks, answers, strict=True)]}
    set_hint(card, flags, hint, [texts[a] for a, _ in answers])
    if prompt.lower().startswith("fix"):
        flags.append("check: the prompt says 'Fix ...' but the task is a blank to fill")
    flags += indent_flags(body, "the code") + gap_flags(letters, "chips")
    flags.append("missing: takeaway (the page has none)")
    return card | {"explanation": explanation, "takeaway": TAKEAWAY, "flags": flags}


def _question(page: _Page, draft: Draft) -> dict:
    head = page.expect(r"(\d+)\.\s+(.+)", "a question like '1. What is ...?'")
    number, prompt, flags = int(head[1]), head[2].strip(), []
    code = page.until(lambda s: bool(_DIFF.fullmatch(s) or _OPTION.fullmatch(s)) or s == "Solution")
    difficulty = page.expect(_DIFF, "a difficulty (easy, medium or hard)")[0].lower()
    raw = []
    while option := _OPTION.fullmatch(page.peek()):
        page.take()
        more = page.until(lambda s: bool(_OPTION.fullmatch(s)) or s == "Solution")
        raw.append((option[1], [option[2].strip(), *more]))
    if len(raw) < 2:
        raise page.error(f"at least two options like 'A. ...' for question {number}")
    page.expect(r"Solution:?", "'Solution'")

    def text_until_next() -> str:
        stop = re.compile(r"\d+\.\s.*|Hint:.*|Common Mistakes:?")
        return " ".join(s.strip() for s in page.until(stop.fullmatch))

    steps = []
    while step := _STEP.fullmatch(page.peek()):
        page.take()
        steps.append((step[1].strip(), text_until_next()))
    final_line = page.line
    final = page.expect(r"(?i)\d+\.\s+Final Answer\s*:?\s*(.*)", "'N. Final Answer:'")[1]
    final = f"{final} {text_until_next()}".strip()
    if not (arrow := _ARROW.fullmatch(final)):
        raise ValueError(f"line {final_line}: expected a final answer like '... -> Option C', "
                         f"found {final!r}")
    final, letter, letters = arrow[1], arrow[2].upper(), [r[0] for r in raw]
    if letter not in letters:
        raise ValueError(f"line {final_line}: the final answer names option {letter}, but "
                         f"question {number} has options {', '.join(letters)}")
    check = ""
    if found := _CHECK.fullmatch(page.peek()):
        page.take()
        check = re.sub(r"\s*\[OK\]$", "", f"{found[1]} {text_until_next()}".strip())
    hint = page.take().strip()[5:] if page.peek().startswith("Hint:") else ""
    lines = []
    if re.fullmatch(r"Common Mistakes:?", page.peek()):
        page.take()
        while re.fullmatch(r"[•*-]\s*(.+)", page.peek()):
            lines.append(page.take().strip()[1:].strip())
    options, choices, taken = [], [], set()
    for opt_letter, (first, *more) in raw:
        option = {"id": slug(first, "-", taken), "text": first}
        if more:  # a code snippet: the page has no words for it
            option = {"id": slug(f"snippet-{opt_letter.lower()}", "-", taken, frozenset()),
                      "text": f"TODO: describe snippet {opt_letter} in words",
                      "code": _block([first, *more])}
            flags += [f for f in indent_flags([first, *more], "the options' code")
                      if f not in flags]
        if opt_letter == letter:
            if more and final:
                option["text"] = final
                flags.append(f"guessed: the text of snippet {opt_letter} (correct) is the page's "
                             "Final Answer")
            elif stems(final) != stems(first):
                flags.append(f"check: the Final Answer's text differs from option {opt_letter}")
            option["correct"] = True
        else:
            name = f"snippet {opt_letter}" if more else repr(first[:47] + "..." * (len(first) > 50))
            choices.append((f"wrong option '{option['id']}'", name, _block([first, *more])))
        options.append(option)
    wrong = iter(draft.wrong(choices, draft.register(lines), flags))
    options = [o if o.get("correct") else o | next(wrong) for o in options]
    solution = []
    for n, (title, detail) in enumerate(steps, 1):
        if bad := _PRECEDENCE.search(detail):
            flags.append(f"guessed: solution step {n} wrote '{bad[0]}...', which Python reads "
                         "as i + (1 % N); rewritten as (i + 1) % N")
            detail = _PRECEDENCE.sub(r"(\1 + 1) % ", detail)
        solution.append({"title": title, "detail": detail or "TODO: explain this step"})
    card = {"id": draft.card_id(prompt), "type": "multiple_choice", "rev": 1,
            "difficulty": difficulty, "topics": [draft.deck_id],
            "source": f"page question {number}", "prompt": prompt}
    card |= {"code": _block(code)} if code else {}
    card["options"] = options
    correct = next(o for o in options if o.get("correct"))
    set_hint(card, flags, re.sub(r"\s*\[OK\]$", "", hint.strip()), [correct["text"]],
             stems(f"{correct['text']} {final}"))
    flags += indent_flags(code, "the question's code") + gap_flags(letters, "options")
    if not check:
        flags.append("missing: takeaway (the page has no Quick Check)")
    return card | {"solution": [*solution, {"title": "Answer", "detail": final or "TODO"}],
                   "takeaway": check or TAKEAWAY, "flags": flags}


def read_page(text: str, draft: Draft) -> tuple[str, list[dict]]:
    page = _Page(text)
    if not page.rows:
        raise ValueError("line 1: the page is empty")
    title = re.sub(r"\s*-\s*Interactive Code Practice$", "", page.take().strip())
    page.until(lambda s: bool(_FILL.fullmatch(s)) or s == "Practice")
    cards = []
    while _FILL.fullmatch(page.peek()):
        cards.append(_fill_task(page, draft))
    if page.peek() != "Practice" and not cards:
        raise page.error("a task header like '1fill in blank' or the 'Practice' line")
    if page.peek() == "Practice":
        page.take()
        if not page.peek() and not cards:
            raise page.error("a question like '1. What is ...?' after 'Practice'")
        while page.peek():
            cards.append(_question(page, draft))
    return title, cards
