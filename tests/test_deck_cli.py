"""`tutor deck publish|list`: an operator stores a server's deck through the upload checks."""

from __future__ import annotations

import yaml

from tests.helpers.cli import tutor
from tests.helpers.decks import DECK, deck_yaml


def test_publish_stores_a_version_and_list_shows_every_deck(tmp_path):
    db, deck = tmp_path / "tutor.db", tmp_path / "basics.yaml"
    deck.write_bytes(deck_yaml())
    first = tutor("deck", "publish", str(deck), "--guild", "42", "--db", str(db))
    assert first.returncode == 0, first.stderr
    assert "'upload-basics' version 1 (2 cards) for guild 42" in first.stdout
    data = yaml.safe_load(deck_yaml())
    data["cards"][0].update(rev=2, content_rev=1, hint="Does the call change x itself??")
    deck.write_text(yaml.safe_dump(data, sort_keys=False))
    second = tutor("deck", "publish", str(deck), "--guild", "42", "--db", str(db), "--public")
    assert "version 2" in second.stdout and second.returncode == 0
    listing = tutor("deck", "list", "--db", str(db)).stdout.splitlines()
    assert listing[0].split() == ["id", "owner", "version", "cards", "public", "removed"]
    rows = {line.split()[0]: line.split()[1:] for line in listing[1:]}
    assert rows["upload-basics"] == ["42", "2", "2", "yes", "no"]
    assert rows["gradient-accumulation"][0] == "bundled"


def test_publish_refuses_with_line_messages_and_exit_1(tmp_path):
    db, deck = tmp_path / "tutor.db", tmp_path / "basics.yaml"
    deck.write_bytes(deck_yaml())
    assert tutor("deck", "publish", str(deck), "--guild", "1", "--db", str(db)).returncode == 0
    taken = tutor("deck", "publish", str(deck), "--guild", "2", "--db", str(db))
    assert taken.returncode == 1
    assert "is taken by another server" in taken.stdout and "another server" in taken.stderr
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump({**DECK, "id": "other", "title": "T" * 101}))
    result = tutor("deck", "publish", str(bad), "--guild", "1", "--db", str(db))
    assert result.returncode == 1
    assert all(line.startswith(f"{bad}: line ") for line in result.stdout.splitlines())
    listing = tutor("deck", "list", "--db", str(db)).stdout
    assert "other" not in listing.split()
