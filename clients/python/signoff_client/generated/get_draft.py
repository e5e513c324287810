from .base_model import BaseModel
from .fragments import DraftFields


class GetDraft(BaseModel):
    draft: "GetDraftDraft"


GetDraftDraft = DraftFields
GetDraft.model_rebuild()
