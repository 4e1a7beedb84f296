"""The docs name what exists (issue 38.7): a module, file, class or method the code no
longer has fails here, naming the doc, its line and the name, so a rename fixes its docs.

What counts as a reference (everything else backticked is prose: commands, env vars, SQL,
table and column names, metric names, option values):

- every doc (docs/*.md and README.md): a **path** rooted in one of ROOTS (`bot/engine/`,
  `scheduler/*.py`) or **a file's bare name** (`tutor.py`, in a folder the same section
  named before it, or at the repository's root), a **dotted module path**
  (`bot.engine.tutor`, `content.checkers.mistakes`: the longest importable prefix, then
  attributes), the same inside fenced blocks (paths, and bare files and folders such as
  `sim/` in the folders named earlier in the block), and every relative markdown link (its
  file, and its #anchor among the headings of that page);
- docs/architecture.md, besides: **`Class.member`** (CamelCase head: a class of that name
  defined in bot/, content/ or scheduler/, found by scanning the source, imported, and
  having the member as an attribute, property, dataclass or model field, annotation or an
  attribute its methods set on `self`), a bare **ClassName** or **CONSTANT** (defined at a
  module's top level; an UPPER_CASE one may be a setting, a string or field the code
  reads), **`module.name`** (`choice.DUE`, `store.learners`: a project
  module whose last part is `module`, then the name on it or on a class it defines), a
  **path with a name** (`content/checkers/behaviour.vet`), a **snake_case name**
  (`judge_code`, `_on_store`: defined, or a string literal, somewhere in the project),
  and a name **right after a path** (`bot/app.py`, `build`): defined in that module.
  A call's arguments are dropped (`ServedCards.answer(serve id, ...)` is
  `ServedCards.answer`); a dotted expression on a value (`interaction.client.handlers.on_x`)
  needs only its last name defined in the project.
"""

from __future__ import annotations

import ast
import bisect
import dataclasses
import importlib
import re
from collections import defaultdict
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest

from tests.helpers.paths import REPO

PACKAGES = ("bot", "content", "scheduler")
ROOTS = (*PACKAGES, "tests", "docs", ".ci")  # a path starting elsewhere is not the project's
ARCHITECTURE = REPO / "docs" / "architecture.md"
DOCS = sorted([REPO / "README.md", *(REPO / "docs").glob("*.md")])
# Names that look like a file but are not one of ours (the library's name).
NOT_FILES = {"discord.py"}
# Spans that look like a module but are not one: the bot's optional env file (compose).
NOT_MODULES = {"bot.env"}
# Classes of a library the docs name: the module to find them in.
EXTERNAL = {"AllowedMentions": "discord", "DynamicItem": "discord.ui"}

ID = r"[A-Za-z_]\w*"
PATH = re.compile(r"(?P<root>[\w.-]+)(?:/[\w.*-]+)*/?")  # with at least one "/"
BARE_FILE = re.compile(r"[\w-]+\.(?:py|toml|md|yaml|yml|json|sh|txt|cfg)")
MODULE = re.compile(rf"(?:{'|'.join(PACKAGES)})(?:\.{ID})*")
CLASS_REF = re.compile(rf"[A-Z][a-z0-9]\w*(?:\.{ID})*")  # CamelCase head
CONSTANT = re.compile(r"[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)*")
DOTTED = re.compile(rf"[a-z_]\w*(?:\.{ID})+")  # module.name, or an expression on a value
SNAKE = re.compile(r"_*[a-z][a-z0-9]*(?:_[a-z0-9]+)+|_[a-z][a-z0-9]*")
PATH_WITH_NAME = re.compile(rf"(?P<path>[\w.-]+(?:/[\w-]+)+)\.(?P<name>{ID})")
FENCE = re.compile(r"^[ \t]*(```+|~~~+)[^\n]*\n(.*?)^[ \t]*\1[ \t]*$", re.M | re.S)
FENCE_WORD = re.compile(r"[\w./*-]+")
HEADING = re.compile(r"^#{1,6} ", re.M)
TICKS = re.compile(r"`+")
# Between a path and a name it introduces: nothing but these ("`a.py`, `f`", "`a.py` (`C`").
ADJACENT = re.compile(r"[\s,:(]*")


@dataclass(frozen=True)
class Span:
    doc: Path
    line: int
    text: str
    folders: tuple[str, ...]  # folders the section (or fenced block) named before it
    after: str | None  # the module the span is introduced by, if right after its path
    fenced: bool = False

    def where(self) -> str:
        return f"{self.doc.relative_to(REPO)}:{self.line}: `{self.text}`"


# -- reading the docs ------------------------------------------------------------------------


def _folder_of(path: str) -> str | None:
    """The project folder a path names (its own, or the file's), else None."""
    path = path.rstrip("/")
    full = REPO / path
    if "*" in path or full.is_file() or "." in Path(path).name:
        return str(Path(path).parent)
    return path if full.is_dir() else None


def _module_of(path: str) -> str | None:
    """The dotted module of a project file or package path."""
    path = path.rstrip("/")
    if path.endswith(".py"):
        path = path[:-3]
    parts = path.split("/")
    if parts[0] not in PACKAGES or "*" in path:
        return None
    if parts[-1] == "__init__":
        parts.pop()
    module = ".".join(parts)
    return module if module in _modules() or (REPO / path / "__init__.py").is_file() else None


def spans(doc: Path, text: str) -> list[Span]:
    """Every code span of a markdown file (a backtick run closed by one of the same length,
    across a line break too) and every word of its fenced blocks, with the folders its
    section named before it."""
    found: list[Span] = []
    folders: list[str] = []
    last_end, last_module = -1, None
    line_starts = [m.end() for m in re.finditer(r"^", text, re.M)]

    def line_of(offset: int) -> int:
        return bisect.bisect_right(line_starts, offset)

    pos = 0
    while pos < len(text):
        next_fence = FENCE.search(text, pos)
        next_heading = HEADING.search(text, pos)
        tick = TICKS.search(text, pos)
        events = [m for m in (next_fence, next_heading, tick) if m]
        if not events:
            break
        first = min(events, key=lambda m: m.start())  # a fence before its own backticks
        if first is next_heading:  # a new section: the folders named start over
            folders = []
            pos = first.end()
            continue
        if first is next_fence:
            block_folders = list(folders)
            body_start = first.start(2)
            for word in FENCE_WORD.finditer(first.group(2)):
                value = word.group().rstrip(".")
                if "/" in value or BARE_FILE.fullmatch(value):
                    found.append(Span(doc, line_of(body_start + word.start()), value,
                                      tuple(block_folders), None, fenced=True))
                    if "/" in value and (folder := _folder_of(value)):
                        block_folders.append(folder)
            pos = first.end()
            continue
        run = first.group()
        close = re.compile(rf"(?<!`){run}(?!`)").search(text, first.end())
        if close is None:
            pos = first.end()
            continue
        body = " ".join(text[first.end():close.start()].split())
        between = text[last_end:first.start()] if last_end >= 0 else "x"
        after = last_module if ADJACENT.fullmatch(between) else None
        span = Span(doc, line_of(first.start()), body, tuple(folders), after)
        found.append(span)
        last_end, last_module = close.end(), after
        if PATH.fullmatch(body) and "/" in body:
            if folder := _folder_of(body):
                folders.append(folder)
            last_module = _module_of(body)
        elif BARE_FILE.fullmatch(body):
            last_module = next((m for f in reversed(folders)
                                if (REPO / f / body).is_file()
                                and (m := _module_of(f"{f}/{body}"))), None)
        pos = close.end()
    return found


def links(text: str) -> list[tuple[int, str, str]]:
    """Relative markdown link targets (file, #anchor: either may be empty), with their lines."""
    out = []
    for number, line in enumerate(text.splitlines(), 1):
        for target in re.findall(r"\]\(([^)\s]+)\)", line):
            if not re.match(r"[a-z]+:", target):
                file, _, anchor = target.partition("#")
                out.append((number, file, anchor))
    return out


def anchors(text: str) -> set[str]:
    """The anchors GitHub gives a page's headings (fenced blocks left out)."""
    text = FENCE.sub("", text)
    return {re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
            for heading in re.findall(r"^#{1,6} (.+)$", text, re.M)}


# -- what the project defines ------------------------------------------------------------------


@cache
def _modules() -> dict[str, Path]:
    """Every module of the project's packages by dotted name."""
    found = {}
    for package in PACKAGES:
        for path in (REPO / package).rglob("*.py"):
            parts = list(path.relative_to(REPO).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


@cache
def _trees() -> dict[str, ast.Module]:
    return {name: ast.parse(path.read_text(encoding="utf-8")) for name, path in _modules().items()}


@cache
def _classes() -> dict[str, list[str]]:
    """Top-level class name -> the modules defining it."""
    found = defaultdict(list)
    for module, tree in _trees().items():
        for node in tree.body:
            if isinstance(node, ast.ClassDef):
                found[node.name].append(module)
    return found


@cache
def _top_level() -> dict[str, list[str]]:
    """Names defined at a module's top level (classes, functions, assignments)."""
    found = defaultdict(list)
    for module, tree in _trees().items():
        for node in tree.body:
            if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                found[node.name].append(module)
            elif isinstance(node, (ast.Assign, ast.AnnAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for target in targets:
                    for name in ast.walk(target):
                        if isinstance(name, ast.Name):
                            found[name.id].append(module)
    return found


@cache
def _all_names() -> frozenset[str]:
    """Every name the project defines anywhere (functions, methods, classes, assigned names
    and attributes, arguments, modules) and every identifier-like string literal (table
    names, causes, keys)."""
    names = {module.rsplit(".", 1)[-1] for module in _modules()}
    for tree in _trees().values():
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(node.name)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                names.add(node.id)
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
                names.add(node.attr)
            elif isinstance(node, ast.arg):
                names.add(node.arg)
            elif isinstance(node, ast.keyword) and node.arg:
                names.add(node.arg)
            elif isinstance(node, ast.Constant) and isinstance(node.value, str) \
                    and re.fullmatch(r"\w+", node.value):
                names.add(node.value)
    return frozenset(names)


def _self_attributes(cls: type) -> set[str]:
    """What the methods of a project class (and its project bases) set on `self`."""
    found = set()
    for klass in cls.__mro__:
        module = getattr(klass, "__module__", "")
        if module not in _trees():
            continue
        for node in _trees()[module].body:
            if isinstance(node, ast.ClassDef) and node.name == klass.__name__:
                for sub in ast.walk(node):
                    if isinstance(sub, ast.Attribute) and isinstance(sub.ctx, ast.Store) \
                            and isinstance(sub.value, ast.Name) and sub.value.id == "self":
                        found.add(sub.attr)
    return found


def has_member(cls: type, name: str) -> bool:
    """An attribute, method, property, enum member, dataclass or model field, annotation,
    slot, or an attribute the class's methods set on `self`."""
    if hasattr(cls, name):
        return True
    for klass in getattr(cls, "__mro__", ()):
        if name in getattr(klass, "__annotations__", {}) or name in getattr(
                klass, "__slots__", ()):
            return True
    if dataclasses.is_dataclass(cls) and name in {f.name for f in dataclasses.fields(cls)}:
        return True
    if name in getattr(cls, "model_fields", {}):
        return True
    return name in _self_attributes(cls)


def _resolve(obj, names: list[str], what: str) -> str | None:
    """Follow `names` from `obj` (a module or a class); None, or what is missing."""
    for name in names:
        if isinstance(obj, type):
            if not has_member(obj, name):
                return f"{what} has no member {name!r}"
            found = getattr(obj, name, None)
            obj = found if isinstance(found, type) else None
        elif obj is not None:
            if not hasattr(obj, name):
                return f"{what} has no {name!r}"
            obj = getattr(obj, name)
        what = f"{what}.{name}"
    return None


def _import(module: str):
    return importlib.import_module(module)


# -- the rules ---------------------------------------------------------------------------------


def check_path(span: Span, value: str) -> str | None:
    """A path rooted in the project exists (a glob matches something); None if it is not
    the project's or it exists."""
    root = value.split("/", 1)[0]
    if root not in ROOTS:
        return None
    if "*" in value:
        return None if list(REPO.glob(value.rstrip("/"))) else "matches no file"
    target = REPO / value
    if not target.exists():
        return "no such file or folder"
    if value.endswith("/") and not target.is_dir():
        return "is not a folder"
    return None


def check_bare_file(span: Span) -> str | None:
    if span.text in NOT_FILES:
        return None
    places = [*reversed(span.folders), "."]
    if any((REPO / folder / span.text).exists() for folder in places):
        return None
    named = ", ".join(f"{f}/" for f in dict.fromkeys(reversed(span.folders))) or "none"
    return f"no such file at the root or in the folders this section named ({named})"


def check_module(value: str) -> str | None:
    parts = value.split(".")
    for cut in range(len(parts), 0, -1):
        module = ".".join(parts[:cut])
        if module in _modules() or (cut == 1 and (REPO / module / "__init__.py").is_file()):
            break
    else:
        return "no such module"
    if cut == len(parts):
        return None
    return _resolve(_import(module), parts[cut:], module)


def check_class_ref(value: str) -> str | None:
    head, *rest = value.split(".")
    if head in EXTERNAL:
        return _resolve(getattr(_import(EXTERNAL[head]), head), rest, head)
    modules = _classes().get(head)
    if not modules:
        if not rest and head in _top_level():  # a type alias, a protocol's name
            return None
        return f"no class {head} in {', '.join(PACKAGES)}"
    problems = []
    for module in modules:
        problem = _resolve(getattr(_import(module), head), rest, f"{head} ({module})")
        if problem is None:
            return None
        problems.append(problem)
    return "; ".join(problems)


def check_dotted(value: str) -> str | None:
    """`module.name[.member]` on a project module whose last part is `module`; else an
    expression on a value, whose last name must be the project's."""
    head, first, *rest = value.split(".")
    modules = [m for m in _modules() if m.rsplit(".", 1)[-1] == head]
    if not modules:
        last = value.rsplit(".", 1)[-1]
        return None if last in _all_names() else f"{last!r} is defined nowhere in the project"
    problems = []
    for module in modules:
        imported = _import(module)
        if hasattr(imported, first):
            problem = _resolve(imported, [first, *rest], module)
        else:  # an attribute of an instance of a class the module defines (`store.learners`)
            problem = f"{module} has no {first!r}"
            for cls_name in (c for c, ms in _classes().items() if module in ms):
                cls = getattr(imported, cls_name)
                if has_member(cls, first):
                    problem = _resolve(cls, [first, *rest], f"{module}.{cls_name}")
                    if problem is None:
                        break
        if problem is None:
            return None
        problems.append(problem)
    return "; ".join(problems)


def check_after_path(span: Span, value: str) -> str | None:
    """A name right after its module's path is defined (or imported) there."""
    head, *rest = value.split(".")
    module = _import(span.after)
    if not hasattr(module, head):
        return f"named right after {span.after}, which has no {head!r}"
    return _resolve(getattr(module, head), rest, f"{span.after}.{head}")


def check(span: Span, names: bool) -> tuple[str, str | None] | None:
    """(the rule that applies, its problem or None), or None when the span is no
    reference. `names`: the name rules too, not only paths and modules."""
    value = span.text
    if span.fenced:
        if re.fullmatch(r"[\w-]+/", value):  # a folder in one named before it (`sim/`)
            return "folder", check_bare_file(span)
        if "/" in value:
            return "path", check_path(span, value)
        return "file", check_bare_file(span)
    if "/" in value and not value.startswith("/") and PATH.fullmatch(value):
        if names and (m := PATH_WITH_NAME.fullmatch(value)) and not (REPO / value).exists() \
                and (REPO / f"{m['path']}.py").is_file():
            module = _module_of(f"{m['path']}.py")
            return "path.name", _resolve(_import(module), [m["name"]], module)
        return "path", check_path(span, value)
    if BARE_FILE.fullmatch(value):
        return "file", check_bare_file(span)
    if MODULE.fullmatch(value) and value not in NOT_MODULES:
        return "module", check_module(value)
    if not names:
        return None
    name = value.split("(", 1)[0]  # a call: its callee
    if not re.fullmatch(rf"{ID}(?:\.{ID})*", name):
        return None
    if span.after:
        return "after path", check_after_path(span, name)
    if CONSTANT.fullmatch(name) and len(name) > 1:
        ok = name in _top_level() or name in _all_names() or name.lower() in _all_names()
        return "CONSTANT", None if ok else "neither a constant nor a setting of the project"
    if CLASS_REF.fullmatch(name):
        return "Class.member", check_class_ref(name)
    if DOTTED.fullmatch(name):
        return "module.name", check_dotted(name)
    if SNAKE.fullmatch(name):
        ok = name in _all_names()
        return "name", None if ok else "defined nowhere in the project (nor a string there)"
    return None


def problems(doc: Path, names: bool, text: str | None = None) -> tuple[list[str], int]:
    """Each stale reference as `doc:line: `span` (rule): why`, and how many were checked."""
    text = doc.read_text(encoding="utf-8") if text is None else text
    found, checked = [], 0
    for span in spans(doc, text):
        try:
            result = check(span, names)
        except Exception as exc:  # noqa: BLE001 - an import that fails is a problem to list
            result = "import", f"could not be checked: {exc!r}"
        if result is None:
            continue
        checked += 1
        rule, problem = result
        if problem:
            found.append(f"{span.where()} ({rule}): {problem}")
    for line, file, anchor in links(text):
        checked += 1
        target = doc.parent / file if file else doc
        where = f"{doc.relative_to(REPO)}:{line}: link to {file}{'#' if anchor else ''}{anchor}"
        if not target.exists():
            found.append(f"{where}: no such file")
        elif anchor and target.suffix == ".md" and anchor not in anchors(
                text if target == doc else target.read_text(encoding="utf-8")):
            found.append(f"{where}: no such heading there")
    return found, checked


# -- the tests ---------------------------------------------------------------------------------


def test_architecture_names_only_what_exists():
    found, checked = problems(ARCHITECTURE, names=True)
    assert checked > 150, f"only {checked} references recognised: is the parser broken?"
    assert not found, "docs/architecture.md names what the code does not have:\n" + "\n".join(
        found)


@pytest.mark.parametrize("doc", [d for d in DOCS if d != ARCHITECTURE],
                         ids=lambda d: str(d.relative_to(REPO)))
def test_every_path_and_module_a_doc_names_exists(doc: Path):
    found, _ = problems(doc, names=False)
    assert not found, f"{doc.relative_to(REPO)} names files or modules that do not exist:\n" \
        + "\n".join(found)


def _check_text(text: str) -> list[str]:
    """The problems of `text` as if it were a page of docs/."""
    return problems(REPO / "docs" / "example.md", True, text)[0]


@pytest.mark.parametrize(("text", "stale"), [
    ("`bot/engine/tutor.py`, `ServedCards.answr`", "ServedCards.answr"),
    ("the sweep (`ReminderSweep.runn`)", "ReminderSweep.runn"),
    ("`ServedCards.answer(serve id)` and `ServedKards.answer(serve id)`", "ServedKards"),
    ("`bot/engine/tutr.py`", "tutr.py"),
    ("`bot.engine.tutr`", "bot.engine.tutr"),
    ("`bot.engine.tutor.Tutor.answr`", "answr"),
    ("## The engine (`bot/engine/`)\n\n`tutor.py` and `tutr.py`", "tutr.py"),
    ("`scheduler/choice.py`, `resolv`", "resolv"),
    ("`choice.DUEE`", "DUEE"),
    ("`store.learnerz`", "learnerz"),
    ("`content/checkers/_verdict.traind`", "traind"),
    ("`judge_cod`", "judge_cod"),
    ("`FREE_RETRIEZ`", "FREE_RETRIEZ"),
    ("`FleetTiming.claim_idle`", "claim_idle"),
    ("```\nbot/engin/   the engine\n```", "bot/engin/"),
    ("```\nbot/bench/   the simulator (sim/), the bare bot (bare_bott.py)\n```", "bare_bott"),
    ("```\nbot/bench/   the simulator (simm/)\n```", "simm/"),
    ("[the sandbox](sandboxx.md)", "sandboxx.md"),
    ("[limits](sandbox.md#sandbox-limitz)", "sandbox-limitz"),
    ("## Here\n\n[here](#her)", "#her"),
])
def test_a_stale_name_fails_naming_it_and_its_line(text, stale):
    found = _check_text("\n\n" + text)
    assert len(found) == 1 and stale in found[0], found
    assert re.match(r"docs/example\.md:[3-5]: ", found[0]), found


@pytest.mark.parametrize("text", [
    "`make test`, `tutor deck publish`, `DATABASE_URL`, `/deck upload`, `srs:<a>:<b>`",
    "`redis://`, `SANDBOX_ADDRESS=unix:/path`, `tutor_sandbox_unjudged_total{cause}`",
    "`../shared/checker-corpus/`, `/sys/fs/cgroup/`, `.venv/bin/tutor`, `behaviour`",
    "`Served.retries`, `Served.moves`, `CodeReport.ran_no_training` (properties, fields)",
    "`store.learners`, `FleetTiming.claim_idle_s`, `AllowedMentions.none()`, `choice.DUE`",
    "`guild_deck` (a table), `no_host` (a cause), `interaction.client.handlers.on_answer(...)`",
    "```\nbot/discord_ui/    front end: discord.py\nscheduler/    rules (sm2.py)\n```",
    "`bot/engine/services.py`, `Engine.reminder_sweep(sender).run()`",
])
def test_what_is_not_stale_passes(text):
    assert _check_text(text) == []
