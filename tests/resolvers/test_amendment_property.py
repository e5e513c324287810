"""A property of amend-then-approve, checked on random sequences of operations
(hypothesis): whatever reviewers amend, approve (of the current digest or a stale one) or
reject, and whatever the agent accepts, a proposal released for delivery always has its
full quorum of distinct approvals naming the digest it will be delivered with."""

from __future__ import annotations

import asyncio
import uuid
from dataclasses import dataclass, field
from typing import Any

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from sqlmodel import select

from signoff import clock
from signoff.database import create_engine, create_sessionmaker
from signoff.errors import SignoffError
from signoff.models import (
    Approval,
    ApprovalMode,
    Decision,
    Proposal,
    ProposalState,
    Queue,
    Role,
    Target,
)
from signoff.models.proposal import payload_digest_of
from signoff.resolvers.access.actors import authenticate, create_token
from signoff.resolvers.access.rules import Viewer
from signoff.resolvers.approval import amendments, approvals, proposals
from signoff.resolvers.core.work import WorkMaker
from tests.conftest import PG_URL

REVIEWERS = 3
REVIEWER = st.integers(min_value=0, max_value=REVIEWERS - 1)
AMEND = st.tuples(st.just("amend"), REVIEWER, st.integers(min_value=1, max_value=4))
APPROVE = st.tuples(st.just("approve"), REVIEWER, st.just(False))
# Weighted towards amending and approving, so most sequences reach a quorum at least once.
OPERATIONS = st.one_of(
    AMEND,
    AMEND,
    APPROVE,
    APPROVE,
    APPROVE,
    st.tuples(st.just("approve"), REVIEWER, st.just(True)),  # of a stale digest
    st.tuples(st.just("reject"), REVIEWER),
    st.tuples(st.just("accept")),
    st.tuples(st.just("accept")),
)
RELEASED = {ProposalState.QUEUED, ProposalState.APPLYING, ProposalState.APPLIED}


@dataclass
class World:
    make: WorkMaker
    agent: Viewer
    reviewers: list[Viewer]
    proposal_id: str
    digests: list[str] = field(default_factory=list)  # every digest the proposal has had


async def _viewer(make: WorkMaker, role: Role, queues: list[str] | None = None) -> Viewer:
    async with make() as work:
        token = await create_token(
            work=work,
            name=f"{role.value}-{uuid.uuid4().hex[:8]}",
            role=role,
            queue_slugs=queues or [],
        )
    async with make.sessionmaker() as session:
        return await authenticate(session=session, token=token.token)


async def _world(make: WorkMaker, needs_proposer: bool) -> World:
    slug = f"q-{uuid.uuid4().hex[:8]}"
    admin = await _viewer(make, Role.ADMIN)
    async with make() as work:
        queue = Queue(slug=slug, name="Payments", created_by_id=admin.id)
        target = Target(
            name=f"t-{uuid.uuid4().hex[:8]}",
            url="http://127.0.0.1:9/hook",
            input_schema={"type": "object"},
            approval_mode=ApprovalMode.HUMAN,
            required_approvals=2,
            queue_id=queue.id,
            amendments_need_proposer=needs_proposer,
            signing_secret="sealed:unused",
            created_by_id=admin.id,
        )
        work.session.add(queue)
        await work.session.flush()
        work.session.add(target)
        await work.commit()
    agent = await _viewer(make, Role.AGENT)
    reviewers = [await _viewer(make, Role.REVIEWER, [slug]) for _ in range(REVIEWERS)]
    async with make() as work:
        proposed = await proposals.propose_action(
            work=work,
            viewer=agent,
            target_id=target.id,
            action_code="refund.create",
            operation_key=uuid.uuid4().hex,
            payload={"amount": 0},
        )
    world = World(make, agent, reviewers, proposed.proposal.id)
    world.digests.append(proposed.proposal.payload_digest)
    return world


async def _apply(world: World, operation: tuple[Any, ...]) -> None:
    async with world.make() as work:
        proposal = await work.session.get(Proposal, world.proposal_id)
        assert proposal is not None
        name, *args = operation
        try:
            if name == "amend":
                amended = await amendments.amend_proposal(
                    work=work,
                    viewer=world.reviewers[args[0]],
                    proposal_id=proposal.id,
                    based_on_digest=proposal.payload_digest,
                    reason="Fix the amount.",
                    patch={"amount": args[1]},
                )
                world.digests.append(amended.proposal.payload_digest)
            elif name in ("approve", "reject"):
                stale = name == "approve" and args[1] and len(world.digests) > 1
                await approvals.decide_proposal(
                    work=work,
                    viewer=world.reviewers[args[0]],
                    proposal_id=proposal.id,
                    decision=Decision.APPROVED if name == "approve" else Decision.REJECTED,
                    payload_digest=world.digests[-2] if stale else proposal.payload_digest,
                )
            else:
                await amendments.accept_amendment(
                    work=work,
                    viewer=world.agent,
                    proposal_id=proposal.id,
                    payload_digest=proposal.payload_digest,
                )
        except SignoffError as refused:
            event(f"refused: {refused.code}")


async def _check(world: World) -> ProposalState:
    """The invariant: a released proposal has ``required_approvals`` distinct approvers of
    exactly its digest, and its digest is the one its stored material gives."""
    async with world.make.sessionmaker() as session:
        proposal = await session.get(Proposal, world.proposal_id)
        assert proposal is not None
        rows = (
            await session.exec(
                select(Approval).where(
                    Approval.proposal_id == proposal.id,
                    Approval.decision == Decision.APPROVED,
                    Approval.payload_digest == proposal.payload_digest,
                )
            )
        ).all()
    approvers = {row.approver_id for row in rows}
    assert payload_digest_of(proposal) == proposal.payload_digest
    if proposal.state in RELEASED:
        assert len(approvers) >= proposal.required_approvals
        assert not proposal.awaiting_proposer
    elif proposal.state == ProposalState.APPROVAL_REQUIRED:
        assert proposal.approval_count == len(approvers)
    return ProposalState(proposal.state)


async def _run(url: str, needs_proposer: bool, operations: list[tuple[Any, ...]]) -> None:
    engine = create_engine(url)
    try:
        world = await _world(WorkMaker(create_sessionmaker(engine)), needs_proposer)
        state = ProposalState.APPROVAL_REQUIRED
        for operation in operations:
            await _apply(world, operation)
            state = await _check(world)
        event(f"ended {state} after {len(world.digests) - 1} amendments")
    finally:
        await engine.dispose()


FROZEN = clock.FrozenClock()


@settings(
    max_examples=60 if PG_URL is None else 30,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(needs_proposer=st.booleans(), operations=st.lists(OPERATIONS, min_size=2, max_size=14))
def test_no_sequence_delivers_a_digest_without_its_quorum(
    property_database: str, needs_proposer: bool, operations: list[tuple[Any, ...]]
) -> None:
    clock.set_clock(FROZEN)
    try:
        asyncio.run(_run(property_database, needs_proposer, operations))
    finally:
        clock.set_clock(None)
