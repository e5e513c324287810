"""The transition core: the tables, and what one ``move`` writes."""

from __future__ import annotations

import pytest
from sqlmodel import col, select

from signoff.database import SessionMaker
from signoff.errors import TransitionNotAllowed
from signoff.models import AuditEvent, ChangeEvent, ProposalState, TaskState
from signoff.resolvers.core import lifecycles
from signoff.resolvers.core.lifecycles import PROPOSAL, TASK
from signoff.resolvers.core.work import UnitOfWork
from tests.models.test_versions import task_row


def test_every_proposal_state_change_produces_a_change_event() -> None:
    """Only moves that leave the state as it was (a lease renewal) may go unannounced."""
    for edge in PROPOSAL.edges:
        for target, outcome in edge.outcomes.items():
            if outcome.kind is None:
                assert edge.sources == {target}, f"{edge.name} reaches {target} silently"


def test_every_state_after_approval_is_reachable_and_announced() -> None:
    reached = {target for edge in PROPOSAL.edges for target in edge.outcomes}
    announced = {
        target
        for edge in PROPOSAL.edges
        for target, outcome in edge.outcomes.items()
        if outcome.kind is not None
    }
    # APPROVED is never left standing: the quorum's last approval queues the proposal.
    expected = set(ProposalState) - {ProposalState.APPROVAL_REQUIRED, ProposalState.APPROVED}
    assert expected <= reached
    assert ProposalState.APPLYING in announced
    assert expected <= announced | {ProposalState.APPROVAL_REQUIRED}


def test_the_tables_agree_with_allows() -> None:
    assert PROPOSAL.allows(ProposalState.QUEUED, ProposalState.APPLYING)
    assert PROPOSAL.allows(ProposalState.APPLYING, ProposalState.APPLIED)
    assert not PROPOSAL.allows(ProposalState.REJECTED, ProposalState.QUEUED)
    assert not PROPOSAL.allows(ProposalState.APPLIED, ProposalState.QUEUED)
    assert TASK.allows(TaskState.CLAIMED, TaskState.OPEN)
    assert not TASK.allows(TaskState.COMPLETED, TaskState.OPEN)


async def test_an_edge_not_in_the_table_is_refused(sessionmaker: SessionMaker) -> None:
    task = await task_row(sessionmaker)
    async with sessionmaker() as session:
        work = UnitOfWork(session)
        with pytest.raises(TransitionNotAllowed) as refused:
            await TASK.move(work, lifecycles.APPLY, task.id, actor_id=None)  # type: ignore[arg-type]
        assert refused.value.code == "TRANSITION_NOT_ALLOWED"


async def test_a_move_to_a_state_the_edge_does_not_lead_to_is_refused(
    sessionmaker: SessionMaker,
) -> None:
    task = await task_row(sessionmaker)
    async with sessionmaker() as session:
        work = UnitOfWork(session)
        with pytest.raises(TransitionNotAllowed):
            await TASK.move(
                work,
                lifecycles.CLAIM,
                task.id,
                actor_id=None,
                values={"state": TaskState.COMPLETED.value},
            )
        await work.rollback()


async def test_a_move_writes_audit_and_event_with_the_version_it_gave(
    sessionmaker: SessionMaker,
) -> None:
    task = await task_row(sessionmaker)
    async with sessionmaker() as session:
        work = UnitOfWork(session)
        claimed = await TASK.move(
            work,
            lifecycles.CLAIM,
            task.id,
            actor_id=None,
            values={"assignee_id": task.created_by_id},
            details={"why": "test"},
        )
        assert claimed is not None and claimed.version == task.version + 1
        await work.commit()
    async with sessionmaker() as session:
        event = (
            await session.exec(select(ChangeEvent).where(ChangeEvent.entity_id == task.id))
        ).one()
        audit = (
            await session.exec(select(AuditEvent).where(AuditEvent.target_id == task.id))
        ).one()
    assert (event.kind, event.entity_version) == ("task.claimed", task.version + 1)
    assert event.snapshot["state"] == "CLAIMED"
    assert (audit.action, audit.details) == ("task.claimed", {"why": "test"})


async def test_a_row_not_in_a_source_state_does_not_move_and_writes_nothing(
    sessionmaker: SessionMaker,
) -> None:
    task = await task_row(sessionmaker)
    async with sessionmaker() as session:
        work = UnitOfWork(session)
        assert await TASK.move(work, lifecycles.RELEASE, task.id, actor_id=None) is None
        await work.commit()
    async with sessionmaker() as session:
        events = (
            await session.exec(select(col(ChangeEvent.id)).where(ChangeEvent.entity_id == task.id))
        ).all()
        audits = (
            await session.exec(select(col(AuditEvent.id)).where(AuditEvent.target_id == task.id))
        ).all()
    assert events == [] and audits == []
