"""bot/web/charts.py: values in, accessible SVG out; nothing for no data; text escaped."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from datetime import date, timedelta

import pytest

from bot.web import charts

TODAY = date(2026, 12, 2)  # a Wednesday
NS = "{http://www.w3.org/2000/svg}"


def parsed(svg) -> ET.Element:
    root = ET.fromstring(str(svg))  # well-formed XML, as inline SVG must be
    assert root.get("role") == "img" and root.get("aria-label")
    assert root.get("width") == "100%" and root.get("viewBox").startswith("0 0 ")
    assert "style=" not in str(svg) and "<script" not in str(svg)  # the CSP refuses both
    return root


def tips(root: ET.Element) -> list[str]:
    return [t.text for t in root.iter(f"{NS}title")][1:]  # after the chart's own


def test_the_calendar_has_a_cell_a_day_up_to_today_with_its_count():
    root = parsed(charts.calendar({TODAY: 3, TODAY - timedelta(days=8): 1,
                                   TODAY - timedelta(days=400): 9}, TODAY, weeks=20))
    cells = [r for r in root.iter(f"{NS}rect") if r.find(f"{NS}title") is not None]
    assert len(cells) == 19 * 7 + 3  # Monday to today in the last week
    assert "3 reviews on Wed 2 Dec 2026" in tips(root)
    assert "1 review on Tue 24 Nov 2026" in tips(root)
    assert "4 reviews on 2 days, at most 3 a day" in root.get("aria-label")  # not 400 days ago
    fills = {r.find(f"{NS}title").text: r.get("fill") for r in cells}
    assert fills["3 reviews on Wed 2 Dec 2026"] == charts.LEVELS[4]
    assert fills["0 reviews on Mon 30 Nov 2026"] == charts.LEVELS[0]


@pytest.mark.parametrize("count, most, shade", [(0, 5, 0), (1, 5, 1), (5, 5, 4), (3, 5, 3),
                                                (2, 8, 1), (1, 1, 4), (39, 40, 4)])
def test_a_day_s_shade_grows_with_its_share_of_the_busiest(count, most, shade):
    assert charts.level(count, most) == shade


def test_retention_is_a_line_of_weekly_points():
    weeks = [(date(2026, 11, 16), 0.5, 4), (date(2026, 11, 23), 0.75, 8),
             (date(2026, 11, 30), 1.0, 2)]
    root = parsed(charts.retention(weeks))
    assert root.find(f"{NS}polyline") is not None
    assert tips(root) == ["Week of 16 Nov: 50% right on the first try (4 reviews)",
                          "Week of 23 Nov: 75% right on the first try (8 reviews)",
                          "Week of 30 Nov: 100% right on the first try (2 reviews)"]
    ys = [float(c.get("cy")) for c in root.iter(f"{NS}circle")]
    assert ys[0] > ys[1] > ys[2]  # higher retention, higher on the chart
    single = parsed(charts.retention(weeks[:1]))  # one week: a point, no line
    assert single.find(f"{NS}polyline") is None and len(tips(single)) == 1


def test_the_forecast_has_a_bar_for_each_day_with_cards():
    days = [(TODAY + timedelta(days=i), n) for i, n in enumerate([2, 0, 5, 0, 1])]
    root = parsed(charts.forecast(days))
    assert tips(root) == ["2 cards due today (with the overdue)",
                          "5 cards due Fri 4 Dec 2026", "1 card due Sun 6 Dec 2026"]
    heights = [float(r.get("height")) for r in root.iter(f"{NS}rect")]
    assert heights[1] == max(heights) and heights[0] > heights[2] > 0
    assert "8 in all, 2 today, at most 5 on one day" in root.get("aria-label")
    labels = [t.text for t in root.iter(f"{NS}text")]
    assert "Today" in labels and "4" in labels


def test_no_data_no_chart():
    assert charts.calendar({}, TODAY) is None
    assert charts.calendar({TODAY - timedelta(days=200): 4}, TODAY, weeks=20) is None
    assert charts.retention([]) is None
    assert charts.forecast([]) is None
    assert charts.forecast([(TODAY, 0), (TODAY + timedelta(days=1), 0)]) is None


def test_text_is_escaped():
    svg = str(charts._svg(10, 10, '<script>"x"</script>', [charts._text(0, 0, "a<b&c")]))
    assert "<script>" not in svg and "&lt;script&gt;&#34;x&#34;" in svg
    assert "a&lt;b&amp;c" in svg
    parsed(svg)
