"""The plain GraphQL POST, which most requests are, answered past the steps of Strawberry's
view that only tell other requests apart: a POST of ``application/json`` asking for JSON
back (no ``Accept``, ``*/*`` or ``application/json``), whose body is an object with a query
and nothing but variables and an operation name besides. ``plain_post`` recognises one;
anything else is left to the view (``signoff.web.app.SignoffGraphQL.answer_plain``), and the
operation runs through ``Schema.execute`` exactly as the view runs it."""

from __future__ import annotations

from starlette.requests import Request
from strawberry.http import GraphQLRequestData

from signoff.jsonvalues import decode_body

# Content types that Strawberry's view reads as JSON, as clients send them.
JSON_CONTENT_TYPES = frozenset({"application/json", "application/json; charset=utf-8"})
# Accept headers answered in plain JSON: no stream transport accepts them, and
# ``schema.serving.media`` answers ``application/json`` for them.
PLAIN_ACCEPTS = frozenset({None, "*/*", "application/json"})
PLAIN_KEYS = frozenset({"query", "variables", "operationName"})


async def plain_post(request: Request) -> GraphQLRequestData | None:
    """The request's operation if it is a plain JSON POST, else ``None`` (for the view).

    A body that is not JSON is refused here as the view refuses it (``decode_body``)."""
    if request.method != "POST":
        return None
    headers = request.headers
    content_type = headers.get("content-type")
    if content_type not in JSON_CONTENT_TYPES:
        return None
    if headers.get("accept") not in PLAIN_ACCEPTS:
        return None
    data = decode_body(await request.body())
    if not isinstance(data, dict) or not PLAIN_KEYS.issuperset(data):
        return None
    query, variables, name = data.get("query"), data.get("variables"), data.get("operationName")
    if (
        not isinstance(query, str)
        or not query
        or not isinstance(variables, dict | None)
        or not isinstance(name, str | None)
    ):
        return None
    return GraphQLRequestData(
        query=query, variables=variables, operation_name=name, extensions=None
    )
