"""The tables. Importing this package registers every table on ``SQLModel.metadata``."""

from signoff.models.actor import (
    Actor,
    ActorAccess,
    ApiToken,
    ConsoleSession,
    OidcIdentity,
    QueueMembership,
    Role,
    TokenState,
)
from signoff.models.approval import Approval, Decision
from signoff.models.approval_link import ApprovalLink, ApprovalLinkState
from signoff.models.audit import AuditCheckpoint, AuditEvent
from signoff.models.change_event import ChangeEvent, ChangeFeedState, ChangeKind
from signoff.models.deadline import DeadlineAction
from signoff.models.delegation import Delegation, DelegationState
from signoff.models.delivery import DeliveryAttempt, ResponseClass
from signoff.models.draft import (
    CancelReason,
    Draft,
    DraftOutcome,
    DraftOwner,
    DraftSource,
    DraftStatus,
    OwnerKind,
)
from signoff.models.idempotency import IdempotencyRecord
from signoff.models.incident import (
    SEVERITY_RANK,
    DeadLetter,
    DeadLetterState,
    Incident,
    IncidentState,
    ReconciliationRun,
    ReconciliationState,
    RepairAction,
    Severity,
)
from signoff.models.key_check import AUDIT_SIGNING, SIGNING_SECRETS, KeyCheck
from signoff.models.notification import (
    ChannelKind,
    ChannelPresence,
    ChannelSwitch,
    Notification,
    NotificationChannel,
    NotificationState,
)
from signoff.models.proposal import Proposal, ProposalState
from signoff.models.queue import Queue
from signoff.models.revision import ProposalRevision
from signoff.models.target import ApprovalMode, CircuitState, Target, TargetHold, TargetService
from signoff.models.task import APPROVAL_KIND, APPROVAL_RESPONSE_SCHEMA, HumanTask, TaskState

__all__ = [
    "APPROVAL_KIND",
    "APPROVAL_RESPONSE_SCHEMA",
    "AUDIT_SIGNING",
    "SEVERITY_RANK",
    "SIGNING_SECRETS",
    "Actor",
    "ActorAccess",
    "ApiToken",
    "Approval",
    "ApprovalLink",
    "ApprovalLinkState",
    "ApprovalMode",
    "AuditCheckpoint",
    "AuditEvent",
    "CancelReason",
    "ChangeEvent",
    "ChangeFeedState",
    "ChangeKind",
    "ChannelKind",
    "ChannelPresence",
    "ChannelSwitch",
    "CircuitState",
    "ConsoleSession",
    "DeadLetter",
    "DeadLetterState",
    "DeadlineAction",
    "Decision",
    "Delegation",
    "DelegationState",
    "DeliveryAttempt",
    "Draft",
    "DraftOutcome",
    "DraftOwner",
    "DraftSource",
    "DraftStatus",
    "HumanTask",
    "IdempotencyRecord",
    "Incident",
    "IncidentState",
    "KeyCheck",
    "Notification",
    "NotificationChannel",
    "NotificationState",
    "OidcIdentity",
    "OwnerKind",
    "Proposal",
    "ProposalRevision",
    "ProposalState",
    "Queue",
    "QueueMembership",
    "ReconciliationRun",
    "ReconciliationState",
    "RepairAction",
    "ResponseClass",
    "Role",
    "Severity",
    "Target",
    "TargetHold",
    "TargetService",
    "TaskState",
    "TokenState",
]
