"""Query limits: each with its own code and the limit in the message, and each check cheap
itself, even for the documents built to make a naive checker explode (issue 12)."""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import AsyncIterator

import pytest
from graphql import parse
from httpx import ASGITransport, AsyncClient
from starlette.applications import Starlette

from signoff.config import Settings
from signoff.constants import QUERY_MAX_ALIASES, QUERY_MAX_DEPTH, QUERY_MAX_TOKENS
from signoff.models import Role
from signoff.schema import build_schema
from signoff.schema.serving.limits import limits_refusal
from signoff.web.app import create_app
from tests.helpers import GraphQLClient

SCHEMA = build_schema()


def doubling_fragments(count: int, alias: bool = False) -> str:
    """Fragment n spreads fragment n-1 twice: 2^count spreads when executed."""
    field = "a: queueIds" if alias else "queueIds"
    lines = [f"fragment F0 on Viewer {{ {field} }}"]
    lines += [f"fragment F{n} on Viewer {{ ...F{n - 1} ...F{n - 1} }}" for n in range(1, count)]
    return f"{{ viewer {{ ...F{count - 1} }} }}\n" + "\n".join(lines)


def nested_fragments(count: int) -> str:
    """Fragment n selects fragment n-1 inside a field, twice: deep and doubling."""
    lines = ["fragment F0 on Actor { name }"]
    lines += [
        f"fragment F{n} on Proposal {{ proposedBy {{ ...F{n - 1} }} target {{ id }} }}"
        if n == 1
        else f"fragment F{n} on Proposal {{ task {{ proposal {{ ...F{n - 1} ...F{n - 1} }} }} }}"
        for n in range(1, count)
    ]
    return f'{{ proposal(id: "x") {{ ...F{count - 1} }} }}\n' + "\n".join(lines)


def proposal_fragments(count: int) -> str:
    """``count`` fragments of one leaf field each, all spread into one selection set: the
    pairs graphql-core's overlapping-fields rule compares grow with the square."""
    fields = ["id", "state", "actionCode", "operationKey", "createdAt"]
    spreads = " ".join(f"...F{n}" for n in range(count))
    definitions = " ".join(
        f"fragment F{n} on Proposal {{ {fields[n % len(fields)]} }}" for n in range(count)
    )
    return f'{{ proposal(id: "x") {{ {spreads} }} }} {definitions}'


WORST_DOCUMENTS = [
    (doubling_fragments(40), "QUERY_TOO_COSTLY"),
    (doubling_fragments(40, alias=True), "TOO_MANY_ALIASES"),
    (nested_fragments(40), "QUERY_TOO_DEEP"),
    ("{" + " viewer { queueIds }" * 490 + " }", "QUERY_TOO_COSTLY"),
    ("{ viewer {" + " queueIds" * 1900 + " } }", "QUERY_TOO_COSTLY"),
    (proposal_fragments(200), "QUERY_TOO_COSTLY"),
    ("{" + " a: viewer { queueIds }" * 300 + " }", "TOO_MANY_ALIASES"),
]


def validation_seconds(document: str) -> tuple[float, list[str]]:
    """CPU seconds the limits take on ``document`` (the best of five runs), and the code
    they refuse it with. CPU time, not the clock's: on a machine shared with the suite's
    other workers, a wall-clock reading also counts the waits for a core."""
    ast = parse(document, max_tokens=QUERY_MAX_TOKENS * 10)
    timings = []
    for _ in range(5):
        started = time.thread_time()
        error = limits_refusal(SCHEMA._schema, ast)
        timings.append(time.thread_time() - started)
    codes = [] if error is None else [str((error.extensions or {})["code"])]
    return min(timings), codes


@pytest.mark.parametrize(
    ("document", "code"),
    [
        *WORST_DOCUMENTS,
        (doubling_fragments(200), "QUERY_TOO_COSTLY"),
        (nested_fragments(40), "QUERY_TOO_DEEP"),
        (
            "{" + " proposals(first: 100) { edges { node { approvals { id } } } }" * 60 + " }",
            "QUERY_TOO_COSTLY",
        ),
        ("{" + " a: viewer { queueIds }" * 500 + " }", "TOO_MANY_ALIASES"),
        ("{ " + "viewer { " * 190 + "queueIds" + " }" * 190 + " }", "QUERY_TOO_DEEP"),
    ],
)
def test_the_limits_rule_is_linear_in_the_document(document: str, code: str) -> None:
    seconds, codes = validation_seconds(document)
    assert codes == [code]
    # Linear work on a few kilobytes is well under a millisecond or two; the exponential
    # limiter this replaces took hours on the first document.
    assert seconds < 0.05, seconds


@pytest.mark.parametrize(("document", "code"), WORST_DOCUMENTS)
async def test_the_worst_documents_are_refused_before_graphql_cores_rules_run(
    document: str, code: str
) -> None:
    """Parsing and all of validation, as a request runs them: graphql-core's pairwise
    overlapping-fields rule took 1.5 s on the 490 copies of one field before it was
    guarded; now every such document is refused by the linear checks first."""
    await SCHEMA.execute("{ __typename }")  # warm
    totals, parses = [], []
    # The best of seven, in CPU time (as ``validation_seconds``): all of it runs on this
    # thread, and the machine is shared, also by other workers.
    for run in range(7):
        text = document + " " * (run + 1)  # a new text each time, past the caches
        started = time.thread_time()
        result = await SCHEMA.execute(text)
        totals.append(time.thread_time() - started)
        started = time.thread_time()
        parse(text)
        parses.append(time.thread_time() - started)
        assert result.errors is not None
        assert [e.extensions["code"] for e in result.errors if e.extensions] == [code]
    # Linear: a small multiple of parsing the same text (the pairwise rule took 50x it).
    assert min(totals) < 4 * min(parses) + 0.02, (min(totals), min(parses))


async def test_a_fragment_bomb_is_refused_in_milliseconds_over_http(gql: GraphQLClient) -> None:
    """Refused from its text: about what a plain request costs (each timed at its best of
    three, so that a busy machine slows both alike), where expanding its 2**40 fields
    would take hours."""
    admin = await gql.token(Role.ADMIN)
    document = doubling_fragments(40)
    assert len(document.encode()) < 2_500
    plain, bomb = [], []
    for _ in range(3):
        started = time.perf_counter()
        await gql("{ viewer { queueIds } }", token=admin)
        plain.append(time.perf_counter() - started)
        started = time.perf_counter()
        error = await gql.error(document, token=admin)
        bomb.append(time.perf_counter() - started)
        assert error.code == "QUERY_TOO_COSTLY"
        assert "50000" in error.errors[0]["message"]
    assert min(bomb) < 5 * min(plain) + 0.1, (min(bomb), min(plain))


async def test_each_limit_has_its_code_and_names_the_limit(gql: GraphQLClient) -> None:
    admin = await gql.token(Role.ADMIN)
    deep = '{ proposal(id: "x") { ' + "task { proposal { " * 7 + "id" + " } }" * 7 + " } }"
    too_deep = await gql.error(deep, token=admin)
    assert too_deep.code == "QUERY_TOO_DEEP"
    assert str(QUERY_MAX_DEPTH) in too_deep.errors[0]["message"]
    aliases = "{ " + " ".join(f"a{n}: viewer {{ queueIds }}" for n in range(31)) + " }"
    too_many = await gql.error(aliases, token=admin)
    assert too_many.code == "TOO_MANY_ALIASES"
    assert f"the limit is {QUERY_MAX_ALIASES}" in too_many.errors[0]["message"]
    tokens = await gql.error("{ viewer { " + "queueIds " * QUERY_MAX_TOKENS + "} }", token=admin)
    assert tokens.code == "TOO_MANY_TOKENS"
    assert str(QUERY_MAX_TOKENS) in tokens.errors[0]["message"]
    page = (
        "proposals(first: 100) { edges { node { approvals { approver { name } } attempts { id }"
        " task { proposal { approvals { approver { name } } } } } } }"
    )
    nested_pages = "{ " + " ".join(f"p{n}: {page}" for n in range(9)) + " }"
    costly = await gql.error(nested_pages, token=admin)
    assert costly.code == "QUERY_TOO_COSTLY"
    assert "first" in costly.errors[0]["message"]


async def test_ordinary_queries_stay_within_the_limits(gql: GraphQLClient) -> None:
    admin = await gql.token(Role.ADMIN)
    page = (
        "{ proposals(first: 100) { edges { cursor node { id state target { id name } "
        "approvals { decision approver { name } } task { id state } } } "
        "pageInfo { hasNextPage } } }"
    )
    assert (await gql(page, token=admin))["proposals"]["edges"] == []
    fragments = (
        "{ viewer { ...A ...B queueIds } } fragment A on Viewer { queueIds actor { name } } "
        "fragment B on Viewer { queueIds actor { role } }"
    )
    assert (await gql(fragments, token=admin))["viewer"]["actor"]["role"] == "ADMIN"
    introspection = await gql(
        "{ __schema { types { name fields { name args { name type { name ofType { name "
        "ofType { name ofType { name } } } } } } } } }",
        token=None,
    )
    assert introspection["__schema"]["types"]


@pytest.fixture
async def locked_down(settings: Settings, clean_database: None) -> AsyncIterator[AsyncClient]:
    """The app with introspection off and a rate limit of 1 request in 10 seconds, burst 3
    (slow enough that a loaded machine does not refill the bucket during the test)."""
    app: Starlette = create_app(
        dataclasses.replace(
            settings, introspection=False, rate_limit_per_second=0.1, rate_limit_burst=3
        )
    )
    async with app.router.lifespan_context(app):
        transport = ASGITransport(app=app)
        async with AsyncClient(transport=transport, base_url="http://signoff.test") as client:
            yield client


async def test_introspection_can_be_switched_off(locked_down: AsyncClient) -> None:
    response = await locked_down.post(
        "/graphql", json={"query": "{ __schema { queryType { name } } }"}
    )
    error = response.json()["errors"][0]
    assert error["extensions"]["code"] == "INTROSPECTION_DISABLED"
    assert "SIGNOFF_INTROSPECTION" in error["message"]
    typename = await locked_down.post("/graphql", json={"query": "{ __typename }"})
    assert typename.json() == {"data": {"__typename": "Query"}}


async def test_a_token_over_its_rate_is_told_when_to_retry(locked_down: AsyncClient) -> None:
    def headers(token: str) -> dict[str, str]:
        return {"authorization": f"Bearer {token}"}

    body = {"query": "{ __typename }"}
    for _ in range(3):
        allowed = await locked_down.post("/graphql", json=body, headers=headers("so_one"))
        assert allowed.status_code == 200
    refused = await locked_down.post("/graphql", json=body, headers=headers("so_one"))
    assert refused.status_code == 429
    error = refused.json()["errors"][0]
    assert error["extensions"]["code"] == "RATE_LIMITED"
    retry_after = error["extensions"]["retryAfter"]
    assert 9 < retry_after <= 10
    assert refused.headers["retry-after"] == str(math.ceil(retry_after))
    other = await locked_down.post("/graphql", json=body, headers=headers("so_two"))
    assert other.status_code == 200


async def test_graphiql_does_not_persist_headers(client: AsyncClient) -> None:
    """The page is served from the package (tests/test_graphiql.py drives it in Chromium
    and reads localStorage); its set-up turns header persistence off."""
    page = await client.get("/graphql", headers={"accept": "text/html"})
    assert page.status_code == 200
    assert "/static/graphiql/signoff-graphiql.js" in page.text
    script = await client.get("/static/graphiql/signoff-graphiql.js")
    assert script.status_code == 200
    assert "shouldPersistHeaders: false" in script.text
    assert "shouldPersistHeaders: true" not in script.text
