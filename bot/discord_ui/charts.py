"""PNG charts for the tutor: pure functions, plain data in, PNG bytes out.

Uses matplotlib's object API (Figure + FigureCanvasAgg), never pyplot: no global state, so
calls may run in worker threads (``await asyncio.to_thread(stats_png, ...)``). Output is
deterministic (no timestamp or version metadata): equal data gives equal bytes.

Image sizes in pixels (width x height), all at 128 dpi:
  review_heatmap_png  960 x 320
  retention_png       960 x 360
  stats_png           960 x 800
  leaderboard_png     960 x (100 + 40 * rows), rows = min(max(1, len(rows)), 20)

User text may hold any Unicode: glyphs DejaVu Sans lacks become "?", control characters
spaces, invisible format characters are dropped, text too wide ends in "…", "$" is literal.
"""

from __future__ import annotations

import io
import math
import os
import unicodedata
from datetime import date, datetime, timedelta
from functools import cache

import matplotlib
from matplotlib import dates as mdates
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.collections import PatchCollection
from matplotlib.figure import Figure
from matplotlib.ft2font import FT2Font
from matplotlib.patches import Rectangle
from matplotlib.ticker import MaxNLocator, PercentFormatter

__all__ = ["leaderboard_png", "retention_png", "review_heatmap_png", "stats_png"]

DPI = 128  # px / 128 is exact in binary floating point, so sizes come out exact
WIDTH, HEATMAP_H, RETENTION_H, STATS_H = 960, 320, 360, 800
HEATMAP_ONLY_H = 430  # /stats before any due review: the heatmap alone
ROW_H, BOARD_TOP, MAX_ROWS = 40, 100, 20
FONT, FONT_FILES = "DejaVu Sans", ("DejaVuSans.ttf", "DejaVuSans-Bold.ttf")
INK, MUTED, GRID, STRIPE = "#1f2328", "#59636e", "#d1d9e0", "#f6f8fa"
LEVELS = ("#ebedf0", "#9be9a8", "#40c463", "#30a14e", "#216e39")
LINE, BARS = "#0969da", "#c9dcf0"
HILITE, HILITE_EDGE = "#fff8c5", "#d4a72c"
MEDALS = {1: "#b08800", 2: "#6e7781", 3: "#a0522d"}
MONTHS = "Jan Feb Mar Apr May Jun Jul Aug Sep Oct Nov Dec".split()


@cache
def _glyphs() -> frozenset[int]:
    """Code points that both DejaVu Sans and DejaVu Sans Bold can draw."""
    ttf = os.path.join(matplotlib.get_data_path(), "fonts", "ttf")
    book, bold = (FT2Font(os.path.join(ttf, f)).get_charmap() for f in FONT_FILES)
    return frozenset(book).intersection(bold)


def _clean(text: object, limit: int) -> str:
    """Make user text safe to draw: known glyphs only, one line, at most `limit` chars."""
    glyphs, out = _glyphs(), []
    for ch in str(text):
        cat = unicodedata.category(ch)
        if cat in ("Cc", "Zl", "Zp"):
            out.append(" ")
        elif cat == "Cf" or 0xFE00 <= ord(ch) <= 0xFE0F:  # joiners, bidi, emoji selectors
            continue
        elif ord(ch) in glyphs:
            out.append(ch)
        elif cat not in ("Mn", "Me"):  # drop missing combining marks, show the rest as "?"
            out.append("?")
    s = " ".join("".join(out).split())
    return s if len(s) <= limit else s[: limit - 1].rstrip() + "…"


def _figure(height: int) -> Figure:
    fig = Figure(figsize=(WIDTH / DPI, height / DPI), dpi=DPI, facecolor="white")
    FigureCanvasAgg(fig)
    return fig


def _png(fig: Figure) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=DPI, facecolor="white", metadata={"Software": None})
    return buf.getvalue()


def _text(ax, x, y, s, **kw):
    kw.setdefault("color", INK)
    return ax.text(x, y, s, fontfamily=FONT, parse_math=False, **kw)


def _fit(artist, max_px: float) -> None:
    """Shorten a drawn text with an ellipsis until it is at most `max_px` pixels wide."""
    renderer = artist.figure.canvas.get_renderer()
    text = artist.get_text()
    while len(text) > 1 and artist.get_window_extent(renderer).width > max_px:
        text = text[: len(text) - 2].rstrip() + "…"
        artist.set_text(text)


def _heatmap(fig: Figure, rect, counts: dict[date, int], end: date, weeks: int) -> None:
    weeks = max(1, int(weeks))
    if isinstance(end, datetime):
        end = end.date()
    by_day: dict[date, int] = {}
    for day, n in counts.items():
        key = day.date() if isinstance(day, datetime) else day
        by_day[key] = by_day.get(key, 0) + max(0, int(n))
    start = end - timedelta(days=end.weekday() + 7 * (weeks - 1))
    days = [start + timedelta(days=i) for i in range((end - start).days + 1)]
    values = [by_day.get(d, 0) for d in days]
    top = max(values, default=0)
    ax = fig.add_axes(rect)
    ax.set_axis_off()
    span = max(weeks, 18)  # room for the caption and legend even for a few weeks
    ax.set_xlim(-2.2, span + 2.2)
    ax.set_ylim(9.2, -1.4)
    ax.set_aspect("equal", adjustable="box", anchor="C")
    colors = [LEVELS[min(4, math.ceil(4 * v / top)) if v else 0] for v in values]
    cells = [Rectangle((i // 7 + 0.08, i % 7 + 0.08), 0.84, 0.84) for i in range(len(days))]
    ax.add_collection(PatchCollection(cells, facecolors=colors, edgecolors="none"))
    for row, label in ((0, "Mon"), (2, "Wed"), (4, "Fri")):
        _text(ax, -0.3, row + 0.5, label, ha="right", va="center", fontsize=8, color=MUTED)
    marks = [(c, start + timedelta(weeks=c)) for c in range(weeks)]
    marks = [(c, d) for c, d in marks if c == 0 or d.month != (d - timedelta(weeks=1)).month]
    if len(marks) > 1 and marks[1][0] < 4:  # a partial first month: GitHub drops it too
        marks.pop(0)
    ax.apply_aspect()
    renderer, right = fig.canvas.get_renderer(), -math.inf
    for col, monday in marks:
        label = MONTHS[monday.month - 1]
        if monday.month == 1 or right < 0:
            label += f" {monday.year}"
        drawn = _text(ax, col + 0.08, -0.35, label, va="bottom", fontsize=8, color=MUTED)
        box = drawn.get_window_extent(renderer)
        if box.x0 < right + 8:  # would collide with the previous month's label
            drawn.remove()
        else:
            right = box.x1
    total = sum(values)
    caption = f"{total:,} review{'s' * (total != 1)} in the last {weeks} week{'s' * (weeks != 1)}"
    _text(ax, 0.08, 8.0, caption, ha="left", va="center", fontsize=8, color=MUTED)
    x0 = span - 0.08 - 5
    _text(ax, x0 - 0.2, 8.0, "fewer", ha="right", va="center", fontsize=8, color=MUTED)
    for i, color in enumerate(LEVELS):
        ax.add_patch(Rectangle((x0 + i + 0.08, 7.58), 0.84, 0.84, facecolor=color, lw=0))
    _text(ax, span + 0.1, 8.0, "more", ha="left", va="center", fontsize=8, color=MUTED)


def _retention(fig: Figure, rect, points: list[tuple[date, float, int]]) -> None:
    ax = fig.add_axes(rect)
    if not points:
        ax.set_axis_off()
        _text(ax, 0.5, 0.5, "No reviews yet", ha="center", va="center", fontsize=14,
              color=MUTED, transform=ax.transAxes)
        return
    pts = sorted(points, key=lambda p: p[0])
    xs = [float(mdates.date2num(p[0])) for p in pts]
    share = [100 * min(1.0, max(0.0, float(p[1]))) for p in pts]
    reviews = [max(0, int(p[2])) for p in pts]
    gaps = [b - a for a, b in zip(xs, xs[1:], strict=False) if b > a]
    step = min(gaps, default=7.0)
    bars = ax.twinx()
    bars.bar(xs, reviews, width=0.7 * step, color=BARS, linewidth=0)
    bars.set_ylim(0, max(1, max(reviews)) * 2.6)
    bars.yaxis.set_major_locator(MaxNLocator(nbins=4, integer=True))
    bars.set_ylabel("reviews", color=MUTED, fontsize=8)
    ax.set_zorder(bars.get_zorder() + 1)
    ax.patch.set_visible(False)
    ax.plot(xs, share, color=LINE, linewidth=2, marker="o" if len(xs) <= 60 else None,
            markersize=3.5)
    ax.set_ylim(0, 105)
    ax.set_xlim(xs[0] - 0.7 * step, xs[-1] + 0.7 * step)
    ax.yaxis.set_major_formatter(PercentFormatter(100, decimals=0))
    ax.set_ylabel("right first try", color=MUTED, fontsize=8)
    locator = mdates.AutoDateLocator(minticks=3, maxticks=8)
    ax.xaxis.set_major_locator(locator)
    ax.xaxis.set_major_formatter(mdates.ConciseDateFormatter(locator))
    ax.xaxis.get_offset_text().set_fontsize(7)
    ax.grid(axis="y", color=GRID, linewidth=0.7)
    for a in (ax, bars):
        a.tick_params(labelsize=7, colors=MUTED)
        a.spines["top"].set_visible(False)
        for spine in a.spines.values():
            spine.set_color(GRID)
    _text(ax, 0.0, 1.04, "Retention: share answered right on the first try", ha="left",
          va="bottom", fontsize=9, transform=ax.transAxes)


def review_heatmap_png(counts: dict[date, int], end: date, weeks: int = 26) -> bytes:
    """A contribution-calendar heatmap of reviews per day for the `weeks` weeks ending at `end`.

    Columns are weeks (the last holds `end`; later days stay blank), rows Mon..Sun, month
    labels on top, a 'fewer ... more' legend below; zero days are light grey. 960 x 320 px.
    """
    fig = _figure(HEATMAP_H)
    _heatmap(fig, (0.02, 0.02, 0.96, 0.96), counts, end, weeks)
    return _png(fig)


def retention_png(points: list[tuple[date, float, int]]) -> bytes:
    """Retention over time from (period date, share right on the first try 0..1, reviews).

    The share is a line (0-100 %), the review count light bars on a second axis. An empty
    list gives a 'No reviews yet' placeholder of the same 960 x 360 px size.
    """
    fig = _figure(RETENTION_H)
    _retention(fig, (0.09, 0.12, 0.82, 0.76), points)
    return _png(fig)


def stats_png(name: str, counts: dict[date, int], end: date,
              retention: list[tuple[date, float, int]], streak: int, longest: int) -> bytes:
    """One 960 x 800 px image for /stats: title "<name>'s progress", a streak subtitle,
    the 26-week heatmap on top and the retention chart below."""
    # No due review yet (only new cards): no retention panel at all, rather than an empty
    # one under a heatmap that shows reviews.
    height = STATS_H if retention else HEATMAP_ONLY_H
    fig = _figure(height)
    canvas = fig.add_axes((0, 0, 1, 1))
    canvas.set_axis_off()
    title = _text(canvas, 0.03, 1 - 34 / height, f"{_clean(name, 48)}'s progress",
                  ha="left", va="center", fontsize=17, fontweight="bold",
                  transform=canvas.transAxes)
    _fit(title, WIDTH - 60)
    now = f"{streak}-day streak" if streak > 0 else "No streak yet"
    _text(canvas, 0.03, 1 - 70 / height, f"{now} · longest {longest}",
          ha="left", va="center", fontsize=10, color=MUTED, transform=canvas.transAxes)
    _heatmap(fig, (0.02, 1 - 410 / height, 0.96, 310 / height), counts, end, 26)
    if retention:
        _retention(fig, (0.09, 50 / height, 0.82, 300 / height), retention)
    return _png(fig)


def leaderboard_png(title: str, rows: list[tuple[int, str, int, int, float | None]],
                    highlight: int | None = None) -> bytes:
    """A board of rows (rank, name, points, streak, accuracy 0..1 or None) as a table image.

    The row whose rank == `highlight` is shaded and bold. At most 20 rows are drawn; no rows
    gives 'No reviews this period yet'. 960 x (100 + 40 * max(1, rows)) px.
    """
    rows = list(rows)[:MAX_ROWS]
    height = BOARD_TOP + ROW_H * max(1, len(rows))
    fig = _figure(height)
    ax = fig.add_axes((0, 0, 1, 1))
    ax.set_axis_off()
    ax.set_xlim(0, WIDTH)
    ax.set_ylim(height, 0)
    _fit(_text(ax, 30, 34, _clean(title, 80), ha="left", va="center", fontsize=15,
               fontweight="bold"), WIDTH - 60)
    cols = ((80, "right", "#"), (110, "left", "Name"), (650, "right", "Points"),
            (780, "right", "Streak"), (920, "right", "Accuracy"))
    for x, ha, label in cols:
        _text(ax, x, 80, label, ha=ha, va="center", fontsize=9, color=MUTED,
              fontweight="bold")
    ax.plot([20, WIDTH - 20], [BOARD_TOP - 2] * 2, color=GRID, linewidth=1)
    if not rows:
        _text(ax, WIDTH / 2, BOARD_TOP + ROW_H / 2, "No reviews this period yet",
              ha="center", va="center", fontsize=11, color=MUTED)
        return _png(fig)
    for i, (rank, name, points, streak, accuracy) in enumerate(rows):
        y = BOARD_TOP + i * ROW_H
        mine = highlight is not None and rank == highlight
        if mine:
            ax.add_patch(Rectangle((20, y + 2), WIDTH - 40, ROW_H - 4, facecolor=HILITE,
                                   edgecolor=HILITE_EDGE, linewidth=1.2))
        elif i % 2:
            ax.add_patch(Rectangle((20, y), WIDTH - 40, ROW_H, facecolor=STRIPE, lw=0))
        weight = "bold" if mine else "normal"
        acc = "—" if accuracy is None else f"{100 * min(1.0, max(0.0, accuracy)):.0f}%"
        cells = (str(rank), _clean(name, 48), f"{points:,}", f"{streak}d", acc)
        for (x, ha, _), value in zip(cols, cells, strict=True):
            drawn = _text(ax, x, y + ROW_H / 2, value, ha=ha, va="center", fontsize=11,
                          fontweight="bold" if x == 80 and rank in MEDALS else weight,
                          color=MEDALS.get(rank, INK) if x == 80 else INK)
            if x == 110:
                _fit(drawn, 440)
    return _png(fig)
