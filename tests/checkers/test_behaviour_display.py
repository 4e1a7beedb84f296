"""What a learner is shown when a behaviour answer differs (issue 40, points 4 and 5): exact
compares types too, and the smallest differing case keeps its structure (lengths, shapes,
dtypes, the padded positions of a mask), lists the elements that differ with their index,
and shows a 0-d tensor as a number, within a bounded length."""

from __future__ import annotations

import re

from content.checkers import behaviour
from content.checkers._case import FEEDBACK_MAX

MASK = [[True] * 8, [True] * 5 + [False] * 3, [True] * 3 + [False] * 5, [True] * 6 + [False] * 2]


def tensor(values, shape, dtype="float32"):
    return {"tensor": {"dtype": dtype, "shape": shape, "values": values}}


def flat(rows):
    return [v for row in rows for v in row]


def judged(cases: list[tuple], want: list, got: list, compare=None, entry: str = "f") -> dict:
    """The judge's result on a learner whose outputs are `got` where the reference's are
    `want`, on `cases` (each a tuple of encoded arguments)."""
    def program(values):
        return {"outcomes": [{"value": v} for v in values]}
    return behaviour.judge({
        "entry": entry, "compare": compare or {"kind": "allclose"}, "versions": [],
        "author": {"inputs": {"list": [{"tuple": list(args)} for args in cases]},
                   "digest": "d", "programs": [program(want)]},
        "learner": {"digest": "d", "programs": [program(got)]}})


def test_exact_refuses_a_float_where_an_int_is_expected():
    exact = judged([(10,), (20,)], [189, 379], [189.0, 379.0], {"kind": "exact"})
    assert not exact["passed"]
    assert "`expected 189 (an int), got 189.0 (a float)`" in exact["feedback"][-1]
    assert "got: `189.0`" in exact["feedback"]
    assert judged([(10,), (20,)], [189, 379], [189.0, 379.0])["passed"]  # allclose: as torch


def test_a_tensors_dtype_counts_under_exact_and_allclose():
    for compare in ({"kind": "exact"}, {"kind": "allclose"}):
        result = judged([(1,)], [tensor([1, 2], [2], "int64")],
                        [tensor([1.0, 2.0], [2], "float32")], compare)
        assert "`expected dtype int64, got float32`" in result["feedback"][-1]


def test_the_case_shows_every_arguments_structure_and_a_masks_padded_positions():
    x = tensor([0.25] * 4 * 8 * 16, [4, 8, 16])
    mask = tensor(flat(MASK), [4, 8], "bool")
    small = (tensor([0.5] * 16, [1, 16]), tensor([True] * 16, [1, 16], "bool"))
    result = judged([small, (x, mask)], [1.0, 2.0], [1.0, 3.0])
    case = result["feedback"][0]
    assert case.startswith("the smallest case that differs from the reference (1 of 2 cases "
                           "differ): `f(tensor(")
    assert "shape=(4, 8, 16), dtype=float32)" in case  # cut back, its shape kept
    rows = ", ".join("[" + ", ".join(map(str, row)) + "]" for row in MASK)
    assert f"tensor([{rows}], shape=(4, 8), dtype=bool))`" in case  # the mask whole


def test_the_differing_elements_are_listed_with_their_index_and_both_values():
    want = tensor([0.5] * 64, [4, 16])
    got = tensor([0.5] * 16 + [0.25] * 48, [4, 16])
    result = judged([(tensor(flat(MASK), [4, 8], "bool"),)], [want], [got])
    expected, shown, places = result["feedback"][1:]
    assert expected.startswith("expected: `tensor([[0.5, 0.5, 0.5, …") and "shape=(4, 16)" in \
        expected
    assert shown.startswith("got: `tensor([[0.5, 0.5, 0.5, …")
    assert places == ("it differs in 48 places: `at [1, 0]: expected 0.5, got 0.25`; "
                      "`at [1, 1]: expected 0.5, got 0.25`; `at [1, 2]: expected 0.5, got "
                      "0.25`; `at [1, 3]: expected 0.5, got 0.25`; and 44 more")


def test_a_0d_tensor_is_a_number():
    result = judged([(1,)], [{"tuple": [tensor([1.28], []), 3]}],
                    [{"tuple": [tensor([6.4], []), 3]}])
    text = "\n".join(result["feedback"])
    assert "expected: `(tensor(1.28, dtype=float32), 3)`" in text
    assert "`at [0]: expected 1.28, got 6.4`" in text
    assert "shape=()" not in text and "[]" not in text
    # Digits enough to tell them apart.
    alone = judged([(1,)], [tensor([1.28], [])], [tensor([1.2800001], [])], {"kind": "exact"})
    assert alone["feedback"][-1] == "it differs: `expected 1.28, got 1.2800001`"


def test_a_long_list_keeps_its_length_and_says_where_it_differs():
    want = {"list": list(range(300))}
    got = {"list": [*range(57), -1, *range(58, 300)]}
    result = judged([(300,)], [want], [got], {"kind": "exact"})
    expected, _, places = result["feedback"][1:]
    assert re.search(r"… \d+ more …, 297, 298, 299\]`$", expected), expected
    assert places == "it differs in 1 place: `at [57]: expected 57, got -1`"
    shorter = judged([(300,)], [want], [{"list": list(range(299))}])
    assert shorter["feedback"][-1] == "it differs: `expected a list of 300 items, got 299`"


def test_two_strings_are_shown_from_where_they_differ():
    want, got = {"str": "x" * 100 + "mean" + "y" * 50}, {"str": "x" * 100 + "sum" + "y" * 50}
    result = judged([(1,)], [want], [got])
    assert result["feedback"][-1] == ("it differs: `expected …'xxxxxxxmeanyyyyyyyyyyyyyyyyyyy'…, "
                                      "got …'xxxxxxxsumyyyyyyyyyyyyyyyyyyyy'…`")
    assert judged([(1,)], [{"str": "abc"}], [{"str": "ab"}])["feedback"][-1] == (
        "it differs: `expected 'abc', got 'ab'`")


def test_later_arguments_are_not_lost_behind_a_large_first_one():
    big = tensor([0.125] * 90 * 100, [90, 100])
    result = judged([(big, {"list": [1, 2, 3]}, {"str": "mean"}, 7)], [1.0], [2.0])
    assert result["feedback"][0].endswith(", shape=(90, 100), dtype=float32), [1, 2, 3], "
                                          "'mean', 7)`")


def test_what_is_shown_stays_bounded_and_every_span_closed():
    huge = tensor([0.123456] * 4000, [20, 200])
    nested = {"dict": [[{"str": f"key{i}" * 20}, {"list": list(range(50))}] for i in range(20)]}
    many = [{"str": f"«{i}»" * 40} for i in range(4)]  # long differing texts
    result = judged([(huge, nested, huge)], [{"tuple": [*many, huge, {"str": "x" * 5000}]}],
                    [{"tuple": [*many[::-1], tensor([0.5] * 4000, [20, 200]),
                                {"str": "y" * 5000}]}], entry="f" * 64)  # the longest entry
    text = "\n".join(result["feedback"])
    assert len(text) <= FEEDBACK_MAX, len(text)
    assert all(line.count("`") % 2 == 0 for line in result["feedback"])
    assert "shape=(20, 200)" in text and "and 4001 more" in text
