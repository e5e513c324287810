"""``application/graphql-response+json`` for the clients that ask for it, with the statuses
the GraphQL-over-HTTP specification gives request errors; ``application/json`` as ever
for everyone else."""

from __future__ import annotations

import pytest
from httpx import AsyncClient

from signoff.schema.serving.media import GRAPHQL_RESPONSE, JSON, preferred_media_type

NEW = f"{GRAPHQL_RESPONSE}, {JSON};q=0.9"  # what Apollo Client and graphql-http send


@pytest.mark.parametrize(
    ("accept", "media_type"),
    [
        (None, JSON),
        ("*/*", JSON),
        ("application/json", JSON),
        ("text/html", JSON),
        (GRAPHQL_RESPONSE, GRAPHQL_RESPONSE),
        (NEW, GRAPHQL_RESPONSE),
        (f"{JSON}, {GRAPHQL_RESPONSE};q=0.5", JSON),
        (f"{GRAPHQL_RESPONSE};q=0, */*", JSON),
        (f"{GRAPHQL_RESPONSE};q=oops", JSON),
    ],
)
def test_the_media_type_follows_accept(accept: str | None, media_type: str) -> None:
    assert preferred_media_type(accept) == media_type


async def ask(client: AsyncClient, accept: str, query: str, variables: object = None) -> object:
    response = await client.post(
        "/graphql",
        json={"query": query, "variables": variables},
        headers={"accept": accept},
    )
    media_type = response.headers["content-type"].split(";")[0]
    return response.status_code, media_type, response.json()


@pytest.mark.parametrize(
    ("query", "variables"),
    [
        ("{ viewer {", None),  # does not parse
        ("{ noSuchField }", None),  # does not validate
        ("query($id: ID!) { node(id: $id) { id } }", {"id": {"not": "an id"}}),  # variables
    ],
)
async def test_a_request_error_is_a_400_without_data_for_the_new_media_type(
    client: AsyncClient, query: str, variables: object
) -> None:
    status, media_type, body = await ask(client, NEW, query, variables)
    assert (status, media_type) == (400, GRAPHQL_RESPONSE)
    assert isinstance(body, dict) and "data" not in body and body["errors"][0]["message"]

    status, media_type, body = await ask(client, "application/json", query, variables)
    assert (status, media_type) == (200, JSON)
    assert isinstance(body, dict) and body["data"] is None and body["errors"]


async def test_an_executed_operation_is_a_200_in_either_media_type(client: AsyncClient) -> None:
    for accept, media_type in ((NEW, GRAPHQL_RESPONSE), ("*/*", JSON)):
        assert await ask(client, accept, "{ __typename }") == (
            200,
            media_type,
            {"data": {"__typename": "Query"}},
        )
    # An error in execution (no token) is the result's, not the request's: 200, with data.
    status, media_type, body = await ask(client, NEW, "{ viewer { actor { name } } }")
    assert (status, media_type) == (200, GRAPHQL_RESPONSE)
    assert isinstance(body, dict) and "data" in body
    assert body["errors"][0]["extensions"]["code"] == "UNAUTHENTICATED"
