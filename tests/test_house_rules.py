"""Rules of the test suite itself: shared test code lives in tests/helpers (or a conftest's
fixtures), so no test module imports another one."""

from __future__ import annotations

import ast

from tests.helpers.paths import REPO


def test_no_test_module_imports_another():
    offenders = []
    for path in sorted((REPO / "tests").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = ([node.module or ""] if isinstance(node, ast.ImportFrom)
                     else [a.name for a in node.names] if isinstance(node, ast.Import) else [])
            offenders += [f"{path.relative_to(REPO)}: {name}" for name in names
                          if name.startswith("tests.") and
                          name.rsplit(".", 1)[-1].startswith(("test_", "conftest"))]
    assert not offenders, offenders
