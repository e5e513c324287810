from pydantic import Field

from .base_model import BaseModel
from .fragments import DraftFields


class PrepareDraft(BaseModel):
    prepare_draft: "PrepareDraftPrepareDraft" = Field(alias="prepareDraft")


class PrepareDraftPrepareDraft(BaseModel):
    replayed: bool
    draft: "PrepareDraftPrepareDraftDraft"


PrepareDraftPrepareDraftDraft = DraftFields
PrepareDraft.model_rebuild()
PrepareDraftPrepareDraft.model_rebuild()
