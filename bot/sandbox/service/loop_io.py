"""Waiting on a non-blocking descriptor from the sandbox service's event loop."""

from __future__ import annotations

import asyncio


async def ready(fd, *, write: bool = False) -> None:
    """Return once `fd` (a descriptor or socket) can be read, or written with `write`."""
    loop = asyncio.get_running_loop()
    add, remove = (loop.add_writer, loop.remove_writer) if write else (
        loop.add_reader, loop.remove_reader)
    done = loop.create_future()
    add(fd, lambda: done.done() or done.set_result(None))
    try:
        await done
    finally:
        remove(fd)
