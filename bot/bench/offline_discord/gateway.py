"""The offline Discord's gateway: the websocket a discord.py client keeps open.

HELLO, heartbeat acks, IDENTIFY -> READY then a GUILD_CREATE per guild, RESUME (nothing is
replayed), member chunks. Events go to the IDENTIFYed connection with a sequence number.
"""

from __future__ import annotations

import asyncio
import json
import zlib
from collections.abc import Callable

from aiohttp import WSMsgType, web

from bot.bench.offline_discord.world import World


class _Conn:
    """One gateway websocket; a queue keeps frames in order (zlib-stream shares one compressor)."""

    def __init__(self, ws: web.WebSocketResponse, zlib_stream: bool):
        self.ws, self.queue = ws, asyncio.Queue()
        self.zlib = zlib.compressobj() if zlib_stream else None

    def send(self, payload: dict) -> None:
        self.queue.put_nowait(payload)

    async def pump(self) -> None:
        while True:
            raw = json.dumps(await self.queue.get())
            if self.zlib:  # discord.py buffers binary frames up to the 00 00 ff ff sync flush
                await self.ws.send_bytes(
                    self.zlib.compress(raw.encode()) + self.zlib.flush(zlib.Z_SYNC_FLUSH))
            else:
                await self.ws.send_str(raw)


class Gateway:
    """The gateway side of the offline Discord; `url()` is where a client resumes, `changed()`
    wakes the server's waits."""

    def __init__(self, world: World, *, url: Callable[[], str], changed: Callable[[], None],
                 heartbeat_ms: int):
        self.world, self._url, self._changed, self.heartbeat_ms = world, url, changed, heartbeat_ms
        self.identify: dict | None = None  # the bot's IDENTIFY payload (intents, shard...)
        self.conns: set[_Conn] = set()
        self.session: _Conn | None = None  # the IDENTIFYed connection that gets dispatches
        self._session_id, self._seq = None, 0

    def dispatch(self, event: str, data: dict) -> None:
        if self.session is None:
            raise RuntimeError(f"no bot on the gateway to receive {event}")
        self._seq += 1
        self.session.send({"op": 0, "t": event, "s": self._seq, "d": data})

    def announce(self, event: str, data: dict) -> None:
        """Dispatch the event if a bot is on the gateway; drop it otherwise."""
        if self.session:
            self.dispatch(event, data)

    async def close(self) -> None:
        for conn in list(self.conns):
            await conn.ws.close(code=1001)

    async def handle(self, request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse(max_msg_size=0)
        await ws.prepare(request)
        # discord.py 2.7 always connects with ?encoding=json&v=10&compress=zlib-stream
        # (zstd-stream if `zstandard` is installed; we then answer in plain text, which it accepts).
        conn = _Conn(ws, request.query.get("compress") == "zlib-stream")
        self.conns.add(conn)
        pump = asyncio.create_task(conn.pump())
        conn.send({"op": 10, "d": {"heartbeat_interval": self.heartbeat_ms}})  # HELLO
        try:
            async for msg in ws:
                if msg.type == WSMsgType.TEXT:
                    self._on_op(conn, json.loads(msg.data))
        finally:
            pump.cancel()
            self.conns.discard(conn)
            if self.session is conn:
                self.session = None
            self._changed()
        return ws

    def _on_op(self, conn: _Conn, msg: dict) -> None:
        op, d = msg["op"], msg.get("d")
        if op == 1:  # HEARTBEAT -> HEARTBEAT_ACK
            conn.send({"op": 11})
        elif op == 2:  # IDENTIFY -> READY (needs session_id, resume_gateway_url), then guilds
            self.identify, self.session, self._seq = d, conn, 0
            self._session_id = self.world.snowflake()
            self.dispatch("READY", {
                "v": 10, "user": {**self.world.bot_user, "verified": True, "mfa_enabled": False},
                "guilds": [{"id": gid, "unavailable": True} for gid in self.world.guilds],
                "session_id": self._session_id, "resume_gateway_url": self._url(),
                "application": {"id": self.world.application_id, "flags": 0},
                "private_channels": [], "relationships": [], "shard": d.get("shard", [0, 1])})
            for gid in self.world.guilds:
                payload = self.world.guild_payload(gid)
                self.dispatch("GUILD_CREATE", {**payload, "unavailable": False})
        elif op == 6:  # RESUME: nothing is replayed
            if d.get("session_id") == self._session_id:
                self.session = conn
                self.dispatch("RESUMED", {})
            else:
                conn.send({"op": 9, "d": False})  # INVALID_SESSION
        elif op == 8:  # REQUEST_GUILD_MEMBERS (bots with the members intent chunk guilds)
            self.dispatch("GUILD_MEMBERS_CHUNK", {
                "guild_id": d["guild_id"], "chunk_index": 0, "chunk_count": 1, "not_found": [],
                "members": self.world.guilds.get(d["guild_id"], {}).get("members", []),
                "nonce": d.get("nonce")})
        self._changed()
