"""A behaviour exercise (issue 27's stable softmax) as the sandbox takes it: timed by
`tutor bench checker` and judged in tests/sandbox/test_behaviour.py."""

from __future__ import annotations

CASES = """\
import torch
def cases(rng):
    g = torch.Generator().manual_seed(rng.randrange(2**31))
    return [(torch.randn(3, 5, generator=g) * s,) for s in (1.0, 30.0, 1000.0)]
"""
REFERENCE = """\
def softmax(x):
    z = x - x.max(dim=-1, keepdim=True).values
    e = z.exp()
    return e / e.sum(dim=-1, keepdim=True)
"""
VERSIONS = {
    "softmax_overflow": """\
def softmax(x):
    e = x.exp()
    return e / e.sum(dim=-1, keepdim=True)
""",
    "softmax_wrong_axis": """\
def softmax(x):
    z = x - x.max()
    e = z.exp()
    return e / e.sum(dim=0, keepdim=True)
""",
}


def softmax_block(**changes) -> dict:
    block = {"entry": "softmax", "cases": CASES, "reference": REFERENCE,
             "compare": {"kind": "allclose", "rtol": 1e-5, "atol": 1e-6, "equal_nan": True},
             "versions": dict(VERSIONS), "given_names": ["torch"]}
    return {**block, **changes}
