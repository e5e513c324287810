"""Plain JSON POSTs (``signoff.web.plain_post``) are answered past Strawberry's view: every
such request, and every request that only looks like one, answers exactly as the view
answers it (the reference): status, headers, body (each error's ``requestId`` aside) and
the request's log line."""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest
from httpx import AsyncClient

from signoff.web.app import SignoffGraphQL
from tests.helpers import GraphQLClient, build_world

PAGE = (
    "query Page($first: Int) { proposals(first: $first) { edges { cursor node { id state "
    "subject payload target { id name } approvals { decision approver { name } } "
    "task { id state } } } pageInfo { hasNextPage endCursor } } }"
)
ONE = "query One($id: ID!) { proposal(id: $id) { id state actionCode approvalCount } }"
JSON = {"content-type": "application/json"}
# Headers of the log line that differ on every request.
VARYING = {"x-request-id", "content-length"}


def requests(world_ids: dict[str, str]) -> list[tuple[Any, dict[str, str]]]:
    """(body, headers) pairs: bodies as JSON values, or bytes sent as they are."""
    proposal = world_ids["proposal"]
    reviewer = {"authorization": f"Bearer {world_ids['reviewer']}"}
    agent = {"authorization": f"Bearer {world_ids['agent']}"}
    plain = {**JSON, **reviewer}
    return [
        ({"query": "{ viewer { queueIds } }"}, plain),
        ({"query": PAGE, "variables": {"first": 3}}, plain),
        ({"query": PAGE, "variables": {"first": 3}, "operationName": "Page"}, plain),
        ({"query": PAGE, "variables": None, "operationName": None}, plain),
        ({"query": ONE, "variables": {"id": proposal}}, plain),
        ({"query": ONE, "variables": {"id": "missing"}}, plain),
        ({"query": ONE, "variables": {}}, plain),  # a variable missing: a request error
        ({"query": ONE, "variables": {"id": 5.5}}, plain),
        ({"query": ONE, "variables": {"id": proposal}, "operationName": "Other"}, plain),
        ({"query": f"{ONE} query Two {{ viewer {{ queueIds }} }}"}, plain),
        ({"query": "{ viewer { nope } }"}, plain),
        ({"query": "{ viewer { queueIds }"}, plain),  # a syntax error
        ({"query": "   "}, plain),
        ({"query": ""}, plain),
        ({"query": None}, plain),
        ({"query": 5}, plain),
        ({"query": "{ __schema { queryType { name } } }"}, plain),
        ({"query": "subscription { queueEvents { kind } }"}, plain),
        ({"query": "mutation { proposeAction(input: {}) { replayed } }"}, {**JSON, **agent}),
        (
            {"query": 'mutation { decideProposal(input: {proposalId: "x"}) { task { id } } }'},
            plain,
        ),
        ({"query": "{ viewer { queueIds } }"}, JSON),  # no token
        ({"query": "{ viewer { queueIds } }"}, {**JSON, "authorization": "Bearer nope"}),
        ({"query": "{ viewer { queueIds } }", "extensions": {}}, plain),
        ({"query": "{ viewer { queueIds } }", "other": 1}, plain),
        ([{"query": "{ viewer { queueIds } }"}], plain),
        ("{ viewer { queueIds } }", plain),
        (b"{not json", plain),
        (b"\xff\xfe", plain),
        ({"query": "{ viewer { queueIds } }"}, {**plain, "content-type": "text/plain"}),
        (
            {"query": "{ viewer { queueIds } }"},
            {**plain, "content-type": "application/json; charset=utf-8"},
        ),
        (
            {"query": "{ viewer { queueIds } }"},
            {**plain, "content-type": "Application/JSON"},
        ),
        ({"query": "{ viewer { queueIds } }"}, {**plain, "accept": "application/json"}),
        ({"query": "{ nope }"}, {**plain, "accept": "application/graphql-response+json"}),
        ({"query": "{ viewer { queueIds } }"}, {**plain, "accept": "text/event-stream"}),
        ({"query": ONE, "variables": {"id": proposal}, "operationName": 7}, plain),
        ({"query": ONE, "variables": [proposal]}, plain),
    ]


async def answer(
    client: AsyncClient, body: Any, headers: dict[str, str], caplog: pytest.LogCaptureFixture
) -> tuple[int, dict[str, str], Any, dict[str, Any]]:
    content = body if isinstance(body, bytes) else json.dumps(body).encode()
    caplog.clear()
    response = await client.post("/graphql", content=content, headers=headers)
    try:
        answered: Any = response.json()
    except ValueError:
        answered = response.text
    for error in answered.get("errors", []) if isinstance(answered, dict) else []:
        error.get("extensions", {}).pop("requestId", None)
    kept = {k: v for k, v in response.headers.items() if k not in VARYING}
    (line,) = [r for r in caplog.records if r.name == "signoff.requests"]
    logged = {key: getattr(line, key) for key in ("status", "actor_id", "operation", "error_code")}
    return response.status_code, kept, answered, logged


async def test_plain_posts_answer_as_the_view_does(
    gql: GraphQLClient,
    client: AsyncClient,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="signoff.requests")
    world = await build_world(gql, reviewers=1)
    proposal = (await world.propose({"amount": 5, "currency": "EUR"}))["proposal"]["id"]
    ids = {"proposal": proposal, "reviewer": world.reviewers[0], "agent": world.agent}
    plain_answers = 0
    answer_plain = SignoffGraphQL.answer_plain

    async def counted(view: SignoffGraphQL, request: Any) -> Any:
        nonlocal plain_answers
        response = await answer_plain(view, request)
        plain_answers += response is not None
        return response

    async def never(view: SignoffGraphQL, request: Any) -> None:
        return None

    for body, headers in requests(ids):
        monkeypatch.setattr(SignoffGraphQL, "answer_plain", counted)
        served = await answer(client, body, headers, caplog)
        monkeypatch.setattr(SignoffGraphQL, "answer_plain", never)
        reference = await answer(client, body, headers, caplog)
        assert served == reference, (body, headers)
    # Most of them took the plain path; the rest were the view's from the start.
    assert plain_answers >= 20
