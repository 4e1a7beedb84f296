"""A deck file from a stranger: every check that must pass before it is parsed or stored.

Bundled decks are trusted files; an upload is not. So, in this order, each cheap check
guarding the next: the size (before anything is read), UTF-8, the YAML's shape in one
pass over its events (bounded node count after alias expansion, so an alias bomb is
refused without ever being expanded, and bounded nesting, so PyYAML's recursive composer
never runs deep), the card count, the give-away pragma (uploads are always checked), and
only then the loader's schema and lint (`parse_deck`, give-away checks forced on), the
checker names and the mistakes each can report, the rev bounds, and the importer's
placeholders. One bad card hides nothing of another: the content checks run on every card
and mistake that passes the schema. Problems are "line N, card <id>: message" (or
"mistake <id>", "deck"), in line order.

A file on disk from someone else is as untrusted: `read_text` bounds the read itself and
`load_file` runs the same checks around the loader (`tutor deck validate`), but for the
give-away pragma, which a draft on disk may carry; `file_notes` says what validate notes
about a valid file without refusing it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import yaml

from content import checkers
from content.giveaway_words import ALLOW_PRAGMA, allows_giveaways
from content.lint import remediation_notes
from content.loader import DeckError, DeckProblem, Partial, line_finder, parse_deck
from content.placeholders import placeholder_problems
from content.schema import CodeCard, Deck
from content.titles import title_problems

MAX_BYTES = 256 * 1024
MAX_CARDS = 500
MAX_NODES = 100_000  # YAML nodes after alias expansion; a 500-card deck has ~40,000
MAX_DEPTH = 20  # a deck nests 7 deep (cards, card, blanks, blank, wrong, choice, key)
MAX_REV = 1_000_000  # revs are stored in 32-bit columns


class UntrustedDeck(Exception):
    def __init__(self, summary: str, problems: list[str]):
        super().__init__(summary)
        self.summary, self.problems = summary, problems
        self.found: Findings | None = None  # set when the deck got as far as its schema
        self.text: str | None = None


class Refused(UntrustedDeck):
    """One check before parsing failed: where, and why."""

    def __init__(self, line: int, message: str, summary: str | None = None):
        super().__init__(summary or message, [f"line {line}, deck: {message}"])
        self.line, self.message = line, message


def _too_large(size: int, what: str) -> Refused:
    """`size` 0: unknown (a device or pipe that gave more than the bound)."""
    length = f"{size / 1024:.0f} KiB" if size else f"more than {MAX_BYTES // 1024} KiB"
    return Refused(1, f"the {what} is {length}; at most {MAX_BYTES // 1024} KiB are accepted")


def decode(data: bytes, what: str = "deck file") -> str:
    """The text of an upload, refused when too large (before reading it) or not UTF-8."""
    if len(data) > MAX_BYTES:
        raise _too_large(len(data), what)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise Refused(line, f"not UTF-8 text: byte 0x{data[exc.start]:02x} cannot be "
                            "decoded") from None


def check_shape(text: str) -> None:
    """One pass over the YAML events: syntax, expanded size and depth, never building it.

    An alias counts as many nodes as its anchor expands to, so a billion-laughs document
    passes the bound after a few aliases, however few bytes it has."""
    sizes: dict[str, int] = {}  # anchor -> expanded node count
    stack: list[list] = []  # open collections: [anchor, expanded nodes so far]
    total = 0
    try:
        for event in yaml.parse(text, Loader=yaml.SafeLoader):
            line = event.start_mark.line + 1
            if isinstance(event, yaml.CollectionStartEvent):
                stack.append([event.anchor, 1])
                if len(stack) > MAX_DEPTH:
                    raise Refused(line, f"the YAML nests deeper than {MAX_DEPTH} levels")
                continue
            if isinstance(event, yaml.CollectionEndEvent):
                anchor, size = stack.pop()
            elif isinstance(event, yaml.ScalarEvent):
                anchor, size = event.anchor, 1
            elif isinstance(event, yaml.AliasEvent):
                anchor, size = None, sizes.get(event.anchor, 1)
            else:
                continue
            if anchor:
                sizes[anchor] = size
            if stack:
                stack[-1][1] += size
            else:
                total += size
            if (stack[-1][1] if stack else total) > MAX_NODES:
                raise Refused(line, f"the YAML expands to more than {MAX_NODES:,} nodes "
                                    "(aliases count as what they repeat)",
                              "The deck file expands to too much YAML (an alias bomb?).")
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
        problem = getattr(exc, "problem", None) or str(exc)
        raise Refused(mark.line + 1 if mark else 1, f"YAML: {problem}",
                      "The deck file is not valid YAML.") from None


def read_bounded(path: Path | str, what: str = "deck file") -> bytes:
    """A file's bytes, refused like an upload when too large; never reads more than the
    bound (a file that lies about its size, a device, a pipe). OSError when unreadable."""
    with open(path, "rb") as file:
        data = file.read(MAX_BYTES + 1)
        size = os.fstat(file.fileno()).st_size
    if len(data) > MAX_BYTES or size > MAX_BYTES:
        raise _too_large(size if size > MAX_BYTES else 0, what)
    return data


def read_text(path: Path | str, what: str = "deck file") -> str:
    """A file's text through the upload's first checks: size, then UTF-8."""
    return decode(read_bounded(path, what), what)


def screen(text: str) -> None:
    """The checks between decoding and parsing: the YAML's shape, then the card count."""
    check_shape(text)
    _count_cards(text)


def load_file(path: Path | str, extra_checks=None) -> Deck:
    """A deck file from anyone, on disk: the upload's checks around the loader; every
    problem a DeckProblem (file:line: owner: message), in line order, as an upload reports
    them. The give-away pragma is honoured, as for any draft on disk. `extra_checks` as for
    `parse_untrusted`; the DeckError's `notes` say what could not be checked."""
    try:
        text = read_text(path)
        screen(text)
    except OSError as exc:
        raise DeckError([DeckProblem(str(path), 1, f"cannot read: {exc}")]) from None
    except Refused as exc:
        error = DeckError([DeckProblem(str(path), exc.line, f"deck: {exc.message}")])
        error.notes = [NOTHING_ELSE]
        raise error from None
    found = examine(text, str(path), None, extra_checks)
    if found.problems:
        error = DeckError([DeckProblem(str(path), line, message)
                           for line, message in labelled(text, found.problems)],
                          found.partial)
        error.notes = found.notes
        raise error
    return found.partial.deck


def file_notes(path: Path | str, deck: Deck) -> list[DeckProblem]:
    """What `tutor deck validate` notes about a valid deck file (not problems): each mistake
    only one card tests (remediation needs two), as file:line: note: message."""
    line = line_finder(read_text(path))
    return [DeckProblem(str(path), line(where), message)
            for where, message in remediation_notes(deck)]


def _count_cards(text: str) -> None:
    root = yaml.compose(text, Loader=yaml.SafeLoader)  # bounded by check_shape
    if not isinstance(root, yaml.MappingNode):
        return  # the loader says what a deck must be
    for key, value in root.value:
        if key.value == "cards" and isinstance(value, yaml.SequenceNode) and len(
                value.value) > MAX_CARDS:
            raise Refused(key.start_mark.line + 1, f"the deck has {len(value.value)} cards; "
                                                   f"at most {MAX_CARDS} are accepted")


def _after_parse(deck: Deck) -> list[tuple[tuple, str]]:
    problems: list[tuple[tuple, str]] = list(title_problems(deck))
    if deck.version > MAX_REV:
        problems.append((("version",), f"version is at most {MAX_REV:,}"))
    for i, card in enumerate(deck.cards):
        for key in ("rev", "content_rev"):
            if (getattr(card, key) or 0) > MAX_REV:
                problems.append((("cards", i, key), f"{key} is at most {MAX_REV:,}"))
        if isinstance(card, CodeCard):
            problems += _checker_problems(deck, card, ("cards", i))
    return problems + placeholder_problems(deck)


def _checker_problems(deck: Deck, card: CodeCard, base: tuple) -> list[tuple[tuple, str]]:
    """A code card's checker ships with the bot, and the deck can explain every mistake it
    reports: an id the deck lacks would leave a wrong submission with no explanation."""
    if card.checker not in checkers.NAMES:
        return [((*base, "checker"), f"checker '{card.checker}' does not ship with the bot "
                                     f"(known: {', '.join(checkers.NAMES)})")]
    if card.checker == checkers.BEHAVIOUR:  # it reports the card's own ids (lint checks
        return []  # them); its code is tried in the sandbox before storing (the engine)
    reported = checkers.mistakes(card.checker)
    registered = {m.id for m in deck.mistakes}
    problems = []
    if missing := [m for m in reported if m not in registered]:
        problems.append(((*base, "checker"), (
            f"checker '{card.checker}' can report {len(missing)} mistake(s) this deck does "
            f"not register: {', '.join(missing)}; add each to the deck's mistakes (with a "
            "title and explanation) and to this card's mistakes")))
    if unlisted := [m for m in reported if m in registered and m not in card.mistakes]:
        problems.append(((*base, "mistakes"), (
            f"the card's mistakes leave out {', '.join(unlisted)}, which checker "
            f"'{card.checker}' can report: list every one")))
    if never := [m for m in card.mistakes if m not in reported]:
        problems.append(((*base, "mistakes"), (
            f"checker '{card.checker}' never reports {', '.join(never)}: list only the "
            "mistakes it can report")))
    return problems


NOTHING_ELSE = "Nothing else was checked: the rest is checked once this is fixed."


@dataclass
class Findings:
    """Every problem of a deck text as (line, message), unsorted; `partial`: what of the
    deck parsed (the whole deck when there are no problems); `notes`: what did not run."""

    problems: list[tuple[int, str]]
    partial: Partial | None
    notes: list[str]


def examine(text: str, file: str, giveaways: bool | None, extra_checks=None) -> Findings:
    """Every check after `screen` that can run: the schema, and the lint, the checkers, the
    rev bounds, the placeholders and `extra_checks` on the cards and mistakes that parse,
    however many others do not."""
    problems: list[tuple[int, str]] = []
    notes: list[str] = []
    try:
        partial = Partial(parse_deck(text, file, giveaways=giveaways))
    except DeckError as exc:
        problems += [(p.line, p.message) for p in exc.problems]
        partial = exc.partial
        if exc.unchecked:
            notes.append(exc.unchecked[0].upper() + exc.unchecked[1:] + ".")
    if partial is not None:
        line = line_finder(text)
        found = _after_parse(partial.deck) + list(
            extra_checks(partial.deck) if extra_checks else [])
        problems += [(line(partial.path(path)), message) for path, message in found]
        if partial.left_out:
            notes.append(f"{partial.left_out} card(s) or mistake(s) with schema problems were "
                         "left out of the content checks (and of the deck-wide counts); "
                         "those run on them once they parse.")
    return Findings(problems, partial, notes)


def owners(text: str):
    """For a deck text: what a line belongs to, "card <id>", "mistake <id>" or "deck" (a
    card without an id is "card #N"); "deck" everywhere when the YAML does not compose."""
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError:
        return lambda line: "deck"
    spans: list[tuple[int, int, str]] = []
    if isinstance(root, yaml.MappingNode):
        for key, value in root.value:
            if key.value not in ("cards", "mistakes") or not isinstance(
                    value, yaml.SequenceNode):
                continue
            what = key.value[:-1]
            for i, item in enumerate(value.value):
                ident = next((v.value for k, v in getattr(item, "value", ())
                              if isinstance(item, yaml.MappingNode) and k.value == "id"
                              and isinstance(v, yaml.ScalarNode) and v.value), None)
                name = f"{what} {ident[:80]}" if ident else f"{what} #{i + 1}"
                spans.append((item.start_mark.line + 1, _last_line(item), name))

    def owner(line: int) -> str:
        return next((name for start, end, name in spans if start <= line <= end), "deck")
    return owner


def _last_line(node: yaml.Node) -> int:
    """The last line a node's own text is on (a block's end mark is the next line's start)."""
    children = node.value if isinstance(node, yaml.SequenceNode) else [
        n for pair in node.value for n in pair] if isinstance(node, yaml.MappingNode) else []
    if children:
        return max(_last_line(child) for child in children)
    mark = node.end_mark
    return mark.line + (1 if mark.column else 0) if mark.line > node.start_mark.line else (
        node.start_mark.line + 1)


def labelled(text: str, problems: list[tuple[int, str]]) -> list[tuple[int, str]]:
    """The problems in line order (stable: a line's problems keep the order the checks found
    them), each message led by what it belongs to; a repeated one once."""
    owner, seen, out = owners(text), set(), []
    for line, message in sorted(problems, key=lambda p: p[0]):
        if (line, message) not in seen:
            seen.add((line, message))
            name = owner(line)
            said = name.split(" ", 1)[-1] + ": "  # a check that names the card already
            out.append((line, f"{name}: {message.removeprefix(said)}"))
    return out


def report(text: str, problems: list[tuple[int, str]]) -> list[str]:
    """`labelled` problems as an upload shows them: "line N, card <id>: message"."""
    return [f"line {line}, {message}" for line, message in labelled(text, problems)]


def parse_untrusted(data: bytes, extra_checks=None) -> tuple[Deck, str]:
    """The deck and its text, or UntrustedDeck with every problem as "line N, owner: message"
    in line order (`report`), and what it found for a caller that adds checks of its own:
    `found` (the Findings; None when a check before parsing refused it) and `text`.
    `extra_checks(deck)` adds (YAML path, message) problems (the Discord limits)."""
    text = decode(data)
    screen(text)
    pragma = [(n, f"'{ALLOW_PRAGMA}' is for drafts on disk; uploads are always checked for "
                  "answers given away: delete this line")
              for n, line in enumerate(text.splitlines(), 1) if allows_giveaways(line.strip())]
    found = examine(text, "<upload>", True, extra_checks)
    found.problems[:0] = pragma
    if found.problems:
        error = UntrustedDeck("The deck has problems; nothing was stored.",
                              report(text, found.problems))
        error.found, error.text = found, text
        raise error
    return found.partial.deck, text
