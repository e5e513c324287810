from typing import Any, Optional

from pydantic import Field

from .base_model import BaseModel
from .fragments import ProposalFields


class ProposalEvents(BaseModel):
    proposal_events: "ProposalEventsProposalEvents" = Field(alias="proposalEvents")


class ProposalEventsProposalEvents(BaseModel):
    cursor: str
    kind: str
    snapshot: Any
    proposal: Optional["ProposalEventsProposalEventsProposal"]


ProposalEventsProposalEventsProposal = ProposalFields
ProposalEvents.model_rebuild()
ProposalEventsProposalEvents.model_rebuild()
