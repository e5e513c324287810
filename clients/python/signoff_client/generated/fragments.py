from typing import Any, Optional

from pydantic import Field

from .base_model import BaseModel
from .enums import (
    CancelReason,
    DeadlineAction,
    Decision,
    DraftStatus,
    ProposalState,
    ResponseClass,
)


class DraftFields(BaseModel):
    id: str
    status: DraftStatus
    revision: int
    values: Optional[Any]
    values_digest: Optional[str] = Field(alias="valuesDigest")
    updated_by_user: list[str] = Field(alias="updatedByUser")
    owner: Any
    session_id: str = Field(alias="sessionId")
    account_id: str = Field(alias="accountId")
    expires_at: Any = Field(alias="expiresAt")
    cancel_reason: Optional[CancelReason] = Field(alias="cancelReason")
    reservation: Optional["DraftFieldsReservation"]
    receipt: Optional[Any]
    created_at: Any = Field(alias="createdAt")
    updated_at: Any = Field(alias="updatedAt")


class DraftFieldsReservation(BaseModel):
    operation_key: str = Field(alias="operationKey")
    values_digest: str = Field(alias="valuesDigest")


class ProposalFields(BaseModel):
    id: str
    state: ProposalState
    action_code: str = Field(alias="actionCode")
    subject: Any
    payload: Any
    payload_digest: str = Field(alias="payloadDigest")
    operation_key: str = Field(alias="operationKey")
    revision: int
    awaiting_proposer: bool = Field(alias="awaitingProposer")
    required_approvals: int = Field(alias="requiredApprovals")
    approval_count: int = Field(alias="approvalCount")
    expires_at: Any = Field(alias="expiresAt")
    decided_at: Optional[Any] = Field(alias="decidedAt")
    applied_at: Optional[Any] = Field(alias="appliedAt")
    result: Optional[Any]
    agent_executes: bool = Field(alias="agentExecutes")
    executor: Optional[str]
    executed_by: Optional["ProposalFieldsExecutedBy"] = Field(alias="executedBy")
    delivery_terminal: bool = Field(alias="deliveryTerminal")
    delivery_attempt_count: int = Field(alias="deliveryAttemptCount")
    last_error_code: Optional[str] = Field(alias="lastErrorCode")
    target: "ProposalFieldsTarget"
    deadline_policy: "ProposalFieldsDeadlinePolicy" = Field(alias="deadlinePolicy")
    approvals: list["ProposalFieldsApprovals"]
    revisions: list["ProposalFieldsRevisions"]
    attempts: list["ProposalFieldsAttempts"]


class ProposalFieldsExecutedBy(BaseModel):
    name: str


class ProposalFieldsTarget(BaseModel):
    id: str
    name: str


class ProposalFieldsDeadlinePolicy(BaseModel):
    action: DeadlineAction
    reason: Optional[str]


class ProposalFieldsApprovals(BaseModel):
    decision: Decision
    reason: Optional[str]
    revision: int
    created_at: Any = Field(alias="createdAt")
    approver: "ProposalFieldsApprovalsApprover"


class ProposalFieldsApprovalsApprover(BaseModel):
    name: str


class ProposalFieldsRevisions(BaseModel):
    revision: int
    digest: str
    payload: Any
    reason: Optional[str]
    amended_by: Optional["ProposalFieldsRevisionsAmendedBy"] = Field(alias="amendedBy")


class ProposalFieldsRevisionsAmendedBy(BaseModel):
    name: str


class ProposalFieldsAttempts(BaseModel):
    attempt_number: int = Field(alias="attemptNumber")
    response_class: ResponseClass = Field(alias="responseClass")
    status_code: Optional[int] = Field(alias="statusCode")
    error_code: Optional[str] = Field(alias="errorCode")
    response_digest: Optional[str] = Field(alias="responseDigest")
    finished_at: Optional[Any] = Field(alias="finishedAt")


DraftFields.model_rebuild()
ProposalFields.model_rebuild()
