"""`tutor deck publish|list`: an operator stores a server's deck through the upload checks."""

from __future__ import annotations

import json
import re

import yaml

from content.loader import DECKS_DIR
from tests.helpers.cli import tutor
from tests.helpers.decks import DECK, deck_yaml, renamed
from tests.helpers.exercises import EXAMPLE, MISTAKEN
from tests.helpers.hostile import alias_bomb
from tests.helpers.train_loop import REFERENCE

BUNDLED = DECKS_DIR / "gradient-accumulation.yaml"


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


# -- a file from someone else is untrusted in validate and import too -----------------------

def test_validate_refuses_an_alias_bomb_and_an_oversize_file_as_publish_does(tmp_path):
    bomb, big, bad = tmp_path / "bomb.yaml", tmp_path / "big.yaml", tmp_path / "bad.yaml"
    bomb.write_bytes(alias_bomb())
    big.write_bytes(deck_yaml() + b"# padding\n" * 30_000)
    bad.write_bytes(deck_yaml(lambda d: d["cards"][0]["options"][1].update(mistake="nope")))
    result = tutor("deck", "validate", str(bomb), str(big), str(bad))
    assert result.returncode == 1
    lines = result.stdout.splitlines()
    assert [line for line in lines if line.startswith(f"{bomb}:")] == [
        f"{bomb}:5: deck: the YAML expands to more than 100,000 nodes (aliases count as what they "
        "repeat)"]
    assert [line for line in lines if line.startswith(f"{big}:")] == [
        f"{big}:1: deck: the deck file is {big.stat().st_size / 1024:.0f} KiB; at most 256 KiB are "
        "accepted"]
    # An ordinary problem keeps the loader's file:line:, then names its card as uploads do.
    line = bad.read_text().splitlines().index("    mistake: nope") + 1
    assert f"{bad}:{line}: card upload-basics/move: unknown mistake id 'nope'" in lines
    endless = tutor("deck", "validate", "/dev/zero")  # read up to the bound, no further
    assert endless.stdout == "/dev/zero:1: deck: the deck file is more than 256 KiB; at most " \
                             "256 KiB are accepted\n" and endless.returncode == 1
    published = tutor("deck", "publish", str(big), "--guild", "1", "--db",
                      str(tmp_path / "t.db"))
    assert published.returncode == 1 and "at most 256 KiB" in published.stderr


def test_validate_passes_a_draft_carrying_the_giveaway_pragma(tmp_path):
    # Only an upload refuses the pragma: a draft on disk may carry it.
    draft = tmp_path / "draft.yaml"
    draft.write_bytes(b"# tutor-lint: allow-giveaways\n" + deck_yaml())
    result = tutor("deck", "validate", str(draft))
    assert result.returncode == 0, result.stdout


def test_validate_notes_each_mistake_only_one_card_tests_without_failing(tmp_path):
    """Remediation brings a learner's other cards on a mistake forward: it needs two."""
    def dtype_is_in_place(data):  # in_place: two cards; wrong_attribute: the shape card only
        data["cards"][1]["blanks"][0]["wrong"]["dtype"]["mistake"] = "in_place"

    deck = tmp_path / "basics.yaml"
    deck.write_bytes(deck_yaml(dtype_is_in_place))
    result = tutor("deck", "validate", str(deck))
    assert result.returncode == 0 and result.stdout == ""
    line = deck.read_text().splitlines().index("- id: wrong_attribute") + 1
    notes = [n for n in result.stderr.splitlines() if "note:" in n]
    assert notes == [f"{deck}:{line}: note: mistake 'wrong_attribute' is tested by one card "
                     "only (upload-basics/shape): remediation needs two"]
    assert "1 deck file valid." in result.stderr


def test_import_refuses_an_oversize_page_before_drafting(tmp_path):
    page, out = tmp_path / "page.txt", tmp_path / "draft.yaml"
    page.write_text("# Title\n" + "words " * 60_000)
    result = tutor("deck", "import", str(page), "-o", str(out))
    assert result.returncode == 1 and not out.exists()
    kib = page.stat().st_size / 1024
    assert result.stderr.strip() == (f"{page}:1: the practice page is {kib:.0f} KiB; at most "
                                     "256 KiB are accepted")


def test_check_judges_a_code_card_of_a_stored_deck(tmp_path):
    db, deck, answer = tmp_path / "tutor.db", tmp_path / "ga-copy.yaml", tmp_path / "loop.py"
    deck.write_text(renamed(BUNDLED.read_text(), "ga-copy"))
    published = tutor("deck", "publish", str(deck), "--guild", "42", "--db", str(db))
    assert published.returncode == 0, published.stderr
    answer.write_text(REFERENCE)
    unknown = tutor("check", "ga-copy/train-loop", str(answer))  # not without its database
    assert unknown.returncode == 2 and "No code card 'ga-copy/train-loop'" in unknown.stderr
    judged = tutor("check", "ga-copy/train-loop", str(answer), "--db", str(db), "--json")
    report = json.loads(judged.stdout)
    assert (judged.returncode, report["card"], report["passed"]) == (0, "ga-copy/train-loop",
                                                                     True), judged.stderr


def test_the_example_exercises_publish_judge_and_play_in_the_terminal(tmp_path):
    """`tutor deck publish` tries the behaviour cards in the sandbox; `tutor check` and
    `tutor practice` then judge answers to them from the database."""
    db, answer = tmp_path / "tutor.db", tmp_path / "mask.py"
    published = tutor("deck", "publish", str(EXAMPLE), "--guild", "7", "--db", str(db))
    assert published.returncode == 0, published.stderr
    assert "Stored 'pytorch-exercises' version 1 (3 cards)" in published.stdout
    card, code = MISTAKEN["mask_fills_zero"]
    answer.write_text(code)
    judged = tutor("check", card, str(answer), "--db", str(db), "--json")
    report = json.loads(judged.stdout)
    assert (judged.returncode, report["mistakes"]) == (1, ["mask_fills_zero"]), judged.stderr
    assert any(line.startswith("Masked scores set to zero, not to minus infinity: ")
               for line in report["feedback"])
    played = tutor("practice", "--db", str(db), "--deck", "pytorch-exercises", "--topic",
                   "losses", "--learner", "coder",
                   stdin=MISTAKEN["padding_counted"][1] + "EOF\nq\n")
    assert played.returncode == 0, played.stderr
    verdict = played.stdout.split("Running your code in the sandbox...")[1]
    assert "Common mistake - Padding tokens counted in the loss" in verdict, played.stdout


def test_publish_refuses_a_broken_exercise_per_card(tmp_path):
    db, deck = tmp_path / "tutor.db", tmp_path / "broken.yaml"
    deck.write_text(EXAMPLE.read_text().replace("def cases(rng):\n", "def cases():\n", 1))
    refused = tutor("deck", "publish", str(deck), "--guild", "7", "--db", str(db))
    assert refused.returncode == 1
    [problem] = refused.stdout.splitlines()
    assert re.fullmatch(rf"{deck}: line \d+, card pytorch-exercises/stable-softmax: cases\(rng\) "
                        r"failed: TypeError: .*takes 0 positional arguments but 1 was given",
                        problem), problem
