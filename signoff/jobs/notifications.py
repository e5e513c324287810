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
    MAIL_FROM,
    claim_notifications,
    record_attempt,
)
from signoff.resolvers.reach.sending import Carriers, send_notification

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
    settings = services.settings
    mail_from = settings.smtp.sender if settings.smtp is not None else MAIL_FROM
    async with services.work() as work:
        outgoing = await claim_notifications(
            work, public_url=settings.public_base_url, only=only, mail_from=mail_from
        )
    carriers = Carriers(services.http, settings.slack_api_url, settings.smtp)
    attempts = await asyncio.gather(*(send_notification(carriers, o) for o in outgoing))
    for notification, attempt in zip(outgoing, attempts, strict=True):
        if attempt.error_code is not None:
            # Ids and the code only: the URL (a Slack webhook's path is its secret), its
            # query and the body stay out of the log.
            logger.warning(
                "notification %s to channel %s failed: %s (attempt %d)",
                notification.id,
                notification.channel_id,
                attempt.error_code,
                notification.attempt,
            )
    # One transaction for the batch's outcomes: each is still guarded by its own lease.
    async with services.work() as work:
        for notification, attempt in zip(outgoing, attempts, strict=True):
            await record_attempt(
                work,
                notification,
                attempt.error_code,
                jitter=services.jitter,
                retry_after=attempt.retry_after,
                posted=attempt.posted,
                commit=False,
            )
        await work.commit()
    return len(outgoing)
