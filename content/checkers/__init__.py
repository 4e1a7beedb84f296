"""Behavioural checkers for code cards, one judge module per card `checker:` name.

A check has two halves in two processes. The observer (`OBSERVERS[name]`, imports torch)
runs the learner's code in the sandbox's jailed child and only writes down what it did.
The judge (`load(name)`: `plan(salt)`, `judge(observations, salt)` and
`progressed(observations)`, no torch) runs in the sandbox service, which never runs learner
code: it makes the data, knows the answer, and decides. `progressed` says whether the code
got as far as the judge judges (a train loop's backward() or step, a behaviour exercise's
case that returned): code that stopped before, on a typo, is not judged by the engine
(`CodeReport.ran_no_training`) and may be sent again. The salt, drawn per submission,
makes the data differ from run to run, so that a record of a correct run cannot be replayed
for another submission.
This package itself imports nothing heavy, so the bot can refer to checkers freely.
"""

from importlib import import_module
from types import ModuleType

# The observer takes its names from the plan: an AMP scenario also gets a scaler and max_norm.
# `behaviour` runs twice per check (the author's run, the learner's: see its module); its
# mistake ids are the card's own, so `mistakes("behaviour")` is empty.
OBSERVERS = {"train_loop": "content.checkers._observe",
             "amp_clip_loop": "content.checkers._observe",
             "behaviour": "content.checkers._behave"}
BEHAVIOUR = "behaviour"
NAMES = tuple(OBSERVERS)


def load(name: str) -> ModuleType:
    """The judge module for a card's `checker:` name."""
    if name not in NAMES:
        raise KeyError(f"unknown checker {name!r}")
    return import_module(f"{__name__}.{name}")


def mistakes(name: str) -> tuple[str, ...]:
    """Every mistake id the checker `name` can report: its judge's MISTAKES, the one list
    (its verdict reports no other id). A deck whose code card names the checker registers
    each of them (content/untrusted.py), so any verdict can be explained. `behaviour`
    reports the ids its card labels (the card's `versions`): none of its own."""
    return load(name).MISTAKES


def observers() -> list[str]:
    return sorted(set(OBSERVERS.values()))
