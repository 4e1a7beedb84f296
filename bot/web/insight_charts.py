"""Horizontal bar charts as inline SVG, drawn on the server (no script, no inline style: the
CSP allows neither): pure functions of (label, value) rows. Labels are strangers' words
(card prompts, mistake titles): every one goes through markupsafe's escaping."""

from __future__ import annotations

from markupsafe import Markup

WIDTH = 720
LABEL_W = 300  # the labels' column
VALUE_W = 90  # the numbers after each bar
ROW_H = 26
BAR_H = 16
MAX_LABEL = 48  # characters of a label shown; the whole of it is the bar's <title>


def short(label: str, limit: int = MAX_LABEL) -> str:
    return label if len(label) <= limit else label[: limit - 1].rstrip() + "…"


def bar_chart(rows: list[tuple[str, int, str]], title: str, kind: str = "card") -> Markup:
    """An SVG of one bar per (label, value, value text) row, longest first as given; its
    `title` names it for screen readers. No rows: an empty Markup (say so in words)."""
    if not rows:
        return Markup("")
    top = max(value for _, value, _ in rows) or 1
    room = WIDTH - LABEL_W - VALUE_W
    height = ROW_H * len(rows) + 4
    parts = [Markup('<svg class="chart bars" role="img" viewBox="0 0 {w} {h}" width="{w}" '
                    'height="{h}" xmlns="http://www.w3.org/2000/svg"><title>{t}</title>'
                    ).format(w=WIDTH, h=height, t=title)]
    for i, (label, value, text) in enumerate(rows):
        y = 2 + i * ROW_H
        width = max(1, round(room * value / top)) if value else 0
        parts.append(Markup(
            '<g><title>{label}: {text}</title>'
            '<text x="{lx}" y="{ty}" text-anchor="end">{shown}</text>'
            '<rect class="bar {kind}" x="{x}" y="{y}" width="{wd}" height="{bh}" rx="2"/>'
            '<text class="value" x="{vx}" y="{ty}">{text}</text></g>').format(
                label=label, text=text, shown=short(label), kind=kind, lx=LABEL_W - 8,
                ty=y + BAR_H - 3, x=LABEL_W, y=y, wd=width, bh=BAR_H,
                vx=LABEL_W + width + 6))
    parts.append(Markup("</svg>"))
    return Markup("").join(parts)


def missed_cards_chart(missed: list[tuple[str, int, int]], labels: dict[str, str]) -> Markup:
    """Cards by how often they were missed on the first try: (card id, missed, reviews)."""
    rows = [(labels.get(card_id, card_id), n, f"{n} of {total}")
            for card_id, n, total in missed]
    return bar_chart(rows, "Cards missed most on the first try", "card")


def mistakes_chart(mistakes: list[tuple[str, int]]) -> Markup:
    """Mistakes by how often they were made: (title, times)."""
    return bar_chart([(title, n, f"× {n}") for title, n in mistakes], "Mistakes made most",
                     "mistake")
