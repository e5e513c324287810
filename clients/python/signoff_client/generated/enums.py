from enum import Enum


class ApprovalLinkState(str, Enum):
    ACTIVE = "ACTIVE"
    USED = "USED"
    REVOKED = "REVOKED"


class ApprovalMode(str, Enum):
    HUMAN = "HUMAN"
    BOUNDED_AUTO = "BOUNDED_AUTO"


class CancelReason(str, Enum):
    USER = "USER"
    SUPERSEDED = "SUPERSEDED"
    NOT_SUBMITTED = "NOT_SUBMITTED"


class ChannelKind(str, Enum):
    WEBHOOK = "WEBHOOK"
    SLACK = "SLACK"
    SLACK_APP = "SLACK_APP"
    EMAIL = "EMAIL"


class CircuitState(str, Enum):
    CLOSED = "CLOSED"
    OPEN = "OPEN"
    HALF_OPEN = "HALF_OPEN"


class DeadLetterState(str, Enum):
    OPEN = "OPEN"
    ACKNOWLEDGED = "ACKNOWLEDGED"
    RESOLVED = "RESOLVED"


class DeadlineAction(str, Enum):
    EXPIRE = "EXPIRE"
    REJECT = "REJECT"
    ESCALATE = "ESCALATE"


class Decision(str, Enum):
    APPROVED = "APPROVED"
    REJECTED = "REJECTED"


class DraftOutcome(str, Enum):
    SUBMITTED = "SUBMITTED"
    PARTIAL = "PARTIAL"
    UNKNOWN = "UNKNOWN"
    NOT_SUBMITTED = "NOT_SUBMITTED"


class DraftSource(str, Enum):
    AGENT = "AGENT"
    USER = "USER"


class DraftStatus(str, Enum):
    DRAFT = "DRAFT"
    RESERVED = "RESERVED"
    OBSERVED = "OBSERVED"
    PARTIAL = "PARTIAL"
    OUTCOME_UNKNOWN = "OUTCOME_UNKNOWN"
    CANCELLED = "CANCELLED"


class ExecutionOutcome(str, Enum):
    APPLIED = "APPLIED"
    FAILED = "FAILED"


class IncidentState(str, Enum):
    OPEN = "OPEN"
    ACKNOWLEDGED = "ACKNOWLEDGED"
    RESOLVED = "RESOLVED"


class OwnerKind(str, Enum):
    FORM = "FORM"
    APPROVAL = "APPROVAL"
    REFERENCE = "REFERENCE"


class ProposalState(str, Enum):
    APPROVAL_REQUIRED = "APPROVAL_REQUIRED"
    APPROVED = "APPROVED"
    REJECTED = "REJECTED"
    QUEUED = "QUEUED"
    APPLYING = "APPLYING"
    APPLIED = "APPLIED"
    FAILED = "FAILED"
    EXECUTING = "EXECUTING"
    EXECUTION_UNKNOWN = "EXECUTION_UNKNOWN"
    CANCELLED = "CANCELLED"
    COMPENSATION_REQUIRED = "COMPENSATION_REQUIRED"


class ReconciliationState(str, Enum):
    RUNNING = "RUNNING"
    SUCCEEDED = "SUCCEEDED"
    PARTIAL = "PARTIAL"
    FAILED = "FAILED"


class ResponseClass(str, Enum):
    APPLIED = "APPLIED"
    ACCEPTED = "ACCEPTED"
    RETRYABLE = "RETRYABLE"
    TERMINAL = "TERMINAL"
    UNKNOWN = "UNKNOWN"


class ResultStatus(str, Enum):
    APPLIED = "APPLIED"
    FAILED = "FAILED"


class Role(str, Enum):
    AGENT = "AGENT"
    REVIEWER = "REVIEWER"
    OPERATOR = "OPERATOR"
    INTEGRATION = "INTEGRATION"
    ADMIN = "ADMIN"


class Severity(str, Enum):
    CRITICAL = "CRITICAL"
    HIGH = "HIGH"
    MEDIUM = "MEDIUM"
    LOW = "LOW"


class TaskState(str, Enum):
    OPEN = "OPEN"
    CLAIMED = "CLAIMED"
    COMPLETED = "COMPLETED"
    EXPIRED = "EXPIRED"
    CANCELLED = "CANCELLED"


class TimelineEntryKind(str, Enum):
    PROPOSED = "PROPOSED"
    AMENDED = "AMENDED"
    AMENDMENT_ACCEPTED = "AMENDMENT_ACCEPTED"
    DECISION = "DECISION"
    APPROVED = "APPROVED"
    AUTO_APPROVED = "AUTO_APPROVED"
    REJECTED = "REJECTED"
    DEADLINE = "DEADLINE"
    DELIVERY = "DELIVERY"
    APPLIED = "APPLIED"
    EXECUTION = "EXECUTION"
    INCIDENT = "INCIDENT"
    OTHER = "OTHER"
