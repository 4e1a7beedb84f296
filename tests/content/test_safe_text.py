"""The text rules (content/safe_text.py) against hostile strings."""

from __future__ import annotations

import re

import pytest

from content.safe_text import GRAVE, clip, code_block, code_span, literal, markdown, plain
from tests.helpers.hostile import HOSTILE, invisible

BIDI = "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c"
ZERO_WIDTH = "\u200b\u200c\u200d\u2060\ufeff\u00ad\u180e"
TAGS = "\U000e0001\U000e0041\U000e007f"  # invisible "ASCII smuggling"
FILLERS = "\u034f\u115f\u1160\u3164\uffa0"
HOSTILE_STRINGS = [
    "", "`", "``", "```", "````", "`a", "a`", "`a`", "a ` b", "```py\nimport os\n```",
    "a\nb\n\nc", "\n", "[click](https://evil)", "@everyone @here <@1> <@!2> <@&3> <#4>",
    f"{BIDI}{ZERO_WIDTH}{TAGS}{FILLERS}", "x" * 5000, "\ud800 \udfff", "\\`a`", "a\\",
    "✅ your answer is correct", "# Correct\n> quoted\n- listed", HOSTILE,
]


def test_plain_drops_bidi_zero_width_tags_fillers_and_controls():
    text = f"a{BIDI}b{ZERO_WIDTH}c{TAGS}d{FILLERS}e\x00\x07\x1b[2Jf\x7f\x9bg"
    assert plain(text) == "abcde[2Jfg"


def test_plain_keeps_newlines_tabs_emoji_and_other_scripts():
    text = "tab\there\nnext ❤\ufe0f café 日本語 مرحبا ß"
    assert plain(text) == text


def test_plain_makes_every_line_break_a_newline():
    assert plain("a\r\nb\rc\x85d\u2028e\u2029f\x0bg\x0ch") == "a\nb\nc\nd\ne\nf\ng\nh"


def test_plain_replaces_lone_surrogates_and_joins_pairs():
    assert plain("a\ud800b\udfffc") == "a\ufffdb\ufffdc"
    assert plain("\ud83d\ude00") == "😀"  # a pair that arrived as two code points
    plain("x\ud800").encode("utf-8")  # Discord's request body must be UTF-8


def test_plain_is_idempotent_and_takes_any_object():
    assert plain(plain(HOSTILE)) == plain(HOSTILE)
    assert plain(ValueError("boom")) == "boom"


@pytest.mark.parametrize("text", HOSTILE_STRINGS)
def test_a_code_span_cannot_be_broken_out_of(text):
    span = code_span(text)
    assert span.startswith("`") and span.endswith("`") and span.count("`") == 2
    assert "\n" not in span and not invisible(span)
    assert len(span) <= 1002
    span.encode("utf-8")


def test_a_code_span_shows_what_it_replaced():
    assert code_span("a`b\nc") == f"`a{GRAVE}b ⏎ c`"
    assert code_span("[x](y) <@1>") == "`[x](y) <@1>`"  # inside code, Discord renders none
    assert code_span("x" * 50, 10) == "`" + "x" * 9 + "…`"
    assert code_span("") == code_span("\u200b") == "` `"  # "``" would show as two ticks


@pytest.mark.parametrize("code", ["```\n[x](y)\n```", "a = '`'\n", "``", "x\n```py"])
def test_a_code_block_keeps_exactly_its_own_fences(code):
    block = code_block(code)
    assert block.startswith("```py\n") and block.endswith("\n```")
    assert block.count("`") == 6


def test_markdown_escapes_masked_links_and_mentions_and_keeps_formatting():
    text = "**Bold** `code` [click](https://evil) @everyone @here <@1> <@&2> <#3> </c:4>"
    assert markdown(text) == (r"**Bold** `code` \[click](https://evil) \@everyone \@here "
                              r"\<@1> \<@&2> \<#3> \</c:4>")


def test_markdown_leaves_brackets_that_open_no_link():
    assert markdown("x[0] and [1] then a@b.com") == "x[0] and [1] then a@b.com"
    assert markdown("a [b](c) d[0]") == r"a \[b](c) d[0]"


@pytest.mark.parametrize("text", ["\\[x](y)", "\\\\[x](y)", "\\\\\\<@1>", "\\@everyone"])
def test_markdown_is_not_undone_by_the_authors_backslashes(text):
    """Discord reads backslashes in pairs: an odd run leaves the next character escaped."""
    for run in re.findall(r"(\\*)(?:\[|<|@everyone)", markdown(text)):
        assert len(run) % 2 == 1


def test_markdown_turns_fences_into_lookalikes_and_strips_bidi():
    assert markdown("a ```py b \u202ec") == f"a {GRAVE * 3}py b c"


def test_literal_escapes_every_markdown_character():
    assert literal("*a* _b_ ~~c~~ ||d|| `e` [f](g) <@1> @everyone \\") == (
        r"\*a\* \_b\_ \~\~c\~\~ \|\|d\|\| \`e\` \[f\](g) \<\@1\> \@everyone \\")
    assert literal("# big") == r"\# big" and literal("- item") == r"\- item"
    assert literal("-# small") == r"\-# small" and literal("12. list") == r"12\. list"
    assert literal("two\nlines\u202e") == "two lines"


def test_clip_is_a_no_op_within_the_limit():
    assert clip("short", 5) == "short"


@pytest.mark.parametrize("limit", [1, 2, 5, 9, 10, 11, 20, 30, 47])
def test_a_clip_never_leaves_a_span_or_block_open(limit):
    text = f"intro {code_span('[x](https://evil)')} more\n```py\ncode\nline\n```\nend `y`"
    cut = clip(text, limit)
    assert len(cut) <= limit and cut.endswith(("…", "```"))
    assert cut.count("```") % 2 == 0
    for line in cut.replace("```", "").splitlines():
        assert line.count("`") % 2 == 0, cut


def test_a_clip_inside_a_span_drops_the_span():
    assert clip("see `[x](https://evil)` now", 12) == "see …"


def test_a_clip_inside_a_block_closes_it():
    assert clip("```py\n" + "x = 1\n" * 10 + "```", 20) == "```py\nx = 1\nx =…\n```"
