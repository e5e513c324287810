"""The floor for ``bench/api.py``: a plain Starlette app making the same database round
trips as Signoff for each benchmarked operation, with psycopg on a pool of the same size,
and answering a JSON document of the same shape and size. No GraphQL, no ORM.

- ``/hello``: a plain JSON hello of the same shape as ``{ viewer { queueIds } }``'s
  answer, with no database work (the issue's "plain Starlette JSON hello").

The others, like Signoff, first look the bearer token up (actor and queue memberships in
one query), then:

- ``/page``: the newest 21 proposals, then their targets, approvals, approvers and tasks
  (one query each, as Signoff's DataLoaders make them);
- ``/one``: one proposal, then the same four;
- ``/propose``: in one transaction, the idempotency record lookup, the target, inserts of
  the proposal, its task, the idempotency record, an audit event and a change event
  (change events go to ``floor_change_events``, a copy of the table: ``own_change_events``);
- ``/decide``: in one transaction, the proposal (locked), its task, inserts of the
  approval, updates of the proposal and the task, inserts of an audit and a change event.

``GET /stats`` answers the statements sent so far.

    python bench/api_floor.py --port 8001 --database-url postgresql://...
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import uuid
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import uvicorn
from psycopg.rows import dict_row
from psycopg.types.json import Jsonb
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

POOL_SIZE = 20
PAGE = 20
STATEMENTS = 0

AUTH = """SELECT actors.id, actors.name, actors.role, queue_memberships.queue_id
FROM actors JOIN api_tokens ON api_tokens.actor_id = actors.id
LEFT OUTER JOIN queue_memberships ON queue_memberships.actor_id = actors.id
WHERE api_tokens.token_hash = %s AND api_tokens.revoked_at IS NULL"""
PROPOSAL_COLUMNS = """id, state, action_code, subject, payload, payload_digest,
required_approvals, approval_count, expires_at, created_at, target_id, queue_id"""


class Pool:
    """A fixed set of connections handed out one request at a time."""

    def __init__(self, url: str, size: int) -> None:
        self.url, self.size = url, size
        self.free: asyncio.Queue[psycopg.AsyncConnection[dict[str, Any]]] = asyncio.Queue()

    async def open(self) -> None:
        for _ in range(self.size):
            conn = await psycopg.AsyncConnection.connect(self.url, row_factory=dict_row)
            self.free.put_nowait(conn)

    @asynccontextmanager
    async def connection(self) -> AsyncIterator[psycopg.AsyncConnection[dict[str, Any]]]:
        conn = await self.free.get()
        try:
            yield conn
        finally:
            self.free.put_nowait(conn)


def pool_of(request: Request) -> Pool:
    pool: Pool = request.app.state.pool
    return pool


async def fetch(conn: psycopg.AsyncConnection[Any], sql: str, *params: Any) -> list[Any]:
    global STATEMENTS
    STATEMENTS += 1
    return await (await conn.execute(sql, params)).fetchall()


async def viewer(conn: psycopg.AsyncConnection[Any], request: Request) -> dict[str, Any]:
    token = request.headers.get("authorization", "").removeprefix("Bearer ")
    rows = await fetch(conn, AUTH, hashlib.sha256(token.encode()).hexdigest())
    await conn.commit()
    if not rows:
        raise HTTPException(401, "The API token is not valid.")
    return {"actor": rows[0], "queue_ids": sorted(r["queue_id"] for r in rows if r["queue_id"])}


def iso(moment: datetime | None) -> str | None:
    return None if moment is None else moment.isoformat()


async def nested(conn: psycopg.AsyncConnection[Any], proposals: Sequence[Any]) -> list[Any]:
    """The page's nodes, with their targets, approvals, approvers and tasks."""
    ids = [p["id"] for p in proposals]
    targets = await fetch(
        conn,
        "SELECT id, name, approval_mode FROM targets WHERE id = ANY(%s)",
        list({p["target_id"] for p in proposals}),
    )
    approvals = await fetch(
        conn,
        "SELECT id, proposal_id, approver_id, decision, payload_digest, created_at "
        "FROM approvals WHERE proposal_id = ANY(%s) ORDER BY created_at",
        ids,
    )
    actors = await fetch(
        conn,
        "SELECT id, name FROM actors WHERE id = ANY(%s)",
        list({a["approver_id"] for a in approvals}),
    )
    tasks = await fetch(
        conn,
        "SELECT id, proposal_id, state, priority FROM human_tasks WHERE proposal_id = ANY(%s)",
        ids,
    )
    await conn.commit()
    target_of = {t["id"]: t for t in targets}
    actor_of = {a["id"]: a for a in actors}
    task_of = {t["proposal_id"]: t for t in tasks}
    return [node(p, target_of, approvals, actor_of, task_of) for p in proposals]


def node(
    p: dict[str, Any],
    target_of: dict[str, Any],
    approvals: list[Any],
    actor_of: dict[str, Any],
    task_of: dict[str, Any],
) -> dict[str, Any]:
    target = target_of[p["target_id"]]
    task = task_of.get(p["id"])
    return {
        "id": p["id"],
        "state": p["state"],
        "actionCode": p["action_code"],
        "subject": p["subject"],
        "payload": p["payload"],
        "payloadDigest": p["payload_digest"],
        "requiredApprovals": p["required_approvals"],
        "approvalCount": p["approval_count"],
        "expiresAt": iso(p["expires_at"]),
        "createdAt": iso(p["created_at"]),
        "target": {
            "id": target["id"],
            "name": target["name"],
            "approvalMode": target["approval_mode"],
        },
        "approvals": [
            {
                "id": a["id"],
                "decision": a["decision"],
                "payloadDigest": a["payload_digest"],
                "createdAt": iso(a["created_at"]),
                "approver": {"id": a["approver_id"], "name": actor_of[a["approver_id"]]["name"]},
            }
            for a in approvals
            if a["proposal_id"] == p["id"]
        ],
        "task": None
        if task is None
        else {"id": task["id"], "state": task["state"], "priority": task["priority"]},
    }


def answer(data: dict[str, Any]) -> Response:
    return Response(json.dumps({"data": data}), media_type="application/json")


HELLO = json.dumps({"data": {"viewer": {"queueIds": [str(uuid.UUID(int=i)) for i in range(20)]}}})


async def hello(request: Request) -> Response:
    return Response(HELLO, media_type="application/json")


async def page(request: Request) -> Response:
    async with pool_of(request).connection() as conn:
        await viewer(conn, request)
        rows = await fetch(
            conn,
            f"SELECT {PROPOSAL_COLUMNS} FROM proposals ORDER BY created_at DESC, id DESC LIMIT %s",
            PAGE + 1,
        )
        nodes = await nested(conn, rows[:PAGE])
    edges = [{"cursor": n["id"], "node": n} for n in nodes]
    info = {"hasNextPage": len(rows) > PAGE, "endCursor": edges[-1]["cursor"] if edges else None}
    return answer({"proposals": {"edges": edges, "pageInfo": info}})


async def one(request: Request) -> Response:
    body = await request.json()
    async with pool_of(request).connection() as conn:
        await viewer(conn, request)
        rows = await fetch(
            conn, f"SELECT {PROPOSAL_COLUMNS} FROM proposals WHERE id = %s", body["variables"]["id"]
        )
        (found,) = await nested(conn, rows)
    return answer({"proposal": found})


async def propose(request: Request) -> Response:
    body = await request.json()
    given = body["variables"]["input"]
    now = datetime.now(UTC)
    async with pool_of(request).connection() as conn:
        seen = await viewer(conn, request)
        actor_id = seen["actor"]["id"]
        await fetch(
            conn,
            "SELECT id FROM idempotency_records"
            " WHERE actor_id = %s AND operation = %s AND key = %s",
            actor_id,
            "proposeAction",
            given["operationKey"],
        )
        (target,) = await fetch(
            conn,
            "SELECT id, queue_id, required_approvals FROM targets WHERE id = %s",
            given["targetId"],
        )
        proposal_id, task_id = str(uuid.uuid4()), str(uuid.uuid4())
        digest = "sha256:" + hashlib.sha256(json.dumps(given, sort_keys=True).encode()).hexdigest()
        expires = now + timedelta(days=1)
        await fetch(
            conn,
            "INSERT INTO proposals (id, target_id, queue_id, proposed_by_id, action_code, subject,"
            " payload, preconditions, payload_digest, request_digest, operation_key, state,"
            " version, required_approvals, approval_count, expires_at, delivery_attempt_count,"
            " delivery_lease, delivery_terminal, created_at, updated_at) VALUES (%s, %s, %s, %s,"
            " %s, %s, %s, %s, %s, %s, %s, 'APPROVAL_REQUIRED', 1, %s, 0, %s, 0, 0, false, %s, %s)"
            " RETURNING id",
            proposal_id,
            target["id"],
            target["queue_id"],
            actor_id,
            given["actionCode"],
            Jsonb(given.get("subject") or {}),
            Jsonb(given["payload"]),
            Jsonb({}),
            digest,
            digest,
            given["operationKey"],
            target["required_approvals"],
            expires,
            now,
            now,
        )
        await fetch(
            conn,
            "INSERT INTO human_tasks (id, queue_id, kind, state, version, title, context,"
            " response_schema, priority, due_at, proposal_id, created_by_id, created_at,"
            " updated_at) VALUES (%s, %s, 'APPROVAL', 'OPEN', 1, %s, %s, %s, 0, %s, %s, %s, %s,"
            " %s) RETURNING id",
            task_id,
            target["queue_id"],
            given["actionCode"],
            Jsonb({}),
            Jsonb({}),
            expires,
            proposal_id,
            actor_id,
            now,
            now,
        )
        await fetch(
            conn,
            "INSERT INTO idempotency_records (id, actor_id, operation, key, request_digest,"
            " result, created_at) VALUES (%s, %s, 'proposeAction', %s, %s, %s, %s) RETURNING id",
            str(uuid.uuid4()),
            actor_id,
            given["operationKey"],
            digest,
            Jsonb({"proposal_id": proposal_id}),
            now,
        )
        await audit_and_event(
            conn, actor_id, "proposal.proposed", proposal_id, target["queue_id"], now
        )
        await conn.commit()
    created = {
        "id": proposal_id,
        "state": "APPROVAL_REQUIRED",
        "payloadDigest": digest,
        "expiresAt": iso(expires),
    }
    return answer(
        {
            "proposeAction": {
                "replayed": False,
                "proposal": created,
                "task": {"id": task_id, "state": "OPEN"},
            }
        }
    )


async def decide(request: Request) -> Response:
    body = await request.json()
    given = body["variables"]["input"]
    now = datetime.now(UTC)
    async with pool_of(request).connection() as conn:
        seen = await viewer(conn, request)
        actor_id = seen["actor"]["id"]
        (proposal,) = await fetch(
            conn, f"SELECT {PROPOSAL_COLUMNS} FROM proposals WHERE id = %s", given["proposalId"]
        )
        (task,) = await fetch(
            conn, "SELECT id, state FROM human_tasks WHERE proposal_id = %s", proposal["id"]
        )
        approval_id = str(uuid.uuid4())
        await fetch(
            conn,
            "INSERT INTO approvals (id, proposal_id, approver_id, person, decision,"
            " payload_digest, created_at) VALUES (%s, %s, %s, 'actor:' || %s, 'APPROVED', %s, %s)"
            # wrk may send a decision twice when its list runs out: the same round trip.
            " ON CONFLICT DO NOTHING RETURNING id",
            approval_id,
            proposal["id"],
            actor_id,
            actor_id,
            given["payloadDigest"],
            now,
        )
        (moved,) = await fetch(
            conn,
            "UPDATE proposals SET approval_count = approval_count + 1, version = version + 1,"
            " updated_at = %s WHERE id = %s AND state = 'APPROVAL_REQUIRED'"
            " RETURNING state, approval_count",
            now,
            proposal["id"],
        )
        (settled,) = await fetch(
            conn,
            "UPDATE human_tasks SET state = 'OPEN', assignee_id = NULL, version = version + 1,"
            " updated_at = %s WHERE id = %s RETURNING state",
            now,
            task["id"],
        )
        await audit_and_event(
            conn, actor_id, "approval.approved", proposal["id"], proposal["queue_id"], now
        )
        await conn.commit()
    return answer(
        {
            "decideProposal": {
                "proposal": {"state": moved["state"], "approvalCount": moved["approval_count"]},
                "approval": {"decision": "APPROVED", "approver": {"name": seen["actor"]["name"]}},
                "task": {"state": settled["state"]},
            }
        }
    )


async def audit_and_event(
    conn: psycopg.AsyncConnection[Any],
    actor_id: str,
    action: str,
    proposal_id: str,
    queue_id: str,
    now: datetime,
) -> None:
    await fetch(
        conn,
        "INSERT INTO audit_events (id, action, actor_id, target_type, target_id, details,"
        " created_at) VALUES (%s, %s, %s, 'proposal', %s, %s, %s) RETURNING id",
        str(uuid.uuid4()),
        action,
        actor_id,
        proposal_id,
        Jsonb({}),
        now,
    )
    await fetch(
        conn,
        "INSERT INTO floor_change_events (id, kind, entity_type, entity_id, entity_version,"
        " queue_id, proposal_id, actor_id, snapshot, occurred_at) VALUES (%s, %s, 'proposal',"
        " %s, 1, %s, %s, %s, %s, %s) RETURNING id",
        str(uuid.uuid4()),
        action,
        proposal_id,
        queue_id,
        proposal_id,
        actor_id,
        Jsonb({"id": proposal_id}),
        now,
    )


async def stats(request: Request) -> Response:
    return Response(json.dumps({"statements": STATEMENTS}), media_type="application/json")


async def own_change_events(database_url: str) -> None:
    """A table like ``change_events`` (its columns, defaults and indexes; it has no foreign
    keys) for the floor's change events. In ``change_events`` they would wait for a
    cursor, and Signoff's relay would stamp and publish them all at its next commit: work
    done for the floor, and counted against Signoff (its proposeAction at one client
    measured 117 req/s in the round before the floor's runs, 86 in those after)."""
    async with await psycopg.AsyncConnection.connect(database_url, autocommit=True) as conn:
        await conn.execute(
            "CREATE TABLE IF NOT EXISTS floor_change_events (LIKE change_events INCLUDING ALL)"
        )


def app(database_url: str) -> Starlette:
    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        await own_change_events(database_url)
        app.state.pool = Pool(database_url, POOL_SIZE)
        await app.state.pool.open()
        yield

    routes = [
        Route("/hello", hello, methods=["POST"]),
        Route("/page", page, methods=["POST"]),
        Route("/one", one, methods=["POST"]),
        Route("/propose", propose, methods=["POST"]),
        Route("/decide", decide, methods=["POST"]),
        Route("/stats", stats),
    ]
    return Starlette(routes=routes, lifespan=lifespan)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--database-url", required=True)
    args = parser.parse_args()
    uvicorn.run(
        app(args.database_url),
        host=args.host,
        port=args.port,
        log_level="warning",
        access_log=False,
    )


if __name__ == "__main__":
    main()
