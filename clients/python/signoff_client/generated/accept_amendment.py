from pydantic import Field

from .base_model import BaseModel
from .fragments import ProposalFields


class AcceptAmendment(BaseModel):
    accept_amendment: "AcceptAmendmentAcceptAmendment" = Field(alias="acceptAmendment")


class AcceptAmendmentAcceptAmendment(BaseModel):
    replayed: bool
    proposal: "AcceptAmendmentAcceptAmendmentProposal"


AcceptAmendmentAcceptAmendmentProposal = ProposalFields
AcceptAmendment.model_rebuild()
AcceptAmendmentAcceptAmendment.model_rebuild()
