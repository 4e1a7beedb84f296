"""A learner's own progress, per server (filled in by the progress page's author)."""

from __future__ import annotations

from aiohttp import web


def add_routes(router: web.UrlDispatcher) -> None:
    pass
