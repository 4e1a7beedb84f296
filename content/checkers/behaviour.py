"""The `behaviour` checker: a learner's function judged against a card's reference and its
labelled wrong versions, on cases the card's author writes (issue 27).

Two jailed runs (`_behave`, started by the sandbox service): the author's (the cases, then
the reference and each version on them) and the learner's (the same cases from the same
seed, then the learner's entry). This module, in the service's checker processes, no torch,
judges what both reported:
- every case equal to the reference's output (by the card's `compare`): passed;
- else the labelled version whose outcome equals the learner's on every case (an equal
  value, or an exception of the same type) names the mistake;
- else an exception is the learner's own line and message, and a wrong value is shown on
  the smallest case that differs (`_case`: input, expected, got, and where they differ).
The mistake ids come from the card (`versions`), not from this module: MISTAKES is empty,
and a deck registers the ids its behaviour cards list.
"""

from __future__ import annotations

from content.checkers._bounds import MAX_CASES, MAX_VALUES
from content.checkers._case import call, differing_case
from content.checkers._events import Malformed
from content.checkers._values import Compare, check, difference, size
from content.checkers._verdict import error_result
from content.safe_text import code_span

MISTAKES: tuple[str, ...] = ()
MAX_VERSIONS = 8  # labelled wrong versions a card may have (each runs on every case)
MAX_GIVEN = 16  # names a card gives the learner's code
NAME_MAX = 64  # characters of an entry, a given name or a version's id
OUTCOMES = ("value", "unencodable", "raised")


def judge(observations, salt: int = 0) -> dict:
    """Judge {"entry", "compare", "versions": [ids], "author": run, "learner": run}, each
    run as `_behave.observe` reports it; or try an exercise before it is stored ({"vet":
    ...}: see `vet`). Raises Malformed for a record of another shape."""
    if isinstance(observations, dict) and "vet" in observations:
        return vet(observations["vet"])
    entry, compare, ids = _exercise(observations)
    author, learner = _run(observations.get("author")), _run(observations.get("learner"))
    problem = _exercise_problem(author, learner, len(ids))
    if problem:
        return broken(problem)
    inputs = author["inputs"]["list"]
    reference, *versions = (_outcomes(p, len(inputs)) for p in author["programs"])
    mine = learner["programs"][0]
    if len(learner["programs"]) != 1:
        raise Malformed("the learner's run reported another program")
    if "error" in mine:
        return error_result(mine["error"])
    got = _outcomes(mine, len(inputs))
    if _alike(reference, got, compare):
        return {"status": "ok", "passed": True, "mistakes": [], "feedback": [], "error": None}
    return _wrong(entry, inputs, reference, got, dict(zip(ids, versions, strict=True)),
                  compare)


def vet(record) -> dict:
    """An exercise tried before it is stored: {"entry", "compare", "versions", "authors":
    [the author's run on one seed, on another], "again": the reference run in another
    process on the first seed (in the learner's role)}. Passed when the reference runs and
    is deterministic for a seed, and every version runs, returns on some case (a crash on
    every case names no mistake) and differs, on each seed, from the reference and from
    every other version; else `feedback` says each problem once."""
    entry, compare, ids = _exercise(record)
    runs, again = record.get("authors"), _run(record.get("again"))
    if not isinstance(runs, list) or len(runs) != 2:
        raise Malformed("an exercise is tried on two seeds")
    first, second = (_run(run) for run in runs)
    problems: list[str] = []
    for run in (first, second):
        if (problem := _author_problem(run, len(ids))) and problem not in problems:
            problems.append(problem)
    if not problems:
        problems += _reproducible(first, again, compare, entry)
    if not problems:
        for run in (first, second):
            problems += [p for p in _indistinct(run, ids, compare, entry) if p not in problems]
    return {"status": "ok", "passed": not problems, "mistakes": [], "error": None,
            "feedback": problems}


def _reproducible(first: dict, again: dict, compare: Compare, entry: str) -> list[str]:
    """The same seed in another process: the same cases, and the reference's same outputs."""
    problem = _exercise_problem(first, again, len(first["programs"]) - 1)
    if problem:
        return [problem]
    n = len(first["inputs"]["list"])
    reference, repeated = _outcomes(first["programs"][0], n), _outcomes(again["programs"][0], n)
    for i, (want, got) in enumerate(zip(reference, repeated, strict=True), 1):
        if not same(want, got, compare):
            return [f"the reference gave other outputs in another run with the same seed "
                    f"(case {i}): {entry} must depend on its arguments alone"]
    return []


def _indistinct(run: dict, ids: list[str], compare: Compare, entry: str) -> list[str]:
    """What a learner's answer could not be told by on this run's cases."""
    n = len(run["inputs"]["list"])
    reference = _outcomes(run["programs"][0], n)
    problems, named = [], {}
    for mistake, program in zip(ids, run["programs"][1:], strict=True):
        if isinstance(program, dict) and "error" in program:
            problems.append(f"version {mistake} fails before {entry} is called "
                            f"({code_span(_error_text(program['error']), 300)}): a mistake is "
                            f"recognised only by what {entry} does")
            continue
        outcomes = _outcomes(program, n)
        if all("raised" in outcome for outcome in outcomes):
            problems.append(_raises_everywhere(mistake, outcomes[0]["raised"], entry))
        else:
            named[mistake] = outcomes
    ids = list(named)
    for mistake, outcomes in named.items():
        if _alike(outcomes, reference, compare):
            problems.append(f"version {mistake} cannot be told apart from the reference on "
                            "these cases")
    for i, (one, outcomes) in enumerate(named.items()):
        for other in ids[i + 1:]:
            if _alike(outcomes, named[other], compare):
                problems.append(f"versions {one} and {other} cannot be told apart on these "
                                "cases")
    return problems


def _raises_everywhere(mistake: str, raised: dict, entry: str) -> str:
    """A version that raises on every case (vetted only when the reference returned on all):
    a crash says nothing of the mistake, so any answer that crashes the same way would be
    named it. Said by type and line alone, the same on either seed."""
    line = raised.get("line")
    where = f"line {line}: " if isinstance(line, int) and not isinstance(line, bool) else ""
    kind = code_span(f"{where}{str(raised.get('type'))[:100]}", 200)
    return (f"version {mistake} raises on every case where the reference returns ({kind}): "
            f"any answer that merely crashes the same way would be told it made this "
            f"mistake; make the version's {entry} return the wrong result the mistake gives")


def _alike(one: list[dict], other: list[dict], compare: Compare) -> bool:
    return all(same(a, b, compare) for a, b in zip(one, other, strict=True))


def _exercise(record) -> tuple[str, Compare, list[str]]:
    if not isinstance(record, dict):
        raise Malformed("no behaviour was observed")
    try:
        compare = Compare.read(record.get("compare"))
    except ValueError as exc:
        raise Malformed(str(exc)) from None
    ids = record.get("versions")
    if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
        raise Malformed("the versions are not named")
    return str(record.get("entry"))[:100], compare, ids


def broken(problem: str) -> dict:
    """The exercise itself failed: not the learner's doing, and no verdict on the code."""
    return {"status": "error", "passed": False, "mistakes": [], "error": None,
            "feedback": ["this exercise could not judge the code (its author can fix it): "
                         + code_span(problem, 500)]}


def _run(run) -> dict:
    if not isinstance(run, dict):
        raise Malformed("a run reported nothing")
    return run


def _exercise_problem(author: dict, learner: dict, n_versions: int) -> str | None:
    problem = _cases_problem(author)
    if problem is None and (learner.get("cases_error") is not None
                            or learner.get("digest") != author.get("digest")):
        problem = ("cases(rng) made other cases in another run with the same seed: they must "
                   "depend on rng alone")
    problem = problem or _reference_problem(author, n_versions)
    if problem is None and (not isinstance(learner.get("programs"), list)
                            or not learner["programs"]):
        raise Malformed("the learner's run reported no program")
    return problem


def _author_problem(author: dict, n_versions: int) -> str | None:
    """Why the author's run cannot judge anything: its cases or its reference failed."""
    return _cases_problem(author) or _reference_problem(author, n_versions)


def _cases_problem(author: dict) -> str | None:
    if (error := author.get("cases_error")) is not None:
        return f"cases(rng) failed: {_error_text(error)}"
    inputs = author.get("inputs")
    check(inputs)
    if not isinstance(inputs, dict) or not 0 < len(inputs.get("list") or ()) <= MAX_CASES:
        raise Malformed("the author's run reported no cases")
    return None


def _reference_problem(author: dict, n_versions: int) -> str | None:
    programs = author.get("programs")
    if not isinstance(programs, list) or len(programs) != 1 + n_versions:
        raise Malformed("the author's run reported other programs")
    reference = programs[0]
    if not isinstance(reference, dict):
        raise Malformed("the reference reported nothing")
    if "error" in reference:
        return f"the reference failed: {_error_text(reference['error'])}"
    for i, outcome in enumerate(_outcomes(reference, len(author["inputs"]["list"])), 1):
        if "raised" in outcome:
            return f"the reference raised on case {i}: {_error_text(outcome['raised'])}"
        if "unencodable" in outcome:
            return f"the reference's output on case {i} {outcome['unencodable']}"
    return None


def _error_text(error) -> str:
    if not isinstance(error, dict):
        raise Malformed("error detail")
    line = error.get("line")
    where = f"line {line}: " if isinstance(line, int) and not isinstance(line, bool) else ""
    return f"{where}{str(error.get('type'))[:100]}: {str(error.get('message'))[:300]}"


def _outcomes(program, n_cases: int) -> list[dict]:
    """A program's outcome per case, read as the child writes them (one budget each)."""
    if not isinstance(program, dict):
        raise Malformed("a program reported nothing")
    if "error" in program:
        return [{"raised": program["error"]}] * n_cases  # never equal to a value
    outcomes = program.get("outcomes")
    if not isinstance(outcomes, list) or len(outcomes) != n_cases:
        raise Malformed("a program did not report one outcome per case")
    budget = [MAX_VALUES]
    for outcome in outcomes:
        if not isinstance(outcome, dict) or len(outcome) != 1 or next(iter(outcome)) \
                not in OUTCOMES:
            raise Malformed("an outcome is not a value, a problem or an exception")
        if "value" in outcome:
            check(outcome["value"], budget)
        elif "raised" in outcome and not isinstance(outcome["raised"], dict):
            raise Malformed("error detail")
    return outcomes


def same(want: dict, got: dict, compare: Compare) -> bool:
    """Two outcomes alike: equal values, or exceptions of one type."""
    if "value" in want and "value" in got:
        return difference(want["value"], got["value"], compare) is None
    if "raised" in want and "raised" in got:
        return str(want["raised"].get("type")) == str(got["raised"].get("type"))
    return False


def _wrong(entry: str, inputs: list, reference: list, got: list, versions: dict,
           compare: Compare) -> dict:
    raised = next((o["raised"] for o in got if "raised" in o), None)
    for mistake, outcomes in versions.items():
        if _alike(outcomes, got, compare):
            text = f"{entry} does on every case what the known mistake '{mistake}' does"
            if raised is not None:
                return error_result(raised, (mistake, text))
            return {"status": "ok", "passed": False, "mistakes": [mistake],
                    "feedback": [text], "error": None}
    if raised is not None:
        case = next(i for i, o in enumerate(got) if "raised" in o)
        result = error_result(raised)
        result["feedback"].append(f"on {code_span(_call(entry, inputs[case]), 300)}")
        return result
    for i, outcome in enumerate(got):
        if "unencodable" in outcome:
            return _failed([f"what {entry} returned on {code_span(_call(entry, inputs[i]), 300)}"
                            f" cannot be compared: it {code_span(outcome['unencodable'])}"])
    differing = [i for i, (w, g) in enumerate(zip(reference, got, strict=True))
                 if not same(w, g, compare)]
    case = min(differing, key=lambda i: (size(inputs[i]), i))
    return _failed(differing_case(entry, inputs[case], reference[case]["value"],
                                  got[case]["value"], compare, len(differing), len(inputs)))


def _failed(feedback: list[str]) -> dict:
    return {"status": "ok", "passed": False, "mistakes": [], "feedback": feedback,
            "error": None}


def _call(entry: str, args) -> str:
    return call(entry, args, 300)


def progressed(observations) -> bool:
    """Whether the learner's function returned on any case (a value, or one that cannot be
    compared) before the run stopped. One that stopped before any did (a SyntaxError, a
    NameError on every call, any exception on every case) is not judged by the engine unless
    a labelled version explains it, as a train loop that stopped before training. A record
    of another shape counts as progressed (a forged one gains no free run)."""
    learner = observations.get("learner") if isinstance(observations, dict) else None
    programs = learner.get("programs") if isinstance(learner, dict) else None
    if not isinstance(programs, list) or len(programs) != 1 or not isinstance(programs[0],
                                                                               dict):
        return True
    if "error" in programs[0]:
        return False
    outcomes = programs[0].get("outcomes")
    return not isinstance(outcomes, list) or any(
        not isinstance(o, dict) or "raised" not in o for o in outcomes)
