"""The notification jobs: claim due notifications, send them with no transaction open, and
record each outcome (docs/design.md section 5.6).

``send_one_notification`` runs after the commit that wrote a notification (and at each
retry's time), so it goes out at once; ``send_notifications`` sweeps up whatever those
missed. Both claim by compare-and-set, so each attempt is sent once.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from typing import Any

from signoff.jobs.context import WorkerServices, services_of
from signoff.resolvers.reach.notifications import (
    claim_notifications,
    record_attempt,
    send_notification,
)

logger = logging.getLogger("signoff.jobs")


async def send_notifications(ctx: dict[str, Any]) -> int:
    """Cron: send every notification that is due (or whose sender died); returns how many
    were attempted."""
    return await _send(services_of(ctx))


async def send_one_notification(ctx: dict[str, Any], notification_id: str) -> int:
    """Job: send this notification's attempt if it is due and nobody else has it; returns
    1 if it was attempted here, else 0."""
    return await _send(services_of(ctx), only=[notification_id])


async def _send(services: WorkerServices, only: Sequence[str] | None = None) -> int:
    async with services.work() as work:
        outgoing = await claim_notifications(
            work, public_url=services.settings.public_base_url, only=only
        )
    errors = await asyncio.gather(*(send_notification(services.http, o) for o in outgoing))
    for notification, error_code in zip(outgoing, errors, strict=True):
        if error_code is not None:
            # Ids and the code only: the URL (a Slack webhook's path is its secret), its
            # query and the body stay out of the log.
            logger.warning(
                "notification %s to channel %s failed: %s (attempt %d)",
                notification.id,
                notification.channel_id,
                error_code,
                notification.attempt,
            )
        async with services.work() as work:
            await record_attempt(work, notification, error_code, jitter=services.jitter)
    return len(outgoing)
