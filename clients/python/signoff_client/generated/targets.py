from typing import Any, Optional

from pydantic import Field

from .base_model import BaseModel
from .enums import ApprovalMode


class Targets(BaseModel):
    targets: list["TargetsTargets"]


class TargetsTargets(BaseModel):
    id: str
    name: str
    input_schema: Any = Field(alias="inputSchema")
    approval_mode: ApprovalMode = Field(alias="approvalMode")
    required_approvals: int = Field(alias="requiredApprovals")
    approval_policy: Optional[Any] = Field(alias="approvalPolicy")
    amendable: bool
    amendments_need_proposer: bool = Field(alias="amendmentsNeedProposer")
    agent_executes: bool = Field(alias="agentExecutes")
    active: bool
    queue: Optional["TargetsTargetsQueue"]


class TargetsTargetsQueue(BaseModel):
    id: str
    slug: str


Targets.model_rebuild()
TargetsTargets.model_rebuild()
