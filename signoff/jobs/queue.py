"""How business rules schedule work: a ``JobQueue`` in ``session.info``, used after commit.

The database holds all retry state, so enqueueing is only a hint that makes work
start sooner: a lost message is found again by the periodic sweep.
"""

from __future__ import annotations

from datetime import datetime
from typing import Protocol

from sqlmodel.ext.asyncio.session import AsyncSession

from signoff.constants import DELIVER_JOB_ID
from signoff.database import after_commit


class JobQueue(Protocol):
    async def enqueue_delivery(
        self, proposal_id: str, attempt: int, at: datetime | None = None
    ) -> None:
        """Schedule delivery attempt ``attempt`` of a proposal, at ``at`` or now."""


def delivery_job_id(proposal_id: str, attempt: int) -> str:
    """One job id per attempt: a fixed id would be swallowed by arq's dedup of finished jobs."""
    return DELIVER_JOB_ID.format(proposal_id=proposal_id, attempt=attempt)


def enqueue_delivery_after_commit(
    session: AsyncSession, proposal_id: str, attempt: int, at: datetime | None = None
) -> None:
    """Enqueue once the transaction that made the proposal due has committed."""
    jobs: JobQueue | None = session.info.get("jobs")
    if jobs is None:
        return

    async def enqueue() -> None:
        await jobs.enqueue_delivery(proposal_id, attempt, at)

    after_commit(session, enqueue)
