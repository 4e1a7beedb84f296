"""Charts drawn on the server as inline SVG: pure functions from values to markup, no
script. Each is an image with a name (role="img", aria-label) and a <title> per mark, which
browsers show as a tooltip and screen readers read. Colours are presentation attributes,
since the CSP's style-src 'self' refuses style= attributes. No data: None, never an empty
chart (the page says so in a sentence instead)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import date, timedelta

from markupsafe import Markup, escape

# Reviews a day, none to most (GitHub's greens: readable for most colour vision).
LEVELS = ("#ebedf0", "#9be9a8", "#40c463", "#30a14e", "#216e39")
INK, MUTED, GRID, ACCENT = "#1d1f23", "#5c6370", "#d9dce1", "#4451c8"
FONT = 'font-family="system-ui, sans-serif"'
WEEKDAYS = ("Mon", "", "Wed", "", "Fri", "", "")


def _svg(width: int, height: int, label: str, body: list[str]) -> Markup:
    # viewBox and width 100%: the chart scales down to a phone's width, text with it.
    return Markup(
        f'<svg class="chart" viewBox="0 0 {width} {height}" width="100%" role="img" '
        f'aria-label="{escape(label)}" xmlns="http://www.w3.org/2000/svg" {FONT}>'
        f"<title>{escape(label)}</title>{''.join(body)}</svg>")


def _text(x: float, y: float, words: str, *, size: int = 10, anchor: str = "start",
          fill: str = MUTED) -> str:
    return (f'<text x="{x:g}" y="{y:g}" font-size="{size}" text-anchor="{anchor}" '
            f'fill="{fill}">{escape(words)}</text>')


def _titled(shape: str, tip: str) -> str:
    """A mark with its tooltip: `shape` is an element without its closing part."""
    return f"{shape}><title>{escape(tip)}</title></{shape[1:].split(' ', 1)[0]}>"


def _day(day: date) -> str:
    return f"{day:%a} {day.day} {day:%b} {day.year}"


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def level(count: int, most: int) -> int:
    """A day's shade: 0 for none, else 1-4 by its share of the busiest day (which gets 4)."""
    if count <= 0 or most <= 0:
        return 0
    return min(4, -(-4 * count // most))


def calendar(daily: Mapping[date, int], today: date, weeks: int = 20) -> Markup | None:
    """Reviews per day over the last `weeks` weeks, a column a week (Monday on top), as
    GitHub draws contributions."""
    start = today - timedelta(days=today.weekday() + 7 * (weeks - 1))
    shown = {d: n for d, n in daily.items() if start <= d <= today and n > 0}
    if not shown:
        return None
    cell, gap, left, top = 12, 3, 30, 18
    most, total = max(shown.values()), sum(shown.values())
    body, month = [], None
    for week in range(weeks):
        x = left + week * (cell + gap)
        monday = start + timedelta(weeks=week)
        if monday.month != month:  # a label where a month begins
            month = monday.month
            if week < weeks - 2:  # the last columns have no room for a whole name
                body.append(_text(x, top - 6, f"{monday:%b}"))
        for weekday in range(7):
            day = monday + timedelta(days=weekday)
            if day > today:
                break
            n = shown.get(day, 0)
            body.append(_titled(
                f'<rect x="{x}" y="{top + weekday * (cell + gap)}" width="{cell}" '
                f'height="{cell}" rx="2" fill="{LEVELS[level(n, most)]}"',
                f"{_plural(n, 'review')} on {_day(day)}"))
    for weekday, name in enumerate(WEEKDAYS):
        if name:
            body.append(_text(0, top + weekday * (cell + gap) + cell - 2, name))
    width = left + weeks * (cell + gap)
    legend_y = top + 7 * (cell + gap) + 6
    body.append(_text(width - 6 * (cell + gap) - 4, legend_y + cell - 2, "Less",
                      anchor="end"))
    for i, shade in enumerate(LEVELS):
        body.append(f'<rect x="{width - (6 - i) * (cell + gap)}" y="{legend_y}" '
                    f'width="{cell}" height="{cell}" rx="2" fill="{shade}"/>')
    body.append(_text(width - cell - gap + 2, legend_y + cell - 2, "More"))
    label = (f"Reviews per day over the last {weeks} weeks: {_plural(total, 'review')} on "
             f"{_plural(len(shown), 'day')}, at most {most} a day")
    return _svg(width + 28, legend_y + cell + 4, label, body)


def retention(weeks: Sequence[tuple[date, float, int]]) -> Markup | None:
    """Reviews right on the first try, per week, as a line over 0-100%."""
    if not weeks:
        return None
    width, height, left, right, top, bottom = 560, 200, 40, 16, 12, 28
    plot_w, plot_h = width - left - right, height - top - bottom
    step = plot_w / max(len(weeks) - 1, 1)

    def y_of(share: float) -> float:
        return top + plot_h * (1 - min(max(share, 0.0), 1.0))

    body = []
    for share in (0, 0.25, 0.5, 0.75, 1):
        y = y_of(share)
        body.append(f'<line x1="{left}" y1="{y:g}" x2="{width - right}" y2="{y:g}" '
                    f'stroke="{GRID}" stroke-width="1"/>')
        body.append(_text(left - 6, y + 3, f"{share:.0%}", anchor="end"))
    points = [(left + (i * step if len(weeks) > 1 else plot_w / 2), y_of(share))
              for i, (_, share, _) in enumerate(weeks)]
    if len(points) > 1:
        path = " ".join(f"{x:.1f},{y:.1f}" for x, y in points)
        body.append(f'<polyline points="{path}" fill="none" stroke="{ACCENT}" '
                    f'stroke-width="2.5" stroke-linejoin="round" stroke-linecap="round"/>')
    every = max(1, -(-len(weeks) // 8))  # at most about 8 date labels
    for i, ((week, share, count), (x, y)) in enumerate(zip(weeks, points, strict=True)):
        body.append(_titled(
            f'<circle cx="{x:.1f}" cy="{y:.1f}" r="4" fill="{ACCENT}" stroke="#fff" '
            f'stroke-width="1.5"',
            f"Week of {week.day} {week:%b}: {share:.0%} right on the first try "
            f"({_plural(count, 'review')})"))
        if i % every == 0:
            body.append(_text(x, height - 8, f"{week.day} {week:%b}", anchor="middle"))
    latest = weeks[-1]
    label = (f"Retention per week over {_plural(len(weeks), 'week')}: latest "
             f"{latest[1]:.0%} right on the first try, week of {_day(latest[0])}")
    return _svg(width, height, label, body)


def forecast(days: Sequence[tuple[date, int]]) -> Markup | None:
    """Cards due per day ahead, a bar a day (today's holds the overdue ones)."""
    if not days or not any(n for _, n in days):
        return None
    width, height, top, bottom, side = 560, 180, 18, 34, 8
    slot = (width - 2 * side) / len(days)
    bar, plot_h = slot * 0.7, height - top - bottom
    most = max(n for _, n in days)
    body = [f'<line x1="{side}" y1="{top + plot_h}" x2="{width - side}" y2="{top + plot_h}" '
            f'stroke="{GRID}" stroke-width="1"/>']
    for i, (day, n) in enumerate(days):
        x = side + i * slot + (slot - bar) / 2
        h = plot_h * n / most if n else 0
        when = "today (with the overdue)" if i == 0 else _day(day)
        tip = f"{_plural(n, 'card')} due {when}"
        if n:
            body.append(_titled(
                f'<rect x="{x:.1f}" y="{top + plot_h - h:.1f}" width="{bar:.1f}" '
                f'height="{h:.1f}" rx="2" fill="{ACCENT if i else "#b3261e"}"', tip))
            body.append(_text(x + bar / 2, top + plot_h - h - 4, str(n), anchor="middle",
                              fill=INK))
        centre = x + bar / 2
        body.append(_text(centre, height - 20, "Today" if i == 0 else f"{day:%a}"[:2],
                          anchor="middle"))
        body.append(_text(centre, height - 8, str(day.day), anchor="middle"))
    total = sum(n for _, n in days)
    label = (f"Cards due in the next {_plural(len(days), 'day')}: {total} in all, "
             f"{days[0][1]} today, at most {most} on one day")
    return _svg(width, height, label, body)
