"""Benchmarks behind `tutor bench NAME --json`. Each returns a JSON-ready dict.

They live in the package (not tests/) so an installed `tutor` can run them; tests/bench/
runs each one small to keep them working. Tests never assert timings.
"""

from bot.bench.answers import bench_answers
from bot.bench.checker import bench_checker
from bot.bench.discord import bench_discord
from bot.bench.leaderboard import bench_leaderboard
from bot.bench.learning import bench_learning
from bot.bench.reminders import bench_reminders
from bot.bench.sandbox import bench_sandbox

BENCHMARKS = {"answers": bench_answers, "checker": bench_checker, "discord": bench_discord,
              "leaderboard": bench_leaderboard, "learning": bench_learning,
              "reminders": bench_reminders,
              "sandbox": bench_sandbox}
