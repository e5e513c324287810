"""What operators watch: the depth of each outbox, open incidents, reconciliation runs,
dead letters. One query per outbox, with conditional aggregates, on a read session.

The same functions feed the ``operationsSnapshot`` query and the gauges at ``/metrics``.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import sqlalchemy as sa
from sqlmodel import col, func, select
from sqlmodel.ext.asyncio.session import AsyncSession

from signoff import clock
from signoff.constants import FEED_RELAY_GRACE_SECONDS, RECONCILIATION_RUNS_SHOWN
from signoff.models import (
    ChangeEvent,
    DeadLetter,
    DeadLetterState,
    HumanTask,
    Incident,
    IncidentState,
    Proposal,
    ProposalState,
    ReconciliationRun,
    Role,
    Severity,
    TaskState,
)
from signoff.models.base import UTCDateTime
from signoff.resolvers.access.rules import Viewer, require_role
from signoff.resolvers.core.pagination import Equals, Order, Page, paginate
from signoff.resolvers.delivery.due import due

PROPOSAL_DELIVERY = "proposal_delivery"
CHANGE_EVENT_RELAY = "change_event_relay"
HUMAN_TASKS = "human_tasks"


@dataclass(frozen=True)
class OutboxStats:
    """One outbox: ``total`` is pending + in flight + retrying + terminal failures.

    ``oldest_due_age_seconds`` is how long the longest-waiting due item has been due,
    ``None`` when nothing is due.
    """

    outbox: str
    total: int
    pending: int
    in_flight: int
    retrying: int
    terminal_failures: int
    oldest_due_age_seconds: float | None


@dataclass(frozen=True)
class Operations:
    """What ``operationsSnapshot`` and ``/metrics`` report, read at ``generated_at``."""

    generated_at: datetime
    outboxes: list[OutboxStats]
    open_incidents: dict[Severity, int]
    proposals_by_state: dict[ProposalState, int]
    reconciliation_runs: list[ReconciliationRun]


def count_where(condition: Any) -> Any:
    """How many rows meet ``condition``: a conditional aggregate, zero when none do."""
    return func.coalesce(func.sum(sa.case((condition, 1), else_=0)), 0)


def _earliest(condition: Any, column: Any) -> Any:
    """The smallest ``column`` among rows meeting ``condition``, read back as UTC."""
    return sa.type_coerce(func.min(sa.case((condition, column), else_=None)), UTCDateTime())


async def _one(session: AsyncSession, stmt: sa.Select[Any]) -> tuple[Any, ...]:
    """The one row of an aggregate query, in the session's transaction."""
    connection = await session.connection()
    return tuple((await connection.execute(stmt)).one())


def _age(now: datetime, since: datetime | None) -> float | None:
    return None if since is None else max(0.0, (now - since).total_seconds())


async def proposal_delivery(session: AsyncSession, now: datetime) -> OutboxStats:
    """Proposals on their way out: QUEUED (pending), APPLYING (in flight), FAILED and
    retrying, FAILED and terminal. Due: a pending or retrying proposal whose
    ``next_attempt_at`` has come, or one in flight whose lease lapsed."""
    state, terminal = col(Proposal.state), col(Proposal.delivery_terminal)
    failed = state == ProposalState.FAILED.value
    # The due time of a due row: when its attempt came due, or when its lease lapsed.
    due_since = sa.case(
        (state == ProposalState.APPLYING.value, col(Proposal.lease_expires_at)),
        else_=col(Proposal.next_attempt_at),
    )
    stmt = sa.select(
        func.count(),
        count_where(state == ProposalState.QUEUED.value),
        count_where(state == ProposalState.APPLYING.value),
        count_where(sa.and_(failed, terminal.is_(False))),
        count_where(sa.and_(failed, terminal.is_(True))),
        _earliest(due(now), due_since),
    ).where(
        state.in_(
            [ProposalState.QUEUED.value, ProposalState.APPLYING.value, ProposalState.FAILED.value]
        )
    )
    row = await _one(session, stmt)
    return OutboxStats(PROPOSAL_DELIVERY, row[0], row[1], row[2], row[3], row[4], _age(now, row[5]))


async def change_event_relay(session: AsyncSession, now: datetime) -> OutboxStats:
    """Change events not yet published: unstamped (pending: the sequencer has not run),
    stamped within the relay's grace (in flight), stamped and older (retrying: the relay
    re-sends them). Every unpublished event is due from when it occurred."""
    stamped = col(ChangeEvent.cursor).is_not(None)
    grace = now - timedelta(seconds=FEED_RELAY_GRACE_SECONDS)
    recent = col(ChangeEvent.occurred_at) >= grace
    stmt = sa.select(
        func.count(),
        count_where(col(ChangeEvent.cursor).is_(None)),
        count_where(sa.and_(stamped, recent)),
        count_where(sa.and_(stamped, sa.not_(recent))),
        sa.type_coerce(func.min(col(ChangeEvent.occurred_at)), UTCDateTime()),
    ).where(col(ChangeEvent.published_at).is_(None))
    row = await _one(session, stmt)
    return OutboxStats(CHANGE_EVENT_RELAY, row[0], row[1], row[2], row[3], 0, _age(now, row[4]))


async def human_tasks(session: AsyncSession, now: datetime) -> OutboxStats:
    """Tasks waiting for a person: OPEN (pending), CLAIMED with a live claim (in flight),
    CLAIMED with a lapsed claim (retrying: back in the queue for anyone). Due: ``due_at``
    has passed."""
    state = col(HumanTask.state)
    claimed = state == TaskState.CLAIMED.value
    expires = col(HumanTask.claim_expires_at)
    stmt = sa.select(
        func.count(),
        count_where(state == TaskState.OPEN.value),
        count_where(sa.and_(claimed, sa.or_(expires.is_(None), expires > now))),
        count_where(sa.and_(claimed, expires <= now)),
        _earliest(col(HumanTask.due_at) <= now, col(HumanTask.due_at)),
    ).where(state.in_([TaskState.OPEN.value, TaskState.CLAIMED.value]))
    row = await _one(session, stmt)
    return OutboxStats(HUMAN_TASKS, row[0], row[1], row[2], row[3], 0, _age(now, row[4]))


async def open_incidents(session: AsyncSession) -> dict[Severity, int]:
    """Incidents not RESOLVED, by severity (every severity present, zero or not)."""
    severity = col(Incident.severity)
    stmt = sa.select(*(count_where(severity == s.value) for s in Severity)).where(
        col(Incident.state) != IncidentState.RESOLVED.value
    )
    row = await _one(session, stmt)
    return {s: int(n) for s, n in zip(Severity, row, strict=True)}


async def proposals_by_state(session: AsyncSession) -> dict[ProposalState, int]:
    """Every proposal, by state (every state present, zero or not)."""
    state = col(Proposal.state)
    row = await _one(session, sa.select(*(count_where(state == s.value) for s in ProposalState)))
    return {s: int(n) for s, n in zip(ProposalState, row, strict=True)}


async def recent_reconciliation_runs(
    session: AsyncSession, limit: int = RECONCILIATION_RUNS_SHOWN
) -> list[ReconciliationRun]:
    """The newest reconciliation runs first."""
    stmt = (
        select(ReconciliationRun)
        .order_by(col(ReconciliationRun.started_at).desc(), col(ReconciliationRun.id).desc())
        .limit(limit)
    )
    return list((await session.exec(stmt)).all())


async def read_operations(session: AsyncSession) -> Operations:
    """Every figure at one instant; the caller's session is only read."""
    now = clock.now()
    outboxes = [
        await proposal_delivery(session, now),
        await change_event_relay(session, now),
        await human_tasks(session, now),
    ]
    return Operations(
        generated_at=now,
        outboxes=outboxes,
        open_incidents=await open_incidents(session),
        proposals_by_state=await proposals_by_state(session),
        reconciliation_runs=await recent_reconciliation_runs(session),
    )


async def operations_snapshot(*, session: AsyncSession, viewer: Viewer) -> Operations:
    """The operations snapshot, for operators and admins."""
    require_role(viewer, Role.OPERATOR)
    return await read_operations(session)


DEAD_LETTER_ORDER = (
    Order(col(DeadLetter.created_at), descending=True),
    Order(col(DeadLetter.id), descending=True),
)


async def list_dead_letters(
    *,
    session: AsyncSession,
    viewer: Viewer,
    state: DeadLetterState | None = None,
    first: int | None = None,
    after: str | None = None,
) -> Page[DeadLetter]:
    """Newest first. Dead letters are for operators and admins."""
    require_role(viewer, Role.OPERATOR)
    where = [] if state is None else [Equals(col(DeadLetter.state), state.value)]
    return await paginate(session, DeadLetter, where, DEAD_LETTER_ORDER, first=first, after=after)
