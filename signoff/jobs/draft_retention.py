"""The draft retention job: one bounded run of ``signoff.resolvers.drafts.retention`` per tick."""

from __future__ import annotations

import logging
from typing import Any

from signoff.jobs.context import services_of
from signoff.resolvers.drafts.retention import retain_drafts

logger = logging.getLogger("signoff.jobs")


async def run_draft_retention(ctx: dict[str, Any]) -> int:
    """Cron: drop the values of old drafts that reached the executor, delete old drafts that
    never did, forget old draft requests; returns how many rows it handled."""
    done = await retain_drafts(services_of(ctx).work)
    log = logger.info if done.total else logger.debug
    log(
        "draft retention: values dropped=%d drafts deleted=%d requests forgotten=%d",
        done.values_dropped,
        done.drafts_deleted,
        done.requests_deleted,
    )
    return done.total
