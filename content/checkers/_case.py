"""What a learner is shown of a case their function got wrong: the call with its data (each
argument's structure, lengths, shapes and dtypes, and as many elements as fit), what the
reference returned and what theirs did, and the places where the two differ, each with its
index and both values. Bounded (FEEDBACK_MAX in all), so that the verdict, the revealed
reference and the takeaway fit in one Discord embed (4,096 characters).
"""

from __future__ import annotations

from content.checkers._shown import fitted, show
from content.checkers._values import Compare, differences
from content.safe_text import code_span

CALL_MAX = 600  # the case's arguments together
VALUE_MAX = 300  # the expected value; the value returned
PLACES_SHOWN = 4  # differing places listed (the rest are counted)
PLACE_MAX = 100
FEEDBACK_MAX = 1_900  # every line of `differing_case` together, with its words


def call(entry: str, args, budget: int = CALL_MAX) -> str:
    """`entry(args...)` with each argument's data, the largest cut back first."""
    items = args["tuple"] if isinstance(args, dict) and "tuple" in args else [args]
    return f"{entry}(" + ", ".join(fitted(items, budget)) + ")"


def differing_case(entry: str, args, want, got, compare: Compare, differing: int,
                   cases: int) -> list[str]:
    """The feedback on the smallest case that differs (`differing` of the `cases` did)."""
    which = ("its only case" if cases == 1 else f"all {cases} cases differ"
             if differing == cases else f"{differing} of {cases} cases differ")
    return [
        f"the smallest case that differs from the reference ({which}): "
        f"{code_span(call(entry, args), CALL_MAX + len(entry) + 20)}",
        f"expected: {code_span(show(want, VALUE_MAX, digits=4), VALUE_MAX + 10)}",
        f"got: {code_span(show(got, VALUE_MAX, digits=4), VALUE_MAX + 10)}",
        _places(want, got, compare),
    ]


def _places(want, got, compare: Compare) -> str:
    found = list(differences(want, got, compare))
    if len(found) == 1 and not found[0][0]:  # the value as a whole
        _, expected, gotten = found[0]
        return "it differs: " + code_span(f"expected {expected}, got {gotten}", PLACE_MAX)
    shown = "; ".join(code_span(f"at {path}: expected {expected}, got {gotten}", PLACE_MAX)
                      for path, expected, gotten in found[:PLACES_SHOWN])
    more = f"; and {len(found) - PLACES_SHOWN} more" if len(found) > PLACES_SHOWN else ""
    return f"it differs in {len(found)} place{'s' * (len(found) != 1)}: {shown}{more}"
