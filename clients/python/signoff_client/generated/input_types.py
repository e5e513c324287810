from typing import Any, Optional

from pydantic import Field

from .base_model import BaseModel
from .enums import (
    ApprovalMode,
    ChannelKind,
    DeadlineAction,
    Decision,
    DraftOutcome,
    DraftSource,
    ExecutionOutcome,
    ResultStatus,
    Role,
    Severity,
)


class AcceptAmendmentInput(BaseModel):
    proposal_id: str = Field(alias="proposalId")
    payload_digest: str = Field(alias="payloadDigest")
    "The amended revision's digest."
    idempotency_key: Optional[str] = Field(alias="idempotencyKey", default=None)


class AcknowledgeIncidentInput(BaseModel):
    incident_id: str = Field(alias="incidentId")
    idempotency_key: Optional[str] = Field(alias="idempotencyKey", default=None)


class AddNotificationChannelInput(BaseModel):
    queue_id: str = Field(alias="queueId")
    kind: ChannelKind
    "WEBHOOK: a signed JSON document. SLACK: a Slack incoming-webhook message. SLACK_APP: a message from Signoff's Slack app with Approve and Reject, kept up to date. EMAIL: a mail to the channel's reviewer with their single-use approval link."
    url: Optional[str] = None
    "WEBHOOK and SLACK channels: where to post."
    slack_channel: Optional[str] = Field(alias="slackChannel", default=None)
    "SLACK_APP channels: the Slack channel id (C…) the app posts in."
    email_address: Optional[str] = Field(alias="emailAddress", default=None)
    "EMAIL channels: the reviewer's mail address."
    include_payload: bool = Field(alias="includePayload", default=False)
    "Send the proposal's payload too (default: never)."
    reviewer_id: Optional[str] = Field(alias="reviewerId", default=None)
    "Address the channel to one reviewer of the queue (a personal Slack webhook, a mail relay for one person); needed for approval links."
    approval_link_ttl_seconds: Optional[int] = Field(
        alias="approvalLinkTtlSeconds", default=None
    )
    "Put a single-use approval link for the channel's reviewer in each notification of an approval task, valid this long (60 s to 72 h; never past the proposal's deadline). Default: no links."


class AmendProposalInput(BaseModel):
    proposal_id: str = Field(alias="proposalId")
    based_on_digest: str = Field(alias="basedOnDigest")
    "The payloadDigest you amend; PAYLOAD_DIGEST_MISMATCH if it has changed."
    reason: str
    "Why (3-2000 characters)."
    payload: Optional[Any] = None
    "The whole new payload (or give patch)."
    patch: Optional[Any] = None
    "A JSON Merge Patch (RFC 7386) of the payload (or payload)."
    idempotency_key: Optional[str] = Field(alias="idempotencyKey", default=None)


class BeginExecutionInput(BaseModel):
    proposal_id: str = Field(alias="proposalId")
    payload_digest: str = Field(alias="payloadDigest")
    "The digest the reviewers approved."
    lease_seconds: Optional[int] = Field(alias="leaseSeconds", default=None)
    "How long the right is held without a report (5 s-1 day, default 300 s); after that the outcome is EXECUTION_UNKNOWN, an incident, never a retry."
    executor: Optional[str] = None
    "Who runs it, as refusals to others name it (host, process)."


class BulkDecisionItemInput(BaseModel):
    """One proposal of a bulk decision, and the digest reviewed."""

    proposal_id: str = Field(alias="proposalId")
    payload_digest: str = Field(alias="payloadDigest")


class CancelDraftInput(BaseModel):
    request_id: str = Field(alias="requestId")
    draft_id: str = Field(alias="draftId")
    session_id: str = Field(alias="sessionId")
    expected_revision: int = Field(alias="expectedRevision")


class CheckDraftDispatchInput(BaseModel):
    owner: Any
    draft_id: Optional[str] = Field(alias="draftId", default=None)
    "Without it, the check is the ordinary form's."
    operation_key: Optional[str] = Field(alias="operationKey", default=None)
    values_digest: Optional[str] = Field(alias="valuesDigest", default=None)


class ClaimTaskInput(BaseModel):
    task_id: str = Field(alias="taskId")


class CloseTargetCircuitInput(BaseModel):
    target_id: str = Field(alias="targetId")
    reason: str
    "What was fixed, for the audit trail (3-2000 characters)."
    idempotency_key: Optional[str] = Field(alias="idempotencyKey", default=None)


class CompleteTaskInput(BaseModel):
    task_id: str = Field(alias="taskId")
    response: Any
    idempotency_key: Optional[str] = Field(alias="idempotencyKey", default=None)


class CreateApprovalLinkInput(BaseModel):
    task_id: str = Field(alias="taskId")
    reviewer_id: str = Field(alias="reviewerId")
    ttl_seconds: Optional[int] = Field(alias="ttlSeconds", default=None)
    "60 s to 72 h (default 24 h); never past the deadline."


class CreateQueueInput(BaseModel):
    slug: str
    name: str
    claim_ttl_seconds: Optional[int] = Field(alias="claimTtlSeconds", default=None)
    "How long a claim lasts (30 s to 1 day; default 15 min)."
    default_due_seconds: Optional[int] = Field(alias="defaultDueSeconds", default=None)
    "Due time of new tasks (60 s to 31 days; default 24 h)."
    idempotency_key: Optional[str] = Field(alias="idempotencyKey", default=None)
    "Retrying with the same key answers the first result and creates nothing."
    reminder_percents: Optional[list[int]] = Field(
        alias="reminderPercents", default=None
    )
    "Send task.due_soon at these percentages of a task's time to its due time (1-99, at most 5; default none)."


class CreateTaskInput(BaseModel):
    queue_id: str = Field(alias="queueId")
    kind: str
    title: str
    context: Optional[Any] = None
    response_schema: Optional[Any] = Field(alias="responseSchema", default=None)
    "JSON Schema the response must meet (default: any object)."
    priority: Optional[int] = None
    "Higher comes first (-1000 to 1000, default 0)."
    due_in_seconds: Optional[int] = Field(alias="dueInSeconds", default=None)
    idempotency_key: Optional[str] = Field(alias="idempotencyKey", default=None)
    "Retrying with the same key answers the first result and creates nothing."


class CreateTokenInput(BaseModel):
    name: str
    "The actor's name; a new one is made if none."
    role: Optional[Role] = None
    "Required for a new actor; an existing actor keeps its own (ROLE_CONFLICT if this names another)."
    queue_slugs: list[str] = Field(alias="queueSlugs", default_factory=lambda: [])
    "Queues the actor reviews (added to its own)."


class DeadlineOverrideInput(BaseModel):
    """One proposal's deadline policy, within its target's bounds."""

    action: DeadlineAction
    reason: Optional[str] = None
    "For REJECT; the target's reason when left out."
    escalation_steps: Optional[int] = Field(alias="escalationSteps", default=None)
    "For ESCALATE: how far along the target's chain (default: all of it)."


class DeadlinePolicyInput(BaseModel):
    """A target's deadline policy (default: EXPIRE)."""

    action: DeadlineAction
    reason: Optional[str] = None
    "Required for REJECT: the reason given (3-2000 characters)."
    escalation: Optional[list["EscalationStepInput"]] = None
    "Required for ESCALATE: 1-3 steps."


class DecideProposalInput(BaseModel):
    proposal_id: str = Field(alias="proposalId")
    decision: Decision
    payload_digest: str = Field(alias="payloadDigest")
    reason: Optional[str] = None
    idempotency_key: Optional[str] = Field(alias="idempotencyKey", default=None)


class DecideProposalsInput(BaseModel):
    items: list["BulkDecisionItemInput"]
    "1 to 100 proposals."
    decision: Decision
    idempotency_key: str = Field(alias="idempotencyKey")
    "Required (1-150): the same call sent again replays its results."
    reason: Optional[str] = None


class DisableNotificationChannelInput(BaseModel):
    channel_id: str = Field(alias="channelId")


class EnableNotificationChannelInput(BaseModel):
    channel_id: str = Field(alias="channelId")


class EscalationStepInput(BaseModel):
    queue_id: str = Field(alias="queueId")
    deadline_seconds: int = Field(alias="deadlineSeconds")
    "60 s to 31 days."


class ObserveDraftInput(BaseModel):
    request_id: str = Field(alias="requestId")
    draft_id: str = Field(alias="draftId")
    session_id: str = Field(alias="sessionId")
    expected_revision: int = Field(alias="expectedRevision")
    operation_key: str = Field(alias="operationKey")
    outcome: DraftOutcome
    receipt: Optional[Any] = None
    owner_execution_ref: Optional[str] = Field(alias="ownerExecutionRef", default=None)


class OpenIncidentInput(BaseModel):
    key: str
    "Deduplicates: one incident per key."
    severity: Severity
    category: str
    "^[a-z][a-z0-9_]{1,63}$"
    title: str
    summary: Optional[str] = None
    entity_type: Optional[str] = Field(alias="entityType", default=None)
    entity_id: Optional[str] = Field(alias="entityId", default=None)


class PauseTargetInput(BaseModel):
    target_id: str = Field(alias="targetId")
    reason: str
    "Why deliveries are held (3-2000 characters)."
    idempotency_key: Optional[str] = Field(alias="idempotencyKey", default=None)


class PrepareDraftInput(BaseModel):
    request_id: str = Field(alias="requestId")
    "The same id with the same input replays."
    session_id: str = Field(alias="sessionId")
    account_id: str = Field(alias="accountId")
    "The person the draft is for."
    owner: Any
    values: Optional[Any] = None


class ProposeActionInput(BaseModel):
    target_id: str = Field(alias="targetId")
    action_code: str = Field(alias="actionCode")
    payload: Any
    operation_key: str = Field(alias="operationKey")
    "Your idempotency key: the same key with the same content replays."
    subject: Optional[Any] = None
    preconditions: Optional[Any] = None
    expires_in_seconds: Optional[int] = Field(alias="expiresInSeconds", default=None)
    "Approval deadline, 60 s to 31 days (default 24 h)."
    deadline_policy: Optional["DeadlineOverrideInput"] = Field(
        alias="deadlinePolicy", default=None
    )
    "Override the target's deadline policy, within its bounds."


class ProposeCompensationInput(BaseModel):
    proposal_id: str = Field(alias="proposalId")
    "The applied action to undo."
    target_id: str = Field(alias="targetId")
    action_code: str = Field(alias="actionCode")
    payload: Any
    idempotency_key: str = Field(alias="idempotencyKey")
    subject: Optional[Any] = None
    preconditions: Optional[Any] = None


class QueueMemberInput(BaseModel):
    queue_id: str = Field(alias="queueId")
    actor_id: str = Field(alias="actorId")


class ReassignTaskInput(BaseModel):
    task_id: str = Field(alias="taskId")
    assignee_id: str = Field(alias="assigneeId")
    "A reviewer of the task's queue; while they are away, their delegate."
    reason: Optional[str] = None


class RegisterTargetInput(BaseModel):
    name: str
    url: Optional[str] = None
    "Where approved actions are delivered. Leave it out for a target whose agents execute approved actions themselves, once each (beginExecution)."
    input_schema: Any = Field(alias="inputSchema")
    "JSON Schema every payload must meet."
    approval_mode: ApprovalMode = Field(
        alias="approvalMode", default=ApprovalMode.HUMAN
    )
    queue_id: Optional[str] = Field(alias="queueId", default=None)
    "The queue approvals go to (required for HUMAN)."
    method: Optional[str] = None
    output_schema: Optional[Any] = Field(alias="outputSchema", default=None)
    required_approvals: Optional[int] = Field(alias="requiredApprovals", default=None)
    "Distinct reviewers who must approve (1-5, default 1)."
    max_attempts: Optional[int] = Field(alias="maxAttempts", default=None)
    timeout_seconds: Optional[int] = Field(alias="timeoutSeconds", default=None)
    max_concurrency: Optional[int] = Field(alias="maxConcurrency", default=None)
    "Deliveries in flight at once (1-1000, default 20)."
    rate_per_second: Optional[float] = Field(alias="ratePerSecond", default=None)
    "Deliveries started per second (0.01-10000); leave it out for no limit."
    idempotency_key: Optional[str] = Field(alias="idempotencyKey", default=None)
    "Retrying with the same key answers the first result and creates nothing."
    amendable: bool = True
    "Reviewers may amend its proposals (default true)."
    amendments_need_proposer: bool = Field(
        alias="amendmentsNeedProposer", default=False
    )
    "An amendment must be accepted by the proposing agent before delivery."
    amender_may_approve: bool = Field(alias="amenderMayApprove", default=False)
    "The reviewer who amended a proposal may approve that revision too (default false: another person must approve it)."
    summary_field: Optional[str] = Field(alias="summaryField", default=None)
    "A numeric top-level payload field bulkDecisionPreview adds up (e.g. amount)."
    approval_policy: Optional[Any] = Field(alias="approvalPolicy", default=None)
    '{"rules": [{"when": <JSON Schema>, "approvals": 0-5, "queue"?: slug, "name"?: text}], "default"?: {"approvals": n, "queue"?: slug}}; POLICY_INVALID if malformed.'
    deadline_policy: Optional["DeadlinePolicyInput"] = Field(
        alias="deadlinePolicy", default=None
    )


class ReleaseTaskInput(BaseModel):
    task_id: str = Field(alias="taskId")
    reason: Optional[str] = None


class RemoveNotificationChannelInput(BaseModel):
    channel_id: str = Field(alias="channelId")


class ReportActionResultInput(BaseModel):
    proposal_id: str = Field(alias="proposalId")
    operation_key: str = Field(alias="operationKey")
    payload_digest: str = Field(alias="payloadDigest")
    status: ResultStatus
    terminal: bool = False
    "For FAILED: true ends delivery; false retries it."
    retry_after_seconds: Optional[int] = Field(alias="retryAfterSeconds", default=None)
    error_code: Optional[str] = Field(alias="errorCode", default=None)
    provider_request_id: Optional[str] = Field(alias="providerRequestId", default=None)


class ReportExecutionInput(BaseModel):
    proposal_id: str = Field(alias="proposalId")
    lease: int
    "The lease beginExecution gave."
    outcome: ExecutionOutcome
    result: Optional[Any] = None
    "APPLIED: what the action returned; it must meet the target's outputSchema when it has one."
    error_code: Optional[str] = Field(alias="errorCode", default=None)
    "FAILED: why (default EXECUTION_FAILED)."


class ReserveDraftInput(BaseModel):
    request_id: str = Field(alias="requestId")
    draft_id: str = Field(alias="draftId")
    session_id: str = Field(alias="sessionId")
    expected_revision: int = Field(alias="expectedRevision")
    values_digest: str = Field(alias="valuesDigest")
    "The digest of the values reviewed."


class ResolveIncidentInput(BaseModel):
    incident_id: str = Field(alias="incidentId")
    code: str
    "^[a-z][a-z0-9_]{1,63}$, e.g. receiver_fixed."
    summary: str
    "What was done, 3 to 2,000 characters."
    idempotency_key: Optional[str] = Field(alias="idempotencyKey", default=None)


class ResumeTargetInput(BaseModel):
    target_id: str = Field(alias="targetId")
    idempotency_key: Optional[str] = Field(alias="idempotencyKey", default=None)


class RetireTargetInput(BaseModel):
    target_id: str = Field(alias="targetId")


class RetryIncidentInput(BaseModel):
    incident_id: str = Field(alias="incidentId")
    idempotency_key: Optional[str] = Field(alias="idempotencyKey", default=None)


class RetryProposalInput(BaseModel):
    proposal_id: str = Field(alias="proposalId")
    payload_digest: str = Field(alias="payloadDigest")
    idempotency_key: Optional[str] = Field(alias="idempotencyKey", default=None)


class RevokeApprovalLinkInput(BaseModel):
    link_id: str = Field(alias="linkId")


class RevokeTokenInput(BaseModel):
    token_id: str = Field(alias="tokenId")


class SetDelegateInput(BaseModel):
    delegate_id: str = Field(alias="delegateId")
    ends_at: Any = Field(alias="endsAt")
    starts_at: Optional[Any] = Field(alias="startsAt", default=None)
    "Default: now."


class SetTargetLimitsInput(BaseModel):
    target_id: str = Field(alias="targetId")
    max_concurrency: Optional[int] = Field(alias="maxConcurrency", default=None)
    "Deliveries in flight at once (1-1000); left out: unchanged."
    rate_per_second: Optional[float] = Field(alias="ratePerSecond", default=None)
    "Deliveries started per second (0.01-10000); left out: unchanged."
    clear_rate: bool = Field(alias="clearRate", default=False)
    "Remove the rate limit (not together with ratePerSecond)."
    idempotency_key: Optional[str] = Field(alias="idempotencyKey", default=None)


class UpdateDraftInput(BaseModel):
    request_id: str = Field(alias="requestId")
    draft_id: str = Field(alias="draftId")
    session_id: str = Field(alias="sessionId")
    expected_revision: int = Field(alias="expectedRevision")
    source: DraftSource
    patch: Optional[Any] = None
    remove: Optional[list[str]] = None


DeadlinePolicyInput.model_rebuild()
DecideProposalsInput.model_rebuild()
ProposeActionInput.model_rebuild()
RegisterTargetInput.model_rebuild()
