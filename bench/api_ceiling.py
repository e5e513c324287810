"""Strawberry's ceiling for ``bench/api.py``: types of the same shape as Signoff's
(``Proposal`` with its target, approvals, approvers and task, ``Viewer``), with Signoff's
own GraphQL enums for states, decisions and approval modes, async resolvers as Signoff's
are, answering the bench's documents from memory: no database, no authentication, no
extensions but the parser and validation caches. What Strawberry and uvicorn cost by
themselves.

    python bench/api_ceiling.py --port 8002
"""

from __future__ import annotations

import argparse
from datetime import UTC, datetime, timedelta
from typing import Any

import strawberry
import uvicorn
from starlette.applications import Starlette
from starlette.routing import Route
from strawberry.asgi import GraphQL
from strawberry.extensions import ParserCache, ValidationCache
from strawberry.scalars import JSON

import signoff.schema.enums  # noqa: F401  (makes the model enums GraphQL enums)
from signoff.models import ApprovalMode, Decision, ProposalState, TaskState

NOW = datetime(2026, 12, 1, tzinfo=UTC)


@strawberry.type
class Actor:
    id: strawberry.ID
    name: str


@strawberry.type
class Target:
    id: strawberry.ID
    name: str
    approval_mode: ApprovalMode


@strawberry.type
class Approval:
    id: strawberry.ID
    decision: Decision
    payload_digest: str
    created_at: datetime

    @strawberry.field
    async def approver(self) -> Actor:
        return REVIEWER


@strawberry.type
class Task:
    id: strawberry.ID
    state: TaskState
    priority: int


@strawberry.type
class Proposal:
    id: strawberry.ID
    state: ProposalState
    action_code: str
    subject: JSON
    payload: JSON
    payload_digest: str
    required_approvals: int
    approval_count: int
    expires_at: datetime
    created_at: datetime

    @strawberry.field
    async def target(self) -> Target:
        return TARGET

    @strawberry.field
    async def approvals(self) -> list[Approval]:
        return [
            Approval(
                id=strawberry.ID(f"a-{self.id}"),
                decision=Decision.APPROVED,
                payload_digest=self.payload_digest,
                created_at=NOW,
            )
        ]

    @strawberry.field
    async def task(self) -> Task | None:
        return Task(id=strawberry.ID(f"t-{self.id}"), state=TaskState.OPEN, priority=0)


@strawberry.type
class PageInfo:
    has_next_page: bool
    end_cursor: str | None


@strawberry.type
class Edge:
    cursor: str
    node: Proposal


@strawberry.type
class ProposalConnection:
    edges: list[Edge]
    page_info: PageInfo


@strawberry.type
class Viewer:
    queue_ids: list[strawberry.ID]


def _proposal(i: int) -> Proposal:
    subject: Any = {"order": f"o-{i}"}
    payload: Any = {"amount": 1200 + i, "currency": "EUR", "note": "bench"}
    return Proposal(
        id=strawberry.ID(f"0193a8f0-0000-7000-8000-{i:012d}"),
        state=ProposalState.APPROVAL_REQUIRED,
        action_code="bench.run",
        subject=subject,
        payload=payload,
        payload_digest="sha256:" + "ab" * 32,
        required_approvals=3,
        approval_count=1,
        expires_at=NOW + timedelta(days=1),
        created_at=NOW,
    )


REVIEWER = Actor(id=strawberry.ID("r-1"), name="bench-reviewer-b")
TARGET = Target(id=strawberry.ID("t-1"), name="bench-0", approval_mode=ApprovalMode.HUMAN)
PROPOSALS = [_proposal(i) for i in range(21)]
QUEUE_IDS = [strawberry.ID(f"q-{i}") for i in range(20)]


@strawberry.type
class Query:
    @strawberry.field
    async def viewer(self) -> Viewer:
        return Viewer(queue_ids=QUEUE_IDS)

    @strawberry.field
    async def proposals(self, first: int = 20) -> ProposalConnection:
        page = PROPOSALS[:first]
        return ProposalConnection(
            edges=[Edge(cursor=f"c{i}", node=p) for i, p in enumerate(page)],
            page_info=PageInfo(has_next_page=True, end_cursor=f"c{len(page) - 1}"),
        )

    @strawberry.field
    async def proposal(self, id: strawberry.ID) -> Proposal:
        return PROPOSALS[0]


def app() -> Starlette:
    # Parsed and validated documents are cached, as Signoff caches them: the ceiling is
    # the best Strawberry does, not its uncached path.
    schema = strawberry.Schema(
        query=Query,
        extensions=[lambda: ParserCache(maxsize=256), lambda: ValidationCache(maxsize=256)],
    )
    graphql: Any = GraphQL(schema, graphql_ide=None)
    return Starlette(routes=[Route("/graphql", graphql, methods=["GET", "POST"])])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args()
    uvicorn.run(app(), host=args.host, port=args.port, log_level="warning", access_log=False)


if __name__ == "__main__":
    main()
