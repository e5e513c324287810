"""The transition core: the tables, and what one ``move`` writes."""

from __future__ import annotations

import pytest
from sqlmodel import col, select

from signoff.database import SessionMaker
from signoff.errors import TransitionNotAllowed
from signoff.models import (
    Actor,
    ActorAccess,
    AuditEvent,
    ChangeEvent,
    CircuitState,
    ProposalState,
    Role,
    TaskState,
)
from signoff.resolvers.core import lifecycles
from signoff.resolvers.core.actor_lifecycle import ACTOR_ACCESS, ACTOR_ROLE, DISABLE, ENABLE
from signoff.resolvers.core.lifecycles import PROPOSAL, TASK
from signoff.resolvers.core.target_lifecycle import TARGET_CIRCUIT, TARGET_HOLD, TARGET_SERVICE
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


def test_every_change_of_a_target_or_an_actor_is_announced() -> None:
    """Only a move that leaves the state as it was (deferring a probe) may go unannounced."""
    for lifecycle in (TARGET_SERVICE, TARGET_HOLD, TARGET_CIRCUIT, ACTOR_ACCESS, ACTOR_ROLE):
        for edge in lifecycle.edges:
            for target, outcome in edge.outcomes.items():
                if edge.sources != {target}:
                    assert outcome.kind is not None and outcome.action is not None, edge.name
    reached = {target for edge in TARGET_CIRCUIT.edges for target in edge.outcomes}
    assert reached == set(CircuitState)


async def test_a_switch_is_stamped_by_its_move_and_cleared_by_the_reverse(
    sessionmaker: SessionMaker,
) -> None:
    async with sessionmaker() as session:
        actor = Actor(name="switched", role=Role.REVIEWER)
        session.add(actor)
        await session.commit()
        actor_id = actor.id
    async with sessionmaker() as session:
        work = UnitOfWork(session)
        before = work.now()
        disabled = await ACTOR_ACCESS.move(work, DISABLE, actor_id, actor_id=None)
        assert disabled is not None and disabled.disabled_at is not None
        assert before <= disabled.disabled_at <= work.now()
        assert ACTOR_ACCESS.state_of(disabled) == ActorAccess.DISABLED
        assert await ACTOR_ACCESS.move(work, DISABLE, actor_id, actor_id=None) is None
        enabled = await ACTOR_ACCESS.move(work, ENABLE, actor_id, actor_id=None)
        assert enabled is not None and enabled.disabled_at is None
        await work.commit()
    async with sessionmaker() as session:
        kinds = (
            await session.exec(
                select(ChangeEvent.kind)
                .where(ChangeEvent.entity_id == actor_id)
                .order_by(col(ChangeEvent.occurred_at), col(ChangeEvent.id))
            )
        ).all()
    assert sorted(kinds) == ["actor.disabled", "actor.enabled"]


async def test_a_refused_move_is_explained_from_the_row_as_it_now_is(
    sessionmaker: SessionMaker,
) -> None:
    task = await task_row(sessionmaker)
    async with sessionmaker() as session:
        work = UnitOfWork(session)
        with pytest.raises(ValueError, match="OPEN"):
            await TASK.refuse(work, task.id, lambda now: ValueError(str(now.state)))
