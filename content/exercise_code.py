"""A behaviour card's code read before anything runs it (issue 40): its cases, reference and
versions each compile, `cases` defines cases(rng), and the reference and every version
define the card's `entry`. Only compiled, never run (no sandbox needed): what the code does
on its cases is the sandbox's trial (`bot.engine.exercises`). The starter is not read: it
is the learner's to complete and may be unfinished on purpose.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from typing import Any

from content.safe_text import code_span
from content.schema import CodeCard

Problem = tuple[tuple[Any, ...], str]
SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda, ast.ListComp,
          ast.SetComp, ast.DictComp, ast.GeneratorExp)  # names bound inside stay inside


def code_problems(card: CodeCard, base: tuple) -> Iterator[Problem]:
    """Each code block of the card's behaviour exercise that does not compile or lacks
    the name it must define, at that block's YAML path."""
    block = card.behaviour
    if block is None:
        return
    blocks = [("cases", (*base, "behaviour", "cases"), block.cases, "cases"),
              ("the reference", (*base, "reference"), card.reference, block.entry)]
    blocks += [(f"version {mistake}", (*base, "behaviour", "versions", mistake), code,
                block.entry) for mistake, code in block.versions.items()]
    for what, path, code, name in blocks:
        problem = _problem(what, code, name)
        if problem:
            yield path, problem


def _problem(what: str, code: str, name: str) -> str | None:
    try:
        tree = ast.parse(code, f"<{what}>")
        compile(tree, f"<{what}>", "exec", dont_inherit=True)  # e.g. `return` outside def
    except SyntaxError as exc:
        where = f"its line {exc.lineno}{_shown(code, exc)}: " if exc.lineno else ""
        return (f"{what} does not compile ({where}{type(exc).__name__}: {exc.msg}): fix the "
                "code")
    except (RecursionError, MemoryError):
        return f"{what} does not compile (it nests too deeply): fix the code"
    if _binds(tree, name):
        return None
    if name == "cases":
        return ("cases does not define cases(rng): write `def cases(rng):` returning a list "
                "of argument tuples built from rng")
    return (f"{what} does not define {name}, the card's entry: define it at the top level "
            f"(`def {name}(...):` or `class {name}:`), as the learner's code must")


def _shown(code: str, exc: SyntaxError) -> str:
    """The line in error, quoted (compiling a tree gives no text: it is taken from the code)."""
    lines = code.splitlines()
    text = exc.text or (lines[exc.lineno - 1] if 0 < exc.lineno <= len(lines) else "")
    return f" {code_span(text.strip(), 120)}" if text.strip() else ""


def _binds(tree: ast.Module, name: str) -> bool:
    """Whether the module binds `name` at its top level (in any branch; `import *` may)."""
    stack: list[ast.AST] = list(tree.body)
    while stack:
        node = stack.pop()
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) and \
                node.name == name:
            return True
        if isinstance(node, ast.Import | ast.ImportFrom):
            if any(alias.name == "*" or (alias.asname or alias.name.split(".")[0]) == name
                   for alias in node.names):
                return True
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store) and node.id == name:
            return True
        if not isinstance(node, SCOPES):
            stack.extend(ast.iter_child_nodes(node))
    return False
