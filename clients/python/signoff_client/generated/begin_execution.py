from pydantic import Field

from .base_model import BaseModel
from .fragments import ProposalFields


class BeginExecution(BaseModel):
    begin_execution: "BeginExecutionBeginExecution" = Field(alias="beginExecution")


class BeginExecutionBeginExecution(BaseModel):
    lease: int
    proposal: "BeginExecutionBeginExecutionProposal"


BeginExecutionBeginExecutionProposal = ProposalFields
BeginExecution.model_rebuild()
BeginExecutionBeginExecution.model_rebuild()
