"""Authorization changes reach open streams in feed order: a revoked token closes its
socket (4403), a role change or a disabled actor ends the stream with FORBIDDEN, before
any later event is sent and within a second; in one process here, across two
``signoff serve`` processes on PostgreSQL + Redis below."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable

import pytest
from sqlmodel import col, select
from starlette.applications import Starlette

from signoff.database import SessionMaker
from signoff.models import ApprovalLink, AuditEvent, ChangeEvent, ChangeKind, Role
from signoff.resolvers.access.actors import disable_actor, revoke_token, set_actor_role
from signoff.resolvers.core.work import Services, UnitOfWork
from signoff.resolvers.feed.subscriptions import decode_cursor
from tests.conftest import REDIS_URL, requires_postgres, requires_redis
from tests.helpers import GraphQLClient, build_world, create_tasks
from tests.live import (
    QUEUE_EVENTS,
    InProcessServer,
    Server,
    Stream,
    feed_settled,
    head_cursor,
    http_gql,
    open_stream,
    stamp_now,
    unique_channel,
)
from tests.processes import run_cli, signoff_env
from tests.schema.test_approval_links import form, linked, proposal_state

logger = logging.getLogger("tests.access_changes")

REVIEWER = "rhea"
INCIDENTS = "subscription { incidentEvents { cursor kind entityId } }"

Change = Callable[[UnitOfWork, str], Awaitable[object]]


async def _revoke(work: UnitOfWork, token: str) -> object:
    return await revoke_token(work=work, token=token)


async def _demote(work: UnitOfWork, _: str) -> object:
    return await set_actor_role(work=work, name=REVIEWER, role=Role.AGENT)


async def _disable(work: UnitOfWork, _: str) -> object:
    return await disable_actor(work=work, name=REVIEWER)


@pytest.mark.parametrize(
    ("change", "kind", "ends"),
    [
        (_revoke, ChangeKind.ACTOR_TOKEN_REVOKED, "4403"),
        (_demote, ChangeKind.ACTOR_ROLE_CHANGED, "FORBIDDEN"),
        (_disable, ChangeKind.ACTOR_DISABLED, "FORBIDDEN"),
    ],
    ids=["revoked token", "role changed", "actor disabled"],
)
async def test_an_access_change_ends_the_stream_before_any_later_event(
    app: Starlette,
    live: InProcessServer,
    http: GraphQLClient,
    change: Change,
    kind: ChangeKind,
    ends: str,
) -> None:
    world = await build_world(http)
    reviewer = await http.token(Role.REVIEWER, name=REVIEWER, queues=[world.queue_slug])
    await feed_settled(http.sessionmaker)
    after = await head_cursor(http, reviewer)
    variables = {"queueId": world.queue_id, "after": after}
    async with open_stream(live, reviewer, QUEUE_EVENTS, variables) as stream:
        await create_tasks(http, world.admin, world.queue_id, 1, "seen")
        await stream.until(lambda s: len(s.frames) == 1)
        async with http.sessionmaker() as session:
            await change(UnitOfWork(session, Services(events=app.state.events)), reviewer)
        changed_at = time.monotonic()
        # Events right behind the change: none of them may reach the stream.
        later = asyncio.create_task(create_tasks(http, world.admin, world.queue_id, 3, "later"))
        await stream.until(lambda s: s.ended, within=5)
        assert stream.ended_at is not None
        ended_after = stream.ended_at - changed_at
        await later
        await stream.until(lambda s: s.close_code is not None or s.completed or bool(s.errors))
    _assert_ended(stream, ends)
    assert ended_after < 1.0, ended_after
    change_cursor = await _cursor_of(http.sessionmaker, kind)
    assert all(_frame_cursor(frame) < change_cursor for frame in stream.frames)
    assert [f["data"]["queueEvents"]["kind"] for f in stream.frames] == ["task.created"]


async def test_an_operator_made_a_reviewer_stops_receiving_incidents(
    app: Starlette, live: InProcessServer, http: GraphQLClient
) -> None:
    await http.token(Role.OPERATOR, name=REVIEWER)
    ops = await http.token(Role.OPERATOR, name="ops-2")
    async with open_stream(live, ops, INCIDENTS, {}) as stream:
        async with http.sessionmaker() as session:
            work = UnitOfWork(session, Services(events=app.state.events))
            await set_actor_role(work=work, name="ops-2", role=Role.REVIEWER)
        await stream.until(lambda s: s.ended, within=2)
    _assert_ended(stream, "FORBIDDEN")


async def test_a_change_that_keeps_access_keeps_the_stream_without_loss(
    app: Starlette, live: InProcessServer, http: GraphQLClient
) -> None:
    """Revoking another token of the same actor re-reads the viewer: the stream goes on,
    and events around the change arrive once each, in order."""
    world = await build_world(http)
    kept = await http.token(Role.REVIEWER, name=REVIEWER, queues=[world.queue_slug])
    other = await http.token(Role.REVIEWER, name=REVIEWER)
    await feed_settled(http.sessionmaker)
    after = await head_cursor(http, kept)
    variables = {"queueId": world.queue_id, "after": after}
    async with open_stream(live, kept, QUEUE_EVENTS, variables) as stream:
        await create_tasks(http, world.admin, world.queue_id, 2, "before")
        async with http.sessionmaker() as session:
            await revoke_token(
                work=UnitOfWork(session, Services(events=app.state.events)), token=other
            )
        await create_tasks(http, world.admin, world.queue_id, 2, "after")
        await stream.until(lambda s: len(s.frames) >= 4 or s.ended)
        await asyncio.sleep(0.3)
    assert not stream.ended or stream.close_code == 1000
    cursors = [_frame_cursor(frame) for frame in stream.frames]
    assert len(cursors) == 4 and cursors == sorted(set(cursors))


@requires_postgres
@requires_redis
@pytest.mark.parametrize(
    ("command", "kind", "ends"),
    [
        (("token", "revoke", "--token", "-"), ChangeKind.ACTOR_TOKEN_REVOKED, "4403"),
        (
            ("actor", "set-role", "--name", REVIEWER, "--role", "agent"),
            ChangeKind.ACTOR_ROLE_CHANGED,
            "FORBIDDEN",
        ),
        (("actor", "disable", "--name", REVIEWER), ChangeKind.ACTOR_DISABLED, "FORBIDDEN"),
    ],
    ids=["revoked token", "role changed", "actor disabled"],
)
async def test_a_change_from_the_cli_ends_a_stream_on_another_process(
    serve: Callable[..., Awaitable[Server]],
    sessionmaker: SessionMaker,
    database_url: str,
    command: tuple[str, ...],
    kind: ChangeKind,
    ends: str,
) -> None:
    """Two ``signoff serve`` on PostgreSQL + Redis; the change is made from the command
    line: its change event travels through Redis, and the stream on the other process
    ends within a second, with nothing after the change."""
    channel = unique_channel()
    env = {"SIGNOFF_EVENTS_CHANNEL": channel, "SIGNOFF_EVENTS_RELAY_SECONDS": "60"}
    a, b = await serve(**env), await serve(**env)
    async with http_gql(a, sessionmaker) as through_a:
        world = await build_world(through_a)
        reviewer = await through_a.token(Role.REVIEWER, name=REVIEWER, queues=[world.queue_slug])
        await stamp_now(sessionmaker)
        after = await head_cursor(through_a, reviewer)
        variables = {"queueId": world.queue_id, "after": after}
        async with open_stream(b, reviewer, QUEUE_EVENTS, variables) as stream:
            await create_tasks(through_a, world.admin, world.queue_id, 1, "seen")
            await stream.until(lambda s: len(s.frames) == 1)
            cli_env = signoff_env(
                database_url, SIGNOFF_REDIS_URL=_redis_url(), SIGNOFF_EVENTS_CHANNEL=channel
            )
            done = await asyncio.to_thread(run_cli, *command, env=cli_env, stdin=reviewer)
            assert done.returncode == 0, done.stderr
            changed_at = time.monotonic()
            # Events right behind the change, made while the stream is watched: their
            # requests' time is not the change's.
            later = asyncio.create_task(
                create_tasks(through_a, world.admin, world.queue_id, 2, "later")
            )
            await stream.until(lambda s: s.ended, within=5)
            assert stream.ended_at is not None
            ended_after = stream.ended_at - changed_at
            await later
    _assert_ended(stream, ends)
    assert ended_after < 1.0, ended_after
    # The figure docs/security.md quotes ("Access that ends everywhere at once").
    logger.warning("stream on the other process ended %.3f s after `%s`", ended_after, command)
    change_cursor = await _cursor_of(sessionmaker, kind)
    assert all(_frame_cursor(frame) < change_cursor for frame in stream.frames)


def _redis_url() -> str:
    assert REDIS_URL is not None
    return REDIS_URL


def _assert_ended(stream: Stream, ends: str) -> None:
    if ends == "4403":
        assert stream.close_code == 4403, (stream.close_code, stream.errors)
        assert not stream.errors
    else:
        codes = [error.get("extensions", {}).get("code") for error in stream.errors]
        assert codes == [ends], (stream.errors, stream.close_code)


def _frame_cursor(frame: dict[str, object]) -> int:
    data = frame["data"]
    assert isinstance(data, dict)
    return decode_cursor(data["queueEvents"]["cursor"])


async def _cursor_of(sessionmaker: SessionMaker, kind: ChangeKind) -> int:
    await feed_settled(sessionmaker)
    async with sessionmaker() as session:
        cursor = (
            await session.exec(
                select(ChangeEvent.cursor)
                .where(ChangeEvent.kind == kind.value)
                .order_by(col(ChangeEvent.cursor).desc())
            )
        ).first()
    assert cursor is not None
    return cursor


@requires_postgres
@requires_redis
@pytest.mark.parametrize(
    ("command", "reason"),
    [
        (("actor", "disable", "--name", REVIEWER), "actor_disabled"),
        (("token", "revoke", "--name", REVIEWER), "tokens_revoked"),
    ],
    ids=["actor disabled", "tokens revoked"],
)
async def test_a_link_stops_deciding_on_another_process_once_its_reviewer_loses_access(
    serve: Callable[..., Awaitable[Server]],
    sessionmaker: SessionMaker,
    database_url: str,
    command: tuple[str, ...],
    reason: str,
) -> None:
    """The link is made through one ``signoff serve``, the reviewer's access taken away
    from the command line, and the link posted to the other: the first POST after the
    command returns is refused and decides nothing; the link was revoked with the access."""
    channel = unique_channel()
    env = {"SIGNOFF_EVENTS_CHANNEL": channel, "SIGNOFF_EVENTS_RELAY_SECONDS": "60"}
    a, b = await serve(**env), await serve(**env)
    async with http_gql(a, sessionmaker) as through_a, http_gql(b, sessionmaker) as through_b:
        world = await build_world(through_a)
        reviewer = await through_a.token(Role.REVIEWER, name=REVIEWER, queues=[world.queue_slug])
        world.reviewers[0] = reviewer
        proposed, created = await linked(through_a, world)
        shown = await through_b.http.get(created["path"])
        assert shown.status_code == 200
        cli_env = signoff_env(
            database_url, SIGNOFF_REDIS_URL=_redis_url(), SIGNOFF_EVENTS_CHANNEL=channel
        )
        done = await asyncio.to_thread(run_cli, *command, env=cli_env)
        assert done.returncode == 0, done.stderr
        changed_at = time.monotonic()
        refused = await through_b.http.post(
            created["path"], data=form(created["link"]["payloadDigest"])
        )
        refused_after = time.monotonic() - changed_at
        page = await through_b.http.get(created["path"])
    logger.warning("link refused on the other process %.3f s after `%s`", refused_after, command)
    assert refused.status_code == 410, refused.text
    assert page.status_code == 410 and created["link"]["payloadDigest"] not in page.text
    assert await proposal_state(through_a, proposed["proposal"]["id"]) == "APPROVAL_REQUIRED"
    async with sessionmaker() as session:
        link = await session.get(ApprovalLink, created["link"]["id"])
        revoked = (
            await session.exec(
                select(AuditEvent.details).where(
                    AuditEvent.action == "approval_link.revoked",
                    AuditEvent.target_id == created["link"]["id"],
                )
            )
        ).all()
    assert link is not None and link.state == "REVOKED"
    assert [details["reason"] for details in revoked] == [reason]
