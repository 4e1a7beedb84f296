"""The `tutor` command line: deck tools, migrations and the default command."""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys

import pytest

from content.loader import load_deck
from content.schema import json_schema
from scheduler.storage.db import head_revision
from tests.helpers.cli import tutor
from tests.helpers.paths import REPO


def test_deck_validate_passes_on_the_bundled_deck():
    result = tutor("deck", "validate")
    assert result.returncode == 0 and result.stdout == ""
    assert "1 deck file valid." in result.stderr


def _canonical_cards() -> int:
    return len(load_deck(REPO / "content/decks/gradient-accumulation.yaml").cards)


def test_deck_validate_reports_file_line_message_and_exits_1(tmp_path):
    good = (REPO / "content/decks/gradient-accumulation.yaml").read_text()
    bad = tmp_path / "bad.yaml"
    first = "  - id: gradient-accumulation/zero-grad\n"
    bad.write_text(good.replace(first, first + "    colour: red\n", 1)
                   .replace("answer: zero_grad", "answer: nothing", 1))
    result = tutor("deck", "validate", str(bad), str(tmp_path / "missing.yaml"))
    assert result.returncode == 1
    lines = result.stdout.splitlines()
    colour_line = bad.read_text().splitlines().index("    colour: red") + 1
    assert (f"{bad}:{colour_line}: card gradient-accumulation/zero-grad: "
            "cards.0.fill_in.colour: Extra inputs are not permitted") in lines
    assert any(line.startswith(f"{tmp_path / 'missing.yaml'}:1: cannot read") for line in lines)


def test_deck_dump_is_the_resolved_deck_as_json():
    result = tutor("deck", "dump", "--deck", "gradient-accumulation", "--json")
    deck = json.loads(result.stdout)
    assert deck["id"] == "gradient-accumulation" and len(deck["cards"]) == _canonical_cards()
    option = next(o for c in deck["cards"] if c["type"] == "multiple_choice"
                  for o in c["options"] if not o["correct"])
    assert option["mistake"] and option["says"] and option["explanation"]


def test_committed_json_schema_is_current():
    committed = json.loads((REPO / "content/deck.schema.json").read_text())
    fix = "run: tutor deck schema -o content/deck.schema.json"
    assert committed == json.loads(json.dumps(json_schema())), fix


def test_db_upgrade_creates_then_reports_current(tmp_path):
    first = tutor("db", "upgrade", "--db", str(tmp_path / "a.db"))
    assert first.returncode == 0 and f"empty -> {head_revision()}" in first.stdout
    again = tutor("db", "upgrade", "--db", str(tmp_path / "a.db"))
    assert f"already at {head_revision()}" in again.stdout


def test_database_url_from_the_environment(tmp_path):
    env = {**os.environ, "DATABASE_URL": f"sqlite:///{tmp_path / 'env.db'}",
           "PYTHONPATH": str(REPO)}
    subprocess.run([sys.executable, "-m", "bot", "db", "upgrade"], env=env, cwd=tmp_path,
                   check=True, capture_output=True, timeout=60)
    assert (tmp_path / "env.db").exists()


def test_no_command_starts_terminal_practice_on_sqlite(tmp_path):
    result = tutor(cwd=tmp_path, stdin="q\n")
    assert result.returncode == 0, result.stderr
    assert "Gradient accumulation in PyTorch - practising as" in result.stdout
    assert (tmp_path / "tutor.db").exists()


def test_run_without_a_token_explains_what_to_do(tmp_path):
    result = tutor("run", cwd=tmp_path)
    assert result.returncode == 2
    assert "No Discord token: set DISCORD_TOKEN" in result.stderr
    assert "Traceback" not in result.stderr


def test_a_blank_token_in_dotenv_counts_as_missing(tmp_path):
    (tmp_path / ".env").write_text("DISCORD_TOKEN=   \n")
    result = tutor("run", cwd=tmp_path)
    assert result.returncode == 2 and "No Discord token" in result.stderr


def test_the_bot_process_never_imports_torch():
    probe = ("import sys, bot.cli.main, bot.app, bot.discord_ui.client, bot.terminal,"
             " bot.sandbox.client.client, bot.bench; print('torch' in sys.modules)")
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                            cwd=REPO, timeout=60)
    assert result.stdout.strip() == "False", result.stderr


def test_deck_import_drafts_a_loadable_deck_from_the_seed_page_with_flags(tmp_path):
    draft = tmp_path / "draft.yaml"
    page = REPO / "content" / "sources" / "gradient-accumulation.txt"
    result = tutor("deck", "import", str(page), "-o", str(draft), "--deck-id", "ga-draft")
    assert result.returncode == 0, result.stderr
    assert "to review:" in result.stdout and "guessed:" in result.stdout
    assert "# GUESS:" in draft.read_text()
    # The draft loads, but its placeholders are no deck a learner may read (issue 25, 10).
    checked = tutor("deck", "validate", str(draft))
    problems = checked.stdout.splitlines()
    assert checked.returncode == 1 and any("hint is a draft's placeholder" in p for p in problems)
    assert all("a draft's placeholder" in p for p in problems), problems
    again = tutor("deck", "import", str(page), "-o", str(draft))
    assert again.returncode == 2 and "--force" in again.stderr  # never overwrites silently


def test_deck_export_writes_an_anki_package(tmp_path):
    import zipfile

    out = tmp_path / "deck.apkg"
    result = tutor("deck", "export", "--anki", str(out))
    assert result.returncode == 0 and f"{_canonical_cards()} notes" in result.stdout
    assert "collection.anki2" in zipfile.ZipFile(out).namelist()


def test_check_and_sandbox_run_read_the_code_file_as_an_upload(tmp_path):
    """An over-large or endless code file is refused with a clear message, read no further
    than the bound (as `deck validate` reads a deck), before any sandbox starts."""
    large = tmp_path / "large.py"
    large.write_text("x = 1\n" * 50_000)  # 293 KiB
    for path, length in ((large, "293 KiB"), ("/dev/zero", "more than 256 KiB")):
        checked = tutor("check", "gradient-accumulation/train-loop", str(path), "--json")
        report = json.loads(checked.stdout)
        assert checked.returncode == 1 and report["status"] == "refused"
        assert report["feedback"] == [f"Your code was not run: `{path}: the code file is "
                                      f"{length}; at most 256 KiB are accepted`"]
        ran = tutor("sandbox", "run", str(path), "--json")
        result = json.loads(ran.stdout)
        assert ran.returncode == 1 and result["status"] == "refused"
        assert result["stderr"] == (f"{path}: the code file is {length}; at most 256 KiB "
                                    f"are accepted")


def _open_on(path) -> list[str]:
    """This process's file descriptors open on the database file or its WAL (Linux)."""
    fds = "/proc/self/fd"
    names = []
    for fd in os.listdir(fds):
        with contextlib.suppress(OSError):
            names.append(os.readlink(f"{fds}/{fd}"))
    return [n for n in names if n.startswith(str(path))]


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="reads /proc/self/fd")
def test_check_with_a_database_closes_it(tmp_path, monkeypatch, capsys):
    """`tutor check --db` reads the stored decks and closes the store again (issue 38.6):
    no connection left open on the file, and SQLite's WAL gone with the last one."""
    from bot.cli.main import main

    monkeypatch.delenv("DATABASE_URL", raising=False)
    db, code = tmp_path / "decks.db", tmp_path / "large.py"
    code.write_text("x = 1\n" * 50_000)  # refused before any sandbox starts
    assert main(["check", "gradient-accumulation/train-loop", str(code), "--db", str(db),
                 "--json"]) == 1
    assert json.loads(capsys.readouterr().out)["status"] == "refused"
    assert db.exists() and _open_on(db) == []
    assert not (tmp_path / "decks.db-wal").exists()


class _Sandbox:
    stopped = False
    judge = None  # a stand-in judges nothing: no code card is served

    def stop(self) -> None:
        self.stopped = True


@pytest.fixture
def counted(monkeypatch):
    """`bot.app.build` and `bot.app.start_sandbox` counted; the sandbox a stand-in."""
    import bot.app

    calls = {"build": 0, "sandboxes": []}
    real_build = bot.app.build

    def build(*args, **kwargs):
        calls["build"] += 1
        return real_build(*args, **kwargs)

    def start_sandbox(*args, **kwargs):
        calls["sandboxes"].append(_Sandbox())
        return calls["sandboxes"][-1]

    monkeypatch.setattr(bot.app, "build", build)
    monkeypatch.setattr(bot.app, "start_sandbox", start_sandbox)
    monkeypatch.delenv("DATABASE_URL", raising=False)
    return calls


@pytest.mark.parametrize("sandbox", [True, False])
def test_practice_builds_the_app_once(tmp_path, monkeypatch, capsys, counted, sandbox):
    from bot.cli.main import main

    monkeypatch.setattr(sys, "stdin", io.StringIO("q\n"))
    argv = ["practice", "--db", str(tmp_path / "p.db"), "--learner", "ann"]
    assert main(argv + ([] if sandbox else ["--no-sandbox"])) == 0
    assert "practising as ann" in capsys.readouterr().out
    assert counted["build"] == 1
    assert [s.stopped for s in counted["sandboxes"]] == ([True] if sandbox else [])


def test_practice_refuses_an_unknown_deck_and_stops_what_it_started(tmp_path, capsys,
                                                                     counted):
    from bot.cli.main import main

    assert main(["practice", "--db", str(tmp_path / "p.db"), "--deck", "nope"]) == 2
    assert "No deck 'nope'" in capsys.readouterr().err
    assert counted["build"] == 1
    assert [s.stopped for s in counted["sandboxes"]] in ([True], [])  # SANDBOX=false: none
