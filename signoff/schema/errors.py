"""Error mapping: refusals keep their code; anything else is masked and logged with a request id.

Log lines name the exception type and where it was raised, never its message:
database errors carry SQL, and messages can carry secrets.
"""

from __future__ import annotations

import logging
import os
import traceback

from graphql.error import GraphQLError, GraphQLSyntaxError
from strawberry.extensions import MaskErrors

from signoff.constants import QUERY_MAX_TOKENS, SERVICE_UNAVAILABLE_RETRY_AFTER_SECONDS
from signoff.database import database_condition, is_busy, is_unreachable
from signoff.errors import (
    INTERNAL,
    DatabaseBusy,
    GraphQLParseFailed,
    ServiceUnavailable,
    SignoffError,
    TooManyTokens,
)

logger = logging.getLogger("signoff.errors")

GRAPHQL_VALIDATION_FAILED = "GRAPHQL_VALIDATION_FAILED"


def describe(exc: BaseException) -> str:
    """``TypeName at file:line in function``, without the message.

    Names the innermost frame of Signoff's own code (where to look) and, when the
    error was raised deeper inside a library, that frame too.
    """
    frames = traceback.extract_tb(exc.__traceback__)
    if not frames:
        return type(exc).__name__
    ours = [
        f
        for f in frames
        if f"{os.sep}signoff{os.sep}" in f.filename
        and f"{os.sep}site-packages{os.sep}" not in f.filename
    ]
    where = [ours[-1]] if ours else []
    if frames[-1] not in where:
        where.append(frames[-1])
    condition = database_condition(exc)
    named = type(exc).__name__ if condition is None else f"{type(exc).__name__} ({condition})"
    return f"{named} at " + " via ".join(f"{f.filename}:{f.lineno} in {f.name}" for f in where)


def mask_error(error: GraphQLError, request_id: str | None) -> GraphQLError:
    """The error a client may see: refusals as they are, everything else coded and logged.

    A busy database is ``DATABASE_BUSY`` (nothing was committed; retry), an unreachable
    one ``SERVICE_UNAVAILABLE`` with ``retryAfter`` (logged once per outage by the engine,
    not per request), anything else ``INTERNAL`` with the request id that the log line
    carries.
    """
    original = error.original_error
    if isinstance(error, GraphQLSyntaxError):
        return _syntax_refusal(error)
    if isinstance(original, RecursionError) and error.path is None:
        # graphql-core's parser recursing through a deeply nested value or selection.
        refusal = GraphQLParseFailed(
            "The query nests lists, objects or selections too deeply to parse; flatten it."
        )
        return GraphQLError(refusal.message, extensions=refusal.extensions)
    if isinstance(original, GraphQLError) and error.path is None:
        # graphql-core refusing a variable's value (coercion wraps its own error).
        original = None
    if isinstance(original, ValueError) and error.path is None and error.nodes:
        # graphql-core's literal parsing raised while validating (Python's int() refuses an
        # integer of over 4,300 digits): the document's fault, which LiteralsRule names.
        return GraphQLError(
            "A value in the query cannot be read as the type its argument expects.",
            nodes=error.nodes,
            extensions={"code": GRAPHQL_VALIDATION_FAILED},
        )
    if original is None:
        # Validation and variable coercion errors: the client's own query. Signoff's own
        # rules (limits, string literals, introspection) already carry their codes.
        if error.extensions is None or "code" not in error.extensions:
            error.extensions = {**(error.extensions or {}), "code": GRAPHQL_VALIDATION_FAILED}
        return error
    if isinstance(original, SignoffError):
        return error
    path = ".".join(map(str, error.path or []))
    if is_unreachable(original):
        logger.debug("database unreachable request_id=%s path=%s", request_id, path)
        return _replace(
            error,
            ServiceUnavailable.default_message,
            ServiceUnavailable.code,
            request_id,
            retryAfter=SERVICE_UNAVAILABLE_RETRY_AFTER_SECONDS,
        )
    if is_busy(original):
        logger.warning(
            "database busy request_id=%s path=%s %s", request_id, path, describe(original)
        )
        return _replace(error, DatabaseBusy.default_message, DatabaseBusy.code, request_id)
    logger.error("unexpected error request_id=%s path=%s %s", request_id, path, describe(original))
    return _replace(error, ErrorMapping.error_message, INTERNAL, request_id)


def _syntax_refusal(error: GraphQLSyntaxError) -> GraphQLError:
    """``TOO_MANY_TOKENS`` when the parser stopped at the token limit, else
    ``GRAPHQL_PARSE_FAILED`` with graphql-core's description and position."""
    if "Document contains more than" in error.message:
        refusal: SignoffError = TooManyTokens(
            f"The query has more than {QUERY_MAX_TOKENS} tokens (names, punctuation and "
            f"values); the limit is {QUERY_MAX_TOKENS}."
        )
    else:
        refusal = GraphQLParseFailed(
            f"The query is not valid GraphQL: {error.message} Check the query at the "
            "position given in `locations`."
        )
    return GraphQLError(
        refusal.message,
        source=error.source,
        positions=error.positions,
        extensions=refusal.extensions,
    )


def _replace(
    error: GraphQLError, message: str, code: str, request_id: str | None, **details: object
) -> GraphQLError:
    return GraphQLError(
        message=message,
        nodes=error.nodes,
        source=error.source,
        positions=error.positions,
        path=error.path,
        extensions={"code": code, "requestId": request_id, **details},
    )


class ErrorMapping(MaskErrors):
    """Keep ``SignoffError`` and GraphQL validation errors; code and mask everything else."""

    error_message = "Unexpected error."

    def __init__(self) -> None:
        # Every error passes through ``mask_error``, which keeps what a client may see.
        super().__init__(should_mask_error=lambda _: True, error_message=self.error_message)

    def anonymise_error(self, error: GraphQLError) -> GraphQLError:
        return mask_error(error, getattr(self.execution_context.context, "request_id", None))

    def _process_result(self, result: object) -> None:
        # Strawberry checks ``result`` against a runtime Protocol first, a slow isinstance;
        # nearly every result has no errors at all.
        errors = getattr(result, "errors", None)
        if errors:
            result.errors = self._process_errors(errors)  # type: ignore[attr-defined]
