from __future__ import annotations

import io
import random
import subprocess
import sys
import warnings
from concurrent.futures import ThreadPoolExecutor
from datetime import date, timedelta

import numpy as np
import pytest
from matplotlib.image import imread

from bot.discord_ui import charts
from tests.helpers.paths import REPO

END = date(2026, 12, 2)
WIDTH = 960


def decode(png: bytes) -> np.ndarray:
    assert png.startswith(b"\x89PNG\r\n\x1a\n")
    assert len(png) < 200_000
    return imread(io.BytesIO(png), format="png")


def colours(img: np.ndarray) -> int:
    rgba = np.ascontiguousarray((img * 255).round().astype(np.uint8))
    return len(np.unique(rgba.view(np.uint32)))


def history(days: int = 365, seed: int = 7) -> dict[date, int]:
    rng = random.Random(seed)
    return {END - timedelta(days=d): rng.choice([0, 0, 1, 2, 4, 9, 25]) for d in range(days)}


def retention(periods: int = 26, seed: int = 7) -> list[tuple[date, float, int]]:
    rng = random.Random(seed)
    return [(END - timedelta(weeks=w), rng.random(), rng.randint(0, 90)) for w in range(periods)]


def board(n: int) -> list[tuple[int, str, int, int, float | None]]:
    return [(i + 1, f"user {i}", 5000 - 97 * i, i % 9, None if i % 4 == 3 else 1 - i / 20)
            for i in range(n)]


@pytest.fixture(autouse=True)
def no_warnings():
    """Missing glyphs, mathtext errors and the like surface as warnings: fail on any."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        yield


def test_heatmap_size_content_and_input_sensitivity():
    busy = decode(charts.review_heatmap_png(history(), END))
    empty = decode(charts.review_heatmap_png({}, END))
    assert busy.shape == empty.shape == (320, WIDTH, 4)
    assert colours(busy) > 20 and colours(empty) > 5
    assert not np.array_equal(busy, empty)
    # a single busy day changes the image
    one = decode(charts.review_heatmap_png({END: 3}, END))
    assert not np.array_equal(one, empty)


def test_heatmap_full_year_and_odd_inputs():
    year = decode(charts.review_heatmap_png(history(400), END, weeks=53))
    assert year.shape == (320, WIDTH, 4) and colours(year) > 20
    for weeks in (1, 4, 104):
        assert decode(charts.review_heatmap_png(history(), END, weeks)).shape == (320, WIDTH, 4)
    # negative counts and days outside the window are ignored, not a crash
    odd = {END: -5, END + timedelta(days=3): 7, END - timedelta(days=999): 4}
    assert charts.review_heatmap_png(odd, END) == charts.review_heatmap_png({}, END)


def test_retention_chart_and_placeholder():
    chart = decode(charts.retention_png(retention()))
    empty = decode(charts.retention_png([]))
    assert chart.shape == empty.shape == (360, WIDTH, 4)
    assert colours(chart) > 20 and colours(empty) > 5
    assert not np.array_equal(chart, empty)
    # one period, unsorted input and out-of-range shares all render
    assert decode(charts.retention_png([(END, 1.5, 0)])).shape == (360, WIDTH, 4)
    shuffled = list(reversed(retention()))
    assert charts.retention_png(shuffled) == charts.retention_png(retention())


def test_stats_image():
    img = decode(charts.stats_png("Ada", history(), END, retention(), 5, 12))
    assert img.shape == (800, WIDTH, 4) and colours(img) > 30
    # No due review yet: the heatmap alone, no empty retention chart.
    new_only = decode(charts.stats_png("Ada", history(), END, [], 0, 0))
    assert new_only.shape == (charts.HEATMAP_ONLY_H, WIDTH, 4) and colours(new_only) > 10
    other = decode(charts.stats_png("Ada", history(), END, retention(), 6, 12))
    assert not np.array_equal(img, other)  # the streak is drawn


def test_leaderboard_sizes_and_highlight():
    full = decode(charts.leaderboard_png("This week", board(15)))
    assert full.shape == (100 + 40 * 15, WIDTH, 4) and colours(full) > 20
    mine = decode(charts.leaderboard_png("This week", board(15), highlight=7))
    assert not np.array_equal(full, mine)
    assert charts.leaderboard_png("t", board(15), highlight=99) == charts.leaderboard_png(
        "t", board(15))
    empty = decode(charts.leaderboard_png("This week", []))
    assert empty.shape == (140, WIDTH, 4) and colours(empty) > 5
    assert decode(charts.leaderboard_png("t", board(30))).shape == (900, WIDTH, 4)


@pytest.mark.parametrize("name", [
    "李小龙", "🔥🔥 fire 🔥", "👨‍👩‍👧 family", "Zoë\nnew\tline", "$x^2$ \\frac{1}{0}", "",
    "\u202eevil\u202c", "\ud800 lone surrogate", "W" * 300, "ﷺ" * 40,
])
def test_any_name_renders(name):
    assert decode(charts.leaderboard_png(name, [(1, name, 10, 1, 0.5)], 1)).shape[1] == WIDTH
    assert decode(charts.stats_png(name, {}, END, [], 1, 1)).shape == (
        charts.HEATMAP_ONLY_H, WIDTH, 4)


def test_long_names_are_truncated():
    def render(name):
        return charts.leaderboard_png("t", [(1, name, 10, 1, 0.5)])

    assert render("W" * 80) == render("W" * 200)
    assert charts.stats_png("W" * 80, {}, END, [], 1, 1) == charts.stats_png(
        "W" * 200, {}, END, [], 1, 1)
    assert charts._clean("a" * 50, 10) == "a" * 9 + "…"


def test_clean_text():
    assert charts._clean("$x$ Zoë", 40) == "$x$ Zoë"
    assert charts._clean("a\nb\t c", 40) == "a b c"
    assert charts._clean("🔥 hi", 40) == "? hi"
    assert charts._clean("x\u200dy\ufe0f", 40) == "xy"


def test_renders_are_deterministic_and_thread_safe():
    jobs = [
        lambda: charts.review_heatmap_png(history(), END),
        lambda: charts.retention_png(retention()),
        lambda: charts.stats_png("Ada", history(), END, retention(), 5, 12),
        lambda: charts.leaderboard_png("Week", board(15), highlight=3),
    ]
    serial = [job() for job in jobs]
    assert serial == [job() for job in jobs]
    with ThreadPoolExecutor(4) as pool:
        parallel = list(pool.map(lambda job: job(), jobs * 2))
    assert parallel == serial * 2


def test_module_does_not_import_pyplot():
    code = ("import sys, bot.discord_ui.charts; "
            "assert 'matplotlib.pyplot' not in sys.modules, 'pyplot imported'")
    subprocess.run([sys.executable, "-c", code], cwd=REPO, check=True, timeout=60)
