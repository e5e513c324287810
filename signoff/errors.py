"""The one error hierarchy. Each refusal has a stable ``code`` and a human message.

The GraphQL layer reads ``extensions`` (graphql-core copies it from the original
exception), so a raised ``SignoffError`` reaches the client as
``{"message": ..., "extensions": {"code": ...}}`` with nothing else.
"""

from __future__ import annotations

from typing import Any, ClassVar

# The code of everything that is not a refusal (a bug, a failure of ours): the client
# sees only this and a request id, the log the exception's type and where it was raised.
INTERNAL = "INTERNAL"


class SignoffError(Exception):
    """Base class: a refusal the client caused and can act on."""

    code: ClassVar[str] = "BAD_REQUEST"
    default_message: ClassVar[str] = "The request was refused."

    def __init__(self, message: str | None = None, **details: Any) -> None:
        super().__init__(message or self.default_message)
        self.message = message or self.default_message
        self.details = details

    @property
    def extensions(self) -> dict[str, Any]:
        return {"code": self.code, **self.details}


# Who is asking
class Unauthenticated(SignoffError):
    """No token, or a token that matches no actor."""

    code = "UNAUTHENTICATED"
    default_message = "A valid API token is required (Authorization: Bearer <token>)."


class Forbidden(SignoffError):
    """The actor's role or queue membership does not allow this."""

    code = "FORBIDDEN"
    default_message = "You are not allowed to do this."


class ActorDisabled(Forbidden):
    """The token's actor is disabled: its tokens are refused until an operator enables it."""

    default_message = (
        "This actor is disabled; an operator can enable it with `signoff actor enable --name "
        "<name>`."
    )


class SlackUserUnknown(Unauthenticated):
    """A Slack user clicked a button but no Signoff actor is linked to them, and none
    signed in with the verified email address of their Slack profile."""

    code = "SLACK_USER_UNKNOWN"
    default_message = (
        "Your Slack account is not linked to a Signoff reviewer: sign in to Signoff once "
        "with the email address your Slack profile shows, or ask an admin to link it with "
        "`signoff actor link-slack --name <actor> --slack-user <U…>`."
    )


class SlackUserAmbiguous(Unauthenticated):
    """The email address of a Slack user's profile is the verified email of more than one
    Signoff actor: deciding as either could be deciding as the wrong person."""

    code = "SLACK_USER_AMBIGUOUS"
    default_message = (
        "More than one Signoff account signed in with the email address your Slack profile "
        "shows, so Signoff cannot tell which is you; ask an admin to link your Slack account "
        "with `signoff actor link-slack --name <actor> --slack-user <U…>`."
    )


# Sign-in with an OpenID provider
class IdentityTokenRefused(Unauthenticated):
    """A token from the OpenID provider did not validate; ``reason`` says which check
    failed (``algorithm``, ``unknown_key``, ``signature``, ``issuer``, ``audience``,
    ``expired``, ``not_yet_valid``, ``type``, ``malformed``)."""

    code = "IDENTITY_TOKEN_REFUSED"
    default_message = "The identity provider's token is not valid here."


class NoMappedGroup(Forbidden):
    """The provider's groups for this person or client give no role in Signoff."""

    code = "NO_MAPPED_GROUP"


class IdentityProviderUnavailable(SignoffError):
    """The OpenID provider did not answer, or answered with something unusable."""

    code = "IDENTITY_PROVIDER_UNAVAILABLE"
    default_message = "The identity provider cannot be reached right now; try again."


class SignInRefused(SignoffError):
    """A console sign-in that cannot finish: an unknown or used state, a code the
    provider refused (replayed, or a PKCE verifier that does not match)."""

    code = "SIGN_IN_REFUSED"


class CsrfRefused(Forbidden):
    """A request with the console's session cookie and without its CSRF token (or from
    another origin)."""

    code = "CSRF_REFUSED"
    default_message = "This request lacks the console's CSRF token; reload the console."


class AuditProofUnavailable(SignoffError):
    """No proof for what was asked: no checkpoint yet, or sizes or a position outside the log."""

    code = "AUDIT_PROOF_UNAVAILABLE"


class NotFound(SignoffError):
    """The object does not exist, or the actor may not see it."""

    code = "NOT_FOUND"
    default_message = "Not found."


# What was sent
class ValidationFailed(SignoffError):
    """An input field is out of range or malformed."""

    code = "VALIDATION_FAILED"


class DestinationRefused(SignoffError):
    """A target's or channel's URL points where Signoff does not deliver (an address that
    is reserved or not public, or credentials in the URL); ``reason`` says which."""

    code = "DESTINATION_REFUSED"


class SchemaInvalid(SignoffError):
    """A JSON Schema given to Signoff is not itself a valid schema."""

    code = "SCHEMA_INVALID"


class PayloadSchemaInvalid(SignoffError):
    """A proposal's payload breaks its target's input schema."""

    code = "PAYLOAD_SCHEMA_INVALID"


class ResponseInvalid(SignoffError):
    """A task response breaks the task's response schema."""

    code = "RESPONSE_INVALID"


class IdempotencyKeyReused(SignoffError):
    """An idempotency key was used before with different input."""

    code = "IDEMPOTENCY_KEY_REUSED"


class TransitionNotAllowed(SignoffError):
    """A state change that the aggregate's transition table does not allow."""

    code = "TRANSITION_NOT_ALLOWED"
    default_message = "That change of state is not allowed."


# Proposals
class TargetUnavailable(SignoffError):
    """The target is retired and takes no new proposals."""

    code = "TARGET_UNAVAILABLE"


class TargetAlreadyPaused(SignoffError):
    """The target is already paused (perhaps by another operator a moment ago)."""

    code = "TARGET_ALREADY_PAUSED"


class TargetNotPaused(SignoffError):
    """The target is not paused, so there is nothing to resume."""

    code = "TARGET_NOT_PAUSED"


class TargetCircuitNotOpen(SignoffError):
    """The target's circuit is already closed (deliveries flow), so there is nothing to close."""

    code = "TARGET_CIRCUIT_NOT_OPEN"


class PayloadDigestMismatch(SignoffError):
    """The decision names a digest other than the proposal's."""

    code = "PAYLOAD_DIGEST_MISMATCH"


class AmendmentNotAllowed(SignoffError):
    """The proposal's target does not allow amendments."""

    code = "AMENDMENT_NOT_ALLOWED"


class NoAmendmentPending(SignoffError):
    """There is no amendment waiting for the proposing agent to accept."""

    code = "NO_AMENDMENT_PENDING"


class PolicyInvalid(SignoffError):
    """A target's approval policy is malformed or names something that does not exist."""

    code = "POLICY_INVALID"


class NotAwaitingApproval(SignoffError):
    """The proposal is no longer waiting for a decision."""

    code = "NOT_AWAITING_APPROVAL"


class DeadlinePolicyOutOfBounds(SignoffError):
    """A proposal's deadline policy goes beyond what its target's policy allows."""

    code = "DEADLINE_POLICY_OUT_OF_BOUNDS"


class SelfApprovalForbidden(SignoffError):
    """The proposer may not decide its own proposal."""

    code = "SELF_APPROVAL_FORBIDDEN"


class AmenderApprovalForbidden(SelfApprovalForbidden):
    """The author of a proposal's current revision may not approve it (unless its target
    allows it): a four-eyes refusal, told apart from the proposer's own."""

    code = "AMENDER_APPROVAL_FORBIDDEN"


class AlreadyDecided(SignoffError):
    """This reviewer (or another actor of the same person) has already decided this
    revision of the proposal."""

    code = "ALREADY_DECIDED"


# Tasks
class TaskNotClaimable(SignoffError):
    """The task is not open (completed, expired, cancelled or held)."""

    code = "TASK_NOT_CLAIMABLE"


class TaskClaimedByOther(SignoffError):
    """Another actor holds the task's claim."""

    code = "TASK_CLAIMED_BY_OTHER"


class TaskNotClaimed(SignoffError):
    """The actor does not hold a claim on the task it tried to release."""

    code = "TASK_NOT_CLAIMED"
    default_message = "You do not hold a claim on this task."


class AssigneeNotEligible(SignoffError):
    """The task may not be handed to that actor (not a reviewer of its queue, the
    proposer, someone who already decided it, or the one handing it on)."""

    code = "ASSIGNEE_NOT_ELIGIBLE"


class ApprovalLinkUnusable(SignoffError):
    """The approval link is unknown, used, expired or revoked."""

    code = "APPROVAL_LINK_UNUSABLE"


class NotificationChannelRemoved(SignoffError):
    """The notification channel was removed; it cannot be disabled, enabled or removed again."""

    code = "NOTIFICATION_CHANNEL_REMOVED"


class AlreadyExists(SignoffError):
    """An object with this unique name already exists."""

    code = "ALREADY_EXISTS"


# Actors
class RoleConflict(SignoffError):
    """An actor with this name exists with another role; roles change only on purpose."""

    code = "ROLE_CONFLICT"


# Delivery
class ResultIdentityMismatch(SignoffError):
    """A reported result names another operation key or digest than the proposal's."""

    code = "RESULT_IDENTITY_MISMATCH"


class ResultTerminal(SignoffError):
    """The proposal's delivery has already ended in another outcome."""

    code = "RESULT_TERMINAL"


class ResultNotExpected(SignoffError):
    """The proposal has not been approved for delivery, so no result can be reported."""

    code = "RESULT_NOT_EXPECTED"


class ExecutionConsumed(SignoffError):
    """The proposal's one execution right was already taken (``executedById``,
    ``executor``, ``state``: by whom, and how it went)."""

    code = "EXECUTION_CONSUMED"


class NotExecutable(SignoffError):
    """The proposal cannot be executed by its agent: not approved (yet), past its deadline,
    or on a target Signoff delivers to (``state``, ``reason``)."""

    code = "NOT_EXECUTABLE"


class ExecutionNotHeld(SignoffError):
    """A report of an execution whose right the caller does not hold (another lease, or
    none was taken)."""

    code = "EXECUTION_NOT_HELD"


class ResultSchemaInvalid(SignoffError):
    """A reported result breaks the target's output schema (``errors``); nothing changed."""

    code = "RESULT_SCHEMA_INVALID"


class NotRetryable(SignoffError):
    """Only a terminally failed proposal can be retried."""

    code = "NOT_RETRYABLE"


class RetryDigestMismatch(SignoffError):
    """A retry must name the proposal's exact payload digest."""

    code = "RETRY_DIGEST_MISMATCH"


class CompensationUnavailable(SignoffError):
    """Only an applied action can be compensated, through a target with an approval queue."""

    code = "COMPENSATION_UNAVAILABLE"


# Incidents
class IncidentResolved(SignoffError):
    """A resolved incident is closed: it cannot be acknowledged, retried or resolved again."""

    code = "INCIDENT_RESOLVED"
    default_message = "The incident is resolved; nothing more can be done to it."


class NotRepairable(SignoffError):
    """The incident has nothing a retry could repair."""

    code = "NOT_REPAIRABLE"


class ResolutionInvalid(SignoffError):
    """A resolution needs a code (``^[a-z][a-z0-9_]{1,63}$``) and a 3-2,000 character summary."""

    code = "RESOLUTION_INVALID"


# Drafts
class RequestConflict(SignoffError):
    """This requestId was already used with a different request."""

    code = "REQUEST_CONFLICT"
    default_message = "This requestId was already used with a different request."


class StaleRevision(SignoffError):
    """The draft changed since you read it; reload it and try again."""

    code = "STALE_REVISION"
    default_message = "The draft changed since you read it; reload it and try again."


class NotEditable(SignoffError):
    """A reserved or finished draft cannot be edited."""

    code = "NOT_EDITABLE"
    default_message = "A reserved or finished draft cannot be edited."


class ImmutableRequest(SignoffError):
    """An approval request cannot be changed after it was prepared."""

    code = "IMMUTABLE_REQUEST"
    default_message = "An approval request cannot be changed after it was prepared."


class NotDispatchable(SignoffError):
    """This draft cannot be dispatched."""

    code = "NOT_DISPATCHABLE"
    default_message = "This draft cannot be dispatched."


class ValuesChanged(SignoffError):
    """The draft's values are not the ones you reviewed; review them again."""

    code = "VALUES_CHANGED"
    default_message = "The draft's values are not the ones you reviewed; review them again."


class ReservationMismatch(SignoffError):
    """No matching reservation is waiting for this operation."""

    code = "RESERVATION_MISMATCH"
    default_message = "No matching reservation is waiting for this operation."


class ReceiptConflict(SignoffError):
    """A receipt may add facts but never remove or change one."""

    code = "RECEIPT_CONFLICT"
    default_message = "A receipt may add facts but never remove or change one."


class DispatchConsumed(SignoffError):
    """This was already submitted; check the system it went to before submitting again."""

    code = "DISPATCH_CONSUMED"
    default_message = (
        "This was already submitted; check the system it went to before submitting again."
    )


class ReviewRequired(SignoffError):
    """This dispatches only through its reviewed draft."""

    code = "REVIEW_REQUIRED"
    default_message = "This dispatches only through its reviewed draft."


class TargetInUse(SignoffError):
    """This form already has an open draft in another session."""

    code = "TARGET_IN_USE"
    default_message = "This form already has an open draft in another session."


class TargetChanged(SignoffError):
    """The form changed while its draft was being submitted; reopen it."""

    code = "TARGET_CHANGED"
    default_message = "The form changed while its draft was being submitted; reopen it."


class TooManyDrafts(SignoffError):
    """This session made too many drafts in the last week; start a new session."""

    code = "TOO_MANY_DRAFTS"
    default_message = "This session made too many drafts in the last week; start a new session."


class TooLarge(SignoffError):
    """The values are too large."""

    code = "TOO_LARGE"
    default_message = "The values are too large."


class DraftExpired(SignoffError):
    """The draft has expired."""

    code = "EXPIRED"
    default_message = "The draft has expired."


class AccountMismatch(SignoffError):
    """The draft belongs to another account."""

    code = "ACCOUNT_MISMATCH"
    default_message = "The draft belongs to another account."


class ReferenceReadOnly(SignoffError):
    """A reference draft is read-only: its owner keeps the object."""

    code = "REFERENCE_READ_ONLY"
    default_message = "A reference draft is read-only: its owner keeps the object."


class RecordUnreadable(SignoffError):
    """A stored draft could not be read by this version; nothing was changed."""

    code = "RECORD_UNREADABLE"
    default_message = "A stored draft could not be read by this version; nothing was changed."


# Live events
class CursorInvalid(SignoffError):
    """The ``after`` cursor is not one this change feed handed out."""

    code = "INVALID_CURSOR"
    default_message = "The cursor is not valid; resubscribe without `after`."


class CursorExpired(SignoffError):
    """The events after this cursor have been deleted by retention."""

    code = "CURSOR_EXPIRED"
    default_message = (
        "Events after this cursor are past the feed's retention; reload the queue and "
        "resubscribe without `after`."
    )


class SubscriberTooSlow(SignoffError):
    """The subscriber fell behind its bounded buffer and was disconnected."""

    code = "SUBSCRIBER_TOO_SLOW"
    default_message = "Subscriber too slow; resubscribe with `after` set to the last cursor seen."


# The service itself
class DatabaseBusy(SignoffError):
    """The database did not grant a lock in time (SQLite's write lock, a PostgreSQL lock wait).

    Raised before anything was committed, so nothing changed and the request can be retried.
    """

    code = "DATABASE_BUSY"
    default_message = "The database is busy; nothing was changed. Try again in a moment."


class ServiceUnavailable(SignoffError):
    """The database cannot be reached (down, restarting, the connection lost): not the
    client's fault, and it passes. ``retryAfter`` says how many seconds to wait.

    A mutation cut off at its commit may or may not have been committed: a client retries
    it with the same ``idempotencyKey`` (or ``operationKey``) and gets it done once.
    """

    code = "SERVICE_UNAVAILABLE"
    default_message = (
        "The service cannot reach its database right now. Try again in a few seconds; "
        "retry a mutation with the same idempotencyKey so that it is done once."
    )


class SecretKeyMismatch(SignoffError):
    """The process's secret key is not the one the database's sealed secrets were sealed with.

    Refused at start-up (``signoff serve``, ``signoff worker``), before anything is sealed
    or opened with the wrong key.
    """

    code = "SECRET_KEY_MISMATCH"


class AuditKeyMismatch(SignoffError):
    """The process's audit signing key is not the one the database's checkpoints are signed
    with: refused at start-up, before a checkpoint is signed with another key."""

    code = "AUDIT_KEY_MISMATCH"


# Refusals of the request itself and of the query's shape (docs/design.md section 9)
class EventStreamConflict(SignoffError):
    """A graphql-sse request that clashes with the stream's state: the stream is already
    open, or an operation with this id already runs on it."""

    code = "EVENT_STREAM_CONFLICT"
    default_message = "This event stream is already open; reserve another with PUT."


class BadRequestBody(SignoffError):
    """The HTTP body is not a JSON object Signoff can read (bad JSON, bad UTF-8, too nested)."""

    code = "BAD_REQUEST_BODY"
    default_message = (
        'The request body must be a JSON object such as {"query": "{ viewer { queueIds } }"}.'
    )


class UnsupportedContentType(SignoffError):
    """The HTTP request's content type is not one the GraphQL endpoint reads."""

    code = "UNSUPPORTED_CONTENT_TYPE"
    default_message = (
        "Send the request with Content-Type: application/json "
        "(or use GET with ?query=... for queries)."
    )


class MethodNotAllowed(SignoffError):
    """The HTTP method cannot carry this operation (a mutation sent with GET, a PUT)."""

    code = "METHOD_NOT_ALLOWED"


class InvalidCharacter(SignoffError):
    """A string holds a character no stored value may hold: U+0000 or a lone surrogate."""

    code = "INVALID_CHARACTER"


class ValueOutOfRange(SignoffError):
    """A JSON number is not finite or lies beyond ±2^53 (what every JSON reader keeps exactly)."""

    code = "VALUE_OUT_OF_RANGE"


class GraphQLParseFailed(SignoffError):
    """The GraphQL document is not syntactically valid."""

    code = "GRAPHQL_PARSE_FAILED"


class QueryTooDeep(SignoffError):
    """The query nests selections deeper than the depth limit."""

    code = "QUERY_TOO_DEEP"


class TooManyAliases(SignoffError):
    """The query uses more aliases than the alias limit."""

    code = "TOO_MANY_ALIASES"


class TooManyTokens(SignoffError):
    """The GraphQL document has more tokens than the token limit."""

    code = "TOO_MANY_TOKENS"


class QueryTooCostly(SignoffError):
    """The query's estimated cost (fields times list sizes) is over the cost limit."""

    code = "QUERY_TOO_COSTLY"


class IntrospectionDisabled(SignoffError):
    """Introspection is switched off on this server (``SIGNOFF_INTROSPECTION=0``)."""

    code = "INTROSPECTION_DISABLED"
    default_message = "Introspection is disabled on this server (SIGNOFF_INTROSPECTION=0)."


class TooManySubscriptions(SignoffError):
    """A websocket (or event stream) already runs as many operations as one connection may."""

    code = "TOO_MANY_SUBSCRIPTIONS"


class TooManyConnections(SignoffError):
    """The token (or its actor) already holds as many live connections, websockets and
    event streams together, as one API process allows."""

    code = "TOO_MANY_CONNECTIONS"


class RateLimited(SignoffError):
    """The token sent more requests than its rate allows; ``retryAfter`` says when to retry."""

    code = "RATE_LIMITED"
