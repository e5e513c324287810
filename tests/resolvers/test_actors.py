"""Changes to what an actor may do reach the change feed: each one writes exactly one
event of its kind (``ACCESS_KINDS``), in the transaction that made the change, and a
call that changes nothing writes none."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

import pytest
from sqlalchemy import event
from sqlalchemy.ext.asyncio import AsyncEngine
from sqlmodel import col, select

from signoff.database import SessionMaker
from signoff.errors import ActorDisabled, NotFound, Unauthenticated
from signoff.models import Actor, AuditEvent, ChangeEvent, ChangeKind, Role
from signoff.models.change_event import ACCESS_KINDS
from signoff.resolvers.access.actors import (
    authenticate,
    create_token,
    disable_actor,
    enable_actor,
    hash_token,
    revoke_actor_tokens,
    revoke_token,
    set_actor_role,
)
from signoff.resolvers.core.work import UnitOfWork, WorkMaker

T = TypeVar("T")
Action = Callable[[UnitOfWork], Awaitable[object]]


@contextmanager
def transactions(engine: AsyncEngine) -> Iterator[list[list[str]]]:
    """The statements ``engine`` sends meanwhile, one list per committed transaction
    (rolled back ones are left out)."""
    committed: list[list[str]] = []
    open_: dict[int, list[str]] = {}

    def note(conn: Any, _cursor: Any, statement: str, *_: Any) -> None:
        open_.setdefault(id(conn), []).append(statement)

    def commit(conn: Any) -> None:
        committed.append(open_.pop(id(conn), []))

    def rollback(conn: Any) -> None:
        open_.pop(id(conn), None)

    sync = engine.sync_engine
    listeners = (("before_cursor_execute", note), ("commit", commit), ("rollback", rollback))
    for name, listener in listeners:
        event.listen(sync, name, listener)
    try:
        yield committed
    finally:
        for name, listener in listeners:
            event.remove(sync, name, listener)


async def run(sessionmaker: SessionMaker, action: Callable[[UnitOfWork], Awaitable[T]]) -> T:
    """``action`` in a unit of work of its own, as the CLI runs it."""
    async with WorkMaker(sessionmaker)() as work:
        return await action(work)


async def new_token(sessionmaker: SessionMaker) -> str:
    """Another token of the reviewer alice."""
    created = await run(
        sessionmaker, lambda work: create_token(work=work, name="alice", role=Role.REVIEWER)
    )
    return created.token


async def alice_id(sessionmaker: SessionMaker) -> str:
    async with sessionmaker() as session:
        return (await session.exec(select(Actor.id).where(Actor.name == "alice"))).one()


async def events_of(sessionmaker: SessionMaker) -> list[ChangeEvent]:
    async with sessionmaker() as session:
        stmt = select(ChangeEvent).where(col(ChangeEvent.kind).in_(ACCESS_KINDS))
        return list((await session.exec(stmt.order_by(col(ChangeEvent.id)))).all())


async def audits_of(sessionmaker: SessionMaker, action: str) -> list[AuditEvent]:
    async with sessionmaker() as session:
        stmt = select(AuditEvent).where(AuditEvent.action == action)
        return list((await session.exec(stmt)).all())


CHANGES: dict[str, tuple[ChangeKind, str, Action]] = {
    # kind, the table the change updates, the change
    "set role": (
        ChangeKind.ACTOR_ROLE_CHANGED,
        "UPDATE actors",
        lambda work: set_actor_role(work=work, name="alice", role=Role.OPERATOR),
    ),
    "revoke every token": (
        ChangeKind.ACTOR_TOKEN_REVOKED,
        "UPDATE api_tokens",
        lambda work: revoke_actor_tokens(work=work, name="alice"),
    ),
    "disable": (
        ChangeKind.ACTOR_DISABLED,
        "UPDATE actors",
        lambda work: disable_actor(work=work, name="alice"),
    ),
    "enable": (  # alice is disabled first
        ChangeKind.ACTOR_ENABLED,
        "UPDATE actors",
        lambda work: enable_actor(work=work, name="alice"),
    ),
}


@pytest.mark.parametrize("change", CHANGES, ids=list(CHANGES))
async def test_a_change_writes_one_event_in_its_transaction(
    sessionmaker: SessionMaker, engine: AsyncEngine, change: str
) -> None:
    kind, update, action = CHANGES[change]
    first = await new_token(sessionmaker)
    second = await new_token(sessionmaker)  # two tokens: still one event for the call
    if kind is ChangeKind.ACTOR_ENABLED:
        await run(sessionmaker, lambda work: disable_actor(work=work, name="alice"))
    with transactions(engine) as committed:
        await run(sessionmaker, action)
    (event_,) = [e for e in await events_of(sessionmaker) if e.kind == kind.value]
    assert event_.kind == kind.value
    assert event_.entity_id == await alice_id(sessionmaker)
    assert (event_.entity_type, event_.queue_id, event_.proposal_id) == ("actor", None, None)
    assert event_.actor_id is None  # the command line acts as the system
    assert set(event_.snapshot) == {"role", "disabled"}
    assert event_.snapshot["disabled"] is (kind is ChangeKind.ACTOR_DISABLED)
    (written,) = [t for t in committed if any("INSERT INTO change_events" in s for s in t)]
    assert any(s.startswith(update) for s in written), written
    assert any("INSERT INTO audit_events" in s for s in written), written
    serialised = json.dumps(event_.model_dump(mode="json"))
    for token in (first, second):
        assert token not in serialised and hash_token(token) not in serialised


async def test_revoking_two_tokens_audits_each_and_writes_one_event(
    sessionmaker: SessionMaker,
) -> None:
    await new_token(sessionmaker)
    await new_token(sessionmaker)
    revoked = await run(sessionmaker, lambda work: revoke_actor_tokens(work=work, name="alice"))
    assert len(revoked.token_ids) == 2
    assert len(await audits_of(sessionmaker, "actor.token_revoked")) == 2
    assert [e.kind for e in await events_of(sessionmaker)] == ["actor.token_revoked"]


async def test_revoking_one_token_writes_one_event(sessionmaker: SessionMaker) -> None:
    token = await new_token(sessionmaker)
    await new_token(sessionmaker)
    await run(sessionmaker, lambda work: revoke_token(work=work, token=token))
    (event_,) = await events_of(sessionmaker)
    assert event_.kind == "actor.token_revoked"
    assert token not in json.dumps(event_.snapshot)
    assert hash_token(token) not in json.dumps(event_.snapshot)


async def test_disabling_refuses_the_tokens_and_enabling_restores_them(
    sessionmaker: SessionMaker,
) -> None:
    token = await new_token(sessionmaker)
    disabled = await run(sessionmaker, lambda work: disable_actor(work=work, name="alice"))
    assert disabled.changed and disabled.actor.disabled_at is not None
    async with sessionmaker() as session:
        with pytest.raises(ActorDisabled) as refused:
            await authenticate(session=session, token=token)
    assert refused.value.code == "FORBIDDEN"
    assert refused.value.message == (
        "alice is disabled; an operator can enable it with `signoff actor enable --name alice`."
    )

    enabled = await run(sessionmaker, lambda work: enable_actor(work=work, name="alice"))
    assert enabled.changed and enabled.actor.disabled_at is None
    async with sessionmaker() as session:
        viewer = await authenticate(session=session, token=token)
    assert viewer.actor.name == "alice"
    kinds = [e.kind for e in await events_of(sessionmaker)]
    assert kinds == ["actor.disabled", "actor.enabled"]
    assert [len(await audits_of(sessionmaker, k)) for k in kinds] == [1, 1]


async def test_a_revoked_token_of_a_disabled_actor_is_unauthenticated(
    sessionmaker: SessionMaker,
) -> None:
    """Revocation is checked first: a revoked token says nothing about its actor."""
    token = await new_token(sessionmaker)
    await run(sessionmaker, lambda work: disable_actor(work=work, name="alice"))
    await run(sessionmaker, lambda work: revoke_token(work=work, token=token))
    async with sessionmaker() as session:
        with pytest.raises(Unauthenticated):
            await authenticate(session=session, token=token)


async def test_calls_that_change_nothing_write_nothing(sessionmaker: SessionMaker) -> None:
    token = await new_token(sessionmaker)
    await run(sessionmaker, lambda work: disable_actor(work=work, name="alice"))
    await run(sessionmaker, lambda work: revoke_token(work=work, token=token))
    before = await events_of(sessionmaker)
    audits = await audits_of(sessionmaker, "actor.disabled")

    again = await run(sessionmaker, lambda work: disable_actor(work=work, name="alice"))
    assert not again.changed
    same = await run(
        sessionmaker, lambda work: set_actor_role(work=work, name="alice", role=Role.REVIEWER)
    )
    assert same.before == Role.REVIEWER
    none = await run(sessionmaker, lambda work: revoke_actor_tokens(work=work, name="alice"))
    assert none.token_ids == []
    await run(sessionmaker, lambda work: enable_actor(work=work, name="alice"))
    again = await run(sessionmaker, lambda work: enable_actor(work=work, name="alice"))
    assert not again.changed
    for refused in (disable_actor, enable_actor):
        with pytest.raises(NotFound, match="No actor is named bob"):
            await run(sessionmaker, lambda work, f=refused: f(work=work, name="bob"))

    after = await events_of(sessionmaker)
    assert [e.kind for e in after] == [e.kind for e in before] + ["actor.enabled"]
    assert len(await audits_of(sessionmaker, "actor.disabled")) == len(audits) == 1
