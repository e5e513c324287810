"""Schemathesis (GraphQL) against a live ``signoff serve``: every query and mutation of the
schema, with generated arguments and selections, a bounded number of examples each.

With an admin's token nothing may answer 5xx, and every error must carry one of Signoff's
own codes (``INTERNAL`` counts as a failure: it is a bug's answer). Without a token every
operation that gets past validation must be ``UNAUTHENTICATED``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator
from datetime import UTC
from typing import Any

import graphql
import pytest
import requests
import schemathesis.graphql
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from schemathesis.graphql import nodes
from schemathesis.schemas import APIOperation

from signoff import errors
from signoff.database import SessionMaker
from signoff.models import Role
from signoff.schema.errors import GRAPHQL_VALIDATION_FAILED
from tests.live import Server, http_gql

Serve = Callable[..., Awaitable[Server]]

# Examples per operation: with about 50 operations, a few hundred requests in all.
EXAMPLES_WITH_TOKEN = 10
EXAMPLES_WITHOUT_TOKEN = 3


def _subclasses(cls: type[errors.SignoffError]) -> Iterator[type[errors.SignoffError]]:
    for sub in cls.__subclasses__():
        yield sub
        yield from _subclasses(sub)


OUR_CODES = {cls.code for cls in _subclasses(errors.SignoffError)} | {
    GRAPHQL_VALIDATION_FAILED,
    "REQUEST_TOO_LARGE",
}
# Refused before any field runs: the document itself, not the caller.
BEFORE_AUTHENTICATION = {
    GRAPHQL_VALIDATION_FAILED,
    "GRAPHQL_PARSE_FAILED",
    "QUERY_TOO_DEEP",
    "TOO_MANY_ALIASES",
    "TOO_MANY_TOKENS",
    "QUERY_TOO_COSTLY",
    "INVALID_CHARACTER",
    "VALUE_OUT_OF_RANGE",
    "BAD_REQUEST_BODY",
}


def _json_node() -> st.SearchStrategy[graphql.ValueNode]:
    """JSON values written into the document: any strings (NUL and all), numbers small and
    beyond ±2^53, nested objects and lists."""
    leaves = st.one_of(
        st.text(max_size=20).map(nodes.String),
        st.integers().map(nodes.Int),
        st.floats(allow_nan=False, allow_infinity=False).map(nodes.Float),
        st.booleans().map(nodes.Boolean),
    )
    names = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,8}", fullmatch=True)

    def containers(
        children: st.SearchStrategy[graphql.ValueNode],
    ) -> st.SearchStrategy[graphql.ValueNode]:
        fields = st.dictionaries(names, children, max_size=4).map(
            lambda d: [
                graphql.ObjectFieldNode(name=graphql.NameNode(value=k), value=v)
                for k, v in d.items()
            ]
        )
        return st.one_of(fields.map(nodes.Object), st.lists(children, max_size=4).map(nodes.List))

    return st.recursive(leaves, containers, max_leaves=12)


schemathesis.graphql.scalar("JSON", _json_node())
schemathesis.graphql.scalar(
    "DateTime",
    st.one_of(
        st.datetimes(timezones=st.just(UTC)).map(lambda d: nodes.String(d.isoformat())),
        st.text(max_size=30).map(nodes.String),
    ),
)


def operations(server: Server, token: str) -> list[APIOperation]:
    schema = schemathesis.graphql.from_url(
        f"{server.url}/graphql", headers={"authorization": f"Bearer {token}"}, timeout=30
    )
    found = [result.ok() for result in schema.get_all_operations()]
    assert len(found) > 40  # every query and mutation of the schema
    return found


def fuzz(
    found: list[APIOperation],
    examples: int,
    check: Callable[[APIOperation, int, dict[str, Any]], None],
    headers: dict[str, str],
) -> None:
    """``examples`` generated cases of each operation, each answer given to ``check``."""
    session = requests.Session()
    for operation in found:

        @settings(
            max_examples=examples,
            deadline=None,
            database=None,
            derandomize=True,
            suppress_health_check=list(HealthCheck),
        )
        @given(case=operation.as_strategy())
        def run(case: Any) -> None:
            response = case.call(session=session, headers=headers, timeout=30)
            check(case.operation, response.status_code, response.json())

        run()


def our_code(operation: APIOperation, status: int, body: dict[str, Any]) -> None:
    assert status < 500, (operation.label, status, body)
    for error in body.get("errors") or []:
        code = (error.get("extensions") or {}).get("code")
        assert code in OUR_CODES, (operation.label, error)


def unauthenticated(operation: APIOperation, status: int, body: dict[str, Any]) -> None:
    assert status < 500, (operation.label, status, body)
    assert body.get("errors"), (operation.label, body)
    codes = {(e.get("extensions") or {}).get("code") for e in body["errors"]}
    assert codes <= {"UNAUTHENTICATED"} | BEFORE_AUTHENTICATION, (operation.label, body)
    assert body.get("data") is None or not any(body["data"].values()), (operation.label, body)


@pytest.mark.timeout(240)
async def test_fuzzed_operations_answer_only_our_codes(
    serve: Serve, sessionmaker: SessionMaker
) -> None:
    server = await serve()
    async with http_gql(server, sessionmaker) as gql:
        admin = await gql.token(Role.ADMIN)
    found = operations(server, admin)
    fuzz(found, EXAMPLES_WITH_TOKEN, our_code, {"authorization": f"Bearer {admin}"})
    fuzz(found, EXAMPLES_WITHOUT_TOKEN, unauthenticated, {})
