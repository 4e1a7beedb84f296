"""Text from learners and deck authors, made safe to show: in a terminal, in JSON, and as
Discord markdown. Pure functions, no Discord import, so the code checker (content/) and
both front ends use the same rules.

- `plain`: what no front end should ever show, removed: controls (a terminal acts on
  them), format characters (bidi overrides reorder text, zero-width ones hide inside it)
  and lone surrogates (UTF-8 cannot encode them: Discord's request would fail).
- `code_span`: learner text (an exception's message, its stderr) quoted as inline code,
  which Discord renders as it is: no links, mentions, headings, or a fake "✅ correct".
- `code_block`: code in a fence that its content cannot close.
- `markdown`: author text kept as markdown, without masked links or mentions.
- `literal`: a name (a learner's, a server's, a deck title) shown exactly as written.
- `clip`: cut to a length without leaving a code span or block open.
"""

from __future__ import annotations

import functools
import re
import unicodedata

# Invisible characters Unicode does not class as format (Cf) characters: the combining
# grapheme joiner, Hangul fillers (blank "names") and the Khmer inherent vowels. Variation
# selectors stay: they only pick a glyph for the character before them (emoji).
_INVISIBLE = frozenset("\u034f\u115f\u1160\u17b4\u17b5\u3164\uffa0")
_KEPT_CONTROLS = frozenset("\n\t")
_LINE_BREAKS = re.compile("\r\n|[\r\x0b\x0c\x85\u2028\u2029]")
GRAVE = "\u02cb"  # ˋ stands in for a backtick inside code, where nothing can escape one
NEWLINE = " \u23ce "  # ⏎ shows where a line ended inside a one-line span
SPAN_LIMIT = 1000


def _hidden(ch: str) -> bool:
    if ch in _KEPT_CONTROLS:
        return False
    return unicodedata.category(ch) in ("Cc", "Cf", "Cs") or ch in _INVISIBLE


def plain(text: object) -> str:
    """`text` without controls (but newline and tab), format characters (bidi, zero-width,
    soft hyphen, BOM, tags: every Cf) or other invisibles; every line break as "\\n";
    a lone surrogate as U+FFFD (a paired one as the character it encodes)."""
    text = str(text).encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    text = _LINE_BREAKS.sub("\n", text)
    if text.isascii() and text.isprintable():
        return text
    return "".join(ch for ch in text if not _hidden(ch))


def code_span(text: object, limit: int = SPAN_LIMIT) -> str:
    """`text` as one inline code span that nothing in it can end early. Discord has no
    escape inside code and pairs backtick runs its own way (a trailing backtick, a run of
    three opening a block), so the span holds no backtick at all; it holds no line break
    either (a clip at a line's end can never leave it open), and at most `limit` chars."""
    text = plain(text).replace("`", GRAVE).replace("\n", NEWLINE)
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    return f"`{text}`" if text.strip() else "` `"


def code_block(code: str, lang: str = "py") -> str:
    """`code` in a fenced block. Its backticks show as lookalikes: three would end the
    fence early, and one could close a span left open before the block (the rest of the
    code then reads as markdown)."""
    return f"```{lang}\n{plain(code).rstrip().replace('`', GRAVE)}\n```"


# What turns author text into more than text: a masked link opens with "[" (we escape one
# only when a "](" follows somewhere after it), a mention with "<@", "<#" or "</", and
# @everyone / @here. The backslashes before one are doubled so that ours is not eaten.
_OPENERS = re.compile(r"(\\*)(\[|<(?=[@#/])|@(?=everyone|here))")
_FENCE = re.compile(r"`{3,}")


def markdown(text: object) -> str:
    """`_markdown` of the text: a deck's texts come back on every card shown, so their
    escaped forms are kept (a bounded cache: a stranger's many texts only push old ones
    out)."""
    return _markdown(str(text))


@functools.lru_cache(maxsize=4096)
def _markdown(text: str) -> str:
    """Author text as Discord markdown: bold, inline code and the like stay; masked links
    and mentions show as written (escaped) wherever they are, inside code spans too, since
    Discord may pair backticks otherwise than a simple reading does (emphasis or a URL can
    take one). A fence (three backticks) shows as lookalikes: it could pair with the fence
    of a code block shown after this text and turn that code into markdown."""
    text = _FENCE.sub(lambda m: GRAVE * len(m[0]), plain(text))
    last_link = text.rfind("](")

    def escape(m: re.Match) -> str:
        if m[2] == "[" and m.start(2) > last_link:
            return m[0]
        return m[1] * 2 + "\\" + m[2]

    return _OPENERS.sub(escape, text)


_MARKUP = re.compile(r"([\\*_~|`\[\]<>@])")
_LINE_START = re.compile(r"^(?:([#-])|(\d+)\.)")  # a heading, list item or subtext


def literal(text: object) -> str:
    """`text` on one line with every markdown character escaped: Discord shows exactly the
    characters, with no formatting, link or mention (for names and titles)."""
    text = " ".join(plain(text).split("\n"))
    text = _MARKUP.sub(r"\\\1", text)
    return _LINE_START.sub(lambda m: f"\\{m[1]}" if m[1] else f"{m[2]}\\.", text)


def clip(text: str, limit: int) -> str:
    """At most `limit` chars, cut visibly. A cut inside a code block closes it; a cut
    inside an inline span drops the span, since an unclosed backtick would hand the rest
    of the line back to markdown."""
    if len(text) <= limit:
        return text
    kept = text[: max(limit - 1, 0)]
    if kept.count("```") % 2:
        kept = text[: max(limit - 5, 0)]  # room to close it
        if kept.count("```") % 2:
            return kept + "…\n```"
    line = kept[kept.rfind("\n") + 1:]
    if line.count("`") % 2:
        kept = kept[: len(kept) - len(line)] + re.sub(r"`+[^`]*$", "", line)
    return kept + "…"
