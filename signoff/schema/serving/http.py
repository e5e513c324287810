"""Refusals before GraphQL runs (the HTTP layer), answered like every other refusal.

Strawberry answers a body it cannot read with a ``text/plain`` reason and a crash of
the request with a plain HTTP 500. Here every refusal is a GraphQL-shaped JSON body,
``{"errors": [{"message", "extensions": {"code", ...}}]}``, with the HTTP status
that says the same thing, and nothing unexpected escapes unmasked.
"""

from __future__ import annotations

import logging
import math
import uuid

from cross_web import HTTPException
from starlette.responses import JSONResponse, Response

from signoff.errors import (
    INTERNAL,
    BadRequestBody,
    CsrfRefused,
    EventStreamConflict,
    Forbidden,
    MethodNotAllowed,
    NotFound,
    RateLimited,
    ServiceUnavailable,
    SignoffError,
    TooManyConnections,
    Unauthenticated,
    UnsupportedContentType,
)
from signoff.schema.errors import ErrorMapping, describe

logger = logging.getLogger("signoff.errors")

_STATUS = {
    UnsupportedContentType.code: 415,
    RateLimited.code: 429,
    TooManyConnections.code: 429,
    MethodNotAllowed.code: 405,
    NotFound.code: 404,
    CsrfRefused.code: 403,
    # Refusals of graphql-sse's requests, which authenticate before any operation runs.
    Unauthenticated.code: 401,
    Forbidden.code: 403,
    EventStreamConflict.code: 409,
    ServiceUnavailable.code: 503,
}


def refusal_response(refusal: SignoffError) -> Response:
    """The JSON answer to a refusal made before any operation ran."""
    body = {"errors": [{"message": refusal.message, "extensions": refusal.extensions}]}
    headers = {}
    retry_after = refusal.details.get("retryAfter")
    if isinstance(retry_after, int | float):
        headers["Retry-After"] = str(max(1, math.ceil(retry_after)))
    return JSONResponse(body, status_code=_STATUS.get(refusal.code, 400), headers=headers)


def from_http_exception(exc: HTTPException) -> SignoffError:
    """Strawberry's HTTP refusals, each with a code and a message that says what to do."""
    if exc.reason == "Unsupported content type":
        return UnsupportedContentType()
    if exc.status_code == 405 or "when using GET" in exc.reason:
        return MethodNotAllowed(
            f"{exc.reason.rstrip('.')}. Send queries with GET or POST and mutations with POST."
        )
    if exc.status_code == 404:
        return NotFound(
            "GraphiQL is turned off on this server (SIGNOFF_GRAPHIQL=0); POST queries to /graphql."
        )
    if exc.reason == "No GraphQL query found in the request":
        return BadRequestBody(
            'The request has no GraphQL query; send {"query": "..."} '
            "(and optionally variables and operationName)."
        )
    return BadRequestBody(f"{exc.reason.rstrip('.')}.")


def unexpected_response(exc: Exception) -> Response:
    """A crash outside any operation: masked like one inside, logged without its message."""
    request_id = uuid.uuid4().hex[:16]
    logger.error("unexpected error request_id=%s path=http %s", request_id, describe(exc))
    body = {
        "errors": [
            {
                "message": ErrorMapping.error_message,
                "extensions": {"code": INTERNAL, "requestId": request_id},
            }
        ]
    }
    return JSONResponse(body, status_code=500)
