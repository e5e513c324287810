from pydantic import Field

from .base_model import BaseModel
from .fragments import ProposalFields


class GetProposal(BaseModel):
    change_feed_cursor: str = Field(alias="changeFeedCursor")
    proposal: "GetProposalProposal"


GetProposalProposal = ProposalFields
GetProposal.model_rebuild()
