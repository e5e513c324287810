"""Persisted queries: Apollo's automatic persisted queries protocol, and an optional
allow-list so that production runs only known documents.

An unknown hash is answered ``PERSISTED_QUERY_NOT_FOUND`` and the client sends the text,
kept per process; an allow-list's documents are always known, and with ``ONLY`` nothing
else runs (docs/configuration.md). HTTP asks through ``signoff.web.persisted``'s
middleware, the websocket handlers directly: both ask the same ``PersistedQueries``.
"""

from __future__ import annotations

import hashlib
import json
from collections import OrderedDict
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from starlette.responses import JSONResponse, Response

from signoff.constants import PERSISTED_QUERY_CACHE_SIZE

NOT_FOUND = "PERSISTED_QUERY_NOT_FOUND"
NOT_ALLOWED = "PERSISTED_QUERY_NOT_ALLOWED"
HASH_MISMATCH = "PERSISTED_QUERY_HASH_MISMATCH"
UNSUPPORTED = "PERSISTED_QUERY_UNSUPPORTED"


def document_hash(document: str) -> str:
    return hashlib.sha256(document.encode()).hexdigest()


def load_allow_list(path: str) -> dict[str, str]:
    """``{sha256 hex: document}``; every hash must be its document's."""
    entries = json.loads(Path(path).read_text(encoding="utf-8"))
    if not isinstance(entries, dict):
        raise ValueError(f"{path}: expected a JSON object of sha256 hash to document")
    for key, document in entries.items():
        if not isinstance(document, str) or document_hash(document) != key:
            raise ValueError(f"{path}: {key!r} is not the sha256 of its document")
    return dict(entries)


class Refused(Exception):
    def __init__(self, code: str, message: str, status: int = 200) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.status = status

    def response(self) -> Response:
        error = {"message": self.message, "extensions": {"code": self.code}}
        return JSONResponse({"errors": [error]}, status_code=self.status)


class PersistedQueries:
    """Which document a request runs: its text, or the one its hash names."""

    def __init__(self, allow_list: Mapping[str, str] | None = None, only: bool = False) -> None:
        self.allowed = dict(allow_list or {})
        self.only = only
        self.learned: OrderedDict[str, str] = OrderedDict()

    def document(self, request: Mapping[str, Any]) -> str | None:
        """The text to run (``None``: leave the request as it is), or ``Refused``."""
        query = request.get("query")
        extensions = request.get("extensions")
        persisted = extensions.get("persistedQuery") if isinstance(extensions, dict) else None
        if persisted is None:
            if self.only and (
                not isinstance(query, str) or document_hash(query) not in self.allowed
            ):
                raise Refused(NOT_ALLOWED, "Only allow-listed documents run here.", 400)
            return None
        if not isinstance(persisted, dict) or persisted.get("version") != 1:
            raise Refused(UNSUPPORTED, "Only persistedQuery version 1 is supported.", 400)
        wanted = persisted.get("sha256Hash")
        if not isinstance(wanted, str):
            raise Refused(UNSUPPORTED, "persistedQuery needs a sha256Hash.", 400)
        if isinstance(query, str):
            if document_hash(query) != wanted:
                raise Refused(HASH_MISMATCH, "The sha256Hash is not the query's.", 400)
            if self.only and wanted not in self.allowed:
                raise Refused(NOT_ALLOWED, "Only allow-listed documents run here.", 400)
            self._learn(wanted, query)
            return query
        known = self.allowed.get(wanted) or self.learned.get(wanted)
        if known is None:
            raise Refused(NOT_FOUND, "PersistedQueryNotFound")
        if wanted in self.learned:
            self.learned.move_to_end(wanted)
        return known

    def _learn(self, key: str, document: str) -> None:
        if key in self.allowed:
            return
        self.learned[key] = document
        self.learned.move_to_end(key)
        while len(self.learned) > PERSISTED_QUERY_CACHE_SIZE:
            self.learned.popitem(last=False)
