"""Small typed builders for test data, all going through the public API or the CLI's resolver."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from httpx import AsyncClient
from sqlalchemy import event, update
from sqlmodel import col
from starlette.applications import Starlette

from signoff import clock
from signoff.database import READ_ONLY, SessionMaker
from signoff.models import ApiToken, ChangeKind, Role
from signoff.resolvers.access.actors import create_token, hash_token
from signoff.resolvers.core.transitions import Happening, record
from signoff.resolvers.core.work import UnitOfWork


class GraphQLError(AssertionError):
    def __init__(self, errors: list[dict[str, Any]]) -> None:
        super().__init__(errors)
        self.errors = errors

    @property
    def code(self) -> str:
        return str(self.errors[0]["extensions"]["code"])

    @property
    def extensions(self) -> dict[str, Any]:
        extensions: dict[str, Any] = self.errors[0]["extensions"]
        return extensions


@dataclass
class GraphQLClient:
    """Talks to the app over HTTP like any client; creates tokens as the CLI does."""

    http: AsyncClient
    sessionmaker: SessionMaker

    async def raw(
        self, query: str, variables: dict[str, Any] | None = None, token: str | None = None
    ) -> dict[str, Any]:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        response = await self.http.post(
            "/graphql", json={"query": query, "variables": variables or {}}, headers=headers
        )
        assert response.status_code == 200, response.text
        body: dict[str, Any] = response.json()
        return body

    async def comparable(
        self, query: str, variables: dict[str, Any], token: str | None
    ) -> tuple[int, Any]:
        """The status and body of an operation, with each error's ``requestId`` (which
        differs on every request) taken out: two paths' answers compare equal."""
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        response = await self.http.post(
            "/graphql", json={"query": query, "variables": variables}, headers=headers
        )
        body = response.json()
        for error in body.get("errors", []):
            error.get("extensions", {}).pop("requestId", None)
        return response.status_code, body

    async def __call__(
        self, query: str, variables: dict[str, Any] | None = None, token: str | None = None
    ) -> dict[str, Any]:
        """Run an operation that must succeed; return its ``data``."""
        body = await self.raw(query, variables, token)
        if body.get("errors"):
            raise GraphQLError(body["errors"])
        data: dict[str, Any] = body["data"]
        return data

    async def error(
        self, query: str, variables: dict[str, Any] | None = None, token: str | None = None
    ) -> GraphQLError:
        """Run an operation that must be refused; return the error."""
        body = await self.raw(query, variables, token)
        assert body.get("errors"), f"expected an error, got {body}"
        return GraphQLError(body["errors"])

    async def token(
        self, role: Role | str, name: str | None = None, queues: Sequence[str] = ()
    ) -> str:
        async with self.sessionmaker() as session:
            created = await create_token(
                work=UnitOfWork(session),
                name=name or f"{Role(role).value}-{uuid.uuid4().hex[:6]}",
                role=Role(role),
                queue_slugs=queues,
            )
        return created.token


CREATE_QUEUE = """
mutation($input: CreateQueueInput!) { createQueue(input: $input) { id slug name claimTtlSeconds } }
"""

REGISTER_TARGET = """
mutation($input: RegisterTargetInput!) {
  registerTarget(input: $input) { signingSecret target { id name approvalMode requiredApprovals } }
}
"""

PROPOSE = """
mutation($input: ProposeActionInput!) {
  proposeAction(input: $input) {
    replayed
    proposal { id state payloadDigest operationKey requiredApprovals expiresAt }
    task { id state kind }
  }
}
"""

DECIDE = """
mutation($input: DecideProposalInput!) {
  decideProposal(input: $input) {
    replayed
    proposal { id state approvalCount }
    approval { id decision reason approver { name } }
    task { id state }
  }
}
"""

CLAIM = """mutation($id: ID!) {
  claimTask(input: {taskId: $id}) { id state claimExpiresAt assignee { name } }
}"""

COMPLETE = """
mutation($input: CompleteTaskInput!) {
  completeTask(input: $input) { replayed task { id state response } }
}
"""

PAYMENT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"amount": {"type": "integer", "minimum": 1}, "currency": {"type": "string"}},
    "required": ["amount", "currency"],
}


@dataclass
class World:
    """An operator-built queue and target, with an agent and reviewers of the queue."""

    gql: GraphQLClient
    admin: str
    agent: str
    reviewers: list[str]
    queue_id: str
    queue_slug: str
    target_id: str
    signing_secret: str

    async def propose(
        self,
        payload: dict[str, Any] | None = None,
        *,
        operation_key: str | None = None,
        **extra: Any,
    ) -> dict[str, Any]:
        data = await self.gql(
            PROPOSE,
            {
                "input": {
                    "targetId": self.target_id,
                    "actionCode": "refund.create",
                    "subject": {"order": "o-1"},
                    "payload": payload or {"amount": 100, "currency": "EUR"},
                    "operationKey": operation_key or uuid.uuid4().hex,
                    **extra,
                }
            },
            self.agent,
        )
        result: dict[str, Any] = data["proposeAction"]
        return result

    async def decide(
        self, reviewer: str, proposal: dict[str, Any], decision: str = "APPROVED", **extra: Any
    ) -> dict[str, Any]:
        data = await self.gql(
            DECIDE,
            {
                "input": {
                    "proposalId": proposal["id"],
                    "decision": decision,
                    "payloadDigest": proposal["payloadDigest"],
                    **extra,
                }
            },
            reviewer,
        )
        result: dict[str, Any] = data["decideProposal"]
        return result


CREATE_TASK = "mutation($i: CreateTaskInput!) { createTask(input: $i) { id } }"


async def create_tasks(
    gql: GraphQLClient, admin: str, queue_id: str, count: int, label: str = "t"
) -> list[str]:
    """``count`` REVIEW tasks in the queue, made one after the other; their ids in order."""
    ids = []
    for i in range(count):
        given = {"queueId": queue_id, "kind": "REVIEW", "title": f"{label}-{i}"}
        ids.append((await gql(CREATE_TASK, {"i": given}, admin))["createTask"]["id"])
    return ids


def unique_name(prefix: str) -> str:
    """A name no other test gives, for actors of a world that shares its database."""
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


async def build_world(
    gql: GraphQLClient,
    *,
    reviewers: int = 2,
    required_approvals: int = 1,
    approval_mode: str = "HUMAN",
    url: str | None = "http://127.0.0.1:9/hook",
    output_schema: dict[str, Any] | None = None,
    queue_options: dict[str, Any] | None = None,
    reviewer_names: str = "reviewer",
    slug: str | None = None,
    **target: Any,
) -> World:
    """A queue (``slug``, or one of its own) with a target and ``reviewers`` reviewers named
    ``<reviewer_names>-0``, ... (worlds that share a database give theirs names of their
    own)."""
    admin = await gql.token(Role.ADMIN, name="admin")
    slug = slug or f"q-{uuid.uuid4().hex[:8]}"
    queue = (
        await gql(
            CREATE_QUEUE,
            {"input": {"slug": slug, "name": "Payments", **(queue_options or {})}},
            admin,
        )
    )["createQueue"]
    registered = (
        await gql(
            REGISTER_TARGET,
            {
                "input": {
                    "name": f"refunds-{uuid.uuid4().hex[:6]}",
                    "url": url,
                    "inputSchema": PAYMENT_SCHEMA,
                    "outputSchema": output_schema,
                    "approvalMode": approval_mode,
                    "queueId": queue["id"],
                    "requiredApprovals": required_approvals,
                    **target,
                }
            },
            admin,
        )
    )["registerTarget"]
    return World(
        gql=gql,
        admin=admin,
        agent=await gql.token(Role.AGENT, name="agent"),
        reviewers=[
            await gql.token(Role.REVIEWER, name=f"{reviewer_names}-{i}", queues=[slug])
            for i in range(reviewers)
        ],
        queue_id=queue["id"],
        queue_slug=slug,
        target_id=registered["target"]["id"],
        signing_secret=registered["signingSecret"],
    )


def record_event(
    work: UnitOfWork,
    *,
    kind: ChangeKind,
    entity_type: str,
    entity_id: str,
    queue_id: str | None = None,
    snapshot: dict[str, Any] | None = None,
) -> str:
    """A change event written the way business rules write theirs (no audit record);
    returns its id (it is inserted when ``work`` commits)."""
    event_id = record(
        work,
        Happening(
            entity_type=entity_type,
            entity_id=entity_id,
            actor_id=None,
            kind=kind,
            queue_id=queue_id,
            snapshot=snapshot or {},
        ),
    )
    assert event_id is not None
    return event_id


def _read_only(options: Mapping[str, Any]) -> bool:
    """Whether a connection is ``database.read_only``'s: marked on SQLite, in autocommit
    on PostgreSQL."""
    return bool(options.get(READ_ONLY, False)) or options.get("isolation_level") == "AUTOCOMMIT"


@contextmanager
def statements_sent(
    app: Starlette, keep: Callable[[str], bool] = lambda _: True, *, reads_only: bool = False
) -> Iterator[list[str]]:
    """Every SQL statement the app's engine sends meanwhile that ``keep`` accepts (with
    ``reads_only``, only those of read-only sessions: queries, frames)."""
    sent: list[str] = []

    def note(conn: Any, _cursor: Any, statement: str, *_: Any) -> None:
        if reads_only and not _read_only(conn.get_execution_options()):
            return
        if keep(statement):
            sent.append(statement)

    engine = app.state.engine.sync_engine
    event.listen(engine, "before_cursor_execute", note)
    try:
        yield sent
    finally:
        event.remove(engine, "before_cursor_execute", note)


async def revoke_by_hand(sessionmaker: SessionMaker, token: str) -> None:
    """Revoke ``token`` in the database, outside Signoff: no change event says so."""
    async with sessionmaker() as session:
        await session.exec(
            update(ApiToken)
            .where(col(ApiToken.token_hash) == hash_token(token))
            .values(revoked_at=clock.now())
        )
        await session.commit()
