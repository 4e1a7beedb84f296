"""The engine's services around a `Tutor` a test built itself, as `bot/app.py` builds them."""

from __future__ import annotations

from bot.app import CodeSandbox, start_sandbox
from bot.engine import Engine
from bot.engine.tutor import Tutor


def engine_of(tutor: Tutor, **options) -> Engine:
    """A fresh Engine on this tutor and its store (`options`: Engine's, e.g. trials)."""
    return Engine(tutor, tutor.store, **options)


def judged_by(tutor: Tutor, address: str, **options) -> CodeSandbox | None:
    """`start_sandbox` on this address, its judge given to a tutor a test built already
    (the product gives it at construction: `bot.app.build`)."""
    sandbox = start_sandbox(address, **options)
    if sandbox is not None:
        tutor.code_judge = sandbox.judge
    return sandbox
