"""The deck format: strict pydantic models (unknown keys rejected).

Ids are stable slugs, never letters or positions, so that review logs (which store ids)
survive reordering and editing. Cross-references (mistake ids, answers, blanks) are checked
by `content.lint`, which reports a YAML path for every problem.
"""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, StringConstraints
from pydantic_core import PydanticCustomError

from content.checkers.behaviour import MAX_VERSIONS, NAME_MAX

SLUG_RE = r"^[a-z][a-z0-9_-]*$"
Slug = Annotated[str, StringConstraints(pattern=SLUG_RE, max_length=40)]
CardId = Annotated[
    str, StringConstraints(pattern=r"^[a-z][a-z0-9-]*/[a-z][a-z0-9-]*$", max_length=80)
]
Text = Annotated[str, StringConstraints(min_length=1, strip_whitespace=True)]
Difficulty = Literal["easy", "medium", "hard"]
PythonName = Annotated[str, StringConstraints(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$",
                                              max_length=NAME_MAX)]

GIVEN_NAMES_HELP = (
    "must be a YAML list of names, such as [torch, F], or [] (or left out) when the code "
    "needs none: the names the card's code may use without defining them (a behaviour "
    "card's are modules imported for its code; F is torch.nn.functional)")


def _names_list(value):
    """given_names as a list of strings, or the author's message (not pydantic's)."""
    if value is None:  # `given_names:` with nothing after it
        return []
    if not isinstance(value, list) or not all(isinstance(name, str) for name in value):
        raise PydanticCustomError("given_names", GIVEN_NAMES_HELP)
    return value


GivenNames = Annotated[list[str], BeforeValidator(_names_list)]

# `[[blank-id]]` marks a blank inside fill-in code.
BLANK_RE = re.compile(r"\[\[([a-z][a-z0-9_-]*)\]\]")


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Mistake(Strict):
    """A common mistake: what learners get wrong and why it matters."""

    id: Slug
    title: Text = Field(description="A short name for the mistake.")
    explanation: Text = Field(description="What goes wrong and how to fix it.")
    seed_wording: list[Text] = Field(
        default_factory=list, description="The source page's own 'Common Mistakes' lines."
    )


class WrongChoice(Strict):
    """Why one wrong chip or option is wrong."""

    mistake: Slug = Field(description="Id of a mistake in the deck's registry.")
    says: Text = Field(description="One sentence: what this choice actually does.")


class Chip(Strict):
    id: Slug
    text: Text


class Blank(Strict):
    id: Slug
    answer: Slug = Field(description="Id of the correct chip.")
    wrong: dict[Slug, WrongChoice] = Field(
        description="Every other chip of the card, keyed by chip id."
    )


class CardBase(Strict):
    id: CardId
    rev: int = Field(ge=1, description="Bump on every edit.")
    content_rev: int | None = Field(
        default=None, ge=1,
        description="The rev whose edit last changed what the card asks or accepts "
                    "(default: rev). Learners who reviewed an older content start over; a "
                    "typo fix bumps only rev and keeps their progress.")

    @property
    def meaning_rev(self) -> int:
        return self.content_rev or self.rev
    difficulty: Difficulty
    topics: list[Slug] = Field(min_length=1)
    prompt: Text
    hint: Text = Field(description="A nudge that does not give the answer away.")
    takeaway: Text
    source: str | None = Field(default=None, description="Where the card came from.")
    flags: list[Text] = Field(
        default_factory=list, description="Curation notes: what was fixed or guessed."
    )


class FillInCard(CardBase):
    type: Literal["fill_in"]
    code: Text = Field(description="Code with [[blank-id]] markers.")
    chips: list[Chip] = Field(min_length=2)
    blanks: list[Blank] = Field(min_length=1)
    explanation: Text


class Option(Strict):
    id: Slug
    text: Text
    code: str | None = None
    correct: bool = False
    mistake: Slug | None = None
    says: str | None = None


class SolutionStep(Strict):
    title: Text
    detail: Text


class ChoiceCard(CardBase):
    type: Literal["multiple_choice"]
    code: str | None = None
    options: list[Option] = Field(min_length=2)
    solution: list[SolutionStep] = Field(min_length=1)


class Comparison(Strict):
    """How a learner's outputs must match the reference's (content/checkers/_values.py)."""

    kind: Literal["allclose", "exact"] = Field(
        default="allclose", description="allclose: |got - want| <= atol + rtol * |want| for "
                                        "numbers and tensors (as torch.allclose); exact: "
                                        "equal, and an int is not a float. A tensor's dtype "
                                        "counts under both.")
    rtol: float = Field(default=1e-5, ge=0, allow_inf_nan=False)
    atol: float = Field(default=1e-8, ge=0, allow_inf_nan=False)
    equal_nan: bool = Field(default=False, description="A NaN matches a NaN in the same place "
                                                       "(how an overflowing version is told).")


class Behaviour(Strict):
    """A `behaviour` code card's exercise: the learner's `entry` is run on the author's cases
    and compared with the card's reference, and with one wrong version per listed mistake.
    All of it is author code, run in the sandbox (and tried there when the deck is uploaded)."""

    entry: PythonName = Field(description="The function (or class) the learner must define.")
    cases: Text = Field(description="Code defining cases(rng): a list of argument tuples, "
                                    "from the random.Random it is given (and nothing else).")
    compare: Comparison = Field(default_factory=Comparison)
    versions: dict[Slug, Text] = Field(
        min_length=1, max_length=MAX_VERSIONS,
        description="One wrong version per mistake id of the card: code that makes it.")


class CodeCard(CardBase):
    type: Literal["code"]
    starter: Text = Field(description="What the learner starts from.")
    given_names: GivenNames = Field(
        default_factory=list, description="Names the code may use without defining them "
                                          "(none for a function that needs none).")
    checker: Slug = Field(description="Module in content/checkers that judges the code.")
    mistakes: list[Slug] = Field(min_length=1, description="Mistake ids the checker reports.")
    reference: Text = Field(description="A correct solution, shown after the check.")
    behaviour: Behaviour | None = Field(
        default=None, description="With `checker: behaviour` (and only then): the exercise.")

    def behaviour_request(self) -> dict | None:
        """The `behaviour` block as the sandbox takes it (bot/sandbox/behaviour.py)."""
        if self.behaviour is None:
            return None
        block = self.behaviour
        return {"entry": block.entry, "cases": block.cases, "reference": self.reference,
                "versions": dict(block.versions), "compare": block.compare.model_dump(),
                "given_names": list(self.given_names)}


Card = Annotated[FillInCard | ChoiceCard | CodeCard, Field(discriminator="type")]


class Deck(Strict):
    id: Slug
    title: Text
    description: Text
    version: int = Field(ge=1)
    source: str | None = None
    mistakes: list[Mistake] = Field(min_length=1)
    cards: list[Card] = Field(min_length=1)

    def card(self, card_id: str) -> FillInCard | ChoiceCard | CodeCard:
        for card in self.cards:
            if card.id == card_id:
                return card
        raise KeyError(card_id)

    def mistake(self, mistake_id: str) -> Mistake:
        for mistake in self.mistakes:
            if mistake.id == mistake_id:
                return mistake
        raise KeyError(mistake_id)


def tested_mistakes(card: FillInCard | ChoiceCard | CodeCard) -> frozenset[str]:
    """The mistake ids a learner could show on this card: its wrong options' or chips', or
    what its code checker reports."""
    if isinstance(card, CodeCard):
        return frozenset(card.mistakes)
    if isinstance(card, ChoiceCard):
        return frozenset(o.mistake for o in card.options if not o.correct)
    return frozenset(w.mistake for b in card.blanks for w in b.wrong.values())


def resolved(deck: Deck) -> dict:
    """The deck as plain data with each wrong choice's mistake spelled out beside its id."""
    mistakes = {m.id: m for m in deck.mistakes}

    def spell(choice: dict) -> None:
        mistake = mistakes[choice["mistake"]]
        choice["mistake_title"], choice["explanation"] = mistake.title, mistake.explanation

    data = deck.model_dump(mode="json")
    for card in data["cards"]:
        for option in card.get("options", []):
            if not option["correct"]:
                spell(option)
        for blank in card.get("blanks", []):
            for choice in blank["wrong"].values():
                spell(choice)
    return data


def json_schema() -> dict:
    schema = Deck.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "Tutor deck"
    return schema
