"""The tables. Importing this package registers every table on ``SQLModel.metadata``."""

from signoff.models.actor import Actor, ApiToken, QueueMembership, Role
from signoff.models.approval import Approval, Decision
from signoff.models.audit import AuditEvent
from signoff.models.change_event import ChangeEvent, ChangeFeedState, ChangeKind
from signoff.models.idempotency import IdempotencyRecord
from signoff.models.proposal import Proposal, ProposalState
from signoff.models.queue import Queue
from signoff.models.target import ApprovalMode, Target
from signoff.models.task import APPROVAL_KIND, APPROVAL_RESPONSE_SCHEMA, HumanTask, TaskState

__all__ = [
    "APPROVAL_KIND",
    "APPROVAL_RESPONSE_SCHEMA",
    "Actor",
    "ApiToken",
    "Approval",
    "ApprovalMode",
    "AuditEvent",
    "ChangeEvent",
    "ChangeFeedState",
    "ChangeKind",
    "Decision",
    "HumanTask",
    "IdempotencyRecord",
    "Proposal",
    "ProposalState",
    "Queue",
    "QueueMembership",
    "Role",
    "Target",
    "TaskState",
]
