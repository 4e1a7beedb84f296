"""Anki export: one note per card in a valid .apkg, with GUIDs stable across exports."""

from __future__ import annotations

import html
import sqlite3
import zipfile
from pathlib import Path

import pytest

from content.anki import export_apkg, note_guid, stable_id
from content.loader import load_deck, parse_deck
from content.schema import ChoiceCard, CodeCard, FillInCard
from tests.helpers.paths import FIXTURES, REPO

CANONICAL = REPO / "content" / "decks" / "gradient-accumulation.yaml"
MINI = FIXTURES / "mini.yaml"


def _notes(apkg: Path, tmp_path: Path) -> dict[str, tuple[str, str, str, str]]:
    """card id -> (guid, front, back, tags) read back from the package's SQLite collection."""
    with zipfile.ZipFile(apkg) as archive:
        assert "collection.anki2" in archive.namelist()
        database = tmp_path / f"{apkg.stem}.anki2"
        database.write_bytes(archive.read("collection.anki2"))
    with sqlite3.connect(database) as conn:
        rows = conn.execute("SELECT guid, flds, tags FROM notes").fetchall()
        model_ids = {mid for (mid,) in conn.execute("SELECT DISTINCT mid FROM notes")}
    assert len(model_ids) == 1
    notes = {}
    for guid, fields, tags in rows:
        front, back, card_id = fields.split("\x1f")
        notes[card_id] = (guid, front, back, tags)
    assert len(notes) == len(rows)
    return notes


@pytest.fixture(scope="module")
def deck():
    return load_deck(CANONICAL)


def test_export_has_one_note_per_card(deck, tmp_path):
    out = tmp_path / "deck.apkg"
    assert export_apkg(deck, out) == len(deck.cards)
    notes = _notes(out, tmp_path)
    assert set(notes) == {card.id for card in deck.cards}
    for card in deck.cards:
        guid, front, back, tags = notes[card.id]
        assert guid == note_guid(card.id)
        assert html.escape(card.prompt.strip()) in front
        assert html.escape(card.takeaway.strip()) in back
        assert {deck.id, card.type, card.difficulty} <= set(tags.split())
        if isinstance(card, FillInCard):
            assert "[[" not in front and "[1]" in front
            chips = {chip.id: chip.text for chip in card.chips}
            for n, blank in enumerate(card.blanks, 1):
                assert f"[{n}] " in back and html.escape(chips[blank.answer]) in back
            for blank in card.blanks:
                for choice in blank.wrong.values():
                    assert html.escape(choice.says.strip()) in back
        elif isinstance(card, ChoiceCard):
            index = [o.correct for o in card.options].index(True)
            correct = card.options[index]
            assert f"Answer: {'ABCD'[index]}.</b> {html.escape(correct.text.strip())}" in back
            for option in card.options:
                assert html.escape(option.text.strip()) in front
                if not option.correct:
                    assert html.escape(option.says.strip()) in back
                    assert html.escape(deck.mistake(option.mistake).explanation.strip()) in back
            for step in card.solution:
                assert html.escape(step.title) in back
        else:
            assert isinstance(card, CodeCard)
            assert html.escape(card.starter.rstrip()) in front
            assert f"<pre><code>{html.escape(card.reference.rstrip())}</code></pre>" in back


def test_front_shows_blanks_as_numbers_and_code_in_pre(deck, tmp_path):
    out = tmp_path / "deck.apkg"
    export_apkg(deck, out)
    notes = _notes(out, tmp_path)
    _, front, back, _ = notes["gradient-accumulation/zero-grad"]
    assert "    optimizer.step()\n    optimizer.[1]()</code></pre>" in front
    assert "<code>zero_grad</code>" in back and "zero_grad" not in front.split("<ol")[0]
    _, front, _, _ = notes["gradient-accumulation/full-loop"]
    assert "/ [1]" in front and "loss.[2]()" in front and "% [3] == 0" in front
    _, front, _, _ = notes["gradient-accumulation/printed-loss"]
    assert "print(f&quot;Batch {i + 1} loss: {loss.item()}&quot;)" in front


def test_guids_and_ids_are_stable_across_exports(deck, tmp_path):
    first, second = tmp_path / "a.apkg", tmp_path / "b.apkg"
    export_apkg(deck, first)
    export_apkg(deck, second)
    guids = {card_id: note[0] for card_id, note in _notes(first, tmp_path).items()}
    assert guids == {card_id: note[0] for card_id, note in _notes(second, tmp_path).items()}
    assert len(set(guids.values())) == len(deck.cards)
    assert stable_id("srs-tutor deck", deck.id) == stable_id("srs-tutor deck", deck.id)
    assert stable_id("srs-tutor deck", deck.id) != stable_id("srs-tutor deck", "other")
    assert 1 << 30 <= stable_id("x") < 1 << 31


def test_text_is_html_escaped(tmp_path):
    text = MINI.read_text(encoding="utf-8").replace(
        "prompt: Clear the gradients.", 'prompt: "Clear <b>the</b> gradients & go."'
    )
    mini = parse_deck(text, "mini.yaml")
    out = tmp_path / "mini.apkg"
    assert export_apkg(mini, out) == len(mini.cards)
    _, front, _, _ = _notes(out, tmp_path)["mini/clear"]
    assert "Clear &lt;b&gt;the&lt;/b&gt; gradients &amp; go." in front
    assert "<b>the</b>" not in front
