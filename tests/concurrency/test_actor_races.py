"""Disabling an actor from several places at once (PostgreSQL): one of them disables it,
with one audit row and one change event; the others find it done and write nothing.
(On SQLite writers are serialised, and callers held between their read and their write
would keep each other waiting.)"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import pytest
from sqlmodel import func, select
from sqlmodel.ext.asyncio.session import AsyncSession

from signoff.database import SessionMaker
from signoff.models import Actor, AuditEvent, ChangeEvent, Role
from signoff.resolvers.access import actors
from signoff.resolvers.access.actors import Switched, create_token, disable_actor, enable_actor
from signoff.resolvers.core.work import WorkMaker
from tests.conftest import requires_postgres

RACERS = 8


async def counts(sessionmaker: SessionMaker, kind: str) -> tuple[int, int]:
    """The audit rows and the change events of ``kind``."""
    async with sessionmaker() as session:
        audits = select(func.count()).select_from(AuditEvent).where(AuditEvent.action == kind)
        events = select(func.count()).select_from(ChangeEvent).where(ChangeEvent.kind == kind)
        return (await session.exec(audits)).one(), (await session.exec(events)).one()


@requires_postgres
async def test_concurrent_disables_write_one_audit_row_and_one_event(
    sessionmaker: SessionMaker, monkeypatch: pytest.MonkeyPatch
) -> None:
    make = WorkMaker(sessionmaker)
    async with make() as work:
        await create_token(work=work, name="alice", role=Role.REVIEWER)

    # Every caller has read the actor before any of them writes: each one's read alone
    # says the change is still to be made.
    read_actor = actors._actor_named
    everyone_read = asyncio.Barrier(RACERS)

    async def read_then_wait(session: AsyncSession, name: str) -> Actor:
        actor = await read_actor(session, name)
        await everyone_read.wait()
        return actor

    monkeypatch.setattr(actors, "_actor_named", read_then_wait)

    async def switch(action: Callable[..., Awaitable[Switched]]) -> Switched:
        async with make() as work:
            return await action(work=work, name="alice")

    disabled = await asyncio.gather(*(switch(disable_actor) for _ in range(RACERS)))
    assert sorted(s.changed for s in disabled) == [False] * (RACERS - 1) + [True]
    assert await counts(sessionmaker, "actor.disabled") == (1, 1)

    enabled = await asyncio.gather(*(switch(enable_actor) for _ in range(RACERS)))
    assert sorted(s.changed for s in enabled) == [False] * (RACERS - 1) + [True]
    assert await counts(sessionmaker, "actor.enabled") == (1, 1)
