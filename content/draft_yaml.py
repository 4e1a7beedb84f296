"""Block-style YAML that keeps key order and carries '# ...' comments (PyYAML drops them):
the importer's drafts are for people to edit, and their comments say what was guessed."""

from __future__ import annotations

import json

import yaml


def _scalar(value) -> str:
    if isinstance(value, bool | int) or value is None:
        return yaml.safe_dump(value).split("\n")[0]
    text = yaml.safe_dump(value, allow_unicode=True, width=float("inf"))
    text = text.removesuffix("\n").removesuffix("\n...")
    return json.dumps(value, ensure_ascii=False) if "''" in text else text


def _literal(text: str) -> bool:
    """Whether `|` keeps the text exactly: one final newline, no edge spaces."""
    body = text.removesuffix("\n")
    return text.endswith("\n") and body == body.strip() and all(
        s == s.rstrip() for s in body.split("\n"))


def emit(data, pad: str = "") -> list[str]:
    """Block-style YAML in key order; a '#' key becomes a comment line."""
    lines: list[str] = []
    for key, value in data.items() if isinstance(data, dict) else ((None, v) for v in data):
        head = f"{pad}{key}:" if key is not None else f"{pad}-"
        if key == "#":
            lines.append(f"{pad}# {' '.join(str(value).split())}")
        elif isinstance(value, dict | list) and value:
            sub = emit(value, pad + "  ")
            nested = key is None and isinstance(value, dict)
            lines += [f"{pad}- {sub[0][len(pad) + 2:]}", *sub[1:]] if nested else [head, *sub]
        elif isinstance(value, str) and _literal(value):
            lines += [f"{head} |", *(f"{pad}  {s}" if s else "" for s in value[:-1].split("\n"))]
        else:
            lines.append(f"{head} {_scalar(value) if value != [] else '[]'}")
    return lines


def plain(data):
    if isinstance(data, dict):
        return {k: plain(v) for k, v in data.items() if k != "#"}
    return [plain(v) for v in data] if isinstance(data, list) else data
