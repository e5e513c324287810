"""A property of drafts, checked on random sequences of operations (hypothesis): for one
owner, whatever the agent, the person, the ordinary form and the executor do, in any
order, at most one submission can be under way: never two successful dispatch checks,
unless the executor reported the first as NOT_SUBMITTED (nothing was sent)."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from signoff import clock
from signoff.database import create_engine, create_sessionmaker
from signoff.errors import SignoffError
from signoff.models import Draft, DraftOutcome, DraftSource, Role
from signoff.resolvers.access.actors import authenticate, create_token
from signoff.resolvers.access.rules import Viewer
from signoff.resolvers.core.work import UnitOfWork, WorkMaker
from signoff.resolvers.drafts import drafts
from tests.conftest import PG_URL

PREPARE = st.tuples(st.just("prepare"), st.sampled_from(["A", "B"]))
RESERVE = st.tuples(st.just("reserve"))
CHECK = st.tuples(st.just("check"))
# Weighted towards the steps that lead to a dispatch check, so most sequences get there.
OPERATIONS = st.one_of(
    PREPARE,
    PREPARE,
    st.tuples(st.just("edit"), st.sampled_from(list(DraftSource))),
    RESERVE,
    RESERVE,
    RESERVE,
    st.tuples(st.just("cancel")),
    CHECK,
    CHECK,
    CHECK,
    st.tuples(st.just("form")),
    st.tuples(st.just("observe"), st.sampled_from(list(DraftOutcome))),
    st.tuples(st.just("observe"), st.sampled_from(list(DraftOutcome))),
    st.tuples(st.just("expire")),
)


@dataclass
class World:
    make: WorkMaker
    agent: Viewer
    person: Viewer
    executor: Viewer
    owner: dict[str, Any]
    draft_id: str | None = None
    managed: set[str] = field(default_factory=set)  # drafts whose dispatch check passed
    released: set[str] = field(default_factory=set)  # ... and were reported NOT_SUBMITTED
    form_passed: bool = False

    def submissions(self) -> int:
        return len(self.managed - self.released) + int(self.form_passed)


async def _viewer(make: WorkMaker, role: Role) -> Viewer:
    async with make() as work:
        token = await create_token(
            work=work, name=f"{role.value}-{uuid.uuid4().hex[:8]}", role=role
        )
    async with make.sessionmaker() as session:
        return await authenticate(session=session, token=token.token)


async def _draft(world: World) -> Draft | None:
    if world.draft_id is None:
        return None
    async with world.make.sessionmaker() as session:
        return await session.get(Draft, world.draft_id)


async def _apply(world: World, operation: tuple[Any, ...]) -> None:
    name, *args = operation
    draft = await _draft(world)
    steps: dict[str, Callable[[UnitOfWork], Awaitable[Any]]] = {}
    rid = uuid.uuid4().hex
    if name == "prepare":
        steps[name] = lambda work: drafts.prepare_draft(
            work=work,
            viewer=world.agent,
            request_id=rid,
            session_id=args[0],
            account_id=world.person.id,
            owner=world.owner,
            values={"n": rid},
        )
    elif name == "form":
        steps[name] = lambda work: drafts.check_draft_dispatch(
            work=work, viewer=world.executor, owner=world.owner
        )
    elif name == "expire":
        FROZEN.advance(8 * 86_400)  # past every draft's expiry
        return
    elif draft is not None:
        steps[name] = _on_draft(world, draft, name, args, rid)
    if name not in steps:
        return
    try:
        async with world.make() as work:
            result = await steps[name](work)
    except SignoffError as refused:
        event(f"{name}: {refused.code}")
        return
    event(f"{name}: ok")
    if name == "prepare":
        world.draft_id = result.draft.id
    elif name == "form":
        world.form_passed = True
    elif name == "check" and draft is not None:
        world.managed.add(draft.id)
    elif name == "observe" and args[0] is DraftOutcome.NOT_SUBMITTED and draft is not None:
        world.released.add(draft.id)


def _on_draft(
    world: World, draft: Draft, name: str, args: list[Any], rid: str
) -> Callable[[UnitOfWork], Awaitable[Any]]:
    common = {"request_id": rid, "draft_id": draft.id, "session_id": draft.session_id}
    if name == "edit":
        viewer = world.person if args[0] is DraftSource.USER else world.agent
        return lambda work: drafts.update_draft(
            work=work,
            viewer=viewer,
            expected_revision=draft.revision,
            source=args[0],
            patch={"edited": rid},
            **common,
        )
    if name == "reserve":
        return lambda work: drafts.reserve_draft(
            work=work,
            viewer=world.person,
            expected_revision=draft.revision,
            values_digest_=draft.values_digest or "",
            **common,
        )
    if name == "cancel":
        return lambda work: drafts.cancel_draft(
            work=work, viewer=world.person, expected_revision=draft.revision, **common
        )
    if name == "check":
        return lambda work: drafts.check_draft_dispatch(
            work=work,
            viewer=world.executor,
            owner=world.owner,
            draft_id=draft.id,
            operation_key=draft.operation_key,
            values_digest_=draft.reserved_digest,
        )
    return lambda work: drafts.observe_draft(
        work=work,
        viewer=world.executor,
        expected_revision=draft.revision,
        operation_key=draft.operation_key or "",
        outcome=args[0],
        **common,
    )


FROZEN = clock.FrozenClock()


async def _run(url: str, operations: list[tuple[Any, ...]]) -> None:
    engine = create_engine(url)
    try:
        make = WorkMaker(create_sessionmaker(engine))
        person = await _viewer(make, Role.REVIEWER)
        world = World(
            make=make,
            agent=await _viewer(make, Role.AGENT),
            person=person,
            executor=await _viewer(make, Role.INTEGRATION),
            owner={"kind": "FORM", "form": "f", "step": uuid.uuid4().hex, "accountId": person.id},
        )
        for operation in operations:
            await _apply(world, operation)
            assert world.submissions() <= 1, (operations, world)
        # Seen with --hypothesis-show-statistics: how often a submission got through.
        event(f"dispatch checks passed: {len(world.managed)}, form: {world.form_passed}")
    finally:
        await engine.dispose()


@settings(
    max_examples=60 if PG_URL is None else 30,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(operations=st.lists(OPERATIONS, min_size=3, max_size=20))
def test_one_owner_is_never_submitted_twice(
    property_database: str, operations: list[tuple[Any, ...]]
) -> None:
    clock.set_clock(FROZEN)
    try:
        asyncio.run(_run(property_database, operations))
    finally:
        clock.set_clock(None)


def test_the_property_can_fail() -> None:
    """The invariant the property checks is not vacuous: two unreleased dispatches break it."""
    world = World(make=None, agent=None, person=None, executor=None, owner={})  # type: ignore[arg-type]
    world.managed |= {"a", "b"}
    assert world.submissions() == 2
    world.released.add("a")
    assert world.submissions() == 1
