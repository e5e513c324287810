"""Error mapping: refusals keep their code; anything else is masked and logged with a request id.

Log lines name the exception type and where it was raised, never its message:
database errors carry SQL, and messages can carry secrets.
"""

from __future__ import annotations

import logging
import os
import traceback

from graphql.error import GraphQLError
from strawberry.extensions import MaskErrors

from signoff.errors import SignoffError

logger = logging.getLogger("signoff.errors")

INTERNAL = "INTERNAL"
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
    return f"{type(exc).__name__} at " + " via ".join(
        f"{f.filename}:{f.lineno} in {f.name}" for f in where
    )


class ErrorMapping(MaskErrors):
    """Keep ``SignoffError`` and GraphQL validation errors; mask everything unexpected."""

    def __init__(self) -> None:
        super().__init__(should_mask_error=self._should_mask)

    def _should_mask(self, error: GraphQLError) -> bool:
        original = error.original_error
        if original is None:
            # Syntax, validation and variable coercion errors: the client's own query.
            if error.extensions is None or "code" not in error.extensions:
                error.extensions = {**(error.extensions or {}), "code": GRAPHQL_VALIDATION_FAILED}
            return False
        return not isinstance(original, SignoffError)

    def anonymise_error(self, error: GraphQLError) -> GraphQLError:
        request_id = getattr(self.execution_context.context, "request_id", None)
        original = error.original_error
        logger.error(
            "unexpected error request_id=%s path=%s %s",
            request_id,
            ".".join(map(str, error.path or [])),
            describe(original) if original is not None else "unknown",
        )
        return GraphQLError(
            message=self.error_message,
            nodes=error.nodes,
            source=error.source,
            positions=error.positions,
            path=error.path,
            extensions={"code": INTERNAL, "requestId": request_id},
        )
