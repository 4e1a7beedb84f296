"""Values as a behaviour check's runs report them, read, compared and shown: pure Python.

The jailed child (`_behave`) writes each output as data, tagged so that nothing is
ambiguous:
  null, true/false, an int, a finite float, {"float": "nan" | "inf" | "-inf"},
  {"str": text}, {"list": [...]}, {"tuple": [...]}, {"dict": [[key, value], ...]},
  {"tensor": {"dtype": "float32", "shape": [3, 5], "values": [flat, row-major]}}
(a tensor's values are numbers, bools, or "nan" / "inf" / "-inf"). The child bounds them
(`_bounds`: how many, how deep, how long, ints in INT_RANGE); the judge reads them again
(`check`), since a learner's run can write anything, and refuses what the child would never
write.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from dataclasses import dataclass

from content.checkers._bounds import INT_RANGE, MAX_DEPTH, MAX_VALUES
from content.checkers._events import Malformed
from content.checkers._shown import SPECIAL, number, scalar, shape_text, show

TAGS = ("float", "str", "list", "tuple", "dict", "tensor")
SHOWN = 30  # characters of each of two differing strings (from where they differ)


@dataclass(frozen=True)
class Compare:
    """How outputs must match the reference's: `allclose` (|got - want| <= atol +
    rtol * |want|, as torch.allclose) or `exact` (equal, and an int is not a float: code
    such as OneCycleLR(total_steps=...) refuses 189.0); with equal_nan a NaN matches a NaN.
    A tensor's dtype counts under both."""

    kind: str = "allclose"
    rtol: float = 1e-5
    atol: float = 1e-8
    equal_nan: bool = False

    @classmethod
    def read(cls, spec) -> Compare:
        """From a card's `compare:` block; ValueError says what is wrong with it."""
        if spec is None:
            return cls()
        if not isinstance(spec, dict) or set(spec) - {"kind", "rtol", "atol", "equal_nan"}:
            raise ValueError("compare takes kind, rtol, atol and equal_nan")
        kind = spec.get("kind", "allclose")
        if kind not in ("allclose", "exact"):
            raise ValueError("compare's kind is allclose or exact")
        tolerances = [spec.get(k, getattr(cls, k)) for k in ("rtol", "atol")]
        for t in tolerances:
            if isinstance(t, bool) or not isinstance(t, int | float) or not 0 <= t < math.inf:
                raise ValueError("compare's rtol and atol are numbers, 0 or more")
        equal_nan = spec.get("equal_nan", False)
        if not isinstance(equal_nan, bool):
            raise ValueError("compare's equal_nan is true or false")
        return cls(kind, float(tolerances[0]), float(tolerances[1]), equal_nan)


# -- reading what a run reported ------------------------------------------------------------
def check(value, budget: list[int] | None = None, depth: int = 0) -> None:
    """Raise Malformed unless `value` is an encoded value the child could have written."""
    budget = budget if budget is not None else [MAX_VALUES]
    budget[0] -= 1
    if budget[0] < 0 or depth > MAX_DEPTH:
        raise Malformed("an output is larger or deeper than a run may report")
    if value is None or isinstance(value, bool):
        return
    if isinstance(value, int):
        _check_int(value)
        return
    if isinstance(value, float):
        if not math.isfinite(value):
            raise Malformed("a float must be tagged")
        return
    if not isinstance(value, dict) or len(value) != 1 or next(iter(value)) not in TAGS:
        raise Malformed("an output is not an encoded value")
    tag, body = next(iter(value.items()))
    if isinstance(body, str) and (tag == "str" or tag == "float" and body in SPECIAL):
        return
    if tag in ("list", "tuple") and isinstance(body, list):
        for item in body:
            check(item, budget, depth + 1)
    elif tag == "dict" and isinstance(body, list):
        for pair in body:
            if not isinstance(pair, list) or len(pair) != 2:
                raise Malformed("a dict's items are pairs")
            check(pair[0], budget, depth + 1)
            check(pair[1], budget, depth + 1)
    elif tag == "tensor":
        _check_tensor(body, budget)
    else:
        raise Malformed(f"a {tag} output is not encoded as one")


def _check_tensor(body, budget: list[int]) -> None:
    if not isinstance(body, dict) or not isinstance(body.get("dtype"), str):
        raise Malformed("a tensor has no dtype")
    shape, values = body.get("shape"), body.get("values")
    if not isinstance(shape, list) or len(shape) > MAX_DEPTH or not isinstance(values, list):
        raise Malformed("a tensor has no shape or values")
    size = 1
    for n in shape:
        if isinstance(n, bool) or not isinstance(n, int) or n < 0:
            raise Malformed("a tensor's shape is not sizes")
        size *= n
        if size > MAX_VALUES:
            break
    budget[0] -= len(values)
    if size != len(values) or budget[0] < 0:
        raise Malformed("a tensor's values do not fill its shape")
    for v in values:
        if isinstance(v, int) and not isinstance(v, bool):
            _check_int(v)
        elif not (isinstance(v, float | bool) or isinstance(v, str) and v in SPECIAL):
            raise Malformed("a tensor holds something other than numbers")


def _check_int(value: int) -> None:
    # Beyond these the comparisons would overflow converting to float (400 digits did).
    if not INT_RANGE[0] <= value < INT_RANGE[1]:
        raise Malformed("an output holds an integer outside the range of int64 and uint64")


# -- comparing -----------------------------------------------------------------------------
def numbers_differ(want, got, compare: Compare) -> bool:
    """Whether two numbers differ under `compare` (bools are numbers here only if both are;
    under `exact` an int and a float differ even when equal in value)."""
    if isinstance(want, bool) or isinstance(got, bool):
        return not (isinstance(want, bool) and isinstance(got, bool) and want == got)
    if compare.kind == "exact" and isinstance(want, int) != isinstance(got, int):
        return True
    if math.isnan(want) or math.isnan(got):
        return not (compare.equal_nan and math.isnan(want) and math.isnan(got))
    if math.isinf(want) or math.isinf(got) or compare.kind == "exact":
        return want != got
    return abs(got - want) > compare.atol + compare.rtol * abs(want)


def difference(want, got, compare: Compare, where: str = "") -> str | None:
    """None when `got` equals `want` under `compare`; else the first difference, in words
    (`where`: the path to these values, as in `[0]["key"]`)."""
    for path, expected, gotten in differences(want, got, compare, where):
        return f"expected {expected}{f' at {path}' if path else ''}, got {gotten}"
    return None


def differences(want, got, compare: Compare, where: str = "",
                digits: int = 6) -> Iterator[tuple[str, str, str]]:
    """Every place where `got` differs from `want`, in order, as (path, what was expected
    there, what came): a mismatch of kind, length, keys, shape or dtype is one place (what
    is inside is not compared); a tensor's differing elements are each a place, at their
    index (`[0]["mask"][1, 3]`; a 0-d tensor at its container's path)."""
    want, got = scalar(want), scalar(got)
    wkind, gkind = kind(want), kind(got)
    if wkind != gkind:
        yield where, article(wkind), article(gkind)
    elif wkind == "number":
        if numbers_differ(want, got, compare):
            yield where, *_numbers(want, got, compare, digits)
    elif wkind == "str":
        if want != got:
            yield where, *_strings(want["str"], got["str"])
    elif wkind in ("None", "bool"):
        if want != got:
            yield where, repr(want), repr(got)
    elif wkind == "tensor":
        yield from _tensor_differences(want["tensor"], got["tensor"], compare, where, digits)
    elif wkind == "dict":
        wanted, gotten = _keyed(want), _keyed(got)
        if wanted.keys() != gotten.keys():
            yield where, f"keys {_keys(wanted)}", _keys(gotten)
            return
        for k, (key, v) in wanted.items():
            yield from differences(v, gotten[k][1], compare, f"{where}[{show(key)}]", digits)
    else:
        items, others = want[wkind], got[wkind]
        if len(items) != len(others):
            yield where, f"a {wkind} of {len(items)} items", str(len(others))
            return
        for i, (a, b) in enumerate(zip(items, others, strict=True)):
            yield from differences(a, b, compare, f"{where}[{i}]", digits)


def _numbers(want, got, compare: Compare, digits: int) -> tuple[str, str]:
    """Two differing numbers in words: as many digits as tell them apart, and under `exact`
    which is an int and which a float when that is the difference."""
    wtext, gtext = show(want, digits=digits), show(got, digits=digits)
    if wtext == gtext and not isinstance(want, int) and not isinstance(got, int):
        wtext, gtext = repr(float(want)), repr(float(got))
    if compare.kind == "exact" and isinstance(want, int) != isinstance(got, int):
        wtext, gtext = f"{wtext} ({_type(want)})", f"{gtext} ({_type(got)})"
    return wtext, gtext


def _strings(want: str, got: str) -> tuple[str, str]:
    """Two differing strings from a little before the first character that differs."""
    at = next((i for i, (a, b) in enumerate(zip(want, got, strict=False)) if a != b),
              min(len(want), len(got)))
    start = max(0, at - SHOWN // 4)
    return tuple(("…" if start else "") + repr(text[start:start + SHOWN]) + (
        "…" if len(text) > start + SHOWN else "") for text in (want, got))


def _type(n) -> str:
    return "an int" if isinstance(n, int) else "a float"


def _tensor_differences(want: dict, got: dict, compare: Compare, where: str,
                        digits: int) -> Iterator[tuple[str, str, str]]:
    if want["shape"] != got["shape"]:
        yield (where, f"a tensor of shape {shape_text(want['shape'])}",
               f"shape {shape_text(got['shape'])}")
    elif want["dtype"] != got["dtype"]:
        yield where, f"dtype {want['dtype']}", got["dtype"]
    else:
        for i, (a, b) in enumerate(zip(want["values"], got["values"], strict=True)):
            a, b = number(a), number(b)
            if numbers_differ(a, b, compare):
                yield (f"{where}{_index(i, want['shape'])}",
                       *_numbers(a, b, compare, digits))


def _index(flat: int, shape: list[int]) -> str:
    if not shape:
        return ""  # a 0-d tensor's one element is the tensor
    index = []
    for n in reversed(shape):
        flat, i = divmod(flat, n)
        index.append(i)
    return "[" + ", ".join(map(str, reversed(index))) + "]"


def _keyed(value: dict) -> dict[str, tuple]:
    return {json.dumps(k, sort_keys=True): (k, v) for k, v in value["dict"]}


def _keys(keyed: dict) -> str:
    return "{" + ", ".join(sorted(show(k) for k, _ in keyed.values()))[:200] + "}"


def kind(value) -> str:
    if value is None:
        return "None"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"
    return next(iter(value))


def article(name: str) -> str:
    return {"None": "None", "number": "a number", "bool": "a bool", "str": "a string",
            "list": "a list", "tuple": "a tuple", "dict": "a dict",
            "tensor": "a tensor"}.get(name, name)


def size(value) -> int:
    """How many numbers and strings a value holds (the smallest case is shown first)."""
    value = scalar(value)
    if not isinstance(value, dict):
        return 1
    tag, body = next(iter(value.items()))
    if tag == "tensor":
        return max(len(body["values"]), 1)
    if tag in ("list", "tuple"):
        return sum(size(v) for v in body) or 1
    if tag == "dict":
        return sum(size(k) + size(v) for k, v in body) or 1
    return 1
