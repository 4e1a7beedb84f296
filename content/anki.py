"""Export a deck to an Anki package (.apkg) with genanki.

One note per card, on one note type per deck. The note type, the Anki deck and every note
GUID are derived from our ids, never random: re-importing a newer export into Anki updates
the notes it already has instead of adding duplicates (Anki matches notes by GUID).
"""

from __future__ import annotations

import hashlib
import html
from pathlib import Path

import genanki

from content.schema import BLANK_RE, ChoiceCard, CodeCard, Deck, FillInCard, Mistake

FIELDS = ["Front", "Back", "CardId"]
CSS = """
.card { font-family: sans-serif; font-size: 18px; text-align: left; max-width: 48em; }
pre { background: #f4f4f4; padding: .5em; text-align: left; white-space: pre-wrap; }
.wrong { color: #8a3b12; } .meta { color: #777; font-size: 14px; }
"""


def stable_id(*parts: str) -> int:
    """An Anki model or deck id in genanki's recommended range, derived from `parts`."""
    digest = hashlib.sha256("\x1f".join(parts).encode()).digest()
    return (1 << 30) + int.from_bytes(digest[:8], "big") % (1 << 30)


def note_guid(card_id: str) -> str:
    return genanki.guid_for("srs-tutor", card_id)


def _text(value: str) -> str:
    return html.escape(value.strip()).replace("\n", "<br>")


def _pre(code: str) -> str:
    return f"<pre><code>{html.escape(code.rstrip())}</code></pre>"


def _letter(index: int) -> str:
    return chr(ord("A") + index)


def _wrong_item(label: str, says: str | None, mistake: Mistake | None) -> str:
    parts = [f"<b>{label}</b>"]
    if says:
        parts.append(_text(says))
    if mistake:
        parts.append(f"<i>{_text(mistake.title)}:</i> {_text(mistake.explanation)}")
    return f"<li class=wrong>{' '.join(parts)}</li>"


def _hint(hint: str) -> str:
    return f"<details><summary>Hint</summary>{_text(hint)}</details>"


def _fill_in(deck: Deck, card: FillInCard) -> tuple[str, str]:
    number = {blank.id: n for n, blank in enumerate(card.blanks, 1)}
    code = BLANK_RE.sub(lambda m: f"[{number.get(m.group(1), '?')}]", card.code)
    chips = {chip.id: chip for chip in card.chips}
    letters = {chip.id: _letter(i) for i, chip in enumerate(card.chips)}
    front = [f"<p>{_text(card.prompt)}</p>", _pre(code), "<ol type=A>"]
    front += [f"<li><code>{html.escape(chip.text)}</code></li>" for chip in card.chips]
    front += ["</ol>", _hint(card.hint)]
    answers = [
        f"<li>[{number[b.id]}] {letters[b.answer]}. <code>{html.escape(chips[b.answer].text)}"
        "</code></li>" for b in card.blanks if b.answer in chips
    ]
    back = ["<p><b>Answer</b></p><ul>", *answers, "</ul>", f"<p>{_text(card.explanation)}</p>",
            f"<p><b>Takeaway:</b> {_text(card.takeaway)}</p>"]
    wrong = []
    for blank in card.blanks:
        for chip_id, choice in blank.wrong.items():
            text = html.escape(chips[chip_id].text) if chip_id in chips else chip_id
            label = f"[{number[blank.id]}] {letters.get(chip_id, '?')}. <code>{text}</code>:"
            wrong.append(_wrong_item(label, choice.says, _mistake(deck, choice.mistake)))
    if wrong:
        back += ["<p><b>Why not the others</b></p><ul>", *wrong, "</ul>"]
    return "".join(front), "".join(back)


def _choice(deck: Deck, card: ChoiceCard) -> tuple[str, str]:
    front = [f"<p>{_text(card.prompt)}</p>"]
    if card.code:
        front.append(_pre(card.code))
    front.append("<ol type=A>")
    for option in card.options:
        front.append(f"<li>{_text(option.text)}{_pre(option.code) if option.code else ''}</li>")
    front += ["</ol>", _hint(card.hint)]
    back = []
    for i, option in enumerate(card.options):
        if option.correct:
            back.append(f"<p><b>Answer: {_letter(i)}.</b> {_text(option.text)}</p>")
    back.append("<ol>")
    back += [f"<li><b>{_text(s.title)}:</b> {_text(s.detail)}</li>" for s in card.solution]
    back += ["</ol>", f"<p><b>Takeaway:</b> {_text(card.takeaway)}</p>"]
    wrong = [
        _wrong_item(f"{_letter(i)}.", option.says, _mistake(deck, option.mistake))
        for i, option in enumerate(card.options) if not option.correct
    ]
    if wrong:
        back += ["<p><b>Why not the others</b></p><ul>", *wrong, "</ul>"]
    return "".join(front), "".join(back)


def _code(deck: Deck, card: CodeCard) -> tuple[str, str]:
    front = f"<p>{_text(card.prompt)}</p>{_pre(card.starter)}{_hint(card.hint)}"
    mistakes = [m for m in (_mistake(deck, i) for i in card.mistakes) if m]
    back = [f"<p><b>Reference</b></p>{_pre(card.reference)}",
            f"<p><b>Takeaway:</b> {_text(card.takeaway)}</p>"]
    if mistakes:
        back.append("<p><b>Common mistakes</b></p><ul>")
        back += [f"<li><i>{_text(m.title)}:</i> {_text(m.explanation)}</li>" for m in mistakes]
        back.append("</ul>")
    return front, "".join(back)


def _mistake(deck: Deck, mistake_id: str | None) -> Mistake | None:
    try:
        return deck.mistake(mistake_id) if mistake_id else None
    except KeyError:
        return None


def note_fields(deck: Deck, card: FillInCard | ChoiceCard | CodeCard) -> tuple[str, str]:
    """The (front, back) HTML of a card's note."""
    if isinstance(card, FillInCard):
        return _fill_in(deck, card)
    if isinstance(card, ChoiceCard):
        return _choice(deck, card)
    return _code(deck, card)


def build_deck(deck: Deck) -> genanki.Deck:
    model = genanki.Model(
        stable_id("srs-tutor model", deck.id),
        f"srs-tutor: {deck.id}",
        fields=[{"name": name} for name in FIELDS],
        templates=[{
            "name": "Card",
            "qfmt": "{{Front}}",
            "afmt": "{{FrontSide}}<hr id=answer>{{Back}}<p class=meta>{{CardId}}</p>",
        }],
        css=CSS,
    )
    anki_deck = genanki.Deck(stable_id("srs-tutor deck", deck.id), deck.title,
                             description=html.escape(deck.description))
    for card in deck.cards:
        front, back = note_fields(deck, card)
        tags = [deck.id, card.type, card.difficulty, *card.topics]
        anki_deck.add_note(genanki.Note(model=model, fields=[front, back, card.id],
                                        guid=note_guid(card.id), tags=tags))
    return anki_deck


def export_apkg(deck: Deck, out_path: Path | str) -> int:
    """Write `deck` as an Anki package to `out_path`; return the number of notes."""
    anki_deck = build_deck(deck)
    genanki.Package(anki_deck).write_to_file(str(out_path))
    return len(anki_deck.notes)
