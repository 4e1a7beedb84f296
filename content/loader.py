"""Load deck YAML files into validated `Deck` objects, all or nothing.

Every problem (YAML syntax, duplicate keys, schema, cross-references) is reported as
`file:line: message`; a deck with any problem is not loaded at all.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from content.giveaway_words import allows_giveaways
from content.lint import check_deck
from content.schema import ChoiceCard, CodeCard, Deck, FillInCard, Mistake

DECKS_DIR = Path(__file__).resolve().parent / "decks"
AnyCard = FillInCard | ChoiceCard | CodeCard


@dataclass(frozen=True)
class DeckProblem:
    file: str
    line: int
    message: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.message}"


@dataclass(frozen=True)
class Partial:
    """What of a deck with problems the later checks can still look at: `deck` holds the
    cards and mistakes that passed the schema (all of them when only the lint failed);
    `path` maps a YAML path in it to the file's; `left_out`: cards and mistakes dropped
    for their schema problems."""

    deck: Deck
    path: Callable[[tuple], tuple] = field(default=lambda path: tuple(path))
    left_out: int = 0


class DeckError(Exception):
    """`partial`: what later checks may still look at (None: nothing parsed); `unchecked`:
    why the content checks did not run, when they did not."""

    def __init__(self, problems: list[DeckProblem], partial: Partial | None = None,
                 unchecked: str | None = None):
        self.problems, self.partial, self.unchecked = problems, partial, unchecked
        self.notes: list[str] = []  # what a caller could not check (`load_file`)
        super().__init__("\n".join(map(str, problems)))


class _LineLoader(yaml.SafeLoader):
    """A safe loader that refuses duplicate keys (PyYAML silently keeps the last)."""


def _construct_mapping(loader: _LineLoader, node: yaml.MappingNode, deep: bool = False):
    seen: dict[Any, int] = {}
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        if key in seen:
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate key '{key}' (first on line {seen[key]})",
                key_node.start_mark,
            )
        seen[key] = key_node.start_mark.line + 1
    return yaml.SafeLoader.construct_mapping(loader, node, deep=deep)


_LineLoader.add_constructor(
    yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping
)


def _line_index(node: yaml.Node, path: tuple = ()) -> Iterator[tuple[tuple, int]]:
    """Yield (path, 1-based line) for every node of a composed YAML document."""
    yield path, node.start_mark.line + 1
    if isinstance(node, yaml.MappingNode):
        for key_node, value_node in node.value:
            yield (*path, key_node.value), key_node.start_mark.line + 1
            for sub_path, line in _line_index(value_node, (*path, key_node.value)):
                if sub_path != (*path, key_node.value):
                    yield sub_path, line
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            yield from _line_index(item, (*path, index))


def _line_for(lines: dict[tuple, int], loc: tuple) -> int:
    """The line of the deepest node of `loc` that exists in the file.

    Pydantic locations can hold union tags ('fill_in') that are not YAML keys; skip them.
    """
    best, path = lines.get((), 1), ()
    for part in loc:
        candidate = (*path, part)
        if candidate in lines:
            path, best = candidate, lines[candidate]
    return best


def _error_path(error: dict) -> tuple:
    """Where an error points in the YAML; a bad union tag points at its `type:` key."""
    loc = tuple(error["loc"])
    if error["type"] == "union_tag_invalid":
        key = str((error.get("ctx") or {}).get("discriminator", "")).strip("'\"")
        if key:
            loc = (*loc, key)
    return loc


def _format_pydantic(error: dict) -> str:
    loc = ".".join(str(p) for p in error["loc"])
    return f"{loc}: {error['msg']}" if loc else error["msg"]


def parse_deck(text: str, file: str = "<deck>", *, giveaways: bool | None = None) -> Deck:
    """Parse and validate one deck; raise DeckError listing every problem.

    The give-away checks (`content.giveaways`) run unless `giveaways` is False or, left
    at None, the text carries the `# tutor-lint: allow-giveaways` line (drafts, fixtures).
    """
    try:
        root = yaml.compose(text, Loader=_LineLoader)
        data = yaml.load(text, Loader=_LineLoader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
        line = mark.line + 1 if mark else 1
        problem = getattr(exc, "problem", None) or str(exc)
        raise DeckError([DeckProblem(file, line, f"YAML: {problem}")],
                        unchecked=NOT_YAML) from None
    if root is None or not isinstance(data, dict):
        raise DeckError([DeckProblem(file, 1, "a deck must be a YAML mapping")],
                        unchecked=NOT_YAML)
    lines = dict(_line_index(root))
    if giveaways is None:
        giveaways = not allows_giveaways(text)
    try:
        deck = Deck.model_validate(data)
    except ValidationError as exc:
        problems = [
            DeckProblem(file, _line_for(lines, _error_path(e)), _format_pydantic(e))
            for e in exc.errors()
        ]
        partial = _salvage(data, exc.errors())
        if partial is None:
            raise DeckError(problems, unchecked=DECK_FIELDS) from None
        problems += [DeckProblem(file, _line_for(lines, partial.path(path)), msg)
                     for path, msg in _lint_partial(data, partial, giveaways)]
        raise DeckError(problems, partial) from None
    problems = [DeckProblem(file, _line_for(lines, path), msg)
                for path, msg in check_deck(deck, giveaways=giveaways)]
    if problems:
        raise DeckError(problems, Partial(deck))
    return deck


NOT_YAML = "nothing else could be checked until the file is a YAML mapping"
DECK_FIELDS = ("the content checks (mistake ids, give-aways) did not run: they need the "
               "deck's own fields (id, title, version, cards) right first")
_LISTS = ("cards", "mistakes")


def _salvage(data: dict, errors: list[dict]) -> Partial | None:
    """The deck without the cards and mistakes that failed the schema, so that the others'
    content is checked in the same upload; None when the deck's own fields failed."""
    bad: dict[str, set[int]] = {key: set() for key in _LISTS}
    for error in errors:
        loc = tuple(error["loc"])
        if not (len(loc) >= 2 and loc[0] in bad and isinstance(loc[1], int)
                and isinstance(data.get(loc[0]), list)):
            return None
        bad[loc[0]].add(loc[1])
    kept = {key: [i for i in range(len(data[key])) if i not in bad[key]]
            for key in _LISTS if isinstance(data.get(key), list)}
    trimmed = {**data, **{key: [data[key][i] for i in kept[key]] for key in kept}}
    try:
        deck = Deck.model_validate(trimmed)
    except ValidationError:
        return None

    def path(where: tuple) -> tuple:
        where = tuple(where)
        if len(where) >= 2 and where[0] in kept and isinstance(where[1], int) and (
                where[1] < len(kept[where[0]])):
            return (where[0], kept[where[0]][where[1]], *where[2:])
        return where

    return Partial(deck, path, sum(map(len, bad.values())))


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def _lint_partial(data: dict, partial: Partial, giveaways: bool) -> list[tuple[tuple, str]]:
    """The lint of a salvaged deck, less what only the left-out items could settle: a
    mistake a dropped card may use, a mistake id a dropped mistake may register."""
    kept_paths = {partial.path((key, i)) for key in _LISTS
                  for i in range(len(getattr(partial.deck, key)))}
    dropped = [item for key in _LISTS if isinstance(data.get(key), list)
               for i, item in enumerate(data[key]) if (key, i) not in kept_paths]
    mentioned = set(_strings(dropped))
    registered = {str(item.get("id")) for i, item in enumerate(data.get("mistakes") or [])
                  if isinstance(item, dict) and ("mistakes", i) not in kept_paths}
    found = []
    for path, message in check_deck(partial.deck, giveaways=giveaways):
        never = re.fullmatch(r"mistake '(.*)' is never used by a card", message)
        unknown = re.fullmatch(r"unknown mistake id '(.*)'", message)
        if (never and never[1] in mentioned) or (unknown and unknown[1] in registered):
            continue
        found.append((path, message))
    return found


def load_deck(path: Path | str) -> Deck:
    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise DeckError([DeckProblem(str(path), 1, f"cannot read: {exc}")]) from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        message = f"not UTF-8 text: byte 0x{raw[exc.start]:02x} cannot be decoded ({exc.reason})"
        raise DeckError([DeckProblem(str(path), line, message)]) from None
    return parse_deck(text, str(path))


def deck_files(paths: Iterable[Path | str] = ()) -> list[Path]:
    """Expand the given files and folders; the bundled decks when none are given."""
    result: list[Path] = []
    for path in map(Path, paths or [DECKS_DIR]):
        result += sorted(path.glob("*.yaml")) if path.is_dir() else [path]
    return result


def _top_level_line(path: Path, key: str) -> int:
    """The line of a top-level `key:` in a deck file that has already loaded cleanly."""
    root = yaml.compose(path.read_text(encoding="utf-8"), Loader=_LineLoader)
    if isinstance(root, yaml.MappingNode):
        for key_node, _ in root.value:
            if key_node.value == key:
                return key_node.start_mark.line + 1
    return 1


class DeckLibrary:
    """Every loaded deck, with card and mistake lookup by id."""

    def __init__(self, decks: Iterable[Deck]):
        self.decks: dict[str, Deck] = {}
        self._cards: dict[str, tuple[Deck, AnyCard]] = {}
        for deck in decks:
            if deck.id in self.decks:
                raise DeckError([DeckProblem(deck.id, 1, f"deck id '{deck.id}' loaded twice")])
            self.decks[deck.id] = deck
            for card in deck.cards:
                self._cards[card.id] = (deck, card)

    @classmethod
    def load(cls, paths: Iterable[Path | str] = ()) -> DeckLibrary:
        """Load every deck; raise one DeckError with all problems of all files."""
        decks, problems = [], []
        first_file: dict[str, Path] = {}
        for file in deck_files(paths):
            try:
                deck = load_deck(file)
            except DeckError as exc:
                problems += exc.problems
                continue
            if deck.id in first_file:
                problems.append(DeckProblem(
                    str(file), _top_level_line(file, "id"),
                    f"deck id '{deck.id}' is already used by {first_file[deck.id]}",
                ))
                continue
            first_file[deck.id] = file
            decks.append(deck)
        if problems:
            raise DeckError(problems)
        return cls(decks)

    def deck(self, deck_id: str) -> Deck:
        try:
            return self.decks[deck_id]
        except KeyError:
            known = ", ".join(sorted(self.decks)) or "none"
            raise KeyError(f"no deck '{deck_id}' (loaded: {known})") from None

    def card(self, card_id: str) -> AnyCard:
        return self._cards[card_id][1]

    def deck_of(self, card_id: str) -> Deck:
        return self._cards[card_id][0]

    def has_card(self, card_id: str) -> bool:
        return card_id in self._cards

    def mistake(self, card_id: str, mistake_id: str) -> Mistake:
        """A mistake a card's deck registers: mistake ids are a deck's own."""
        return self.deck_of(card_id).mistake(mistake_id)

    def deck_mistake(self, deck_id: str, mistake_id: str) -> Mistake | None:
        """The mistake `mistake_id` of deck `deck_id`, None when that deck is not loaded or
        does not register it. Never another deck's: any deck may reuse an id."""
        deck = self.decks.get(deck_id)
        return next((m for m in deck.mistakes if m.id == mistake_id), None) if deck else None

    def cards(self, deck_id: str | None = None) -> list[AnyCard]:
        decks = [self.deck(deck_id)] if deck_id else list(self.decks.values())
        return [card for deck in decks for card in deck.cards]


def line_finder(text: str):
    """For a deck text that parses: the 1-based line of a YAML path (its deepest node that
    exists in the file), to report later checks the way the loader reports its own."""
    lines = dict(_line_index(yaml.compose(text, Loader=_LineLoader)))
    return lambda path: _line_for(lines, tuple(path))
