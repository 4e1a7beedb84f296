"""How much of the sandbox a server's uploads may take (issue 37.1, the engine's side):
a deck's exercises are tried under the server's key, one upload at a time per server, a
few an hour, a few servers at once; a refusal says when to upload again and stores
nothing."""

from __future__ import annotations

import threading

import pytest

from bot.engine.code_judge import SandboxJudge
from bot.engine.community_decks import CommunityDecks, Uploaded
from bot.engine.trials import HOUR_S, TRIALS_PER_HOUR, TrialGate, TrialRefused
from tests.helpers.engines import engine_of
from tests.helpers.exercises import EXAMPLE
from tests.helpers.paths import COMMUNITY_DECK

GUILD, OTHER, THIRD = 4242, 5353, 6464
DECK = EXAMPLE.read_bytes()


def deck_of(guild: int) -> bytes:
    """The example deck under an id of the server's own."""
    return DECK.replace(b"pytorch-exercises", f"exercises-{guild}".encode())


class Recorded:
    """The real sandbox client, noting what each run was sent with."""

    def __init__(self, client):
        self.client, self.runs = client, []

    async def run(self, code, **options):
        self.runs.append(options)
        return await self.client.run(code, **options)


class Paused:
    """A judge whose trials wait, once started, until the test lets them go on."""

    def __init__(self, judge=None):
        self.judge, self.go = judge, threading.Event()
        self.started = threading.Semaphore(0)  # released once per card tried

    def vet(self, card, server):
        self.started.release()
        assert self.go.wait(120)
        return self.judge.vet(card, server) if self.judge else ([], False)


def upload_in_thread(decks: CommunityDecks, guild: int) -> tuple[threading.Thread, list]:
    outcome: list = []

    def upload() -> None:
        try:
            outcome.append(decks.upload(guild, EXAMPLE.name, deck_of(guild), "author"))
        except Exception as exc:  # noqa: BLE001 - the test reads it
            outcome.append(exc)

    thread = threading.Thread(target=upload)
    thread.start()
    return thread, outcome


def test_an_uploads_exercises_are_tried_as_its_server_one_upload_at_a_time(
        tutor, sandbox_judge):
    recorded = Recorded(sandbox_judge.client)
    paused = Paused(SandboxJudge(recorded, sandbox_judge.loop))
    tutor.code_judge = paused
    decks = engine_of(tutor).decks
    first, outcome = upload_in_thread(decks, GUILD)
    try:
        assert paused.started.acquire(timeout=60)
        with pytest.raises(TrialRefused, match="previous upload is still being tried"):
            decks.upload(GUILD, EXAMPLE.name, DECK, "author")
    finally:
        paused.go.set()
        first.join(300)
    assert isinstance(outcome[0], Uploaded), outcome
    assert [run["learner"] for run in recorded.runs] == [f"trial:{GUILD}"] * 3
    assert {run["mode"] for run in recorded.runs} == {"vet"}


def test_a_few_servers_are_tried_at_once_and_the_next_is_told_to_wait(tutor):
    paused = Paused()
    tutor.code_judge = paused
    decks = engine_of(tutor, trials=TrialGate(at_once=2)).decks
    uploads = [upload_in_thread(decks, guild) for guild in (GUILD, OTHER)]
    try:
        assert all(paused.started.acquire(timeout=60) for _ in uploads)
        with pytest.raises(TrialRefused, match="Other servers' decks are being tried"):
            decks.upload(THIRD, EXAMPLE.name, deck_of(THIRD), "author")
    finally:
        paused.go.set()
        for thread, _ in uploads:
            thread.join(60)
    assert all(isinstance(outcome[0], Uploaded) for _, outcome in uploads)
    assert isinstance(decks.upload(THIRD, EXAMPLE.name, deck_of(THIRD), "author"), Uploaded)


def test_a_server_has_a_few_trials_an_hour_and_is_told_when_to_upload_again(tutor):
    now = [1000.0]
    paused = Paused()
    paused.go.set()
    tutor.code_judge = paused
    decks = engine_of(tutor, trials=TrialGate(clock=lambda: now[0])).decks
    for _ in range(TRIALS_PER_HOUR):
        assert isinstance(decks.upload(GUILD, EXAMPLE.name, DECK, "author"), Uploaded)
        now[0] += 60
    stored = tutor.store.decks.get("pytorch-exercises").version
    with pytest.raises(TrialRefused, match=r"upload again in 54 minute\(s\)"):
        decks.upload(GUILD, EXAMPLE.name, DECK, "author")
    assert tutor.store.decks.get("pytorch-exercises").version == stored  # nothing stored
    with decks.trial(OTHER):  # another server's uploads are its own
        pass
    now[0] = 1000.0 + HOUR_S
    assert isinstance(decks.upload(GUILD, EXAMPLE.name, DECK, "author"), Uploaded)


def test_an_upload_without_exercises_is_not_held(tutor):
    decks = engine_of(tutor, trials=TrialGate(per_hour=0)).decks
    assert isinstance(decks.upload(GUILD, "deck.yaml", COMMUNITY_DECK.encode(), "ann"),
                      Uploaded)
