"""Persisted queries over HTTP: the middleware that puts the document a hash names into
POSTed bodies before the GraphQL view reads them (the protocol and the allow-list are
``signoff.schema.serving.persisted``)."""

from __future__ import annotations

import json
from urllib.parse import parse_qs

from starlette.types import ASGIApp, Receive, Scope, Send

from signoff.schema.serving.persisted import PersistedQueries, Refused
from signoff.web.bodies import read_body, replay_body


class PersistedQueryMiddleware:
    """Puts the named document into POSTed JSON bodies before the GraphQL view reads them."""

    def __init__(self, app: ASGIApp, queries: PersistedQueries) -> None:
        self.app = app
        self.queries = queries

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        try:
            if scope["method"] == "GET":
                self._check_get(scope)
            elif scope["method"] == "POST":
                body = await read_body(receive)
                if body is None:
                    return  # the client went away
                receive = replay_body(self._rewrite(body), receive)
        except Refused as refused:
            await refused.response()(scope, receive, send)
            return
        await self.app(scope, receive, send)

    def _rewrite(self, body: bytes) -> bytes:
        if not self.queries.only and b"persistedQuery" not in body:
            return body  # the common case costs no second parse of the body
        try:
            request = json.loads(body)
        except ValueError:
            return body  # the view answers malformed bodies itself
        batch = request if isinstance(request, list) else [request]
        changed = False
        for item in batch:
            if isinstance(item, dict):
                document = self.queries.document(item)
                if document is not None and item.get("query") != document:
                    item["query"] = document
                    changed = True
        return json.dumps(request).encode() if changed else body

    def _check_get(self, scope: Scope) -> None:
        """Queries sent as GET parameters meet the allow-list too (no hashes over GET)."""
        params = parse_qs(scope.get("query_string", b"").decode("latin-1"))
        if "query" in params or "extensions" in params:
            self.queries.document({"query": params.get("query", [None])[0]})
