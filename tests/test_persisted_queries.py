"""Persisted queries: Apollo's automatic persisted queries over HTTP, and the allow-list an
operator may turn on so that only known documents run, over HTTP and websockets alike."""

from __future__ import annotations

import asyncio
import dataclasses
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from httpx import ASGITransport, AsyncClient
from starlette.applications import Starlette
from websockets.exceptions import ConnectionClosed

from signoff.config import Settings
from signoff.schema.serving.persisted import document_hash, load_allow_list
from signoff.web.app import create_app
from tests.helpers import GraphQLClient
from tests.live import open_transport_ws, serve_in_process

VIEWER = "query Me { viewer { actor { name } } }"
CURSOR = "query Cursor { changeFeedCursor }"
WATCH = "subscription Watch { queueEvents { kind } }"
INCIDENTS = "subscription Incidents { incidentEvents { kind } }"


def persisted(document_hash_: str, query: str | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {
        "extensions": {"persistedQuery": {"version": 1, "sha256Hash": document_hash_}}
    }
    if query is not None:
        body["query"] = query
    return body


async def post(client: AsyncClient, body: Any, token: str) -> tuple[int, dict[str, Any]]:
    response = await client.post(
        "/graphql", json=body, headers={"Authorization": f"Bearer {token}"}
    )
    answer: dict[str, Any] = response.json()
    return response.status_code, answer


async def test_a_hash_runs_once_the_server_has_seen_its_text(
    client: AsyncClient, gql: GraphQLClient
) -> None:
    token = await gql.token("reviewer", name="apq")
    key = document_hash(VIEWER)
    status, answer = await post(client, persisted(key), token)
    assert status == 200
    assert answer["errors"][0]["message"] == "PersistedQueryNotFound"
    assert answer["errors"][0]["extensions"]["code"] == "PERSISTED_QUERY_NOT_FOUND"

    status, answer = await post(client, persisted(key, VIEWER), token)
    assert (status, answer) == (200, {"data": {"viewer": {"actor": {"name": "apq"}}}})
    status, answer = await post(client, persisted(key), token)
    assert (status, answer) == (200, {"data": {"viewer": {"actor": {"name": "apq"}}}})


async def test_a_hash_that_is_not_the_text_is_refused(
    client: AsyncClient, gql: GraphQLClient
) -> None:
    token = await gql.token("reviewer", name="apq")
    status, answer = await post(client, persisted(document_hash(CURSOR), VIEWER), token)
    assert status == 400
    assert answer["errors"][0]["extensions"]["code"] == "PERSISTED_QUERY_HASH_MISMATCH"
    status, answer = await post(
        client, {"query": VIEWER, "extensions": {"persistedQuery": {"version": 2}}}, token
    )
    assert (status, answer["errors"][0]["extensions"]["code"]) == (
        400,
        "PERSISTED_QUERY_UNSUPPORTED",
    )


@pytest.fixture
async def allow_listed_app(
    settings: Settings, clean_database: None, tmp_path: Path
) -> AsyncIterator[Starlette]:
    """The app with only VIEWER and WATCH allowed, its lifespan running."""
    path = tmp_path / "persisted.json"
    path.write_text(json.dumps({document_hash(VIEWER): VIEWER, document_hash(WATCH): WATCH}))
    only = dataclasses.replace(
        settings, persisted_queries_file=str(path), persisted_queries_only=True
    )
    application = create_app(only)
    async with application.router.lifespan_context(application):
        yield application


@pytest.fixture
async def allow_listed(allow_listed_app: Starlette) -> AsyncIterator[AsyncClient]:
    transport = ASGITransport(app=allow_listed_app)
    async with AsyncClient(transport=transport, base_url="http://x") as client:
        yield client


async def test_with_the_allow_list_only_known_documents_run(
    allow_listed: AsyncClient, gql: GraphQLClient
) -> None:
    token = await gql.token("reviewer", name="listed")
    viewer = {"data": {"viewer": {"actor": {"name": "listed"}}}}
    assert await post(allow_listed, persisted(document_hash(VIEWER)), token) == (200, viewer)
    assert await post(allow_listed, {"query": VIEWER}, token) == (200, viewer)

    for body in (
        {"query": CURSOR},
        persisted(document_hash(CURSOR), CURSOR),
        [{"query": VIEWER}, {"query": CURSOR}],
    ):
        status, answer = await post(allow_listed, body, token)
        assert status == 400, body
        assert answer["errors"][0]["extensions"]["code"] == "PERSISTED_QUERY_NOT_ALLOWED"
    response = await allow_listed.get(
        "/graphql", params={"query": CURSOR}, headers={"Authorization": f"Bearer {token}"}
    )
    assert response.json()["errors"][0]["extensions"]["code"] == "PERSISTED_QUERY_NOT_ALLOWED"


async def answer(ws: Any, operation_id: str) -> dict[str, Any]:
    """The first message the server sends about this operation."""
    while True:
        message: dict[str, Any] = json.loads(await asyncio.wait_for(ws.recv(), timeout=10))
        if message.get("id") == operation_id:
            return message


async def test_with_the_allow_list_only_known_documents_run_over_websockets(
    allow_listed_app: Starlette, gql: GraphQLClient
) -> None:
    token = await gql.token("reviewer", name="listed")
    async with serve_in_process(allow_listed_app) as server:
        ws = await open_transport_ws(server.ws_url, {"authorization": f"Bearer {token}"})
        try:
            for operation_id, payload in (
                ("1", {"query": INCIDENTS}),
                ("2", persisted(document_hash(INCIDENTS), INCIDENTS)),
                ("3", {"query": CURSOR}),
            ):
                await ws.send(
                    json.dumps({"id": operation_id, "type": "subscribe", "payload": payload})
                )
                refused = await answer(ws, operation_id)
                assert refused["type"] == "error", payload
                assert refused["payload"][0]["extensions"]["code"] == "PERSISTED_QUERY_NOT_ALLOWED"

            # The socket stays open; a listed document runs, by its text or its hash alone.
            for operation_id, payload in (
                ("4", {"query": VIEWER}),
                ("5", persisted(document_hash(VIEWER))),
            ):
                await ws.send(
                    json.dumps({"id": operation_id, "type": "subscribe", "payload": payload})
                )
                assert await answer(ws, operation_id) == {
                    "id": operation_id,
                    "type": "next",
                    "payload": {"data": {"viewer": {"actor": {"name": "listed"}}}},
                }
            # A listed subscription by its hash alone is running: the same id again is 4409.
            subscribe = {"id": "6", "type": "subscribe", "payload": persisted(document_hash(WATCH))}
            await ws.send(json.dumps(subscribe))
            await ws.send(json.dumps(subscribe))
            with pytest.raises(ConnectionClosed):
                await answer(ws, "6")
            assert ws.close_code == 4409
        finally:
            await ws.close()


def test_an_allow_list_entry_must_be_its_documents_hash(tmp_path: Path) -> None:
    path = tmp_path / "persisted.json"
    path.write_text(json.dumps({document_hash(CURSOR): VIEWER}))
    with pytest.raises(ValueError, match="is not the sha256 of its document"):
        load_allow_list(str(path))
