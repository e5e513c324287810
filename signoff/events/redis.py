"""The distributed transport: Redis pub/sub, one subscription per process.

Publishing raises ``Unpublished`` when Redis is unreachable (logged once per outage), so
the caller leaves the events unpublished for the relay. The listener reconnects with
backoff and, each time it (re)subscribes, asks the fanout to catch up from the database,
so whatever was published while it was away still arrives, in order. Messages are in the
format of ``signoff.events.wire``, whose rules let releases of a rolling deploy read each
other.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Sequence

from redis.asyncio import Redis
from redis.exceptions import RedisError

from signoff.events import wire
from signoff.events.hub import Change, Deliver, Resync, Unpublished
from signoff.outages import Outage

logger = logging.getLogger("signoff.events.redis")

RECONNECT_MIN_SECONDS = 0.2
RECONNECT_MAX_SECONDS = 5.0


class RedisTransport:
    def __init__(self, url: str, channel: str) -> None:
        self.channel = channel
        self._publisher = Redis.from_url(url, socket_timeout=2, socket_connect_timeout=2)
        self._listener = Redis.from_url(url, socket_connect_timeout=2, health_check_interval=10)
        self._task: asyncio.Task[None] | None = None
        self._outage = Outage("Redis (event publishing)")

    async def start(self, deliver: Deliver, resync: Resync) -> None:
        self._task = asyncio.create_task(self._listen(deliver, resync), name="redis-events")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        await self._publisher.aclose()
        await self._listener.aclose()

    async def publish(self, changes: Sequence[Change]) -> None:
        if not changes:
            return
        try:
            await self._publisher.publish(self.channel, wire.encode(changes))
        except (RedisError, OSError) as exc:
            self._outage.failed(type(exc).__name__)
            raise Unpublished from exc
        self._outage.answered()

    async def _listen(self, deliver: Deliver, resync: Resync) -> None:
        delay = RECONNECT_MIN_SECONDS
        while True:
            try:
                async with self._listener.pubsub() as pubsub:
                    await pubsub.subscribe(self.channel)
                    if delay > RECONNECT_MIN_SECONDS:
                        logger.info("event subscription restored")
                    delay = RECONNECT_MIN_SECONDS
                    await resync()
                    while True:
                        message = await pubsub.get_message(
                            ignore_subscribe_messages=True, timeout=1.0
                        )
                        if message is not None and message["type"] == "message":
                            changes = wire.decode(message["data"])
                            if changes:
                                await deliver(changes)
            except asyncio.CancelledError:
                raise
            except (RedisError, OSError) as exc:
                if delay == RECONNECT_MIN_SECONDS:
                    logger.warning("event subscription lost (%s); retrying", type(exc).__name__)
            except Exception as exc:
                logger.error("event listener failed: %s", type(exc).__name__)
            await asyncio.sleep(delay)
            delay = min(delay * 2, RECONNECT_MAX_SECONDS)
