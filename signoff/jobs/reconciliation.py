"""The reconciliation job: one run of ``signoff.resolvers.delivery.reconciliation`` per tick."""

from __future__ import annotations

import logging
from typing import Any

from signoff.jobs.context import services_of
from signoff.metrics import RECONCILIATION_REPAIRS
from signoff.resolvers.delivery.reconciliation import reconcile

logger = logging.getLogger("signoff.jobs")


async def run_reconciliation(ctx: dict[str, Any]) -> int:
    """Cron: release lapsed leases, lapse expired claims, expire lapsed approvals and
    republish lost events, each repair once; returns how many repairs it made."""
    done = await reconcile(services_of(ctx).work)
    for action_type, count in done.repairs_by_type.items():
        RECONCILIATION_REPAIRS.labels(action_type=action_type).inc(count)
    run = done.run
    if done.audit_log is not None:
        logger.error(
            "the audit log disagrees with its checkpoint of size %d at position %d",
            done.audit_log.checkpoint_size,
            done.audit_log.position,
        )
    log = logger.info if run.repaired_count or run.error_code or done.republished else logger.debug
    log(
        "reconciliation run=%s state=%s scanned=%d repaired=%d republished=%d error=%s",
        run.id,
        run.state,
        run.scanned_count,
        run.repaired_count,
        done.republished,
        run.error_code,
    )
    return run.repaired_count
