"""The exceptions signoff-client raises: one base class carrying the server's stable
``extensions.code``, and a subclass for each code an agent is likely to handle.

A refusal the server gives a code this module does not name is still a
``SignoffError`` with that ``code``: nothing is lost by catching the base class.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

if TYPE_CHECKING:
    from signoff_client.outcomes import Outcome


class SignoffError(Exception):
    """A request Signoff refused (or could not answer); ``code`` is its ``extensions.code``."""

    code: ClassVar[str] = "SIGNOFF_ERROR"

    def __init__(
        self, message: str, *, code: str | None = None, extensions: dict[str, Any] | None = None
    ) -> None:
        super().__init__(message)
        self.message = message
        self.extensions: dict[str, Any] = dict(extensions or {})
        if code is not None:
            self.code = code  # type: ignore[misc]  # an instance's code for unnamed codes

    @property
    def retry_after(self) -> float | None:
        """Seconds the server asked the client to wait before retrying (``retryAfter``)."""
        value = self.extensions.get("retryAfter")
        return float(value) if isinstance(value, int | float) else None

    def __str__(self) -> str:
        return f"{self.code}: {self.message}"


class Unauthenticated(SignoffError):
    """No token, or one Signoff does not know (revoked, mistyped)."""

    code = "UNAUTHENTICATED"


class Forbidden(SignoffError):
    """The token's role (or queue) may not do this."""

    code = "FORBIDDEN"


class NotFound(SignoffError):
    """No such target, proposal or draft (or one this token may not see)."""

    code = "NOT_FOUND"


class PayloadSchemaInvalid(SignoffError):
    """The payload does not meet the target's input schema; ``problems`` name each field."""

    code = "PAYLOAD_SCHEMA_INVALID"

    @property
    def problems(self) -> list[dict[str, str]]:
        """``[{"pointer": "/amount", "message": "..."}]``, one per problem."""
        errors = self.extensions.get("errors")
        return [dict(e) for e in errors] if isinstance(errors, list) else []


class IdempotencyKeyReused(SignoffError):
    """The key was used before for other content; ``proposal_id`` is what it made."""

    code = "IDEMPOTENCY_KEY_REUSED"

    @property
    def proposal_id(self) -> str | None:
        value = self.extensions.get("proposalId")
        return str(value) if value is not None else None


class PayloadDigestMismatch(SignoffError):
    """The digest named is not the proposal's current one (it was amended meanwhile)."""

    code = "PAYLOAD_DIGEST_MISMATCH"


class TargetUnavailable(SignoffError):
    """The target is retired or otherwise not taking proposals."""

    code = "TARGET_UNAVAILABLE"


class RateLimited(SignoffError):
    """Too many requests with this token (HTTP 429); ``retry_after`` says when to retry."""

    code = "RATE_LIMITED"


class ServiceUnavailable(SignoffError):
    """Signoff cannot reach its database right now; ``retry_after`` says when to retry."""

    code = "SERVICE_UNAVAILABLE"


class DatabaseBusy(SignoffError):
    """The database did not grant a lock in time; nothing changed, try again."""

    code = "DATABASE_BUSY"


class CursorExpired(SignoffError):
    """The events after the cursor are past retention: reload and follow from now."""

    code = "CURSOR_EXPIRED"


class Unreachable(SignoffError):
    """Signoff could not be reached (connection refused, reset, timed out)."""

    code = "UNREACHABLE"


class StillWaiting(SignoffError, TimeoutError):
    """``wait`` ran out of time with no new outcome; the proposal is still undecided."""

    code = "STILL_WAITING"

    def __init__(self, proposal_id: str, state: str) -> None:
        super().__init__(
            f"Proposal {proposal_id} is still {state}; wait again later.",
            extensions={"proposalId": proposal_id, "state": state},
        )
        self.proposal_id = proposal_id
        self.state = state


class ExecutionConsumed(SignoffError):
    """The approval's one execution was already taken: ``executor`` (and ``state``) say by
    whom and how it went."""

    code = "EXECUTION_CONSUMED"

    @property
    def state(self) -> str | None:
        value = self.extensions.get("state")
        return None if value is None else str(value)

    @property
    def executor(self) -> str | None:
        value = self.extensions.get("executor") or self.extensions.get("executedById")
        return None if value is None else str(value)


class NotExecutable(SignoffError):
    """The proposal may not be executed by its agent (``reason``: ``NOT_APPROVED``,
    ``ACTION_EXPIRED``, ``APPROVAL_DIGEST_MISMATCH``, ``DELIVERED_BY_SIGNOFF``)."""

    code = "NOT_EXECUTABLE"


class ExecutionNotHeld(SignoffError):
    """A report of an execution this caller did not begin (another lease)."""

    code = "EXECUTION_NOT_HELD"


class ResultSchemaInvalid(SignoffError):
    """The reported result does not meet the target's output schema; nothing changed."""

    code = "RESULT_SCHEMA_INVALID"


class AlreadyExecuted(SignoffError):
    """This approval's one execution happened (or may have) elsewhere, with no result to
    return: the function's body was not run again. ``state`` is the proposal's."""

    code = "ALREADY_EXECUTED"

    def __init__(self, proposal_id: str, state: str, executor: str | None) -> None:
        by = f" by {executor}" if executor else ""
        super().__init__(
            f"Proposal {proposal_id} was already executed{by} (it is {state}); an approval "
            "authorises one execution, so it was not run again.",
            extensions={"proposalId": proposal_id, "state": state, "executor": executor},
        )
        self.proposal_id = proposal_id
        self.state = state
        self.executor = executor


class NotApproved(SignoffError):
    """The call was not approved: ``outcome`` is the ``Rejected``, ``Expired`` or (when
    amendments are not accepted) ``Amended`` that ended it."""

    code = "NOT_APPROVED"

    def __init__(self, outcome: Outcome) -> None:
        super().__init__(f"Proposal {outcome.proposal_id} was {outcome.kind}.")
        self.outcome = outcome


# Codes worth waiting out: nothing was done, and the server says when to come back.
RETRYABLE_CODES = frozenset({RateLimited.code, ServiceUnavailable.code, DatabaseBusy.code})

_BY_CODE: dict[str, type[SignoffError]] = {
    cls.code: cls
    for cls in (
        Unauthenticated,
        Forbidden,
        NotFound,
        PayloadSchemaInvalid,
        IdempotencyKeyReused,
        PayloadDigestMismatch,
        TargetUnavailable,
        RateLimited,
        ServiceUnavailable,
        DatabaseBusy,
        CursorExpired,
        ExecutionConsumed,
        NotExecutable,
        ExecutionNotHeld,
        ResultSchemaInvalid,
    )
}


def error_from(error: dict[str, Any]) -> SignoffError:
    """The exception for one GraphQL error object (``{"message", "extensions"}``)."""
    extensions = error.get("extensions") or {}
    code = str(extensions.get("code") or "INTERNAL")
    message = str(error.get("message") or code)
    cls = _BY_CODE.get(code)
    if cls is None:
        return SignoffError(message, code=code, extensions=extensions)
    return cls(message, extensions=extensions)
