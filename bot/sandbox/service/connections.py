"""The sandbox service's connections: JSON lines in, one JSON line out per request.

`tutor sandbox serve` is shared by every bot process, so no client may cost the others:
- replies are written with backpressure: a client that stops reading is dropped once its
  unread replies pass a bound, instead of the service holding them all in memory;
- the bots' connections are known by their peer's user id (SO_PEERCRED: the service's own
  user, and `bot_uids`): they have room of their own and are never closed for another
  client; any other user of the machine who can reach the socket has a cap of connections
  of its own, under a cap for all of them, and its runs are capped (`Admission.user_max`);
  at a cap, the connection idle longest (nothing in flight) in it makes room for a new one;
- requests without a learner count as one learner per connection, and the learners another
  user names are its own (they cannot hold a bot's learner's place);
- a connection that sends nothing for `idle_s` with nothing in flight is closed;
- when a connection closes, its queued and running work is cancelled: the children go, and
  their slots with them.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import os
import socket
import struct
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Protocol

from bot.sandbox.protocol import decode, encode

log = logging.getLogger("sandbox.service")
LINE_LIMIT = 4 * 1024 * 1024
_serials = itertools.count(1)
SAY_EVERY_S = 60.0  # a refusal of connections is logged at most this often per user


class Server(Protocol):
    def info(self) -> dict: ...
    def execute(self, submission: dict, learner: str,
                user: str | None = None) -> Awaitable[dict]: ...


@dataclass(frozen=True)
class ConnectionLimits:
    max_connections: int = 64  # of every user that is not a bot, together
    user_connections: int = 16  # of one user that is not a bot
    bot_connections: int = 64  # of the bots (room no other client can take)
    bot_uids: tuple[int, ...] = ()  # users that run bots, besides the service's own
    idle_s: float = 600.0  # nothing sent, nothing in flight: closed (a client reconnects)
    first_line_s: float = 30.0  # a new connection that never says anything
    unread_max_bytes: int = 4 * 1024 * 1024  # replies a client has not read yet
    drain_s: float = 30.0  # how long a reply may wait for the client to read
    in_flight_max: int = 128  # requests of one connection at once; then it is not read


@dataclass(frozen=True)
class Peer:
    """Who is at the other end: a bot (its learner keys are trusted across bot processes)
    or another user of the machine, `uid`."""

    uid: int | None
    bot: bool

    @property
    def user(self) -> str | None:
        """The admission's cap key: None for a bot."""
        return None if self.bot else f"uid:{self.uid}"


STDIO = Peer(None, bot=True)  # the process that started us


def peer_of(writer: asyncio.StreamWriter, limits: ConnectionLimits) -> Peer:
    """The connecting process's user, from the kernel (it cannot be forged)."""
    sock = writer.get_extra_info("socket")
    creds = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    _, uid, _ = struct.unpack("3i", creds)
    return Peer(uid, bot=uid == os.getuid() or uid in limits.bot_uids)


def learner_key(request: dict, peer: Peer, connection: int) -> str:
    """The request's learner key. A bot names its learners (the same across its processes);
    the learners another user names are that user's own; a request without one counts as
    one learner per connection (the one trusted client on stdin: one per request)."""
    learner = request.get("learner")
    if isinstance(learner, str) and 0 < len(learner) <= 200:
        return f"learner:{learner}" if peer.bot else f"{peer.user}:learner:{learner}"
    if peer is STDIO:
        return f"anonymous:{next(_serials)}"
    return f"connection:{connection}"


class Connection:
    def __init__(self, server: Server, reader: asyncio.StreamReader,
                 write: Callable[[bytes], Awaitable[None]], limits: ConnectionLimits | None,
                 peer: Peer = STDIO):
        self.server, self.reader, self.write = server, reader, write
        self.limits = limits  # None: the one trusted client on stdin/stdout
        self.peer = peer
        self.serial = next(_serials)
        self.tasks: set[asyncio.Task] = set()
        self.last_active = time.monotonic()
        self.closed = asyncio.Event()

    @property
    def idle(self) -> bool:
        return not self.tasks

    async def answer(self, request: dict) -> None:
        if request.get("op") == "info":
            reply = self.server.info()
        else:
            reply = await self.server.execute(
                request, learner_key(request, self.peer, self.serial), self.peer.user)
        try:
            await self.write(encode({**reply, "id": request.get("id")}))
        except ConnectionError:  # it left, or stopped reading: nothing more for it
            self.closed.set()
            return
        self.last_active = time.monotonic()

    async def serve(self) -> None:
        """Answer requests (concurrently) until the client closes, goes quiet, or is
        evicted; then cancel whatever it still had queued or running."""
        first = True
        try:
            while not self.closed.is_set():
                if self.limits is not None and len(self.tasks) >= self.limits.in_flight_max:
                    await asyncio.wait(set(self.tasks), return_when=asyncio.FIRST_COMPLETED)
                    continue
                line = await self._next_line(first)
                if line is None:
                    break
                first = False
                self.last_active = time.monotonic()
                try:
                    request = decode(line)
                except ValueError:
                    continue
                task = asyncio.ensure_future(self.answer(request))
                self.tasks.add(task)
                task.add_done_callback(self.tasks.discard)
        finally:
            self.closed.set()
            if self.limits is not None:  # the one client on stdin still gets its replies
                for task in list(self.tasks):
                    task.cancel()
            if self.tasks:
                await asyncio.gather(*self.tasks, return_exceptions=True)

    async def _next_line(self, first: bool) -> bytes | None:
        while True:
            timeout = None
            if self.limits is not None:
                timeout = self.limits.first_line_s if first else self.limits.idle_s
            read = asyncio.ensure_future(self.reader.readline())
            closed = asyncio.ensure_future(self.closed.wait())
            try:
                done, _ = await asyncio.wait([read, closed], timeout=timeout,
                                             return_when=asyncio.FIRST_COMPLETED)
            finally:
                closed.cancel()
                if not read.done():
                    read.cancel()
            if read in done:
                try:
                    line = read.result()
                except ValueError:  # a line over the stream limit: dropped
                    continue
                except ConnectionError:
                    return None
                return line or None
            if self.closed.is_set():
                return None
            if self.tasks:  # quiet, but waiting for its replies: not idle
                continue
            return None


async def serve_stdio(server: Server) -> None:
    """One client: the process that started us, on stdin/stdout."""
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=LINE_LIMIT)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    out = sys.stdout.buffer

    async def write(data: bytes) -> None:
        out.write(data)
        out.flush()

    await Connection(server, reader, write, None).serve()


class Listener:
    """Accepts clients on a socket and keeps the connection caps."""

    def __init__(self, server: Server, limits: ConnectionLimits):
        self.server, self.limits = server, limits
        self.connections: set[Connection] = set()
        self._said: dict[tuple, float] = {}

    async def client(self, reader: asyncio.StreamReader,
                     writer: asyncio.StreamWriter) -> None:
        peer = peer_of(writer, self.limits)
        if not peer.bot:
            self._say((peer.uid, "user"), logging.INFO, f"uid {peer.uid} connects as a user "
                      "that is not a bot: its connections and runs are capped (if it runs a "
                      "bot, name it in --connections' bot_uids)")
        if not self._make_room(peer):
            writer.write(encode({"status": "error", "busy": True,
                                 "stderr": "the sandbox has too many connections"}))
            writer.close()
            return
        lock = asyncio.Lock()

        async def write(data: bytes) -> None:
            async with lock:
                writer.write(data)
                if writer.transport.get_write_buffer_size() > self.limits.unread_max_bytes:
                    writer.transport.abort()  # it does not read: it gets nothing more
                    raise ConnectionError("client stopped reading")
                try:
                    await asyncio.wait_for(writer.drain(), self.limits.drain_s)
                except TimeoutError:
                    writer.transport.abort()
                    raise ConnectionError("client stopped reading") from None

        connection = Connection(self.server, reader, write, self.limits, peer)
        self.connections.add(connection)
        try:
            await connection.serve()
        finally:
            self.connections.discard(connection)
            writer.close()

    def _caps(self, peer: Peer) -> list[tuple[Callable[[Peer], bool], int]]:
        """The groups a new connection of `peer` counts in, each with its cap."""
        if peer.bot:
            return [(lambda p: p.bot, self.limits.bot_connections)]
        return [(lambda p: p.uid == peer.uid, self.limits.user_connections),
                (lambda p: not p.bot, self.limits.max_connections)]

    def _make_room(self, peer: Peer) -> bool:
        """Room for `peer` in each of its groups: at a cap, the group's connection idle
        longest is closed, or the new one is refused when every one has work in flight."""
        for member, cap in self._caps(peer):
            group = [c for c in self.connections if member(c.peer)]
            if len(group) < cap:
                continue
            idle = [c for c in group if c.idle and not c.closed.is_set()]
            if not idle:
                self._say((peer.uid, "refused"), logging.WARNING, f"refused a connection of "
                          f"uid {peer.uid}: {cap} connections with work in flight")
                return False
            oldest = min(idle, key=lambda c: c.last_active)
            oldest.closed.set()  # its serve() ends and closes it
            self.connections.discard(oldest)
            self._say((peer.uid, "closed"), logging.WARNING, f"connection cap ({cap}) "
                      f"reached for uid {peer.uid}: closed the longest idle connection")
        return True

    def _say(self, key: tuple, level: int, message: str) -> None:
        """Log `message`, at most every SAY_EVERY_S per key: a flood of connections is
        one line a minute."""
        now = time.monotonic()
        if now - self._said.get(key, -SAY_EVERY_S) >= SAY_EVERY_S:
            self._said[key] = now
            log.log(level, "sandbox %s", message)


async def serve_socket(server: Server, address: str, mode: int = 0o660,
                       limits: ConnectionLimits | None = None) -> None:
    """`tutor sandbox serve`: any number of bot processes on this machine, on a Unix socket."""
    listener = Listener(server, limits or ConnectionLimits())
    kind, _, where = address.partition(":")
    if kind == "unix":
        with contextlib.suppress(FileNotFoundError):
            os.unlink(where)
        socket_server = await asyncio.start_unix_server(listener.client, where,
                                                        limit=LINE_LIMIT)
        os.chmod(where, mode)  # 660: the bot's group may connect; nobody else
    else:
        raise SystemExit(f"--listen takes unix:/path, not {address!r}")
    log.info("sandbox service listening on %s", address)
    async with socket_server:
        await socket_server.serve_forever()
