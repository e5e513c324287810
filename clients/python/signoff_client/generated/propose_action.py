from pydantic import Field

from .base_model import BaseModel
from .fragments import ProposalFields


class ProposeAction(BaseModel):
    propose_action: "ProposeActionProposeAction" = Field(alias="proposeAction")


class ProposeActionProposeAction(BaseModel):
    replayed: bool
    proposal: "ProposeActionProposeActionProposal"


ProposeActionProposeActionProposal = ProposalFields
ProposeAction.model_rebuild()
ProposeActionProposeAction.model_rebuild()
