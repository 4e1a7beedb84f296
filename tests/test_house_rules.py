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


def test_front_ends_get_one_engine_and_construct_none_of_its_services(app):
    """The engine's face (bot/engine/__init__.py) exports values, refusals and `Engine`,
    never a service; no front-end module calls a service class (the composition root,
    bot/app.py, builds them once)."""
    import bot.engine as face

    services = {type(value) for name, value in vars(app.engine).items()
                if not name.startswith("_")}
    assert {"Tutor", "ServedCards", "Plays", "CommunityDecks"} <= {s.__name__ for s in services}
    assert not [name for name in face.__all__ if any(getattr(face, name) is s for s in services)]
    names = {s.__name__ for s in services} | {"Engine", "ServerDecks", "ReminderSweep"}
    called = []
    for path in [*(REPO / "bot" / "discord_ui").glob("*.py"), REPO / "bot" / "terminal.py"]:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) in names:
                called.append(f"{path.name}:{node.lineno} {node.func.id}")
    assert called == []
