"""The delivery job: claim with a lease, check, send, record. Takes an id, never an object."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from typing import Any

from signoff import metrics
from signoff.delivery import send
from signoff.jobs.context import Services, services_of
from signoff.models import Target
from signoff.resolvers.delivery import (
    claim_delivery,
    record_outcome,
    refusal_before_send,
    refuse_attempt,
    renew_lease,
)
from signoff.resolvers.sweeps import enqueue_due_deliveries, expire_proposals
from signoff.sealing import SealingError

SIGNING_SECRET_UNREADABLE = "SIGNING_SECRET_UNREADABLE"
logger = logging.getLogger("signoff.jobs")


async def deliver_proposal(ctx: dict[str, Any], proposal_id: str) -> str:
    """Make the proposal's next delivery attempt if it is due; returns what became of it."""
    services = services_of(ctx)
    lease = services.settings.delivery_lease_seconds
    async with services.work() as work:
        proposal = await claim_delivery(work, proposal_id, lease_seconds=lease)
        if proposal is None:
            return "NOT_DUE"
        target = await work.session.get(Target, proposal.target_id)
        assert target is not None  # proposals reference their target
        refusal = await refusal_before_send(work, proposal, target)
        if refusal is not None:
            await refuse_attempt(work, proposal, refusal)
            return refusal
        try:
            secret = work.sealer.open(target.signing_secret)
        except SealingError:
            # A configuration fault, not the receiver's: end in an incident an operator sees.
            logger.error(
                "delivery proposal=%s: the target's signing secret does not open with this "
                "process's SIGNOFF_SECRET_KEY",
                proposal_id,
            )
            await refuse_attempt(work, proposal, SIGNING_SECRET_UNREADABLE)
            return SIGNING_SECRET_UNREADABLE
    # The session is closed: no connection is held while the receiver takes its time.
    attempt = proposal.delivery_attempt_count
    async with _renewing_lease(services, proposal_id, proposal.delivery_lease):
        outcome = await send(services.http, proposal, target, secret, attempt)
    async with services.work() as work:
        state = await record_outcome(work, proposal, target, outcome, jitter=services.jitter)
    metrics.observe_delivery(outcome)
    logger.info(
        "delivery proposal=%s attempt=%d class=%s code=%s state=%s",
        proposal_id,
        attempt,
        outcome.response_class,
        outcome.error_code,
        state or "SUPERSEDED",
    )
    return state.value if state is not None else "SUPERSEDED"


@contextlib.asynccontextmanager
async def _renewing_lease(services: Services, proposal_id: str, lease: int) -> AsyncIterator[None]:
    """Renew the lease every third of its length while the request is in flight.

    The renewer is stopped by an event, not cancelled, so it never abandons a transaction.
    """
    seconds = services.settings.delivery_lease_seconds
    finished = asyncio.Event()

    async def renew() -> None:
        while True:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(finished.wait(), seconds / 3)
                return
            try:
                async with services.work() as work:
                    if not await renew_lease(work, proposal_id, lease, lease_seconds=seconds):
                        return
            except Exception as exc:
                logger.warning(
                    "lease renewal failed proposal=%s: %s", proposal_id, type(exc).__name__
                )

    task = asyncio.create_task(renew())
    try:
        yield
    finally:
        finished.set()
        await task


async def sweep_deliveries(ctx: dict[str, Any]) -> int:
    """Cron: enqueue every proposal that is due or whose lease lapsed."""
    services = services_of(ctx)
    if services.jobs is None:
        return 0
    async with services.sessionmaker() as session:
        return await enqueue_due_deliveries(session, services.jobs)


async def expire_due_proposals(ctx: dict[str, Any]) -> int:
    """Cron: cancel proposals whose approval deadline passed."""
    services = services_of(ctx)
    async with services.work() as work:
        return len(await expire_proposals(work))
