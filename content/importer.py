"""Draft a deck from a practice page in the seed format (see content/sources/*.txt).

A page gives prompts, code, lettered chips and options, explanations and 'Common Mistakes'
lines, but not which chip fills which blank, which mistake a wrong choice makes or what it
does, and fill-in tasks have no hint or takeaway. The importer guesses what it can, puts
placeholders in the rest and flags both: a `flags:` entry on the card, a `# GUESS:` comment
beside the value, and a line in the returned notes. The draft is meant to validate with
`content.loader.parse_deck`, so an editor starts from a loadable deck; it is never finished.
"""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import yaml

from content.draft_yaml import emit, plain
from content.giveaways import ALLOW_PRAGMA
from content.loader import DeckError, parse_deck
from content.schema import SLUG_RE

_FILL = re.compile(r"(\d+)\s*fill in (?:the )?blanks?", re.I)
_DIFF = re.compile(r"easy|medium|hard", re.I)
_OPTION = re.compile(r"([A-Z])\.\s+(.*)")
_STEP = re.compile(r"\d+\.\s+Step\s*\d+\s*:\s*(.*)", re.I)
_CHECK = re.compile(r"\d+\.\s+Quick Check\s*:?\s*(.*)", re.I)
_ARROW = re.compile(r"(.*?)\s*->\s*Option\s+([A-Z])\W*", re.I)
_MARKER = re.compile(r"(?<![\w\])])\[(\d+)\]")  # [1] but not the index in x[1]
_META = re.compile(r"Attempts:?|\d+ left|(?:💡\s*)?Hint\b.*|Common Mistakes:?", re.I)
_PRECEDENCE = re.compile(r"\b(\w+)\s*\+\s*1\s*%\s*")  # i+1 % 4: Python reads i + (1 % 4)
_SLUG_STOP = frozenset("a an the to of it its is are be for on in by with that this so as at "
                       "do does from into which what when how can and or".split())
_STOP = _SLUG_STOP | {"before", "instead", "too", "use", "using", "not", "no"}
_ID_STOP = _STOP | {"complete", "code", "fill", "blank", "blanks", "both", "all", "three", "two",
                    "correctly", "correct", "following", "given", "main", "pytorch", "snippet"}
_HINTS = ["TODO: write a hint", "TODO: hint needed", "(placeholder: to be written)"]
_TAKEAWAY = "TODO: write a one-line takeaway"


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


def _stems(text: str) -> set[str]:
    """Rough word stems for overlap scores: 'zeroing' ~ 'zero_grad', 'reduce' ~ 'reduction'."""
    out = set()
    for word in re.findall(r"[a-z0-9]+", text.lower()):
        if word not in _STOP and len(word) > 1:
            for suffix in ("ing", "ion", "ed", "es", "s", "e"):
                if word.endswith(suffix) and len(word) - len(suffix) >= 3:
                    word = word[: -len(suffix)]
                    break
            out.add(word[:5])
    return out


def _slug(text: str, sep: str, taken: set[str], stop=_SLUG_STOP, limit: int = 40) -> str:
    """A unique slug of the text's words (stop words and single characters left out)."""
    words = re.findall(r"[a-z0-9]+", text.lower())
    slug = ""
    for word in [w for w in words if w not in stop and (len(w) > 1 or not stop)] or words:
        if len(f"{slug}{sep}{word}") > limit:
            break
        slug = f"{slug}{sep}{word}" if slug else word
    slug = slug if re.match(r"[a-z]", slug) else f"x{sep}{slug}".rstrip(sep)
    unique, n = slug, 2
    while unique in taken:
        while len(f"{slug}{sep}{n}") > limit and sep in slug:
            slug = slug.rsplit(sep, 1)[0]
        unique, n = f"{slug}{sep}{n}", n + 1
    taken.add(unique)
    return unique


def _leaks(hint: str, answer: str) -> bool:
    """The lint's rule: the hint spells out the answer as a whole word or phrase."""
    return re.search(rf"(?<!\w){re.escape(answer)}(?!\w)", hint, flags=re.I) is not None


def _block(code: list[str]) -> str:
    return textwrap.dedent("\n".join(s.rstrip() for s in code) + "\n")


def _indent_flags(code: list[str], what: str) -> list[str]:
    lines = [s for s in code if s.strip()]
    depth = [len(s) - len(s.lstrip()) for s in lines]
    pairs = zip(lines, depth, depth[1:], strict=False)
    if any(above.endswith(":") and d2 <= d1 for above, d1, d2 in pairs):
        return [f"check indentation: {what} has a block opener with nothing indented under it "
                "(the page lost the indentation)"]
    return []


def _gap_flags(letters: list[str], what: str) -> list[str]:
    gaps = [chr(c) for c in range(65, ord(max(letters)) + 1) if chr(c) not in letters]
    return [f"check: the page's {what} skip letter {', '.join(gaps)}; one may be missing"
            ] if gaps else []


class _Draft:
    """The deck being drafted: its mistake registry and the ids taken so far."""

    def __init__(self, deck_id: str):
        self.deck_id = deck_id
        self.mistakes: dict[str, list[str]] = {}  # id -> the page's lines
        self.by_line: dict[str, str] = {}
        self.taken: dict[str, set[str]] = {"card": set(), "mistake": set()}
        self.used: dict[str, list[str]] = {}  # used mistake id -> the mistakes of its card

    def register(self, lines: list[str]) -> list[str]:
        for line in lines:
            if line not in self.by_line:
                self.by_line[line] = _slug(line, "_", self.taken["mistake"])
                self.mistakes[self.by_line[line]] = [line]
        return list(dict.fromkeys(self.by_line[line] for line in lines))

    def wrong(self, choices: list[tuple[str, str, str]], local: list[str], flags: list[str]):
        """A `mistake` and a TODO `says` per (label, name, text) of a wrong choice. Mistakes
        match by word overlap, each of the card's own first (greedily), so none stays unused."""
        labels, names, texts = zip(*choices, strict=True) if choices else ((), (), ())
        if not self.mistakes:  # the page has no 'Common Mistakes' lines at all
            self.mistakes["unclassified"] = ["TODO: name this mistake"]
            self.taken["mistake"].add("unclassified")
        pool = local or list(self.mistakes)
        score = {(i, m): len(_stems(texts[i]) & _stems(self.mistakes[m][0]))
                 for i in range(len(texts)) for m in pool}
        chosen: dict[int, str] = {}
        for i, m in sorted(score, key=lambda p: (-score[p], pool.index(p[1]), p[0])):
            if i not in chosen and m not in chosen.values():
                chosen[i] = m
        result = []
        for i, label in enumerate(labels):
            m = chosen.get(i) or max(pool, key=lambda m, i=i: (score[i, m], -pool.index(m)))
            self.used.setdefault(m, local)
            why = "word overlap with" if score[i, m] else "a pure guess, no word in common with"
            line = self.mistakes[m][0]
            flags.append(f"guessed: mistake '{m}' for {label} ({why} '{line}'); 'says' is a "
                         "TODO placeholder")
            result.append({"#": f"GUESS: mistake chosen by {why} '{line}'", "mistake": m,
                           "says": f"TODO: say what choosing {names[i]} does"})
        return result

    def card_id(self, prompt: str) -> str:
        return f"{self.deck_id}/{_slug(prompt, '-', self.taken['card'], _ID_STOP, 39)}"

    def registry(self) -> tuple[list[dict], list[str]]:
        """The mistakes; a line no wrong choice uses joins the closest used mistake."""
        notes = []
        for unused in [m for m in self.mistakes if m not in self.used]:
            line = self.mistakes.pop(unused)[0]
            owners = [m for m in self.used if unused in self.used[m]] or list(self.used)
            into = max(owners, key=lambda m: len(_stems(line) & _stems(self.mistakes[m][0])))
            self.mistakes[into].append(line)
            notes.append(f"merged: the line '{line}' has no wrong choice of its own; kept as "
                         f"seed_wording of '{into}'")
        return [{"id": m, "title": lines[0],
                 "explanation": f"TODO (review): the page only says: {' / '.join(lines)}",
                 "seed_wording": lines}
                for m, lines in self.mistakes.items()], notes


def _set_hint(card: dict, flags: list[str], hint: str, answers: list[str], stems=None) -> None:
    """The page's hint, or a placeholder when it has none or it gives the answer away."""
    words = _stems(hint)
    if not hint:
        flags.append("missing: hint (the page has none); placeholder")
    elif any(_leaks(hint, a) for a in answers) or stems and len(words & stems) * 2 >= len(words):
        flags.append("leaked: the page's hint gives the answer away; replaced by a placeholder")
        card["#"] = f"GUESS: placeholder hint; the page's hint gave the answer away: {hint}"
        hint = ""
    else:
        flags.append("check: hint copied from the page; make sure it does not give the answer "
                     "away")
    card["hint"] = hint or next(h for h in _HINTS if not any(_leaks(h, a) for a in answers))


def _guess_answers(texts: list[str], blanks: list[tuple], explanation: str) -> list[tuple]:
    """(chip index, reason) per blank, guessed from the explanation sentence."""
    names = "|".join(map(re.escape, sorted(texts, key=len, reverse=True)))
    said = [texts.index(m[0]) for m in re.finditer(rf"(?<!\w)(?:{names})(?!\w)", explanation)]
    if len(said) == len(blanks):
        return [(i, "the order the chips are mentioned in the explanation") for i in said]

    def fit(chip: str, left: str, right: str) -> int:  # the longest code context quoted
        if not _leaks(explanation, chip):
            return 0
        a = max(n for n in range(len(left) + 1) if left[len(left) - n:] + chip in explanation)
        return 1 + a + max(n for n in range(len(right) + 1) if chip + right[:n] in explanation)

    order, answers = list(dict.fromkeys(said)), []  # ties: the k-th chip mentioned for blank k
    for k, (_, left, right) in enumerate(blanks):
        best = max(range(len(texts)), key=lambda i, k=k, left=left, right=right: (
            fit(texts[i], left, right), k < len(order) and order[k] == i, -i))
        found = fit(texts[best], left, right)
        answers.append((best, "its code context in the explanation" if found > 1 else
                        "the explanation (mentioned there, but so are other chips)" if found else
                        "nothing: no clue in the explanation, so the first chip"))
    return answers


def _fill_task(page: _Page, draft: _Draft) -> dict:
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
    chips = [{"id": _slug(text, "_", taken), "text": text} for text in texts]
    blanks = sorted((int(m[1]), _MARKER.sub("", row[: m.start()]), _MARKER.sub("", row[m.end():]))
                    for row in body for m in _MARKER.finditer(row))
    answers = _guess_answers(texts, blanks, explanation)
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
    _set_hint(card, flags, hint, [texts[a] for a, _ in answers])
    if prompt.lower().startswith("fix"):
        flags.append("check: the prompt says 'Fix ...' but the task is a blank to fill")
    flags += _indent_flags(body, "the code") + _gap_flags(letters, "chips")
    flags.append("missing: takeaway (the page has none)")
    return card | {"explanation": explanation, "takeaway": _TAKEAWAY, "flags": flags}


def _question(page: _Page, draft: _Draft) -> dict:
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
        option = {"id": _slug(first, "-", taken), "text": first}
        if more:  # a code snippet: the page has no words for it
            option = {"id": _slug(f"snippet-{opt_letter.lower()}", "-", taken, frozenset()),
                      "text": f"TODO: describe snippet {opt_letter} in words",
                      "code": _block([first, *more])}
            flags += [f for f in _indent_flags([first, *more], "the options' code")
                      if f not in flags]
        if opt_letter == letter:
            if more and final:
                option["text"] = final
                flags.append(f"guessed: the text of snippet {opt_letter} (correct) is the page's "
                             "Final Answer")
            elif _stems(final) != _stems(first):
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
    _set_hint(card, flags, re.sub(r"\s*\[OK\]$", "", hint.strip()), [correct["text"]],
              _stems(f"{correct['text']} {final}"))
    flags += _indent_flags(code, "the question's code") + _gap_flags(letters, "options")
    if not check:
        flags.append("missing: takeaway (the page has no Quick Check)")
    return card | {"solution": [*solution, {"title": "Answer", "detail": final or "TODO"}],
                   "takeaway": check or _TAKEAWAY, "flags": flags}


def _parse(text: str, draft: _Draft) -> tuple[str, list[dict]]:
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


def import_page(text: str, *, deck_id: str, title: str | None = None,
                source: str | None = None) -> tuple[str, list[str]]:
    """Draft deck YAML from a practice page, and notes on everything guessed or missing.

    Raises ValueError naming the page's line when the page does not follow the format.
    """
    if not re.fullmatch(SLUG_RE, deck_id) or len(deck_id) > 40:
        raise ValueError(f"deck id {deck_id!r} is not a slug like 'gradient-accumulation'")
    draft = _Draft(deck_id)
    page_title, cards = _parse(text, draft)
    mistakes, merged = draft.registry()
    notes = [
        "missing: deck description (placeholder)",
        "guessed: card, chip, option and mistake ids are slugs of the page's text; rename them "
        "before anyone reviews the deck",
        "guessed: every card's only topic is the deck id",
        f"review: the {len(mistakes)} mistakes copy the page's 'Common Mistakes' lines as title "
        "and explanation",
        *(f"{card['id']}: {flag}" for card in cards for flag in card["flags"]), *merged,
    ]
    deck = {"id": deck_id, "title": title or page_title, "description": "TODO: describe the "
            f"deck (drafted from the page '{page_title}').", "version": 1}
    deck |= {"source": source} if source else {}
    deck |= {"#": "GUESS: one mistake per 'Common Mistakes' line; explanations are placeholders",
             "mistakes": mistakes, "cards": cards}
    out = "\n".join([
        f"# DRAFT imported by content/importer.py from {source or 'a practice page'}.",
        "# Guesses and placeholders are flagged (each card's `flags:`, `# GUESS:` comments).",
        "# Review every flag, fix the card and delete the flag before publishing.",
        "# Answers given away are listed in the import notes; delete the next line to check them.",
        ALLOW_PRAGMA,
        *emit(deck)]) + "\n"
    if yaml.safe_load(out) != plain(deck):
        raise RuntimeError("importer bug: the emitted YAML does not round-trip")
    try:
        parse_deck(out, "<draft>")
    except DeckError as exc:
        notes += [f"invalid: line {p.line}: {p.message}" for p in exc.problems]
    else:
        try:
            parse_deck(out, "<draft>", giveaways=True)
        except DeckError as exc:
            notes += [f"giveaway: line {p.line}: {p.message}" for p in exc.problems]
    return out, notes


def import_file(path: Path | str, out_path: Path | str, deck_id: str | None = None, *,
                overwrite: bool = False) -> list[str]:
    """Write the draft of the page at `path` to `out_path` (never over an existing file
    unless `overwrite`); the deck id defaults to a slug of the file name. Returns the notes."""
    path, out_path = Path(path), Path(out_path)
    if out_path.exists() and not overwrite:
        raise FileExistsError(f"{out_path} exists; refusing to overwrite it")
    deck_id = deck_id or _slug(path.stem, "-", set())
    text, notes = import_page(path.read_text(encoding="utf-8"), deck_id=deck_id,
                              source=str(path))
    out_path.write_text(text, encoding="utf-8")
    return notes
