"""The project's own packages inside the jail's runtime (issue 37.5).

An image installs the project into the venv's site-packages, which the jail binds for the
runtime: there every child could import the judges and read the decks. The jail covers each
package folder that lies in the runtime with an empty one; what the child runs (the
observers) the zygote imported before forking. In a checkout the project lies outside the
runtime (tests/sandbox/test_checker_records.py shows the child reaches none of the judge).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from bot.sandbox.jail import jail
from bot.sandbox.jail import syscalls as sc
from tests.helpers.sandbox import TEST_LIMITS

ROOT = Path(jail.__file__).resolve().parents[3]  # bot/sandbox/jail/jail.py


def test_the_packages_are_found_where_the_runtime_holds_them():
    assert jail.project_dirs(["/usr", sys.prefix]) == []  # a checkout: outside the runtime
    assert jail.project_dirs([str(ROOT.parent)]) == [
        str(ROOT / name) for name in ("bot", "content", "scheduler")]


def _inside_a_built_root(covered: str, beside: str) -> dict:
    """Build the jail's root in a child of our own (its own mount namespace) with `covered`
    as the project's folder, and say what the child sees there and `beside` it."""
    read, write = os.pipe()
    child = os.fork()
    if child == 0:  # never returns
        seen = {}
        try:
            sc.unshare(sc.CLONE_NEWNS)
            jail.project_dirs = lambda runtime: [covered]
            jail.build_root(TEST_LIMITS, gpu=False)
            seen = {"covered": os.listdir(covered), "beside": bool(os.listdir(beside))}
            try:
                open(os.path.join(covered, "x"), "w").close()
                seen["wrote"] = True
            except OSError:
                seen["wrote"] = False
        except BaseException as exc:  # noqa: BLE001 - reported to the test
            seen = {"error": repr(exc)}
        finally:
            os.write(write, json.dumps(seen).encode())
            os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as pipe:
        seen = json.loads(pipe.read() or b"{}")
    os.waitpid(child, 0)
    return seen


def test_a_package_in_the_runtime_is_an_empty_folder_in_the_jail():
    # Stand-ins for an image's site-packages/content: a package the venv really holds.
    site = Path(next(p for p in sys.path if p.endswith("site-packages")))
    covered = next(str(p) for p in sorted(site.iterdir()) if (p / "__init__.py").is_file())
    assert _inside_a_built_root(covered, str(site)) == {
        "covered": [], "beside": True, "wrote": False}
    assert os.listdir(covered)  # only inside that child
