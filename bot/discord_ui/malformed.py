"""Interactions discord.py cannot route, or cannot read at all, must not stop the bot.

discord.py runs each gateway event's parser inside the websocket's read loop
(`DiscordWebSocket.received_message`), and nothing there catches what a parser raises: it
ends `Client.connect`, so `Client.run` raises and `tutor run` exits. Its INTERACTION_CREATE
parser builds the Interaction, then reads a component's `data["custom_id"]` and
`["component_type"]` (a modal's `["components"]`) and matches the custom_id against every
dynamic item's pattern: a custom_id that is null, a number or missing, or no data at all,
raises there (TypeError, KeyError).

`guard_interactions` wraps that parser: a component or modal whose data discord.py cannot
route skips its view store and goes to the client's `on_malformed_interaction` (which
answers it), and an interaction it cannot build at all is dropped with a warning. One
check of a few keys per click, nothing more.
"""

from __future__ import annotations

import logging
from typing import Any

import discord

log = logging.getLogger(__name__)
COMPONENT, MODAL_SUBMIT = 3, 5  # Discord's interaction types


def guard_interactions(state: Any) -> None:
    """Wrap the INTERACTION_CREATE parser of a client's connection state (`client._connection`;
    every gateway websocket, each shard's too, reads this one `parsers` table)."""
    parse = state.parsers["INTERACTION_CREATE"]

    def parse_interaction_create(payload: dict) -> None:
        try:
            if payload["type"] in (COMPONENT, MODAL_SUBMIT) and not routable(payload):
                state.dispatch("malformed_interaction",
                               discord.Interaction(data=payload, state=state))
            else:
                parse(payload)
        except Exception:  # noqa: BLE001 - raised here, it would end the gateway connection
            log.warning("dropped an interaction discord.py could not read: %s",
                        _describe(payload), exc_info=True)

    state.parsers["INTERACTION_CREATE"] = parse_interaction_create


def routable(payload: dict) -> bool:
    """Whether a component's or modal's data has what discord.py's view store reads."""
    data = payload.get("data")
    if not isinstance(data, dict) or not isinstance(data.get("custom_id"), str):
        return False
    if payload["type"] == COMPONENT:
        return "component_type" in data
    return isinstance(data.get("components"), list)


def _describe(payload: Any) -> str:
    if not isinstance(payload, dict):
        return f"payload={type(payload).__name__}"
    member = payload.get("member")
    user = payload.get("user") or (member.get("user") if isinstance(member, dict) else None)
    return (f"id={payload.get('id')} type={payload.get('type')} "
            f"user={user.get('id') if isinstance(user, dict) else None} "
            f"guild={payload.get('guild_id')}")
