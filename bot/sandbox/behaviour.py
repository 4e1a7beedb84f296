"""A `behaviour` check's two jailed runs, as the service makes them (issue 27).

A submission {"mode": "check", "checker": "behaviour", "code": learner code, "behaviour":
{"entry", "cases", "reference", "versions": {mistake id: code}, "compare", "given_names"}}
becomes two requests for jailed children with the same seed, drawn per submission:
- the author's run: `cases(rng)`, then the reference and each version on every case;
- the learner's run: the same cases, then the learner's `entry`. Its request holds neither
  the reference nor the versions, and it runs in another process: the learner's code can
  see nothing of what the reference returns.
Both runs keep every limit of a run. What they report goes to the judge
(`content/checkers/behaviour.py`) as one record (`observations`).

A deck's exercise is tried before it is stored ({"mode": "vet", ...}, the same block, the
reference as the code): the author's run on two seeds, and the reference once more in a
fresh process on the first seed, in the learner's role (is it deterministic?). The judge's
`vet` says what is wrong with it (`vet_observations`).
"""

from __future__ import annotations

from content import checkers
from content.checkers._values import Compare
from content.checkers.behaviour import MAX_GIVEN, MAX_VERSIONS, NAME_MAX

OBSERVER = checkers.OBSERVERS[checkers.BEHAVIOUR]
RUNS = {"check": 2, "vet": 3}  # jailed runs one request makes, one after another
MOST_RUNS = max(RUNS.values())


def runs(mode: str, block) -> int:
    """How many runs a request takes, for its deadline."""
    return RUNS.get(mode, 1) if block is not None else 1


def _name(value) -> bool:
    return isinstance(value, str) and 0 < len(value) <= NAME_MAX and value.isidentifier()


def _problem(block, code_max_bytes: int) -> str | None:
    """Why the behaviour block cannot be run, or None."""
    if not isinstance(block, dict):
        return "a behaviour check needs its behaviour block"
    if not _name(block.get("entry")):
        return "behaviour.entry must name a function or class"
    versions = block.get("versions") or {}
    if not isinstance(versions, dict) or len(versions) > MAX_VERSIONS or not all(
            isinstance(k, str) and 0 < len(k) <= NAME_MAX for k in versions):
        return f"behaviour.versions maps at most {MAX_VERSIONS} mistake ids to code"
    given = block.get("given_names") or []
    if not isinstance(given, list) or len(given) > MAX_GIVEN or not all(map(_name, given)):
        return f"behaviour.given_names is a list of at most {MAX_GIVEN} names"
    texts = {"cases": block.get("cases"), "reference": block.get("reference"),
             **{f"the version {k}": v for k, v in versions.items()}}
    for what, text in texts.items():
        if not isinstance(text, str):
            return f"behaviour's {what} is not code text"
        if len(text.encode("utf-8", "surrogatepass")) > code_max_bytes:
            return f"behaviour's {what} is larger than {code_max_bytes // 1024} KB"
    try:
        Compare.read(block.get("compare"))
    except ValueError as exc:
        return f"behaviour.compare: {exc}"
    return None


def requests(submission: dict, code: str, seed: int,
             code_max_bytes: int) -> tuple[dict, dict] | str:
    """(the author's request, the learner's), or why the submission is refused."""
    block = submission.get("behaviour")
    if problem := _problem(block, code_max_bytes):
        return problem
    shared = {"seed": seed, "entry": block["entry"], "cases": block["cases"],
              "given_names": list(block.get("given_names") or [])}
    versions = [[k, v] for k, v in (block.get("versions") or {}).items()]
    author = {"mode": "check", "device": "cpu", "code": block["reference"],
              "observer": OBSERVER, "plan": {**shared, "role": "author", "versions": versions}}
    learner = {"mode": "check", "device": "cpu", "code": code, "observer": OBSERVER,
               "plan": {**shared, "role": "learner"}}
    return author, learner


def vet_requests(submission: dict, seeds: tuple[int, int],
                 code_max_bytes: int) -> list[dict] | str:
    """The three runs that try an exercise (see above), or why it is refused."""
    block = submission.get("behaviour")
    if problem := _problem(block, code_max_bytes):
        return problem
    first, again = requests(submission, block["reference"], seeds[0], code_max_bytes)
    second, _ = requests(submission, block["reference"], seeds[1], code_max_bytes)
    return [first, second, again]


def vet_observations(submission: dict, details: list[dict]) -> dict:
    block = submission["behaviour"]
    first, second, again = (detail.get("observations") for detail in details)
    return {"vet": {"entry": block["entry"], "compare": block.get("compare"),
                    "versions": list(block.get("versions") or {}),
                    "authors": [first, second], "again": again}}


def author_failed(result: dict) -> dict:
    """The author's run did not end well: no verdict on the learner's code (not run)."""
    why = result.get("error") or f"it ended with status {result.get('status')}"
    reason = f"this exercise's own code (cases or reference) could not run: {why}"
    return {"status": "error", "exit_code": None, "stdout": "", "stderr": reason,
            "error": reason, "elapsed_ms": result.get("elapsed_ms", 0.0),
            "unjudged": "exercise"}


def observations(submission: dict, author_detail: dict, learner_detail: dict) -> dict | None:
    """One record for the judge; None when the learner's run reported nothing."""
    learner = learner_detail.get("observations")
    if learner is None:
        return None
    block = submission["behaviour"]
    return {"entry": block["entry"], "compare": block.get("compare"),
            "versions": list(block.get("versions") or {}),
            "author": author_detail.get("observations"), "learner": learner}
