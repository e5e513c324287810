"""Relay connections over a resolvers ``Page``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, TypeVar

import strawberry

from signoff.resolvers.core.pagination import Page
from signoff.schema.lookahead import Selected, selected

M = TypeVar("M")
T = TypeVar("T")


@strawberry.type
class PageInfo:
    has_next_page: bool
    has_previous_page: bool
    start_cursor: str | None
    end_cursor: str | None


@strawberry.type(name="Edge")
class PageEdge(Generic[T]):
    cursor: str
    node: T


@strawberry.type(name="Connection")
class PageConnection(Generic[T]):
    edges: list[PageEdge[T]]
    page_info: PageInfo

    @strawberry.field
    def nodes(self) -> list[T]:
        return [edge.node for edge in self.edges]


def connection(page: Page[M], convert: Callable[[M], T]) -> PageConnection[T]:
    return PageConnection(
        edges=[
            PageEdge(cursor=c, node=convert(item))
            for c, item in zip(page.cursors, page.items, strict=True)
        ],
        page_info=PageInfo(
            has_next_page=page.has_next_page,
            has_previous_page=page.has_previous_page,
            start_cursor=page.start_cursor,
            end_cursor=page.end_cursor,
        ),
    )


def nodes_selected(info: strawberry.Info, depth: int) -> Selected:
    """What a connection field's query selects of its nodes (through ``edges { node }``
    and ``nodes``), ``depth`` levels below a node."""
    below = selected(info, depth + 2)
    return below["edges"]["node"] | below["nodes"]
