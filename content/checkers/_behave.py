"""Inside the jailed child: one run of a behaviour check (`behaviour` judges it outside).

The plan says whose run this is. Both build the cases the same way, from the seed the
service drew: `cases(rng)` with `random.Random(seed)` (and torch's and random's global
generators seeded with it too). The author's run then calls the reference and each labelled
version on every case; the learner's run calls the learner's entry. Neither sees the other's
outputs: they are in another process. Every output is written as data (`_values`), bounded
in size and depth; anything else is reported as a plain problem, never passed on.
"""

from __future__ import annotations

import builtins
import copy
import hashlib
import importlib
import json
import math
import random

import torch

from content.checkers._bounds import INT_RANGE, MAX_CASES, MAX_DEPTH, MAX_TEXT, MAX_VALUES
from content.checkers._observe import LEARNER_FILE, error_detail

CASES_FILE, REFERENCE_FILE = "<cases>", "<reference>"
ALIASES = {"F": "torch.nn.functional", "nn": "torch.nn", "np": "numpy"}


class Unencodable(Exception):
    """An output that cannot cross as data; the message completes "the output ..."."""


class Encoder:
    """Writes values as `_values` reads them, within one budget of values."""

    def __init__(self, budget: int = MAX_VALUES):
        self.left = budget

    def _count(self, n: int) -> None:
        self.left -= n
        if self.left < 0:
            raise Unencodable(f"holds more than {MAX_VALUES} values in all (too big to compare)")

    def encode(self, value, depth: int = 0, open_: frozenset = frozenset()):
        if depth > MAX_DEPTH:
            raise Unencodable(f"is nested more than {MAX_DEPTH} deep")
        self._count(1)
        if value is None or isinstance(value, bool):
            return value
        if isinstance(value, int):
            value = int(value)
            if not INT_RANGE[0] <= value < INT_RANGE[1]:
                raise Unencodable("holds an integer too large to compare")
            return value
        if isinstance(value, float):
            return _float(float(value))
        if isinstance(value, str):
            if len(value) > MAX_TEXT:
                raise Unencodable(f"holds a string longer than {MAX_TEXT} characters")
            return {"str": str(value)}
        if isinstance(value, torch.Tensor):
            return {"tensor": self._tensor(value)}
        if isinstance(value, list | tuple | dict):
            if id(value) in open_:
                raise Unencodable("contains itself")
            inner = open_ | {id(value)}
            if isinstance(value, dict):
                items = list(dict.items(value))
                self._count(len(items))
                return {"dict": [[self.encode(k, depth + 1, inner),
                                  self.encode(v, depth + 1, inner)] for k, v in items]}
            items = list(tuple.__iter__(value) if isinstance(value, tuple)
                         else list.__iter__(value))
            self._count(len(items))
            return {"tuple" if isinstance(value, tuple) else "list":
                    [self.encode(v, depth + 1, inner) for v in items]}
        raise Unencodable(f"is {_a(type(value))}, which cannot be compared (outputs are "
                          f"tensors, numbers, bools, strings, None, and tuples, lists and "
                          f"dicts of them)")

    def _tensor(self, t: torch.Tensor) -> dict:
        if t.layout != torch.strided or t.is_quantized or t.is_complex() or t.is_meta:
            raise Unencodable("is a sparse, quantized, complex or meta tensor, which cannot "
                              "be compared")
        if t.dim() > MAX_DEPTH:
            raise Unencodable(f"is a tensor of more than {MAX_DEPTH} dimensions")
        self._count(t.numel())  # before any copy: an expand()ed tensor can be huge
        flat = t.detach().cpu().reshape(-1)
        values = (flat.double().tolist() if t.is_floating_point() else flat.tolist())
        return {"dtype": str(t.dtype).removeprefix("torch."), "shape": list(t.shape),
                "values": [_special(v) for v in values] if t.is_floating_point() else values}


def _special(v: float):
    return v if math.isfinite(v) else "nan" if math.isnan(v) else "inf" if v > 0 else "-inf"


def _float(v: float):
    return v if math.isfinite(v) else {"float": _special(v)}


def _a(kind: type) -> str:
    name = f"{kind.__module__}.{kind.__qualname__}".removeprefix("builtins.")
    return f"a {name[:100]}"


def encoded(value, encoder: Encoder) -> dict:
    """{"value": data} or {"unencodable": why}."""
    try:
        return {"value": encoder.encode(value)}
    except Unencodable as exc:
        return {"unencodable": str(exc)}
    except RecursionError:
        return {"unencodable": f"is nested more than {MAX_DEPTH} deep"}
    except Exception as exc:  # noqa: BLE001 - an object whose methods raise when read
        return {"unencodable": f"could not be read ({type(exc).__name__})"}


def _detail(exc: BaseException, filename: str) -> dict:
    try:
        return error_detail(exc, filename)
    except Exception:  # noqa: BLE001 - an exception whose __str__ raises
        return {"type": type(exc).__name__, "message": "", "line": None}


def given(names: list[str]) -> dict:
    """The names a card's code may use without defining them (modules, as the card says)."""
    found = {}
    for name in names:
        try:
            found[name] = importlib.import_module(ALIASES.get(name, name))
        except ImportError:
            continue
    return found


def build_cases(source: str, seed: int, names: dict) -> tuple[list | None, dict]:
    """(the cases, what to report of them): their data and digest, or the author's error."""
    random.seed(seed)
    torch.manual_seed(seed)
    try:
        namespace = {"__name__": "__cases__", "__builtins__": builtins, **names}
        exec(compile(source, CASES_FILE, "exec", dont_inherit=True), namespace)
        made = namespace["cases"](random.Random(seed))
    except MemoryError:
        raise
    except BaseException as exc:  # noqa: BLE001 - the author's code: reported, never raised
        return None, {"cases_error": _detail(exc, CASES_FILE)}
    if not isinstance(made, list | tuple) or not 0 < len(made) <= MAX_CASES or not all(
            isinstance(args, tuple) for args in made):
        return None, {"cases_error": {"type": "TypeError", "line": None, "message": (
            f"cases(rng) must return a list of 1 to {MAX_CASES} argument tuples")}}
    data = encoded(list(made), Encoder())
    if "unencodable" in data:
        return None, {"cases_error": {"type": "TypeError", "line": None,
                                      "message": f"the cases' data {data['unencodable']}"}}
    digest = hashlib.sha256(json.dumps(data["value"], sort_keys=True).encode()).hexdigest()
    return list(made), {"inputs": data["value"], "digest": digest}


def run_program(code: str, filename: str, entry: str, names: dict, cases: list) -> dict:
    """One program on every case: {"error"} if it could not be run at all, else
    {"outcomes": [{"value"} | {"unencodable"} | {"raised"} per case]}."""
    namespace = {"__name__": "__main__", "__builtins__": builtins, **names}
    try:
        exec(compile(code, filename, "exec", dont_inherit=True), namespace)
    except MemoryError:
        raise
    except BaseException as exc:  # noqa: BLE001 - SystemExit too: it is their code's end
        return {"error": _detail(exc, filename)}
    function = namespace.get(entry)
    if not callable(function):
        return {"error": {"type": "NameError", "line": None,
                          "message": f"the code does not define {entry}"}}
    outcomes, encoder = [], Encoder()  # one budget for all of a program's outputs
    for args in cases:
        try:
            output = function(*copy.deepcopy(args))
        except MemoryError:
            raise
        except BaseException as exc:  # noqa: BLE001
            outcomes.append({"raised": _detail(exc, filename)})
            continue
        outcomes.append(encoded(output, encoder))
    return {"outcomes": outcomes}


def observe(code: str, plan: dict, device: str = "cpu") -> dict:
    """The run the plan asks for. The author's run (`plan["versions"]`: [id, code] pairs)
    reports the cases' data and each program's outcomes, reference first; the learner's
    reports only the cases' digest (to check both runs had the same cases) and its own."""
    names = given(plan.get("given_names") or [])
    cases, report = build_cases(plan["cases"], plan["seed"], names)
    if cases is None:
        return {**report, "error": None}
    if plan["role"] == "author":
        programs = [(code, REFERENCE_FILE)] + [(c, f"<version {v}>") for v, c in
                                               plan["versions"]]
    else:
        programs = [(code, LEARNER_FILE)]
        report.pop("inputs")
    report["programs"] = [run_program(c, filename, plan["entry"], names, cases)
                          for c, filename in programs]
    return {**report, "error": None}
