"""The notification job: claim due notifications, send them with no transaction open, record
each outcome (docs/design.md section 5.6)."""

from __future__ import annotations

import asyncio
from typing import Any

from signoff.jobs.context import services_of
from signoff.resolvers.notifications import claim_notifications, record_attempt, send_notification


async def send_notifications(ctx: dict[str, Any]) -> int:
    """Cron: send every notification that is due (or whose sender died); returns how many
    were attempted."""
    services = services_of(ctx)
    async with services.work() as work:
        outgoing = await claim_notifications(work)
    errors = await asyncio.gather(*(send_notification(services.http, o) for o in outgoing))
    for notification, error_code in zip(outgoing, errors, strict=True):
        async with services.work() as work:
            await record_attempt(work, notification, error_code, jitter=services.jitter)
    return len(outgoing)
