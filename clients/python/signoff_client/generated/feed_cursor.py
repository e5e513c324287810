from pydantic import Field

from .base_model import BaseModel


class FeedCursor(BaseModel):
    change_feed_cursor: str = Field(alias="changeFeedCursor")
