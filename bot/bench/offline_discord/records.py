"""What the offline Discord records: each REST request it answered and each interaction it sent
the bot, with everything the bot did about it (bot/bench/offline_discord/server.py fills them).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from bot.bench.offline_discord.world import EPHEMERAL


@dataclass
class Request:
    method: str
    path: str  # relative to api_base, e.g. "/channels/123/messages"
    query: dict
    json: Any  # body (multipart: payload_json plus "_files": [names], "_uploads": files)
    status: int = 0


@dataclass
class InteractionRecord:
    """One interaction sent to the bot and everything the bot did about it."""

    server: Any = field(repr=False)  # the OfflineDiscord that sent it
    id: str
    token: str
    type: int  # 2 command, 3 component, 5 modal submit
    payload: dict = field(repr=False)  # the INTERACTION_CREATE data
    callback_type: int | None = None  # 4 message, 5 deferred, 6 deferred update, 7 update, 9 modal
    data: dict = field(default_factory=dict)  # callback data as the bot sent it
    followups: list[dict] = field(default_factory=list)  # followup messages (live dicts)
    edits: list[dict] = field(default_factory=list)  # PATCH @original bodies
    message_id: str | None = None  # the "@original" message
    created: float = field(default_factory=time.monotonic, repr=False)

    @property
    def message(self) -> dict | None:
        """Current state of the resulting message (after edits); pass it to click()."""
        return self.server.messages.get(self.message_id) if self.message_id else None

    content = property(lambda self: (self.message or self.data).get("content"))
    embeds = property(lambda self: (self.message or self.data).get("embeds", []))
    components = property(lambda self: (self.message or self.data).get("components", []))
    flags = property(lambda self: (self.message or self.data).get("flags") or 0)
    ephemeral = property(lambda self: bool(self.flags & EPHEMERAL))
    modal = property(lambda self: self.data if self.callback_type == 9 else None)

    async def wait_for(self, predicate: Callable[[InteractionRecord], Any], timeout=5.0):
        return await self.server._wait(lambda: predicate(self), timeout, f"interaction {self.id}")

    async def wait_followups(self, n=1, timeout=5.0) -> list[dict]:
        await self.wait_for(lambda r: len(r.followups) >= n, timeout)
        return self.followups

    async def wait_edits(self, n=1, timeout=5.0) -> list[dict]:
        await self.wait_for(lambda r: len(r.edits) >= n, timeout)
        return self.edits
