from .base_model import BaseModel
from .enums import Role


class Viewer(BaseModel):
    viewer: "ViewerViewer"


class ViewerViewer(BaseModel):
    actor: "ViewerViewerActor"


class ViewerViewerActor(BaseModel):
    id: str
    name: str
    role: Role


Viewer.model_rebuild()
ViewerViewer.model_rebuild()
