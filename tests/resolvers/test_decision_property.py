"""Decisions bound to what was seen, checked on random sequences (hypothesis, issue 41):
three reviewers read, amend, approve (``decideProposal``), claim and complete the approval
task (``completeTask``), each naming the digest they last read; an administrator links
reviewers as one person, disables and enables them. Whatever the order, a proposal released
for delivery has its quorum of approvals from distinct persons, as linked then, none
of them its proposer or the author of the revision that runs, each naming its digest."""

from __future__ import annotations

import asyncio
import uuid
from dataclasses import dataclass, field
from typing import Any

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from sqlmodel import col, select

from signoff import clock
from signoff.database import create_engine, create_sessionmaker
from signoff.errors import SignoffError
from signoff.models import (
    Actor,
    Approval,
    ApprovalMode,
    Decision,
    HumanTask,
    Proposal,
    ProposalState,
    Queue,
    Role,
    Target,
)
from signoff.models.actor import person_of
from signoff.resolvers.access.actors import authenticate, create_token, disable_actor, enable_actor
from signoff.resolvers.access.persons import link_actor
from signoff.resolvers.access.rules import Viewer
from signoff.resolvers.approval import amendments, approvals, proposals, tasks
from signoff.resolvers.approval.four_eyes import revision_author
from signoff.resolvers.core.work import UnitOfWork, WorkMaker
from tests.conftest import PG_URL

REVIEWERS = 3
REQUIRED = 2
REVIEWER = st.integers(min_value=0, max_value=REVIEWERS - 1)
# Weighted towards reading and approving, so that most sequences reach a quorum.
OPERATIONS = st.one_of(
    st.tuples(st.just("read"), REVIEWER),
    st.tuples(st.just("read"), REVIEWER),
    st.tuples(st.just("amend"), REVIEWER, st.integers(min_value=1, max_value=4)),
    st.tuples(st.just("approve"), REVIEWER),
    st.tuples(st.just("approve"), REVIEWER),
    st.tuples(st.just("complete"), REVIEWER),
    st.tuples(st.just("complete"), REVIEWER),
    st.tuples(st.just("link"), REVIEWER, REVIEWER),
    st.tuples(st.just("disable"), REVIEWER),
    st.tuples(st.just("enable"), REVIEWER),
)
RELEASED = {ProposalState.QUEUED, ProposalState.APPLYING, ProposalState.APPLIED}


@dataclass
class World:
    make: WorkMaker
    agent: Viewer
    names: list[str]
    tokens: list[str]
    proposal_id: str
    task_id: str
    seen: list[str] = field(default_factory=list)  # the digest each reviewer last read
    named: set[tuple[str, str]] = field(default_factory=set)  # (reviewer, digest) decided
    released: bool = False  # checked once, as linked when it was released


async def _token(make: WorkMaker, role: Role, queues: list[str] | None = None) -> tuple[str, str]:
    async with make() as work:
        made = await create_token(
            work=work,
            name=f"{role.value}-{uuid.uuid4().hex[:8]}",
            role=role,
            queue_slugs=queues or [],
        )
    return made.actor.name, made.token


async def _viewer(make: WorkMaker, token: str) -> Viewer:
    async with make.sessionmaker() as session:
        return await authenticate(session=session, token=token)


async def _world(make: WorkMaker) -> World:
    slug = f"q-{uuid.uuid4().hex[:8]}"
    _, admin_token = await _token(make, Role.ADMIN)
    admin = await _viewer(make, admin_token)
    async with make() as work:
        queue = Queue(slug=slug, name="Refunds", created_by_id=admin.id)
        target = Target(
            name=f"t-{uuid.uuid4().hex[:8]}",
            url="http://127.0.0.1:9/hook",
            input_schema={"type": "object"},
            approval_mode=ApprovalMode.HUMAN,
            required_approvals=REQUIRED,
            queue_id=queue.id,
            signing_secret="sealed:unused",
            created_by_id=admin.id,
        )
        work.session.add(queue)
        await work.session.flush()
        work.session.add(target)
        await work.commit()
    agent = await _viewer(make, (await _token(make, Role.AGENT))[1])
    reviewers = [await _token(make, Role.REVIEWER, [slug]) for _ in range(REVIEWERS)]
    async with make() as work:
        proposed = await proposals.propose_action(
            work=work,
            viewer=agent,
            target_id=target.id,
            action_code="refund.create",
            operation_key=uuid.uuid4().hex,
            payload={"amount": 50000},
        )
    assert proposed.task is not None
    digest = proposed.proposal.payload_digest
    return World(
        make=make,
        agent=agent,
        names=[name for name, _ in reviewers],
        tokens=[token for _, token in reviewers],
        proposal_id=proposed.proposal.id,
        task_id=proposed.task.id,
        seen=[digest] * REVIEWERS,
    )


async def _apply(world: World, operation: tuple[Any, ...]) -> None:
    name, who, *args = operation
    try:
        if name in ("link", "disable", "enable"):
            async with world.make() as work:
                await _administer(work, world, name, who, *args)
            return
        viewer = await _viewer(world.make, world.tokens[who])  # a disabled reviewer is refused
        async with world.make() as work:
            await _review(work, world, viewer, name, who, *args)
    except SignoffError as refused:
        event(f"{name} refused: {refused.code}")


async def _administer(work: UnitOfWork, world: World, name: str, who: int, *args: Any) -> None:
    if name == "link":
        await link_actor(work=work, name=world.names[who], to=world.names[args[0]])
    elif name == "disable":
        await disable_actor(work=work, name=world.names[who])
    else:
        await enable_actor(work=work, name=world.names[who])


async def _review(
    work: UnitOfWork, world: World, viewer: Viewer, name: str, who: int, *args: Any
) -> None:
    seen = world.seen[who]
    if name == "read":
        proposal = await work.session.get(Proposal, world.proposal_id)
        assert proposal is not None
        world.seen[who] = proposal.payload_digest
    elif name == "amend":
        amended = await amendments.amend_proposal(
            work=work,
            viewer=viewer,
            proposal_id=world.proposal_id,
            based_on_digest=seen,
            reason="Fix the amount.",
            patch={"amount": args[0]},
        )
        world.seen[who] = amended.proposal.payload_digest  # they read what they wrote
    elif name == "approve":
        await approvals.decide_proposal(
            work=work,
            viewer=viewer,
            proposal_id=world.proposal_id,
            decision=Decision.APPROVED,
            payload_digest=seen,
        )
        world.named.add((world.names[who], seen))
    else:
        await tasks.claim_task(work=work, viewer=viewer, task_id=world.task_id)
        await tasks.complete_task(
            work=work,
            viewer=viewer,
            task_id=world.task_id,
            response={"decision": "APPROVED", "payloadDigest": seen},
        )
        world.named.add((world.names[who], seen))


async def _check(world: World) -> ProposalState:
    """The invariant, with persons as linked now; a released proposal's once, when it is
    released (a link made after a delivery cannot undo it)."""
    async with world.make.sessionmaker() as session:
        proposal = await session.get(Proposal, world.proposal_id, populate_existing=True)
        assert proposal is not None
        rows = (
            await session.exec(
                select(Approval, Actor)
                .join(Actor, col(Actor.id) == col(Approval.approver_id))
                .where(
                    Approval.proposal_id == proposal.id,
                    Approval.revision == proposal.revision,
                    Approval.decision == Decision.APPROVED,
                )
                .execution_options(populate_existing=True)
            )
        ).all()
        author = await revision_author(session, proposal)
        authors = await session.exec(
            select(Actor).where(col(Actor.id).in_([proposal.proposed_by_id, author or ""]))
        )
        selves = {person_of(actor.id, actor.person) for actor in authors.all()}
        task = await session.get(HumanTask, world.task_id, populate_existing=True)
    assert all(approval.payload_digest == proposal.payload_digest for approval, _ in rows)
    # Each approval that counts is one its reviewer made naming this digest.
    assert all((actor.name, proposal.payload_digest) in world.named for _, actor in rows)
    persons = {person_of(actor.id, actor.person) for _, actor in rows} - selves
    if proposal.state in RELEASED and not world.released:
        world.released = True
        assert len(persons) >= proposal.required_approvals, (proposal, rows)
        assert task is not None and task.response is not None
        assert task.response["payloadDigest"] == proposal.payload_digest
    elif proposal.state == ProposalState.APPROVAL_REQUIRED:
        assert proposal.approval_count <= len(persons)
    return ProposalState(proposal.state)


async def _run(url: str, operations: list[tuple[Any, ...]]) -> None:
    engine = create_engine(url)
    try:
        world = await _world(WorkMaker(create_sessionmaker(engine)))
        state = ProposalState.APPROVAL_REQUIRED
        for operation in operations:
            await _apply(world, operation)
            state = await _check(world)
        event(f"ended {state}")
    finally:
        await engine.dispose()


FROZEN = clock.FrozenClock()


@settings(
    max_examples=50 if PG_URL is None else 25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(operations=st.lists(OPERATIONS, min_size=2, max_size=16))
def test_a_released_digest_has_its_quorum_of_persons_who_saw_it(
    property_database: str, operations: list[tuple[Any, ...]]
) -> None:
    clock.set_clock(FROZEN)
    try:
        asyncio.run(_run(property_database, operations))
    finally:
        clock.set_clock(None)
