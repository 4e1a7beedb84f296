"""Encoded values (`_values`) as a learner reads them: Python-like text that keeps the
structure (a list's length, a tensor's shape and dtype, its rows) and gives up elements,
not structure, to fit a budget. Learner or author data: the caller quotes it as code.

A tensor too large for its budget keeps the first and last `edge` items of each dimension
(as torch prints large tensors), so the ends of rows (where padding is) stay in view; a
0-d tensor is a number: `tensor(1.28, dtype=float32)`.
"""

from __future__ import annotations

import math

SPECIAL = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}
# How many items at each end of a dimension (None: all), tried in turn until a text fits.
EDGES = (None, 3, 2, 1, 0)
FULL_UP_TO = 400  # values beyond which a tensor is never shown whole (the text would not fit)
DIGITS = 4  # significant digits of a float in a case's data


def number(v):
    """A tensor's element as a number (its NaN and infinities travel as text)."""
    return SPECIAL[v] if isinstance(v, str) else v


def scalar(value):
    """A tagged float ({"float": "nan"}) as the number; anything else as it is."""
    if isinstance(value, dict) and "float" in value:
        return SPECIAL[value["float"]]
    return value


def number_text(v, digits: int = DIGITS) -> str:
    """A number as Python writes it, a float always with its point (189.0 is not 189)."""
    if isinstance(v, bool) or isinstance(v, int):
        return str(v)
    if math.isnan(v):
        return "nan"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    text = f"{v:.{digits}g}"
    return text if any(c in text for c in ".en") else text + ".0"


def shape_text(shape: list[int]) -> str:
    return "(" + ", ".join(map(str, shape)) + ("," if len(shape) == 1 else "") + ")"


def show(value, limit: int = 300, digits: int = 6) -> str:
    """`value` in at most `limit` characters, as whole as fits."""
    return fitted([value], limit, digits)[0]


def fitted(values: list, budget: int, digits: int = DIGITS) -> list[str]:
    """Each value's text, all of them in about `budget` characters together: the longest
    is cut back first, so a small value next to a large one is still shown whole."""
    levels = [0] * len(values)
    texts = [layout(v, EDGES[0], digits) for v in values]
    while sum(map(len, texts)) + 2 * len(texts) > budget:
        shrinkable = [i for i, level in enumerate(levels) if level < len(EDGES) - 1]
        if not shrinkable:
            break
        i = max(shrinkable, key=lambda i: len(texts[i]))
        levels[i] += 1
        texts[i] = layout(values[i], EDGES[levels[i]], digits)
    if sum(map(len, texts)) + 2 * len(texts) > budget:  # structure alone is too long
        share = max(budget // max(len(texts), 1) - 2, 20)
        texts = [t if len(t) <= share else t[: share - 1] + "…" for t in texts]
    return texts


def layout(value, edge: int | None, digits: int = DIGITS) -> str:
    """One value's text with `edge` items kept at each end of every dimension and list."""
    value = scalar(value)
    if value is None or isinstance(value, bool):
        return repr(value)
    if isinstance(value, int | float):
        return number_text(value, digits)
    tag, body = next(iter(value.items()))
    if tag == "str":
        keep = 200 if edge is None else 20 * max(edge, 1)
        return repr(body[:keep]) + ("…" if len(body) > keep else "")
    if tag == "tensor":
        return _tensor(body, edge, digits)
    if tag == "dict":
        items = _items(lambda kv: f"{layout(kv[0], edge, digits)}: "
                                  f"{layout(kv[1], edge, digits)}", body, edge)
        return "{" + ", ".join(items) + "}"
    items = _items(lambda v: layout(v, edge, digits), body, edge)
    if tag == "tuple":
        return "(" + ", ".join(items) + ("," if len(body) == 1 else "") + ")"
    return "[" + ", ".join(items) + "]"


def _items(text_of, items: list, edge: int | None) -> list[str]:
    """The texts of the first and last `edge` items; a cut says how many it hides (a
    list's length is structure: it is kept)."""
    if edge == 0:
        return [f"… {len(items)} items …"] if items else []
    if edge is None or len(items) <= 2 * edge:
        return [text_of(x) for x in items]
    return [*map(text_of, items[:edge]), f"… {len(items) - 2 * edge} more …",
            *map(text_of, items[-edge:])]


def _tensor(body: dict, edge: int | None, digits: int) -> str:
    shape, dtype, values = body["shape"], body["dtype"], body["values"]
    if not shape:  # 0-d: a number
        return f"tensor({number_text(number(values[0]), digits)}, dtype={dtype})"
    if edge is None and len(values) > FULL_UP_TO:
        edge = EDGES[1]
    rows = "…" if edge == 0 and values else _rows(values, shape, edge, digits)
    return f"tensor({rows}, shape={shape_text(shape)}, dtype={dtype})"


def _rows(values: list, shape: list[int], edge: int | None, digits: int) -> str:
    if not shape:
        return number_text(number(values[0]), digits)
    n, inner = shape[0], math.prod(shape[1:])
    kept = range(n) if edge is None or n <= 2 * edge else [*range(edge), None,
                                                           *range(n - edge, n)]
    return "[" + ", ".join("…" if i is None else
                           _rows(values[i * inner:(i + 1) * inner], shape[1:], edge, digits)
                           for i in kept) + "]"
