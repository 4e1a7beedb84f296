"""How an idle fleet host hears that a bot pushed a job: Redis's keyspace events for its
pool's inboxes (`notify-keyspace-events Kl`, `broker.REDIS_SETTINGS`).

A host cannot wait on the inbox itself: every blocking read of a list hands over what a bot
wrote, whatever its size, and a host reads a job only through `broker_functions.take`,
within its bound. An event carries only the key's name and the command's, both the
fleet's own. Without events the host looks every `block_s`, and says once that it does.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

from redis.exceptions import RedisError

log = logging.getLogger("sandbox.fleet")
RETRY_MAX_S = 5.0  # the longest wait before subscribing again


async def first_of(stop: asyncio.Event, *tasks) -> None:
    """Until `stop` is set or one of `tasks` ends."""
    stopped = asyncio.ensure_future(stop.wait())
    try:
        await asyncio.wait([stopped, *tasks], return_when=asyncio.FIRST_COMPLETED)
    finally:
        stopped.cancel()


class Doorbell:
    def __init__(self, redis, inboxes: list[str], block_s: float):
        self.redis, self.block_s = redis, block_s
        pool = getattr(redis, "connection_pool", None)
        db = pool.connection_kwargs.get("db", 0) if pool is not None else 0
        self.channels = [f"__keyspace@{db}__:{inbox}" for inbox in inboxes]
        self.rung = asyncio.Event()  # a job was pushed since it was last cleared
        self.heard = False  # whether Redis has sent any event for the inboxes
        self._quiet_said = False

    async def wait(self) -> bool:
        """Until a push (True) or `block_s` (False): a stop is noticed within that."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.rung.wait(), self.block_s)
        return self.rung.is_set()

    async def listen(self, stop: asyncio.Event) -> None:
        backoff = 0.2
        while not stop.is_set():
            pubsub = self.redis.pubsub(ignore_subscribe_messages=True)
            try:
                await pubsub.subscribe(*self.channels)
                backoff = 0.2
                while not stop.is_set():
                    message = await pubsub.get_message(timeout=self.block_s)
                    if message is not None:
                        self.heard = True
                        if message.get("data") == "rpush":
                            self.rung.set()
            except (RedisError, OSError):
                # The host's loop tells the operator what is wrong with Redis.
                await first_of(stop, asyncio.ensure_future(asyncio.sleep(backoff)))
                backoff = min(backoff * 2, RETRY_MAX_S)
            finally:
                with contextlib.suppress(RedisError, OSError):
                    await pubsub.aclose()

    def unheard(self) -> None:
        """A learner's job was found by looking, and Redis has never said one was pushed."""
        if not self.heard and not self._quiet_said:
            self._quiet_said = True
            log.warning("Redis sends no keyspace events for the job inboxes: this host finds "
                        "a new job only every %.1f s; start redis-server with "
                        "`--notify-keyspace-events Kl` (README: Deploying)", self.block_s)
