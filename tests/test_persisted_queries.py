"""Persisted queries: Apollo's automatic persisted queries over HTTP, and the allow-list an
operator may turn on so that only known documents run."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from httpx import ASGITransport, AsyncClient

from signoff.app import create_app
from signoff.config import Settings
from signoff.persisted import document_hash, load_allow_list
from tests.helpers import GraphQLClient

VIEWER = "query Me { viewer { actor { name } } }"
CURSOR = "query Cursor { changeFeedCursor }"


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
async def allow_listed(
    settings: Settings, clean_database: None, tmp_path: Path
) -> AsyncIterator[AsyncClient]:
    """The app with only VIEWER allowed."""
    path = tmp_path / "persisted.json"
    path.write_text(json.dumps({document_hash(VIEWER): VIEWER}))
    only = dataclasses.replace(
        settings, persisted_queries_file=str(path), persisted_queries_only=True
    )
    application = create_app(only)
    async with (
        application.router.lifespan_context(application),
        AsyncClient(transport=ASGITransport(app=application), base_url="http://x") as client,
    ):
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


def test_an_allow_list_entry_must_be_its_documents_hash(tmp_path: Path) -> None:
    path = tmp_path / "persisted.json"
    path.write_text(json.dumps({document_hash(CURSOR): VIEWER}))
    with pytest.raises(ValueError, match="is not the sha256 of its document"):
        load_allow_list(str(path))
