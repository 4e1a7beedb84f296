"""Decks a server brings: upload, validate, version, share, enable, export (issue 15).

The engine side of `/deck ...` and `tutor deck publish|list`: no Discord import. Decks from
files (content/decks/) are bundled for every server; a deck uploaded by a server is stored
in the database, versioned, and served only where it is enabled. Uploads are untrusted
input from strangers: every check runs before anything is stored, and a refused upload
stores nothing.
"""

from __future__ import annotations

import re
import tempfile
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path, PurePath
from typing import Literal

import yaml

from bot.engine.deck_limits import check_limits
from bot.engine.errors import TutorError
from bot.engine.exercises import ExercisesUntried, exercise_findings, exercises_of
from bot.engine.server_decks import Origin, ServerDecks
from bot.engine.trials import TrialGate
from bot.engine.tutor import Tutor
from content.anki import export_apkg
from content.importer import import_page
from content.loader import Partial, line_finder, parse_deck
from content.schema import Deck
from content.untrusted import NOTHING_ELSE, UntrustedDeck, decode, parse_untrusted, report
from content.versions import accepts_changed
from scheduler.storage.decks import DeckGone, DeckTaken, NewVersion, NoDeckLeft
from scheduler.storage.store import Store


class DeckRejected(TutorError):
    """The upload was refused; nothing was stored. `problems`: "line N, card <id>: message"
    lines in line order; `notes`: what could not be checked because of them."""

    def __init__(self, summary: str, problems: list[str] | None = None,
                 notes: list[str] | None = None):
        super().__init__(summary)
        self.problems, self.notes = problems or [], notes or []


@dataclass(frozen=True)
class DeckSummary:
    deck_id: str
    title: str
    cards: int
    origin: Origin
    enabled: bool  # served on this server
    public: bool  # published: any server may enable it
    version: int  # 1.. for stored decks; the file's `version` for bundled ones


@dataclass(frozen=True)
class Uploaded:
    deck_id: str
    title: str
    version: int  # the stored version number (1 for a new deck)
    cards: int
    new: bool  # a deck id never seen before (False: a new version of this server's deck)


@dataclass(frozen=True)
class Checked:
    """An upload that passed its checks, to be stored as a new version of `version` (0: a
    new deck id); `exercises`: it has behaviour cards to try first."""

    deck: Deck
    text: str
    version: int

    @property
    def exercises(self) -> bool:
        return bool(exercises_of(self.deck))


@dataclass(frozen=True)
class Draft:
    """A practice page (.txt) run through the importer: a YAML draft to fix and upload."""

    filename: str
    yaml: str
    notes: list[str]  # the importer's flags and problems, one line each


class CommunityDecks:
    def __init__(self, tutor: Tutor, store: Store, server: ServerDecks,
                 trials: TrialGate | None = None):
        self.tutor, self._store, self.server, self.live = tutor, store, server, server.live
        self.trials = trials or TrialGate()  # how much of the sandbox uploads may take

    def upload(self, guild_id: int, filename: str, data: bytes,
               uploaded_by: str) -> Uploaded | Draft:
        """A deck file (.yaml/.yml) is validated and stored as this server's (a new deck
        id, or a new version of a deck this server owns) and enabled here; a practice page
        (.txt) comes back as a Draft. DeckRejected otherwise, with nothing stored (or
        TrialRefused: its exercises may not be tried now). The three steps, for a front end
        that runs the slow one (the sandbox) off its loop: `check`, `try_exercises` (inside
        `trial`), `store`."""
        checked = self.check(guild_id, filename, data)
        if isinstance(checked, Draft):
            return checked
        if checked.exercises:
            with self.trial(guild_id):
                self.try_exercises(guild_id, checked)
        return self.store(guild_id, checked, uploaded_by)

    def check(self, guild_id: int, filename: str, data: bytes) -> Checked | Draft:
        """Every check of an upload but its exercises (a few database reads)."""
        suffix = PurePath(filename).suffix.lower()
        if suffix == ".txt":
            return _draft(filename, data)
        if suffix not in (".yaml", ".yml"):
            raise DeckRejected(f"'{filename}' is not a deck: send a .yaml (or .yml) deck "
                               "file, or a .txt practice page to draft one from.")
        try:
            deck, text = parse_untrusted(data, check_limits)
            found, partial, notes = [], Partial(deck), []
        except UntrustedDeck as exc:
            if exc.found is None:  # refused before parsing: nothing else can be looked at
                raise DeckRejected(exc.summary, exc.problems, [NOTHING_ELSE]) from None
            text, found = exc.text, list(exc.found.problems)
            partial, notes = exc.found.partial, list(exc.found.notes)
        store = self._store
        row, taken = None, []
        if partial is not None:  # the deck id and the stored version, however many cards fail
            deck = partial.deck
            row = store.decks.get(deck.id)
            taken = self._taken(guild_id, deck.id, row, line_finder(text)(("id",)))
            if row is not None and not taken:
                previous = parse_deck(store.decks.yaml(deck.id, row.version), deck.id,
                                      giveaways=False)
                line = line_finder(text)
                found += _rev_problems(previous, deck, row.version,
                                       lambda path: line(partial.path(path)))
        if found or taken:
            if partial is not None and exercises_of(partial.deck):
                notes.append("The behaviour exercises were not tried: they run in the sandbox "
                             "once everything above is fixed.")
            summary = taken[0][2] if taken and not found else (
                f"The {'new version' if row else 'deck'} has problems; nothing was stored.")
            raise DeckRejected(summary, report(text, found + [t[:2] for t in taken]), notes)
        return Checked(partial.deck, text, row.version if row else 0)

    def trial(self, guild_id: int):
        """The server's one trial of exercises, held around `try_exercises`: TrialRefused
        while another of its uploads is tried, past its uploads per hour, or while as many
        servers' are tried as this process has threads for them."""
        return self.trials.held(guild_id)

    def try_exercises(self, guild_id: int, checked: Checked) -> None:
        """Run the deck's behaviour exercises in the sandbox (seconds; no database):
        DeckRejected with a reason per card when one fails."""
        try:
            problems = exercise_findings(self.tutor.code_judge, checked.deck, checked.text,
                                         guild_id)
        except ExercisesUntried as exc:
            raise DeckRejected(str(exc)) from None
        if problems:
            raise DeckRejected("The deck's behaviour exercises have problems; nothing was "
                               "stored.", report(checked.text, problems))

    def store(self, guild_id: int, checked: Checked, uploaded_by: str) -> Uploaded:
        """Store a checked upload: refused when another was stored since its check."""
        deck = checked.deck
        try:
            version = self._store.decks.save_version(NewVersion(
                deck.id, guild_id, checked.version, checked.text, deck.title,
                len(deck.cards), uploaded_by[:100], self.tutor.clock(), self.server.default()))
        except DeckTaken:
            raise DeckRejected(f"Another upload of '{deck.id}' was stored at the same time; "
                               "nothing was stored from this one. Try again.") from None
        self.live.refresh(force=True)
        return Uploaded(deck.id, deck.title, version, len(deck.cards), not checked.version)

    def _taken(self, guild_id: int, deck_id: str, row, line: int) -> list[tuple[int, str, str]]:
        """[(line, problem, summary)] when the deck id is another's."""
        if deck_id in self.live.bundled.decks:
            return [(line, f"deck id '{deck_id}' is taken by a bundled deck",
                     f"The deck id '{deck_id}' belongs to a deck that ships with the bot; "
                     "give yours another id.")]
        if row is not None and row.owner_guild_id != guild_id:
            return [(line, f"deck id '{deck_id}' is taken by another server",
                     f"The deck id '{deck_id}' belongs to another server's deck; give yours "
                     "another id.")]
        return []

    @property
    def can_try_exercises(self) -> bool:
        """Whether this bot runs a sandbox that deck exercises can be tried in (without one
        `try_exercises` refuses every deck with behaviour cards)."""
        return getattr(self.tutor.code_judge, "vet", None) is not None

    def uploads(self, guild_id: int) -> dict[str, tuple[str, datetime]]:
        """Who stored the current version of each deck this server uploaded, and when."""
        self.live.refresh(force=True)
        found = {}
        for deck_id, row in self.live.stored.items():
            if row.owner_guild_id == guild_id and not row.removed:
                last = self._store.decks.versions(deck_id)[-1:]
                if last:
                    found[deck_id] = (last[0].uploaded_by, last[0].uploaded_at)
        return found

    def enabled(self, guild_id: int) -> list[str]:
        """The deck ids this server plays (`ServerDecks.enabled`)."""
        return self.server.enabled(guild_id)

    def summaries(self, guild_id: int) -> list[DeckSummary]:
        """Every deck this server can play: bundled, its own, and published ones."""
        self.live.refresh(force=True)
        enabled, stored = set(self.enabled(guild_id)), self.live.stored
        return [DeckSummary(d, deck.title, len(deck.cards), origin, d in enabled,
                            origin == "bundled" or stored[d].public,
                            deck.version if origin == "bundled" else stored[d].version)
                for d, (deck, origin) in self.server.visible(guild_id).items()]

    def deck(self, guild_id: int, deck_id: str) -> Deck:
        """A deck this server can see (TutorError if none)."""
        self.live.refresh(force=True)
        visible = self.server.visible(guild_id)
        if deck_id not in visible:
            raise TutorError(f"No deck '{deck_id}' here. Decks: {', '.join(visible)}.")
        return visible[deck_id][0]

    def set_enabled(self, guild_id: int, deck_id: str, enabled: bool) -> list[str]:
        """Play the deck here or not; the deck ids played afterwards."""
        self.deck(guild_id, deck_id)  # refused unless this server can see it
        try:  # one row changed on what is stored now: concurrent changes all count
            self._store.decks.choose(guild_id, deck_id, bool(enabled), self.server.default(),
                                          set(self.server.visible(guild_id)))
        except NoDeckLeft:
            raise TutorError("At least one deck has to stay on.") from None
        except DeckGone:
            raise TutorError(f"'{deck_id}' was just removed or unshared by its "
                             "server.") from None
        return self.enabled(guild_id)

    def _own(self, guild_id: int, deck_id: str, what: str):
        row = self._store.decks.get(deck_id)
        if row is None or row.owner_guild_id != guild_id:
            raise TutorError(f"Only the server that uploaded '{deck_id}' can {what} it.")
        return row

    def publish(self, guild_id: int, deck_id: str, public: bool) -> None:
        """Only the owning server may publish or unpublish its deck; unpublishing ends
        every other server's choice of it (publishing again does not bring it back)."""
        row = self._own(guild_id, deck_id, "publish")
        if row.removed and public:
            raise TutorError(f"'{deck_id}' was removed; upload it again to publish it.")
        self._store.decks.update(deck_id, guild_id, self.tutor.clock(),
                                      public=bool(public))
        self.live.refresh(force=True)

    def remove(self, guild_id: int, deck_id: str) -> None:
        """The owner stops serving its deck everywhere: it is no longer shared, and no
        server plays it (a server left with none plays the default decks, as a new server
        does); an upload of the id later is private and enabled only by the owner.
        Reviews and history are kept."""
        self._own(guild_id, deck_id, "remove")
        self._store.decks.update(deck_id, guild_id, self.tutor.clock(),
                                      removed=True)
        self.live.refresh(force=True)

    def export(self, guild_id: int, deck_id: str,
               fmt: Literal["yaml", "apkg"]) -> tuple[str, bytes]:
        """(file name, bytes) of a deck this server can see."""
        deck = self.deck(guild_id, deck_id)
        if fmt == "apkg":
            with tempfile.TemporaryDirectory() as folder:
                path = Path(folder) / f"{deck_id}.apkg"
                export_apkg(deck, path)
                return path.name, path.read_bytes()
        if fmt != "yaml":
            raise TutorError("Export as yaml or apkg.")
        row = self.live.stored.get(deck_id)
        if row is not None and deck_id not in self.live.bundled.decks:
            return f"{deck_id}.yaml", self._store.decks.yaml(deck_id, row.version).encode()
        data = deck.model_dump(mode="json", exclude_defaults=True)  # a file deck's content
        return f"{deck_id}.yaml", yaml.safe_dump(data, sort_keys=False,
                                                 allow_unicode=True).encode()

    def ids(self, guild_id: int, prefix: str = "") -> list[str]:
        """Deck ids this server can see that start with `prefix`."""
        return [d for d in self.server.visible(guild_id) if d.startswith(prefix)]

    def choices(self, guild_id: int, typed: str = "") -> list[tuple[str, str]]:
        """(id, title) of the decks this server can see whose title or id holds what was
        typed (autocomplete: learners see titles, the id is the value)."""
        needle = typed.casefold()
        return [(deck_id, deck.title) for deck_id, (deck, _) in
                self.server.visible(guild_id).items()
                if needle in deck.title.casefold() or needle in deck_id]


def _rev_problems(old: Deck, new: Deck, version: int, line) -> list[tuple[int, str]]:
    """Learners keep their progress on a card unless its meaning_rev moved (the engine
    relearns a card whose stored rev is older), so revs may only go forward, and an edited
    card must bump rev: otherwise a changed card would keep stale progress."""
    before = {card.id: card for card in old.cards}
    problems = []
    for i, card in enumerate(new.cards):
        was = before.get(card.id)
        if was is None:
            continue
        if card.rev < was.rev:
            problems.append((line(("cards", i, "rev")), f"rev {card.rev} is older than "
                            f"rev {was.rev} of version {version}; revs only go up"))
        elif card.meaning_rev < was.meaning_rev:
            problems.append((line(("cards", i, "content_rev")), f"content_rev "
                            f"{card.meaning_rev} is older than {was.meaning_rev} of version "
                            f"{version}"))
        elif card.rev == was.rev and card != was:
            problems.append((line(("cards", i, "rev")), "the card changed since "
                            f"version {version} but its rev is still {card.rev}: bump rev "
                            "(and content_rev when what it asks or accepts changed)"))
        elif card.meaning_rev == was.meaning_rev and (why := accepts_changed(was, card)):
            problems.append((line(("cards", i, "content_rev")), "the card accepts "
                            f"other answers than in version {version} ({why}) but its "
                            f"content_rev is still {card.meaning_rev}: set content_rev to its "
                            "new rev, so learners who have it in play get it anew"))
    return problems


def _draft(filename: str, data: bytes) -> Draft:
    """A practice page run through the importer; nothing is stored."""
    try:
        text = decode(data, "practice page")
    except UntrustedDeck as exc:
        raise DeckRejected(exc.summary, exc.problems) from None
    words = re.findall(r"[a-z0-9]+", PurePath(filename).stem.lower())
    deck_id = "-".join(words)[:40].strip("-") or "deck"
    deck_id = deck_id if deck_id[0].isalpha() else f"deck-{deck_id}"[:40].strip("-")
    try:
        # The name goes into a YAML comment: keep only harmless characters.
        source = re.sub(r"[^\w.-]", "_", PurePath(filename).name)[:100]
        draft, notes = import_page(text, deck_id=deck_id, source=source)
    except ValueError as exc:
        message = str(exc) if str(exc).startswith("line ") else f"line 1: {exc}"
        raise DeckRejected("The practice page does not follow the format; nothing was "
                           "drafted.", [message]) from None
    return Draft(f"{deck_id}.yaml", draft, notes)
