"""Which media type an answer is given in, per the GraphQL-over-HTTP specification.

``application/graphql-response+json`` when ``Accept`` names it (at a quality no lower than
``application/json``'s): a document that fails to parse or validate, or variables that do
not coerce, are a 4xx without ``data``. ``application/json``, as ever, otherwise: for no
``Accept`` and ``*/*`` too, as the specification's own audit (``graphql-http``) expects.
"""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from strawberry.types import ExecutionResult

from signoff.errors import INTERNAL

GRAPHQL_RESPONSE = "application/graphql-response+json"
JSON = "application/json"
# Where a request's answer keeps the status of its request error, between the result's
# processing and the response (``answer_in``).
REQUEST_ERROR_STATUS = "signoff.request_error_status"


def preferred_media_type(accept: str | None) -> str:
    """The media type to answer in for an ``Accept`` header (``None``: absent)."""
    if accept is None:
        return JSON
    best, best_quality = JSON, 0.0
    for media_range in accept.split(","):
        name, quality = _parse_range(media_range)
        if quality <= 0:
            continue
        if name == GRAPHQL_RESPONSE:
            offered = GRAPHQL_RESPONSE
        elif name in (JSON, "*/*", "application/*"):
            offered = JSON
        else:
            continue
        if quality > best_quality:  # at equal quality, the first named wins
            best, best_quality = offered, quality
    return best


def _parse_range(media_range: str) -> tuple[str, float]:
    name, *parameters = media_range.split(";")
    quality = 1.0
    for parameter in parameters:
        key, _, value = parameter.partition("=")
        if key.strip().lower() == "q":
            try:
                quality = float(value.strip())
            except ValueError:
                quality = 0.0
    return name.strip().lower(), quality


def wants_graphql_response(request: Request) -> bool:
    return preferred_media_type(request.headers.get("accept")) == GRAPHQL_RESPONSE


def request_error_status(result: ExecutionResult) -> int | None:
    """The status of a result that never reached execution (the document did not parse or
    validate, or its variables did not coerce): 400, or 500 for an unexpected failure
    (masked as ``INTERNAL``); ``None`` for an executed result, whatever its errors."""
    errors = result.errors
    if result.data is not None or not errors or any(e.path is not None for e in errors):
        return None
    if any((e.extensions or {}).get("code") == INTERNAL for e in errors):
        return 500
    return 400


def note_request_error(request: Request, result: ExecutionResult, processed: Any) -> None:
    """For a client answered in ``application/graphql-response+json``: a request error's
    result has no ``data`` entry, and its status is kept for ``answer_in``."""
    status = request_error_status(result)
    if status is None or not isinstance(processed, dict) or not wants_graphql_response(request):
        return
    processed.pop("data", None)
    request.scope[REQUEST_ERROR_STATUS] = status


def answer_in(request: Request, response: Response) -> Response:
    """A JSON answer of ``/graphql`` in the media type the client prefers."""
    content_type = response.headers.get("content-type", "")
    if not content_type.startswith(JSON) or not wants_graphql_response(request):
        return response
    response.headers["content-type"] = f"{GRAPHQL_RESPONSE}; charset=utf-8"
    status = request.scope.get(REQUEST_ERROR_STATUS)
    if isinstance(status, int) and response.status_code == 200:
        response.status_code = status
    return response
