"""Delivery jobs: an arq job wakes the worker's dispatcher; the crons sweep and expire.

A delivery job names the proposal whose attempt came due (its job id is per attempt,
and arq holds it until the attempt's time: retries wait in Redis). Running it only wakes
this process's ``Dispatcher``, whose next claim takes that proposal and whatever else is
due, in one batch (docs/delivery-throughput.md).
"""

from __future__ import annotations

from typing import Any

from signoff.jobs.context import services_of
from signoff.jobs.dispatcher import Dispatcher
from signoff.resolvers.delivery import executions
from signoff.resolvers.delivery.sweeps import enqueue_due_deliveries
from signoff.resolvers.reach.deadlines import apply_deadlines
from signoff.resolvers.reach.reminders import send_due_reminders

DISPATCHER_KEY = "dispatcher"
WOKEN = "WOKEN"


def dispatcher_of(ctx: dict[str, Any]) -> Dispatcher:
    dispatcher = ctx[DISPATCHER_KEY]
    assert isinstance(dispatcher, Dispatcher)
    return dispatcher


async def deliver_proposal(ctx: dict[str, Any], proposal_id: str) -> str:
    """Wake the dispatcher: ``proposal_id``'s attempt is due (the claim finds it), with the
    deliveries that came due in the same time bucket."""
    dispatcher_of(ctx).wake_for_bucket()
    return WOKEN


async def sweep_deliveries(ctx: dict[str, Any]) -> int:
    """Cron: enqueue every proposal that is due or whose lease lapsed."""
    services = services_of(ctx)
    if services.jobs is None:
        return 0
    async with services.sessionmaker() as session:
        return await enqueue_due_deliveries(session, services.jobs)


async def lapse_executions(ctx: dict[str, Any]) -> int:
    """Cron: an agent's execution whose lease lapsed unreported becomes an incident."""
    services = services_of(ctx)
    async with services.work() as work:
        return len(await executions.lapse_executions(work))


async def expire_due_proposals(ctx: dict[str, Any]) -> int:
    """Cron: apply the deadline policy of proposals whose approval deadline passed."""
    services = services_of(ctx)
    async with services.work() as work:
        return len(await apply_deadlines(work))


async def send_reminders(ctx: dict[str, Any]) -> int:
    """Cron: send every queue reminder (``task.due_soon``) that has come due."""
    services = services_of(ctx)
    async with services.work() as work:
        return len(await send_due_reminders(work))
