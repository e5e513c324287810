"""Subscriptions over Server-Sent Events as ``graphql-sse``'s own client (unmodified, under
Node) speaks them, in both of its modes, against a real ``signoff serve``: events arrive,
a cut stream resumes with ``Last-Event-ID`` without a gap or a duplicate, a bad token
and a revoked one are refused with a code."""

from __future__ import annotations

import json

import pytest

from signoff.resolvers.access.actors import revoke_token
from signoff.resolvers.core.work import UnitOfWork
from tests.conftest import ModuleServer
from tests.graphql_clients.cutting_proxy import cutting_proxy
from tests.graphql_clients.node import NodeProcess, node_script
from tests.helpers import build_world, create_tasks, unique_name
from tests.live import feed_settled, http_gql

QUEUE_EVENTS = """
subscription($queueId: ID, $after: String) {
  queueEvents(queueId: $queueId, after: $after) { cursor kind entityId }
}
"""
MODES = pytest.mark.parametrize("single", [False, True], ids=["distinct", "single"])


def subscriber_args(url: str, token: str, queue_id: str, *, single: bool, retries: int = 3) -> str:
    return json.dumps(
        {
            "url": f"{url}/graphql",
            "token": token,
            "single": single,
            "query": QUEUE_EVENTS,
            "variables": {"queueId": queue_id},
            "field": "queueEvents",
            "retries": retries,
        }
    )


def created(sub: NodeProcess) -> list[str]:
    """The ids of the tasks whose ``task.created`` the subscriber received, in order."""
    events = [
        line["value"]["data"]["queueEvents"]
        for line in sub.of("next")
        if "data" in line["value"] and line["value"]["data"]
    ]
    return [e["entityId"] for e in events if e["kind"] == "task.created"]


@MODES
async def test_events_arrive_and_a_cut_stream_resumes_with_last_event_id(
    module_server: ModuleServer, single: bool
) -> None:
    server, sessionmaker = module_server.server, module_server.sessionmaker
    async with http_gql(server, sessionmaker) as gql:
        world = await build_world(gql, reviewer_names=unique_name("reviewer"))
        await feed_settled(sessionmaker)
        async with cutting_proxy(server.port) as proxy:
            url = f"http://127.0.0.1:{proxy.port}"
            args = subscriber_args(url, world.reviewers[0], world.queue_id, single=single)
            async with node_script("sse.mjs", args) as sub:
                await sub.until(lambda s: bool(s.of("connected")))
                await server.subscriptions_live(1)
                before = await create_tasks(gql, world.admin, world.queue_id, 2, "before")
                await sub.until(lambda s: len(created(s)) == 2)

                proxy.cut()
                await server.subscriptions_live(0)
                missed = await create_tasks(gql, world.admin, world.queue_id, 3, "missed")
                await feed_settled(sessionmaker)
                proxy.restore()
                await sub.until(lambda s: len(s.of("connected")) == 2)
                await sub.until(lambda s: len(created(s)) == 5)
                after = await create_tasks(gql, world.admin, world.queue_id, 2, "after")
                await sub.until(lambda s: len(created(s)) == 7)

    assert [line["reconnected"] for line in sub.of("connected")] == [False, True]
    assert created(sub) == before + missed + after
    assert not sub.of("error") and not sub.of("complete")


@MODES
async def test_a_bad_token_is_refused_with_a_code(
    module_server: ModuleServer, single: bool
) -> None:
    args = subscriber_args(module_server.server.url, "not-a-token", "q", single=single, retries=0)
    async with node_script("sse.mjs", args) as sub:
        await sub.until(lambda s: bool(s.of("error")))
    [error] = sub.of("error")
    assert error["status"] == 401
    if not single:  # single connection mode: the client gives up before it reads the body
        assert error["body"]["errors"][0]["extensions"]["code"] == "UNAUTHENTICATED"
    assert not sub.of("connected") and not sub.of("next")


@MODES
async def test_a_revoked_token_ends_the_stream_with_a_code(
    module_server: ModuleServer, single: bool
) -> None:
    server, sessionmaker = module_server.server, module_server.sessionmaker
    async with http_gql(server, sessionmaker) as gql:
        world = await build_world(gql, reviewer_names=unique_name("reviewer"))
        reviewer = world.reviewers[0]
        await feed_settled(sessionmaker)
        args = subscriber_args(server.url, reviewer, world.queue_id, single=single)
        async with node_script("sse.mjs", args) as sub:
            await sub.until(lambda s: bool(s.of("connected")))
            await server.subscriptions_live(1)
            seen = await create_tasks(gql, world.admin, world.queue_id, 1, "seen")
            await sub.until(lambda s: len(created(s)) == 1)
            async with sessionmaker() as session:
                await revoke_token(work=UnitOfWork(session), token=reviewer)
            await sub.until(lambda s: bool(s.of("complete")))
            await server.subscriptions_live(0)

    assert created(sub) == seen
    last = sub.of("next")[-1]["value"]
    assert last["errors"][0]["extensions"]["code"] == "UNAUTHENTICATED"
    assert len(sub.of("connected")) == 1  # ended, not cut: the client does not come back
