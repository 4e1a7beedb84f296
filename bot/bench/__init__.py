"""Benchmarks behind `tutor bench NAME --json`. Each returns a JSON-ready dict.

They live in the package (not tests/) so an installed `tutor` can run them; tests/bench/
runs each one small to keep them working. Tests never assert timings. A benchmark's
module is imported only when it runs (importing `bot.bench.offline_discord` loads no other).
"""

from __future__ import annotations

import importlib

# name -> the module whose bench_<name>(args) runs it
BENCHMARKS = {name: f"bot.bench.{name}" for name in
              ("answers", "checker", "discord", "faults", "leaderboard", "learning", "remediation",
               "reminders", "sandbox", "trials", "web")}


def run_benchmark(name: str, args) -> dict:
    return getattr(importlib.import_module(BENCHMARKS[name]), f"bench_{name}")(args)
