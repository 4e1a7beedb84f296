"""The scheduler choice as the front ends show it: the schedulers offered, by name, and
`Choice` (the scheduler and remediation in force) as `Tutor.choice`, `Tutor.progress` and
`Servers.default_choice` hand it out. The rules are scheduler/choice.py's; front ends reach
them only through here."""

from scheduler.choice import SCHEDULERS, Choice

__all__ = ["SCHEDULERS", "Choice"]
