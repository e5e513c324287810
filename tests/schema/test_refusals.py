"""Bodies and documents a careless or hostile client sends: each a coded JSON refusal that
changes nothing, on either database, with or without a token (issue 12)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from httpx import AsyncClient, Response
from sqlalchemy import func, select
from sqlmodel import SQLModel

from signoff.database import SessionMaker
from signoff.models import Role
from tests.helpers import PROPOSE, REGISTER_TARGET, GraphQLClient, World, build_world

JSON_HEADERS = {"content-type": "application/json"}


async def row_counts(sessionmaker: SessionMaker) -> dict[str, int]:
    """Rows in every table: what a refused request must leave as it was."""
    async with sessionmaker() as session:
        return {
            table.name: (await session.exec(select(func.count()).select_from(table))).one()[0]
            for table in SQLModel.metadata.sorted_tables
        }


def refusal(response: Response, status: int) -> dict[str, Any]:
    """The one coded error of a GraphQL-shaped JSON answer with HTTP ``status``."""
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/json")
    errors = response.json()["errors"]
    assert len(errors) == 1 and errors[0]["message"], errors
    error: dict[str, Any] = errors[0]
    assert "Traceback" not in error["message"] and "SELECT" not in error["message"]
    return error


def propose_body(world: World, payload: str) -> bytes:
    """A proposeAction request whose payload is written as raw JSON text."""
    fields = {"targetId": world.target_id, "actionCode": "refund.create", "operationKey": "k"}
    input_ = json.dumps(fields)[:-1] + ', "payload": ' + payload + "}"
    return (
        '{"query": ' + json.dumps(PROPOSE) + ', "variables": {"input": ' + input_ + "}}"
    ).encode()


async def post(client: AsyncClient, body: bytes, token: str | None = None) -> Response:
    headers = dict(JSON_HEADERS)
    if token:
        headers["authorization"] = f"Bearer {token}"
    return await client.post("/graphql", content=body, headers=headers)


@pytest.mark.parametrize(
    ("body", "code", "words"),
    [
        (b'{"query": ', "BAD_REQUEST_BODY", "not valid JSON"),
        (b'\xef\xbb\xbf{"query": "{ viewer { queueIds } }"}', "BAD_REQUEST_BODY", "BOM"),
        (b'{"query": "{ viewer { queueIds } }", "x": "\xff\xfe"}', "BAD_REQUEST_BODY", "UTF-8"),
        (b'"x"', "BAD_REQUEST_BODY", "JSON string"),
        (b"[]", "BAD_REQUEST_BODY", "JSON array"),
        (b"1" * 5000, "VALUE_OUT_OF_RANGE", "more digits than can be read"),
        (b"[" * 100_000, "BAD_REQUEST_BODY", "64 levels"),
        (b'{"variables": {"a": [' + b"[" * 80 + b"]" * 81 + b"}}", "BAD_REQUEST_BODY", "64"),
        (
            b'{"query": "{ viewer { queueIds } }", "variables": {"n": NaN}}',
            "VALUE_OUT_OF_RANGE",
            "NaN",
        ),
        (
            b'{"query": "{ viewer { queueIds } }", "variables": {"n": -Infinity}}',
            "VALUE_OUT_OF_RANGE",
            "Infinity",
        ),
        (
            b'{"query": "{ viewer { queueIds } }", "variables": {"n": 1e400}}',
            "VALUE_OUT_OF_RANGE",
            "1e400",
        ),
        (
            b'{"query": "{ viewer { queueIds } }", "variables": {"s": "\\udcff"}}',
            "INVALID_CHARACTER",
            "surrogate",
        ),
        (
            b'{"query": "{ viewer { queueIds } }", "variables": {"s": "a\\u0000"}}',
            "INVALID_CHARACTER",
            "U+0000",
        ),
        (
            b'{"query": "{ viewer { queueIds } }", "variables": {"a\\u0000": 1}}',
            "INVALID_CHARACTER",
            "U+0000",
        ),
        (b'{"variables": {}}', "BAD_REQUEST_BODY", "no GraphQL query"),
        (b'{"query": 5}', "BAD_REQUEST_BODY", "must be a string"),
    ],
)
async def test_an_unreadable_body_is_a_coded_400(
    client: AsyncClient, gql: GraphQLClient, body: bytes, code: str, words: str
) -> None:
    for token in (None, await gql.token(Role.ADMIN)):
        error = refusal(await post(client, body, token), 400)
        assert error["extensions"]["code"] == code
        assert words in error["message"]


async def test_a_missing_content_type_names_the_supported_one(client: AsyncClient) -> None:
    response = await client.post("/graphql", content=b'{"query": "{ __typename }"}')
    error = refusal(response, 415)
    assert error["extensions"]["code"] == "UNSUPPORTED_CONTENT_TYPE"
    assert "application/json" in error["message"]


async def test_methods_that_cannot_carry_the_operation_are_coded(client: AsyncClient) -> None:
    mutation = await client.get("/graphql", params={"query": "mutation { __typename }"})
    assert refusal(mutation, 405)["extensions"]["code"] == "METHOD_NOT_ALLOWED"
    patch = await client.patch("/graphql", json={"query": "{ __typename }"})
    assert patch.status_code == 405
    # PUT reserves a graphql-sse event stream: it authenticates first.
    put = await client.put("/graphql", json={"query": "{ __typename }"})
    assert refusal(put, 401)["extensions"]["code"] == "UNAUTHENTICATED"


async def test_a_subscription_over_http_says_where_to_subscribe(
    client: AsyncClient, gql: GraphQLClient
) -> None:
    for token in (None, await gql.token(Role.REVIEWER)):
        error = await gql.error("subscription { queueEvents { cursor } }", token=token)
        assert error.code == "SUBSCRIPTIONS_UNAVAILABLE"
        assert "websocket" in error.errors[0]["message"]
    get = await client.get("/graphql", params={"query": "subscription { queueEvents { cursor } }"})
    assert refusal(get, 200)["extensions"]["code"] == "SUBSCRIPTIONS_UNAVAILABLE"


async def test_a_syntax_error_is_graphql_parse_failed(gql: GraphQLClient) -> None:
    for token in (None, await gql.token(Role.ADMIN)):
        error = await gql.error("{ viewer { ", token=token)
        assert error.code == "GRAPHQL_PARSE_FAILED"
        assert "Syntax Error" in error.errors[0]["message"]
        assert error.errors[0]["locations"] == [{"line": 1, "column": 12}]


async def test_bad_strings_in_a_payload_change_nothing(
    client: AsyncClient, gql: GraphQLClient
) -> None:
    world = await build_world(gql)
    before = await row_counts(gql.sessionmaker)
    for payload, code in (
        ('{"amount": 1, "currency": "\\udcff"}', "INVALID_CHARACTER"),
        ('{"amount": 1, "currency": "E\\u0000R"}', "INVALID_CHARACTER"),
        ('{"amount": 1, "currency": "EUR", "\\u0000": 1}', "INVALID_CHARACTER"),
        ('{"amount": NaN, "currency": "EUR"}', "VALUE_OUT_OF_RANGE"),
        ('{"amount": Infinity, "currency": "EUR"}', "VALUE_OUT_OF_RANGE"),
        ('{"amount": 9007199254740993, "currency": "EUR"}', "VALUE_OUT_OF_RANGE"),
        ('{"amount": -1e300, "currency": "EUR"}', "VALUE_OUT_OF_RANGE"),
        ('{"amount": 1' + "0" * 5000 + ', "currency": "EUR"}', "VALUE_OUT_OF_RANGE"),
    ):
        response = await post(client, propose_body(world, payload), world.agent)
        assert response.status_code in (200, 400), response.text
        assert response.json()["errors"][0]["extensions"]["code"] == code, payload
    assert await row_counts(gql.sessionmaker) == before


async def test_nul_in_an_id_or_a_literal_is_refused_on_either_database(
    gql: GraphQLClient,
) -> None:
    world = await build_world(gql)
    before = await row_counts(gql.sessionmaker)
    by_variable = await gql.http.post(
        "/graphql",
        json={"query": "query($id: ID!) { proposal(id: $id) { id } }", "variables": {"id": "\0"}},
        headers={"authorization": f"Bearer {world.admin}"},
    )
    assert refusal(by_variable, 400)["extensions"] == {
        "code": "INVALID_CHARACTER",
        "pointer": "/variables/id",
    }
    literal = await gql.error('{ proposal(id: "a\\u0000b") { id } }', token=world.admin)
    assert literal.code == "INVALID_CHARACTER"
    surrogate = await gql.error('{ proposal(id: "\\udcff") { id } }', token=world.admin)
    assert surrogate.code == "GRAPHQL_PARSE_FAILED"  # graphql-core's lexer refuses it
    assert (
        "surrogate" in surrogate.errors[0]["message"] or "Invalid" in surrogate.errors[0]["message"]
    )
    queue = await gql.error(
        'mutation { createQueue(input: {slug: "q", name: "N\\u0000"}) { id } }', token=world.admin
    )
    assert queue.code == "INVALID_CHARACTER"
    in_json = await gql.error(
        "mutation($t: ID!) { proposeAction(input: {targetId: $t, actionCode: "
        '"a", operationKey: "k", payload: {amount: 1, currency: "\\u0000"}}) { replayed } }',
        {"t": world.target_id},
        world.agent,
    )
    assert in_json.code == "INVALID_CHARACTER"
    assert await row_counts(gql.sessionmaker) == before


async def test_large_numbers_need_the_targets_schema_to_opt_in(gql: GraphQLClient) -> None:
    admin = await gql.token(Role.ADMIN)
    agent = await gql.token(Role.AGENT)
    targets = {}
    for name, schema in (
        ("strict", {"type": "object"}),
        ("ledger", {"type": "object", "x-signoff-large-numbers": True}),
    ):
        data = await gql(
            REGISTER_TARGET,
            {
                "input": {
                    "name": name,
                    "url": "https://example.test/hook",
                    "approvalMode": "BOUNDED_AUTO",
                    "inputSchema": schema,
                }
            },
            admin,
        )
        targets[name] = data["registerTarget"]["target"]["id"]
    big = {"units": 2**53 + 1, "negative": -(2**60)}

    def propose(target: str) -> dict[str, Any]:
        input_ = {"targetId": target, "actionCode": "a", "operationKey": target, "payload": big}
        return {"input": input_}

    refused = await gql.error(PROPOSE, propose(targets["strict"]), agent)
    assert refused.code == "VALUE_OUT_OF_RANGE"
    assert refused.errors[0]["extensions"]["pointer"] in ("/units", "/negative")
    assert "x-signoff-large-numbers" in refused.errors[0]["message"]
    too_long = {"input": {**propose(targets["ledger"])["input"], "payload": {"n": 10**150}}}
    assert (await gql.error(PROPOSE, too_long, agent)).code == "VALUE_OUT_OF_RANGE"
    proposal = (await gql(PROPOSE, propose(targets["ledger"]), agent))["proposeAction"]
    read = await gql(
        "query($id: ID!) { proposal(id: $id) { id } }", {"id": proposal["proposal"]["id"]}, admin
    )
    assert read["proposal"]["id"] == proposal["proposal"]["id"]


async def test_wrong_types_unknown_enums_and_foreign_ids_change_nothing(
    gql: GraphQLClient,
) -> None:
    world = await build_world(gql)
    other = await build_world(gql)
    proposal = (await other.propose())["proposal"]
    outsider = await gql.token(Role.REVIEWER, queues=[world.queue_slug])
    before = await row_counts(gql.sessionmaker)
    wrong_type = await gql.error(
        "query($first: Int) { proposals(first: $first) { edges { cursor } } }",
        {"first": "ten"},
        world.admin,
    )
    assert wrong_type.code == "GRAPHQL_VALIDATION_FAILED"
    huge_int = await gql.error(
        "query($first: Int) { proposals(first: $first) { edges { cursor } } }",
        {"first": 2**40},
        world.admin,
    )
    assert huge_int.code == "GRAPHQL_VALIDATION_FAILED"
    enum = await gql.error(
        "{ proposals(state: NO_SUCH_STATE) { edges { cursor } } }", token=world.admin
    )
    assert enum.code == "GRAPHQL_VALIDATION_FAILED"
    cursor = await gql.error(
        '{ proposals(after: "not-a-cursor") { edges { cursor } } }', token=world.admin
    )
    assert cursor.code == "VALIDATION_FAILED"
    foreign = await gql.error(
        "mutation($input: DecideProposalInput!) { decideProposal(input: $input) { replayed } }",
        {
            "input": {
                "proposalId": proposal["id"],
                "decision": "APPROVED",
                "payloadDigest": proposal["payloadDigest"],
            }
        },
        outsider,
    )
    assert foreign.code == "FORBIDDEN"
    oversized = await gql.error(
        PROPOSE,
        {
            "input": {
                "targetId": world.target_id,
                "actionCode": "a",
                "operationKey": "big",
                "payload": {"amount": 1, "currency": "x" * 70_000},
            }
        },
        world.agent,
    )
    assert oversized.code == "VALIDATION_FAILED"
    assert "65536" in oversized.errors[0]["message"]
    assert await row_counts(gql.sessionmaker) == before


async def test_numbers_written_into_the_query_are_checked_too(gql: GraphQLClient) -> None:
    world = await build_world(gql)
    before = await row_counts(gql.sessionmaker)
    long_int = "{ proposals(first: " + "1" * 5000 + ") { edges { cursor } } }"
    codes = {e["extensions"]["code"] for e in (await gql.error(long_int, token=world.admin)).errors}
    assert "VALUE_OUT_OF_RANGE" in codes and "INTERNAL" not in codes
    for amount in ("1e400", "9007199254740993", "-1" + "0" * 200):
        error = await gql.error(
            "mutation($t: ID!) { proposeAction(input: {targetId: $t, actionCode: "
            f'"a", operationKey: "k", payload: {{amount: {amount}, currency: "EUR"}}}}) '
            "{ replayed } }",
            {"t": world.target_id},
            world.agent,
        )
        assert error.code == "VALUE_OUT_OF_RANGE", amount
    assert await row_counts(gql.sessionmaker) == before
