"""Behavioural checkers for code cards, one module per card `checker:` name.

They run inside the sandbox worker, which has torch imported; this package itself imports
nothing heavy, so the bot can refer to checkers without importing torch.
"""

from importlib import import_module
from types import ModuleType

NAMES = ("train_loop",)


def load(name: str) -> ModuleType:
    """The checker module for a card's `checker:` name (a module with `check(code, device)`)."""
    if name not in NAMES:
        raise KeyError(f"unknown checker {name!r}")
    return import_module(f"{__name__}.{name}")
