"""What a practice page leaves out, guessed for the importer's draft (content/importer.py).

Ids are slugs of the page's text; a wrong choice gets the 'Common Mistakes' line it shares most
words with (`Draft`, which also keeps the deck's mistake registry); a blank's answer comes from
where the explanation mentions the chips; a hint that gives the answer away is replaced. Each
guess leaves a flag for the editor.
"""

from __future__ import annotations

import re

_SLUG_STOP = frozenset("a an the to of it its is are be for on in by with that this so as at "
                       "do does from into which what when how can and or".split())
_STOP = _SLUG_STOP | {"before", "instead", "too", "use", "using", "not", "no"}
_ID_STOP = _STOP | {"complete", "code", "fill", "blank", "blanks", "both", "all", "three", "two",
                    "correctly", "correct", "following", "given", "main", "pytorch", "snippet"}
_HINTS = ["TODO: write a hint", "TODO: hint needed", "(placeholder: to be written)"]
TAKEAWAY = "TODO: write a one-line takeaway"


def stems(text: str) -> set[str]:
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


def slug(text: str, sep: str, taken: set[str], stop=_SLUG_STOP, limit: int = 40) -> str:
    """A unique slug of the text's words (stop words and single characters left out)."""
    words = re.findall(r"[a-z0-9]+", text.lower())
    base = ""
    for word in [w for w in words if w not in stop and (len(w) > 1 or not stop)] or words:
        if len(f"{base}{sep}{word}") > limit:
            break
        base = f"{base}{sep}{word}" if base else word
    base = base if re.match(r"[a-z]", base) else f"x{sep}{base}".rstrip(sep)
    unique, n = base, 2
    while unique in taken:
        while len(f"{base}{sep}{n}") > limit and sep in base:
            base = base.rsplit(sep, 1)[0]
        unique, n = f"{base}{sep}{n}", n + 1
    taken.add(unique)
    return unique


def _leaks(hint: str, answer: str) -> bool:
    """The lint's rule: the hint spells out the answer as a whole word or phrase."""
    return re.search(rf"(?<!\w){re.escape(answer)}(?!\w)", hint, flags=re.I) is not None


def indent_flags(code: list[str], what: str) -> list[str]:
    lines = [s for s in code if s.strip()]
    depth = [len(s) - len(s.lstrip()) for s in lines]
    pairs = zip(lines, depth, depth[1:], strict=False)
    if any(above.endswith(":") and d2 <= d1 for above, d1, d2 in pairs):
        return [f"check indentation: {what} has a block opener with nothing indented under it "
                "(the page lost the indentation)"]
    return []


def gap_flags(letters: list[str], what: str) -> list[str]:
    gaps = [chr(c) for c in range(65, ord(max(letters)) + 1) if chr(c) not in letters]
    return [f"check: the page's {what} skip letter {', '.join(gaps)}; one may be missing"
            ] if gaps else []


class Draft:
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
                self.by_line[line] = slug(line, "_", self.taken["mistake"])
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
        score = {(i, m): len(stems(texts[i]) & stems(self.mistakes[m][0]))
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
        return f"{self.deck_id}/{slug(prompt, '-', self.taken['card'], _ID_STOP, 39)}"

    def registry(self) -> tuple[list[dict], list[str]]:
        """The mistakes; a line no wrong choice uses joins the closest used mistake."""
        notes = []
        for unused in [m for m in self.mistakes if m not in self.used]:
            line = self.mistakes.pop(unused)[0]
            owners = [m for m in self.used if unused in self.used[m]] or list(self.used)
            into = max(owners, key=lambda m: len(stems(line) & stems(self.mistakes[m][0])))
            self.mistakes[into].append(line)
            notes.append(f"merged: the line '{line}' has no wrong choice of its own; kept as "
                         f"seed_wording of '{into}'")
        return [{"id": m, "title": lines[0],
                 "explanation": f"TODO (review): the page only says: {' / '.join(lines)}",
                 "seed_wording": lines}
                for m, lines in self.mistakes.items()], notes


def set_hint(card: dict, flags: list[str], hint: str, answers: list[str],
             answer_stems=None) -> None:
    """The page's hint, or a placeholder when it has none or it gives the answer away."""
    words = stems(hint)
    if not hint:
        flags.append("missing: hint (the page has none); placeholder")
    elif (any(_leaks(hint, a) for a in answers)
          or answer_stems and len(words & answer_stems) * 2 >= len(words)):
        flags.append("leaked: the page's hint gives the answer away; replaced by a placeholder")
        card["#"] = f"GUESS: placeholder hint; the page's hint gave the answer away: {hint}"
        hint = ""
    else:
        flags.append("check: hint copied from the page; make sure it does not give the answer "
                     "away")
    card["hint"] = hint or next(h for h in _HINTS if not any(_leaks(h, a) for a in answers))


def guess_answers(texts: list[str], blanks: list[tuple], explanation: str) -> list[tuple]:
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
