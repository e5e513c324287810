"""signoff-client: ask Signoff for a human's approval before an agent acts.

from signoff_client import Signoff, Approved

with Signoff("http://127.0.0.1:8000", token) as signoff:
    proposal = signoff.propose("refunds", {"amount": 120, "currency": "EUR"},
                               subject={"order": "o-1042"})
    outcome = proposal.wait(timeout=3600)
"""

from __future__ import annotations

from signoff_client.client import AsyncSignoff, Signoff, SyncProposal, Target
from signoff_client.decorators import requires_approval
from signoff_client.errors import (
    AlreadyExecuted,
    CursorExpired,
    DatabaseBusy,
    ExecutionConsumed,
    ExecutionNotHeld,
    Forbidden,
    IdempotencyKeyReused,
    NotApproved,
    NotExecutable,
    NotFound,
    PayloadDigestMismatch,
    PayloadSchemaInvalid,
    RateLimited,
    ResultSchemaInvalid,
    ServiceUnavailable,
    SignoffError,
    StillWaiting,
    TargetUnavailable,
    Unauthenticated,
    Unreachable,
)
from signoff_client.executions import execute
from signoff_client.keys import derive_key
from signoff_client.outcomes import Amended, Applied, Approved, Expired, Failed, Outcome, Rejected
from signoff_client.proposals import Proposal
from signoff_client.transport import Retries

__all__ = [
    "AlreadyExecuted",
    "Amended",
    "Applied",
    "Approved",
    "AsyncSignoff",
    "CursorExpired",
    "DatabaseBusy",
    "ExecutionConsumed",
    "ExecutionNotHeld",
    "Expired",
    "Failed",
    "Forbidden",
    "IdempotencyKeyReused",
    "NotApproved",
    "NotExecutable",
    "NotFound",
    "Outcome",
    "PayloadDigestMismatch",
    "PayloadSchemaInvalid",
    "Proposal",
    "RateLimited",
    "Rejected",
    "ResultSchemaInvalid",
    "Retries",
    "ServiceUnavailable",
    "Signoff",
    "SignoffError",
    "StillWaiting",
    "SyncProposal",
    "Target",
    "TargetUnavailable",
    "Unauthenticated",
    "Unreachable",
    "derive_key",
    "execute",
    "requires_approval",
]
