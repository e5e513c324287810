"""The relay as an arq cron job, for ``signoff worker`` (every ``signoff serve`` also runs it
in-process, and once at start-up).

The worker's ``on_startup`` puts ``create_event_service(settings, sessionmaker)`` in
its context under ``"events"``; the job stamps and publishes committed events that
were never published (a crash between commit and publish, Redis down) and prunes
the feed past its retention.
"""

from __future__ import annotations

from typing import Any

from signoff.events.service import EventService


async def relay_change_events(ctx: dict[str, Any]) -> int:
    """Stamp, publish and republish change events; prune past retention."""
    service: EventService = ctx["events"]
    return await service.relay_once()
